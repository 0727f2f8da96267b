"""Names compared the way SQLite compares them: only ASCII letters fold."""

from __future__ import annotations

import apsw
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sqlgate.engine.names import fold_name, same_name
from sqlgate.engine.sqltext import quote_identifier

# letters whose Unicode case mappings reach ASCII, or the other way round
TRICKY = "kKsSiI\u212a\u017f\u0130\u0131\u00df\u1e9e_é\u00c9"


@pytest.mark.parametrize(
    ("name", "folded"),
    [
        pytest.param("Memory_Events", "memory_events", id="ascii-folds"),
        pytest.param("memory_chec\u212apoints", "memory_chec\u212apoints", id="kelvin-sign-stays"),
        pytest.param("\u0130TEMS", "\u0130tems", id="dotted-capital-i-stays"),
        pytest.param("STRASSE", "strasse", id="ascii-word"),
        pytest.param("stra\u00dfe", "stra\u00dfe", id="sharp-s-stays"),
        pytest.param("\u00c9T\u00c9", "\u00c9t\u00c9", id="accented-capitals-stay"),
    ],
)
def test_fold_name_folds_only_ascii_letters(name: str, folded: str) -> None:
    assert fold_name(name) == folded


def test_python_lower_would_take_the_kelvin_sign_for_a_k() -> None:
    # why sqlgate never compares names with str.lower(): it would protect a name SQLite
    # does not resolve to the server's table (and show the agent's table as the server's)
    assert "memory_chec\u212apoints".lower() == "memory_checkpoints"
    assert not same_name("memory_chec\u212apoints", "memory_checkpoints")
    assert same_name("MEMORY_CHECKPOINTS", "memory_checkpoints")


@settings(max_examples=200, deadline=None)
@given(
    first=st.text(alphabet=TRICKY, min_size=1, max_size=4),
    second=st.text(alphabet=TRICKY, min_size=1, max_size=4),
)
def test_same_name_agrees_with_sqlite(first: str, second: str) -> None:
    conn = apsw.Connection(":memory:")
    try:
        conn.execute(f"CREATE TABLE {quote_identifier(first)} (x)")
        found = conn.execute(
            "SELECT count(*) FROM pragma_table_list WHERE schema = 'main' AND name = ?", (first,)
        ).fetchone()
        assert found == (1,)
        try:
            conn.execute(f"SELECT x FROM {quote_identifier(second)}")
            resolved = True
        except apsw.SQLError:
            resolved = False
    finally:
        conn.close()
    assert resolved == same_name(first, second)
