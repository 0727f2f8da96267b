"""bench/write_undo_bench.py runs to the end on tiny counts (nothing about time)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent


def test_write_undo_cost_measures_each_statement_both_ways(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sys.path.insert(0, str(REPO / "bench"))
    try:
        import write_undo_bench
        from write_undo_bench import STATEMENTS, write_undo_cost
    finally:
        sys.path.remove(str(REPO / "bench"))
    started: list[Any] = []
    real_stdio_client = write_undo_bench.stdio_client

    def stdio_client(params: Any) -> Any:
        started.append(params)
        return real_stdio_client(params)

    monkeypatch.setattr(write_undo_bench, "stdio_client", stdio_client)
    lines: list[str] = []
    rows = write_undo_cost(tmp_path, rounds=1, calls=3, stdio_calls=2, log=lines.append)
    assert [row.subject for row in rows] == [
        f"{name}, {where}" for where in ("in process", "over stdio") for name in STATEMENTS
    ]
    for row in rows:
        assert row.figure.endswith("x")
        assert float(row.figure[:-1]) > 0
        assert "undo off (--write-undo-keep 0) p50 " in row.notes
        assert row.notes.endswith((": met", ": not met"))
    assert lines
    # a round over stdio starts one server with undo off and one with it on, for every
    # statement: each start costs more than the round's calls
    assert len(started) == 2
