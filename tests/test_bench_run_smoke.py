"""bench/run.py --quick runs to the end and writes its table (nothing about time)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "bench" / "run.py"

CALLS = "call overhead: read_query('SELECT 1')"
EXPECTED_ROWS = [
    (CALLS, "sqlgate (stdio)"),
    (CALLS, "reference mcp-server-sqlite (stdio)"),
    (CALLS, "raw apsw in-process (floor)"),
    (CALLS, "sqlgate / reference (calls/s)"),
]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> str:
    out = tmp_path_factory.mktemp("bench") / "results.md"
    result = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--out", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return out.read_text(encoding="utf-8")


def test_quick_run_writes_the_command_and_the_machine(report: str) -> None:
    assert "python bench/run.py --quick --out" in report
    assert "nproc: " in report
    assert "SQLite " in report
    assert "| benchmark | subject | calls | figure | p50 | p99 | notes |" in report


@pytest.mark.parametrize(
    ("benchmark", "subject"),
    [pytest.param(b, s, id=s) for b, s in EXPECTED_ROWS],
)
def test_quick_run_reports_every_row(report: str, benchmark: str, subject: str) -> None:
    assert any(line.startswith(f"| {benchmark} | {subject} |") for line in report.splitlines())


def test_quick_run_measures_sqlgate_over_stdio(report: str) -> None:
    row = next(line for line in report.splitlines() if line.startswith(f"| {CALLS} | sqlgate "))
    assert "calls/s" in row, row
