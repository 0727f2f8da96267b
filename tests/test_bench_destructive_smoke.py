"""bench/destructive_bench.py runs to the end on a tiny database (nothing about time)."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_destructive_cost_measures_both_modes_and_checks_the_undo(tmp_path: Path) -> None:
    sys.path.insert(0, str(REPO / "bench"))
    try:
        from destructive_bench import destructive_cost
    finally:
        sys.path.remove(str(REPO / "bench"))
    lines: list[str] = []
    rows = destructive_cost(tmp_path, size_mb=1, repeats=2, log=lines.append)
    assert [row["subject"] for row in rows] == [
        "sqlgate --undo rows",
        "sqlgate --undo file",
        "row-level undo / whole-file snapshot",
    ]
    assert all(isinstance(row["p50"], float) for row in rows[:2])
    assert rows[2]["undo_exact"] is True
    assert isinstance(rows[2]["ratio"], float)
    assert lines
