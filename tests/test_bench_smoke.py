"""bench/memory_bench.py --quick runs to the end and writes its table (nothing about time)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sqlgate.config import Settings
from sqlgate.service import Service
from tests.records import connect_both

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


@pytest.fixture
def memory_bench(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.syspath_prepend(str(BENCH.parent))
    import memory_bench

    return memory_bench


@pytest.mark.parametrize("count", [pytest.param(1, id="one"), pytest.param(120, id="several")])
def test_a_built_chain_is_one_sqlgate_accepts(
    memory_bench: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, count: int
) -> None:
    monkeypatch.setattr(memory_bench, "TXN_ROWS", 50)  # several transactions
    path = tmp_path / "chain.db"
    head = memory_bench.build(path, count, verify=False)
    with Service.open(Settings(db=path), session="s-test") as service:
        assert json.loads(service.verify_chain()) == {
            "ok": True, "events": count, "head_id": count, "head_hash": head,
        }  # fmt: skip
        service.append_event("one more, appended by the server: qqxyzzy", "note", ["auth"])
        assert json.loads(service.verify_chain())["events"] == count + 1
        assert "# 1 result" in service.memory_search("qqxyzzy")
    conn = connect_both(path)
    try:  # the full-text index holds exactly what the server would have indexed
        conn.execute(
            "INSERT INTO memory_events_fts (memory_events_fts, rank) VALUES ('integrity-check', 1)"
        )
        tagged = conn.execute(
            "SELECT count(*) FROM memory_events WHERE tags LIKE '%\"auth\"%'"
        ).fetchone()[0]
        found = conn.execute(
            "SELECT count(*) FROM memory_events_fts WHERE memory_events_fts MATCH 'tags:auth'"
        ).fetchone()[0]
        assert found == tagged
    finally:
        conn.close()
