"""bench/policy_bench.py --quick runs to the end and prints both ratios (nothing about time)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_quick_run_prints_both_ratios_with_their_goals() -> None:
    result = subprocess.run(
        [sys.executable, "policy_bench.py", "--quick"],
        cwd=REPO / "bench",
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == [
        "SELECT 1, 10-rule policy / none",
        "1,000 rows x 8 columns, one hidden / none",
    ]
    assert all("x (p50 " in line and "goal" in line for line in lines)
