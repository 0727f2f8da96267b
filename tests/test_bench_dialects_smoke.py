"""bench/dialects_bench.py runs to the end on a small budget and reports the corpus's scores
(nothing about time)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_a_small_run_reports_every_dialect_and_no_noise() -> None:
    result = subprocess.run(
        [sys.executable, "dialects_bench.py", "--no-write", "--json", "--rounds", "1",
         "--calls", "5", "--write-calls", "2"],
        cwd=REPO / "bench", capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    groups = {row["group"]: row for row in report["scores"]}
    assert {"postgres", "mysql", "tsql", "duckdb", "all"} <= set(groups)
    assert groups["all"]["two_try"] > groups["all"]["first_try"]
    assert report["items"]["noise"] == []
