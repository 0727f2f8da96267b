"""serve says why the records bound its database anew (engine/database/binding.py)."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    ("note", "said"),
    [
        (None, ""),
        ("first open", ""),
        ("file replaced", "sqlgate: note: /p/db.sqlite3: file replaced; its history goes on"),
        ("moved from /old/db", "sqlgate: note: /p/db.sqlite3: moved from /old/db; its history"),
    ],
)
def test_serve_says_why_the_records_bound_the_file_anew(
    note: str | None, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from sqlgate.surfaces.cli.serve import say_binding

    say_binding(note, "/p/db.sqlite3")
    err = capsys.readouterr().err
    assert err.startswith(said) if said else err == ""
