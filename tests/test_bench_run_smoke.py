"""bench/run.py --quick runs to the end and writes its table (nothing about time)."""

from __future__ import annotations

import subprocess
import sys
import types
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "bench" / "run.py"

CALLS = "call overhead: read_query('SELECT 1')"
RESULT = "result size: 1,000 rows x 8 columns"
AUDIT = "audit cost: read_query('SELECT 1')"
APPEND = "chain: append_event"
VERIFY = "chain: verify_chain (full)"
RESUME = "chain: get_resume_context, repeated call"
MEMORY_SEARCH = "search: memory_search p50"
TEXT_SEARCH = "search: search_text, 1 KB rows"
HTTP_CALLS = "call overhead over HTTP: read_query('SELECT 1')"
HTTP_LOAD = "load over HTTP: append, insert, read, search"
CAPTURE = "capture cost: one tool call (PostToolUse hook)"
EXPECTED_ROWS = [
    (CALLS, "sqlgate (stdio)"),
    (CALLS, "no-op tool, same SDK (stdio, floor)"),
    (CALLS, "sqlgate / no-op (stdio p50 latency)"),
    (HTTP_CALLS, "sqlgate (streamable HTTP)"),
    (HTTP_CALLS, "no-op tool, same SDK (streamable HTTP, floor)"),
    (HTTP_CALLS, "sqlgate / no-op (HTTP p50 latency)"),
    (HTTP_CALLS, "sqlgate, --token (admin), in turn with a member"),
    (HTTP_CALLS, "sqlgate, a member's token, in turn with --token"),
    (HTTP_CALLS, "member / --token (HTTP p50 latency)"),
    (HTTP_LOAD, "sqlgate, 4 sessions (4 members)"),
    (HTTP_LOAD, "no-op tool, same SDK, 4 sessions (floor)"),
    (HTTP_LOAD, "sqlgate / no-op (calls/s), 4 sessions"),
    (CALLS, "reference mcp-server-sqlite (stdio)"),
    (CALLS, "raw apsw in-process (floor)"),
    (CALLS, "sqlgate / reference (calls/s)"),
    (RESULT, "sqlgate (stdio)"),
    (RESULT, "reference mcp-server-sqlite (stdio)"),
    (RESULT, "raw apsw fetchall (floor)"),
    (RESULT, "sqlgate / reference (bytes)"),
    (RESULT, "sqlgate / reference (p50 time)"),
    (AUDIT, "sqlgate --audit (stdio)"),
    (AUDIT, "sqlgate --no-audit (stdio)"),
    (AUDIT, "audit on / off (calls/s)"),
    (APPEND, "sqlgate, 1 process (stdio)"),
    (APPEND, "sqlgate, 4 processes on one file (stdio)"),
    (RESUME, "large / small"),
    (TEXT_SEARCH, "sqlgate, no match (full scan)"),
    (TEXT_SEARCH, "sqlgate, rare literal"),
    (TEXT_SEARCH, "sqlgate, regex, ignore case"),
    (TEXT_SEARCH, "sqlgate, common word, limit 100"),
    (CAPTURE, "floor: python -c 'import apsw, click'"),
    (CAPTURE, "sqlgate capture, synchronous (the wait without async)"),
    (CAPTURE, 'sqlgate capture, "async": true (the wait now: the spawn)'),
    (CAPTURE, "SessionStart, synchronous (resume context)"),
]
# Rows whose subject names a size ("sqlgate, 1,000 events"): how many each run must print.
SIZED_ROWS = [(VERIFY, 2), (RESUME, 2), (MEMORY_SEARCH, 2)]
DESTRUCTIVE = "destructive cost: 10-row DELETE"


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> str:
    out = tmp_path_factory.mktemp("bench") / "results.md"
    result = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--out", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
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


@pytest.mark.parametrize(
    ("benchmark", "count"),
    [pytest.param(b, n, id=b) for b, n in SIZED_ROWS],
)
def test_quick_run_reports_each_size(report: str, benchmark: str, count: int) -> None:
    sized = [
        line
        for line in report.splitlines()
        if line.startswith(f"| {benchmark} | sqlgate, ") and " events |" in line
    ]
    assert len(sized) == count, sized


@pytest.mark.parametrize(
    ("benchmark", "subject"),
    [
        pytest.param(APPEND, "sqlgate, 1 process (stdio)", id="append one"),
        pytest.param(APPEND, "sqlgate, 4 processes on one file (stdio)", id="append four"),
        pytest.param(AUDIT, "sqlgate --audit (stdio)", id="audit on"),
        pytest.param(AUDIT, "sqlgate --no-audit (stdio)", id="audit off"),
    ],
)
def test_quick_run_measures_sqlgate_rates(report: str, benchmark: str, subject: str) -> None:
    row = next(
        line for line in report.splitlines() if line.startswith(f"| {benchmark} | {subject} |")
    )
    assert "calls/s" in row, row


def test_quick_run_reports_sqlgate_result_bytes(report: str) -> None:
    row = next(
        line for line in report.splitlines() if line.startswith(f"| {RESULT} | sqlgate (stdio) |")
    )
    assert " bytes |" in row, row


def test_quick_run_measures_sqlgate_over_stdio(report: str) -> None:
    row = next(line for line in report.splitlines() if line.startswith(f"| {CALLS} | sqlgate "))
    assert "calls/s" in row, row


def test_quick_run_reports_the_destructive_cost(report: str) -> None:
    assert any(line.startswith(f"| {DESTRUCTIVE} | ") for line in report.splitlines())


@pytest.fixture
def run_module(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.syspath_prepend(str(BENCH.parent))
    import run  # bench/run.py

    return run


def test_destructive_cost_rows_come_from_destructive_bench(
    run_module: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    calls: list[tuple[Path, int, int]] = []

    def destructive_cost(
        folder: Path, size_mb: int, repeats: int, log: Callable[[str], None]
    ) -> list[dict[str, object]]:
        calls.append((folder, size_mb, repeats))
        return [
            {"subject": "row-level undo", "calls": 3, "p50": 0.0125, "figure": "4%", "db_mb": 5},
            {"subject": "whole-file snapshot", "p50": "310 ms", "notes": "copy of the file"},
        ]

    stub = types.ModuleType("destructive_bench")
    stub.destructive_cost = destructive_cost  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "destructive_bench", stub)
    ctx = run_module.Context(run_module.QUICK, tmp_path, lambda _line: None)
    rows = run_module.destructive(ctx)
    assert calls == [(tmp_path / "destructive", 5, 1)]
    assert [(r.benchmark, r.subject, r.calls, r.figure, r.p50, r.notes) for r in rows] == [
        (DESTRUCTIVE, "row-level undo", "3", "4%", "12.5 ms", "db_mb=5"),
        (DESTRUCTIVE, "whole-file snapshot", "", "", "310 ms", "copy of the file"),
    ]


def test_quick_run_loses_nothing_under_http_load(report: str) -> None:
    """The load scenario checks the database after the run: no acknowledged write missing,
    a whole chain, one audit row per call, each naming the member whose session made it."""
    lines = [line for line in report.splitlines() if line.startswith(f"| {HTTP_LOAD} | sqlgate,")]
    assert len(lines) == 1
    for line in lines:
        assert (
            "0 errors; lost after the run: 0 events, 0 rows, 0 audit rows; naming another "
            "member: 0 audit rows, 0 events; chain ok"
        ) in line


def test_only_http_runs_the_http_rows_and_keeps_the_others(tmp_path: Path) -> None:
    """`--only http` writes its rows where the old HTTP rows were and leaves the rest."""
    out = tmp_path / "results.md"
    other = f"| {CALLS} | a row of another run | 1 | 1 calls/s | 1 ms | 1 ms | kept |"
    old = f"| {HTTP_LOAD} | sqlgate, 16 sessions | 1 | 1 calls/s | 1 ms | 1 ms | old |"
    last = f"| {AUDIT} | another row of it | 1 | 1 calls/s | 1 ms | 1 ms | kept too |"
    out.write_text("# report\n\n| benchmark |\n|---|\n" + "\n".join([other, old, last]) + "\n")
    result = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--only", "http", "--out", str(out)],
        cwd=REPO, capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    lines = out.read_text(encoding="utf-8").splitlines()
    assert other in lines
    assert last in lines
    assert old not in lines
    http = [
        i for i, line in enumerate(lines) if line.startswith((f"| {HTTP_CALLS}", f"| {HTTP_LOAD}"))
    ]
    assert lines.index(other) < min(http)
    assert max(http) < lines.index(last)
    for benchmark, subject in EXPECTED_ROWS:
        shown = any(line.startswith(f"| {benchmark} | {subject} |") for line in lines)
        assert shown == (benchmark in (HTTP_CALLS, HTTP_LOAD)), (benchmark, subject)
    assert lines[-1].startswith("`--only http` rows: `python bench/run.py --quick --only http")


def test_a_load_audit_row_of_another_member_is_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(REPO / "bench"))
    import http_load

    made = {("load-00", "read_query"): 2, ("load-01", "read_query"): 1}
    assert http_load._misattributed(Counter(made), Counter(made)) == 0
    swapped = {("load-00", "read_query"): 1, ("load-01", "read_query"): 2}
    assert http_load._misattributed(Counter(swapped), Counter(made)) == 1
    stranger = {("load-00", "read_query"): 2, ("admin", "read_query"): 1}
    assert http_load._misattributed(Counter(stranger), Counter(made)) == 1


def test_quick_run_gives_every_start_cost_a_ratio_and_its_goal(
    report: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bench/startup_bench.py's rows, as run.py prints them: each command beside its floor,
    a ratio (not "not available"), and its goal where it has one."""
    monkeypatch.syspath_prepend(str(REPO / "bench"))
    import startup_bench

    rows = {}
    for line in report.splitlines():
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if len(cells) == 7 and cells[0] in (startup_bench.BENCH_START,
                                             startup_bench.BENCH_SERVE_START):  # fmt: skip
            rows[cells[1]] = cells
    expected = {command.subject for command in startup_bench.COMMANDS}
    assert expected | {startup_bench.SUBJECT_FLOOR, startup_bench.SUBJECT_NOOP,
                       startup_bench.SUBJECT_SERVE} == set(rows)  # fmt: skip
    for command in startup_bench.COMMANDS:
        _, _, _, figure, _, _, notes = rows[command.subject]
        assert figure.endswith("x"), rows[command.subject]
        assert ("goal <=" in notes) == (command.goal is not None), rows[command.subject]
    assert "goal <= 1.15x" in rows[startup_bench.SUBJECT_SERVE][6]
