"""bench/startup_bench.py runs to the end with one run per command and gives each row a
ratio beside its floor (nothing about time is asserted)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def test_every_start_cost_row_has_a_ratio_and_its_goal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(REPO / "bench"))
    import startup_bench
    from benchkit import QUICK, Context

    monkeypatch.setitem(startup_bench.RUNS, "smoke", 1)
    rows = startup_bench.startup(Context(replace(QUICK, name="smoke"), tmp_path, lambda _: None))
    by_subject = {row.subject: row for row in rows}
    expected = [command.subject for command in startup_bench.COMMANDS]
    assert set(expected) | {startup_bench.SUBJECT_FLOOR, startup_bench.SUBJECT_NOOP,
                            startup_bench.SUBJECT_SERVE} == set(by_subject)  # fmt: skip
    for command in startup_bench.COMMANDS:
        row = by_subject[command.subject]
        assert row.figure.endswith("x"), row  # not "not available"
        assert ("goal <=" in row.notes) == (command.goal is not None), row
    assert "goal <= 1.15x" in by_subject[startup_bench.SUBJECT_SERVE].notes
