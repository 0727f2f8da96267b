"""bench/memory_bench.py --quick runs to the end and writes its table (nothing about time)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "bench" / "memory_bench.py"

EXPECTED_ROWS = [
    "get_resume_context, first call (full verify)",
    "get_resume_context, repeated call",
    "get_resume_context, repeated call, large/small",
    "get_resume_context, repeated call, 50 events since checkpoint",
    "get_resume_context, repeated call since checkpoint, large/small",
    "get_resume_context, after 20 new appends",
    "verify_chain (full)",
    "append_event",
    "memory_search p50",
]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> str:
    folder = tmp_path_factory.mktemp("bench")
    out = folder / "results.md"
    result = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--out", str(out), "--workdir", str(folder)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return out.read_text(encoding="utf-8")


def test_quick_run_writes_the_command_and_the_machine(report: str) -> None:
    assert "python bench/memory_bench.py --quick --out" in report
    assert "SQLite " in report
    assert "| benchmark | events | median | derived | reps |" in report


@pytest.mark.parametrize("name", [pytest.param(name, id=name) for name in EXPECTED_ROWS])
def test_quick_run_reports_every_benchmark(report: str, name: str) -> None:
    assert any(line.startswith(f"| {name} |") for line in report.splitlines())
