"""bench/replication_bench.py runs to the end (one kill) and merges its rows into a report,
keeping every other row (nothing about time)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "bench" / "replication_bench.py"
BENCH = "replication: SIGKILL mid-load, restore, verify"
EXISTING = """# sqlgate benchmarks

| benchmark | subject | calls | figure | p50 | p99 | notes |
|---|---|---:|---:|---:|---:|---|
| call overhead: read_query('SELECT 1') | sqlgate (stdio) | 2,000 | 728 calls/s | 1 ms | 2 ms |  |
| replication: SIGKILL mid-load, restore, verify | an old row | 1 kills | x | x | x | old |
"""

pytestmark = pytest.mark.e2e  # it runs Litestream


@pytest.mark.timeout(300)
def test_one_kill_is_measured_and_merged_into_the_report(tmp_path: Path) -> None:
    out = tmp_path / "results.md"
    out.write_text(EXISTING, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--kills", "1", "--out", str(out)],
        cwd=REPO, capture_output=True, text=True, check=False, timeout=280,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    lines = out.read_text(encoding="utf-8").splitlines()
    assert "| call overhead: read_query('SELECT 1') | sqlgate (stdio) | 2,000 |" in "\n".join(lines)
    ours = [line for line in lines if line.startswith(f"| {BENCH} |")]
    assert "an old row" not in "\n".join(ours)
    subjects = [line.split(" | ")[1] for line in ours]
    if "not available" in ours[0]:
        pytest.skip("no Litestream binary here; the row says why")
    assert subjects == [
        "sqlgate --replicate file:// (stdio)",
        "server SIGKILLed alone, Litestream left to flush",
    ]
    assert all("chain ok in 1/1 restores" in line for line in ours)
    table = [i for i, line in enumerate(lines) if line.startswith("|")]
    assert table == list(range(table[0], table[-1] + 1))  # one table, rows together
    assert lines[-1].startswith("Replication rows: `python bench/replication_bench.py --quick")
