"""bench/capture_bench.py runs to the end on tiny counts (nothing about time)."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_capture_cost_has_the_floor_the_two_waits_and_session_start(tmp_path: Path) -> None:
    sys.path.insert(0, str(REPO / "bench"))
    try:
        from capture_bench import BENCHMARK, SUBJECTS, capture_rows
    finally:
        sys.path.remove(str(REPO / "bench"))
    lines: list[str] = []
    rows = capture_rows(tmp_path, runs=1, log=lines.append)
    assert [(row.benchmark, row.subject) for row in rows] == [(BENCHMARK, s) for s in SUBJECTS]
    for row in rows:
        assert row.calls == "1"
        assert row.p50.endswith("ms")
    assert "events stored: 3 of 3" in rows[2].notes  # the async runs still did the work
    assert lines
