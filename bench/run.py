"""sqlgate beside its peers and the floor, measured in one run on one machine.

Not a test: it prints numbers (a markdown table) and writes them, with the machine and the
exact command, to bench/results.md (or --out). Usage:

    python bench/run.py                  # full run; installs peers when the registry answers
    python bench/run.py --quick          # few calls, no peer install; prints only, unless --out
    python bench/run.py --out FILE       # write the report elsewhere

Each benchmark is a function in BENCHMARKS that returns table rows; add one there.

Peers live in their own venvs under bench/.peers/ (gitignored). The reference SQLite MCP
server (PyPI `mcp-server-sqlite`, archived) needs `mcp<2`, so it gets its own venv and is
driven over stdio by this repo's SDK v2 client, exactly as sqlgate is.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import json
import os
import random
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TextIO

import anyio
import apsw
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types import CallToolResult

sys.path.insert(0, str(Path(__file__).resolve().parent))
import memory_bench as mb

from sqlgate.config import Settings
from sqlgate.engine.textsearch import SearchRequest
from sqlgate.service import Service

BENCH = Path(__file__).resolve().parent
SRC = BENCH.parent / "src"
DEFAULT_OUT = BENCH / "results.md"
PEERS = BENCH / ".peers"
REFERENCE_VENV = PEERS / "reference"
REFERENCE_REQUIREMENTS = ["mcp-server-sqlite", "mcp<2"]
PIP_TIMEOUT = 300.0

# Row names of the table; tests/test_bench_run_smoke.py looks for them.
BENCH_CALLS = "call overhead: read_query('SELECT 1')"
SUBJECT_SQLGATE = "sqlgate (stdio)"
SUBJECT_REFERENCE = "reference mcp-server-sqlite (stdio)"
SUBJECT_FLOOR = "raw apsw in-process (floor)"
SUBJECT_RATIO = "sqlgate / reference (calls/s)"
BENCH_RESULT = "result size: 1,000 rows x 8 columns"
SUBJECT_RESULT_RAW = "raw apsw fetchall (floor)"
SUBJECT_RESULT_VALUES = "the values alone"
SUBJECT_RESULT_RATIO = "sqlgate / reference (bytes)"
BENCH_AUDIT = "audit cost: read_query('SELECT 1')"
SUBJECT_AUDIT_ON = "sqlgate --audit (stdio)"
SUBJECT_AUDIT_OFF = "sqlgate --no-audit (stdio)"
SUBJECT_AUDIT_RATIO = "audit on / off (calls/s)"
BENCH_APPEND = "chain: append_event"
SUBJECT_APPEND_ONE = "sqlgate, 1 process (stdio)"
SUBJECT_APPEND_FOUR = "sqlgate, 4 processes on one file (stdio)"
BENCH_VERIFY = "chain: verify_chain (full)"
BENCH_RESUME = "chain: get_resume_context, repeated call"
SUBJECT_RESUME_RATIO = "large / small"
BENCH_MEMORY_SEARCH = "search: memory_search p50"
BENCH_TEXT_SEARCH = "search: search_text, 1 KB rows"
BENCH_DESTRUCTIVE = "destructive cost: 10-row DELETE"
SUBJECT_DESTRUCTIVE = "row-level undo vs whole-file snapshot"


@dataclass(frozen=True)
class Plan:
    name: str
    calls: int  # timed calls over stdio
    warmup: int  # untimed calls before them
    floor_calls: int  # timed calls of the in-process floor
    install_peers: bool
    result_rows: int  # rows of the result-size table (the row name says 1,000)
    result_calls: int  # timed calls of the big result, per subject
    audit_calls: int  # timed calls per audit setting
    appends_one: int  # append_event calls from one process
    appends_each: int  # append_event calls from each of four processes
    verify_sizes: tuple[int, ...]
    resume_sizes: tuple[int, int]
    search_sizes: tuple[int, ...]  # events behind memory_search
    text_rows: int  # 1 KB rows behind search_text
    repeats: int  # repetitions of cheap in-process calls (median taken)
    heavy_repeats: int  # repetitions of calls that walk a whole chain or table
    destructive_mb: int  # size of the database behind the destructive-cost benchmark
    destructive_repeats: int  # repetitions of each destructive variant


FULL = Plan(
    "full",
    calls=2000,
    warmup=100,
    floor_calls=100_000,
    install_peers=True,
    result_rows=1000,
    result_calls=30,
    audit_calls=1000,
    appends_one=300,
    appends_each=150,
    verify_sizes=(10_000, 100_000, 1_000_000),
    resume_sizes=(1_000, 1_000_000),
    search_sizes=(100_000, 1_000_000),
    text_rows=100_000,
    repeats=100,
    heavy_repeats=3,
    destructive_mb=200,
    destructive_repeats=3,
)
QUICK = Plan(
    "quick",
    calls=50,
    warmup=5,
    floor_calls=1000,
    install_peers=False,
    result_rows=1000,
    result_calls=3,
    audit_calls=30,
    appends_one=20,
    appends_each=5,
    verify_sizes=(500, 1000),
    resume_sizes=(200, 1000),
    search_sizes=(500, 1000),
    text_rows=500,
    repeats=5,
    heavy_repeats=1,
    destructive_mb=5,
    destructive_repeats=1,
)


@dataclass(frozen=True)
class Row:
    benchmark: str
    subject: str
    calls: str
    figure: str
    p50: str
    p99: str
    notes: str = ""


@dataclass(frozen=True)
class Context:
    plan: Plan
    folder: Path  # scratch space for databases and server logs
    log: Callable[[str], None]
    paths: dict[int, Path] = dataclasses.field(default_factory=dict)  # built chains by size


Benchmark = Callable[[Context], list[Row]]


# -- timing ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Latencies:
    seconds: list[float]  # one per call
    total: float  # wall time of the whole timed loop

    @property
    def rate(self) -> float:
        return len(self.seconds) / self.total

    def percentile(self, p: int) -> float:
        if len(self.seconds) < 2:
            return self.seconds[0]
        return statistics.quantiles(self.seconds, n=100, method="inclusive")[p - 1]


def latency_row(benchmark: str, subject: str, lat: Latencies, notes: str = "") -> Row:
    return Row(
        benchmark,
        subject,
        f"{len(lat.seconds):,}",
        f"{lat.rate:,.0f} calls/s",
        ms(lat.percentile(50)),
        ms(lat.percentile(99)),
        notes,
    )


def ms(seconds: float) -> str:
    if seconds < 1e-4:
        return f"{seconds * 1e6:.2f} µs"
    return f"{seconds * 1000:.3f} ms" if seconds < 0.01 else f"{seconds * 1000:.1f} ms"


def time_sync(call: Callable[[], object], calls: int) -> Latencies:
    clock = time.perf_counter
    seconds = []
    started = clock()
    for _ in range(calls):
        before = clock()
        call()
        seconds.append(clock() - before)
    return Latencies(seconds, clock() - started)


async def time_async(call: Callable[[], Awaitable[object]], calls: int) -> Latencies:
    clock = time.perf_counter
    seconds = []
    started = clock()
    for _ in range(calls):
        before = clock()
        await call()
        seconds.append(clock() - before)
    return Latencies(seconds, clock() - started)


# -- stdio servers ---------------------------------------------------------------------------
def sqlgate_params(db: Path, *flags: str) -> StdioServerParameters:
    """`python -m sqlgate serve --db DB [FLAGS]`, importable from this checkout."""
    path = os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")]))
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "sqlgate", "serve", "--db", str(db), *flags],
        env={"PYTHONPATH": path},
    )


def text_of(result: CallToolResult) -> str:
    return " ".join(part.text for part in result.content if part.type == "text")


async def time_stdio_read_query(
    params: StdioServerParameters, plan: Plan, errlog: TextIO
) -> Latencies:
    """Sequential read_query('SELECT 1') calls over stdio, after a warm-up."""
    async with Client(stdio_client(params, errlog=errlog)) as client:

        async def call() -> CallToolResult:
            return await client.call_tool("read_query", {"query": "SELECT 1"})

        first = await call()
        if first.is_error or "1" not in text_of(first):
            raise RuntimeError(f"read_query('SELECT 1') failed: {text_of(first)[:200]}")
        for _ in range(plan.warmup):
            await call()
        return await time_async(call, plan.calls)


async def time_stdio_tool(
    params: StdioServerParameters,
    tool: str,
    arguments: Callable[[int], dict[str, object]],
    warmup: int,
    calls: int,
    errlog: TextIO,
) -> tuple[Latencies, str]:
    """Sequential calls of one tool over stdio; the latencies and the last result's text."""
    async with Client(stdio_client(params, errlog=errlog)) as client:
        counter = iter(range(10**9))
        last: list[CallToolResult] = []

        async def call() -> None:
            result = await client.call_tool(tool, arguments(next(counter)))
            if result.is_error:
                raise RuntimeError(f"{tool} failed: {text_of(result)[:200]}")
            last[:] = [result]

        for _ in range(warmup):
            await call()
        lat = await time_async(call, calls)
        return lat, text_of(last[0])


def stdio_rows(
    ctx: Context,
    benchmark: str,
    subject: str,
    slug: str,
    params: StdioServerParameters | str,
    tool: str,
    arguments: Callable[[int], dict[str, object]],
    warmup: int,
    calls: int,
) -> tuple[Latencies, str] | Row:
    """Run time_stdio_tool, or a "not available" row saying why it could not."""
    if isinstance(params, str):
        return Row(benchmark, subject, "", "not available", "", "", params)
    errlog_path = ctx.folder / f"{slug}.stderr.txt"
    ctx.log(f"{benchmark}, {subject}: {calls} calls after {warmup} warm-up")
    with errlog_path.open("w", encoding="utf-8") as errlog:
        try:
            return anyio.run(time_stdio_tool, params, tool, arguments, warmup, calls, errlog)
        except Exception as error:
            errlog.flush()
            reason = server_failure(error, errlog_path)
            return Row(benchmark, subject, "", "not available", "", "", reason)


def server_failure(error: BaseException, errlog: Path) -> str:
    """A one-line reason: the error and the last line the server wrote to stderr."""
    while getattr(error, "exceptions", None):  # an exception group (3.10 has no builtin)
        error = error.exceptions[0]  # type: ignore[attr-defined]
    lines = [line for line in errlog.read_text(errors="replace").splitlines() if line.strip()]
    tail = f"; server stderr: {lines[-1][:160]}" if lines else ""
    return f"{type(error).__name__}: {str(error)[:160]}{tail}"


# -- the reference peer ----------------------------------------------------------------------
def venv_bin(venv: Path, name: str) -> Path:
    if os.name == "nt":
        return venv / "Scripts" / f"{name}.exe"
    return venv / "bin" / name


def reference_ready(venv: Path) -> str | None:
    """None when the venv runs mcp-server-sqlite on mcp<2; otherwise why not."""
    python = venv_bin(venv, "python")
    if not python.is_file() or not venv_bin(venv, "mcp-server-sqlite").is_file():
        return f"not installed in {venv.relative_to(BENCH.parent)}"
    probe = (
        "import importlib.metadata as m, mcp_server_sqlite; "
        "v = m.version('mcp'); print(v); raise SystemExit(int(v.split('.')[0]) >= 2)"
    )
    done = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return f"venv probe failed: {(done.stdout + done.stderr).strip()[-160:]}"
    return None


def peer_versions(venv: Path) -> str:
    """The reference peer's package versions, for the report's notes."""
    probe = (
        "import importlib.metadata as m; "
        "print(', '.join(f'{p} {m.version(p)}' for p in ('mcp-server-sqlite', 'mcp')))"
    )
    python = str(venv_bin(venv, "python"))
    done = subprocess.run([python, "-c", probe], capture_output=True, text=True, check=False)
    return done.stdout.strip() if done.returncode == 0 else "versions unknown"


def version_of(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "(not installed)"


def install_reference(venv: Path, log: Callable[[str], None]) -> str | None:
    """Create the venv and pip install the reference server; None on success, else why not."""
    log(f"installing {' '.join(REFERENCE_REQUIREMENTS)} into {venv}")
    steps = [
        [sys.executable, "-m", "venv", str(venv)],
        [str(venv_bin(venv, "python")), "-m", "pip", "install", "-q", *REFERENCE_REQUIREMENTS],
    ]
    for step in steps:
        try:
            done = subprocess.run(
                step, capture_output=True, text=True, check=False, timeout=PIP_TIMEOUT
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            return f"`{shlex.join(step[-3:])}` failed: {error}"
        if done.returncode != 0:
            errors = [ln for ln in done.stderr.splitlines() if "ERROR" in ln] or [done.stderr]
            return f"`{' '.join(step[2:4])}` exited {done.returncode}: {errors[-1].strip()[:160]}"
    return reference_ready(venv)


def reference_params(
    plan: Plan, db: Path, log: Callable[[str], None]
) -> StdioServerParameters | str:
    """How to start the reference server, or why it is not available."""
    why = reference_ready(REFERENCE_VENV)
    if why is not None and plan.install_peers:
        why = install_reference(REFERENCE_VENV, log)
    elif why is not None:
        why = f"{why} (--quick does not install peers)"
    if why is not None:
        return why
    return StdioServerParameters(
        command=str(venv_bin(REFERENCE_VENV, "mcp-server-sqlite")), args=["--db-path", str(db)]
    )


# -- benchmarks ------------------------------------------------------------------------------
def call_overhead(ctx: Context) -> list[Row]:
    """read_query('SELECT 1'): sqlgate and the reference over stdio, raw apsw in-process."""
    rows: list[Row] = []
    rates: dict[str, float] = {}
    servers: list[tuple[str, str, StdioServerParameters | str]] = [
        (SUBJECT_SQLGATE, "sqlgate", sqlgate_params(ctx.folder / "calls-sqlgate.db")),
        (
            SUBJECT_REFERENCE,
            "reference",
            reference_params(ctx.plan, ctx.folder / "calls-reference.db", ctx.log),
        ),
    ]
    for subject, slug, params in servers:
        if isinstance(params, str):
            rows.append(Row(BENCH_CALLS, subject, "", "not available", "", "", params))
            continue
        errlog_path = ctx.folder / f"calls-{slug}.stderr.txt"
        ctx.log(f"{subject}: {ctx.plan.calls} calls after {ctx.plan.warmup} warm-up")
        with errlog_path.open("w", encoding="utf-8") as errlog:
            try:
                lat = anyio.run(time_stdio_read_query, params, ctx.plan, errlog)
            except Exception as error:
                errlog.flush()
                reason = server_failure(error, errlog_path)
                rows.append(Row(BENCH_CALLS, subject, "", "not available", "", "", reason))
                continue
        rates[subject] = lat.rate
        versions = (
            peer_versions(REFERENCE_VENV)
            if slug == "reference"
            else f"sqlgate {version_of('sqlgate')}, mcp {version_of('mcp')}"
        )
        rows.append(latency_row(BENCH_CALLS, subject, lat, f"sequential, one client; {versions}"))

    ctx.log(f"{SUBJECT_FLOOR}: {ctx.plan.floor_calls} calls")
    conn = apsw.Connection(str(ctx.folder / "calls-floor.db"))
    try:
        conn.execute("SELECT 1").fetchall()
        lat = time_sync(lambda: conn.execute("SELECT 1").fetchall(), ctx.plan.floor_calls)
    finally:
        conn.close()
    rows.append(
        latency_row(BENCH_CALLS, SUBJECT_FLOOR, lat, '`conn.execute("SELECT 1").fetchall()`')
    )

    if SUBJECT_SQLGATE in rates and SUBJECT_REFERENCE in rates:
        ratio = rates[SUBJECT_SQLGATE] / rates[SUBJECT_REFERENCE]
        verdict = "goal met (>= 1)" if ratio >= 1 else "goal not met (< 1)"
        rows.append(Row(BENCH_CALLS, SUBJECT_RATIO, "", f"{ratio:.2f}x", "", "", verdict))
    else:
        rows.append(Row(BENCH_CALLS, SUBJECT_RATIO, "", "n/a", "", "", "needs both stdio rows"))
    return rows


def result_size(ctx: Context) -> list[Row]:
    """A wide result with caps raised: bytes of text each server returns, and the time."""
    rows: list[Row] = []
    n = ctx.plan.result_rows
    query = "SELECT * FROM items ORDER BY id"
    floor_db = ctx.folder / "result-floor.db"
    make_items(floor_db, n)
    sizes: dict[str, int] = {}
    caps = ["--max-rows", "1000", "--max-result-bytes", "10000000", "--max-cell-chars", "100000"]
    servers: list[tuple[str, str, StdioServerParameters | str, dict[str, object]]] = []
    for slug in ("sqlgate", "reference"):
        make_items(ctx.folder / f"result-{slug}.db", n)
    servers.append(
        (
            SUBJECT_SQLGATE,
            "result-sqlgate",
            sqlgate_params(ctx.folder / "result-sqlgate.db", *caps),
            {"query": query, "limit": n},
        )
    )
    servers.append(
        (
            SUBJECT_REFERENCE,
            "result-reference",
            reference_params(ctx.plan, ctx.folder / "result-reference.db", ctx.log),
            {"query": query},
        )
    )
    for subject, slug, params, args in servers:
        got = stdio_rows(
            ctx,
            BENCH_RESULT,
            subject,
            slug,
            params,
            "read_query",
            constant(args),
            2,
            ctx.plan.result_calls,
        )
        if isinstance(got, Row):
            rows.append(got)
            continue
        lat, text = got
        sizes[subject] = len(text.encode("utf-8"))
        note = "`" + " ".join(caps) + "`" if slug == "result-sqlgate" else "str() of dict rows"
        rows.append(
            Row(
                BENCH_RESULT,
                subject,
                f"{len(lat.seconds):,}",
                f"{sizes[subject]:,} bytes",
                ms(lat.percentile(50)),
                ms(lat.percentile(99)),
                f"{n:,} rows; {note}",
            )
        )
    conn = apsw.Connection(str(floor_db))
    try:
        fetched = conn.execute(query).fetchall()
        lat = time_sync(lambda: conn.execute(query).fetchall(), ctx.plan.repeats)
    finally:
        conn.close()
    sizes[SUBJECT_RESULT_VALUES] = values_bytes(fetched)
    rows.append(
        Row(
            BENCH_RESULT,
            SUBJECT_RESULT_VALUES,
            "",
            f"{sizes[SUBJECT_RESULT_VALUES]:,} bytes",
            "",
            "",
            "every value's text, nothing between them: no row format can be smaller"
            + (
                f" ({sizes[SUBJECT_RESULT_VALUES] / sizes[SUBJECT_REFERENCE]:.1%} of the reference)"
                if SUBJECT_REFERENCE in sizes
                else ""
            ),
        )
    )
    rows.append(
        Row(
            BENCH_RESULT,
            SUBJECT_RESULT_RAW,
            f"{len(lat.seconds):,}",
            "",
            ms(lat.percentile(50)),
            ms(lat.percentile(99)),
            f"`conn.execute({query!r}).fetchall()` in-process",
        )
    )
    if SUBJECT_SQLGATE in sizes and SUBJECT_REFERENCE in sizes:
        share = sizes[SUBJECT_SQLGATE] / sizes[SUBJECT_REFERENCE]
        verdict = "goal met (<= 55%)" if share <= 0.55 else "goal not met (> 55%)"
        rows.append(Row(BENCH_RESULT, SUBJECT_RESULT_RATIO, "", f"{share:.0%}", "", "", verdict))
    else:
        rows.append(
            Row(BENCH_RESULT, SUBJECT_RESULT_RATIO, "", "n/a", "", "", "needs both stdio rows")
        )
    return rows


def constant(arguments: dict[str, object]) -> Callable[[int], dict[str, object]]:
    """The same arguments for every call."""
    return lambda _call: arguments


def values_bytes(rows: Sequence[Sequence[object]]) -> int:
    """UTF-8 bytes of every value's text (NULL as nothing): the floor of any row format."""
    return sum(len(str(v).encode("utf-8")) for row in rows for v in row if v is not None)


def make_items(path: Path, count: int) -> None:
    """A table of `count` rows x 8 columns of mixed types, deterministic."""
    conn = apsw.Connection(str(path))
    try:
        conn.execute(
            "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, email TEXT, city TEXT, "
            "amount REAL, quantity INTEGER, created TEXT, note TEXT)"
        )
        cities = ("Lisbon", "Oslo", "Nairobi", "Osaka", "Lima", "Quebec", "Tbilisi", "Perth")
        with conn:
            conn.executemany(
                "INSERT INTO items VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    (
                        i,
                        f"customer {i}",
                        f"user{i}@example.com",
                        cities[i % len(cities)],
                        round(i * 1.37 % 1000, 2),
                        i % 17,
                        f"2026-01-{1 + i % 28:02d}T{i % 24:02d}:00:00Z",
                        f"order {i}: shipped, invoice sent, nothing unusual",
                    )
                    for i in range(1, count + 1)
                ),
            )
    finally:
        conn.close()


def audit_cost(ctx: Context) -> list[Row]:
    """read_query('SELECT 1') over stdio with the audit log on and off."""
    rows: list[Row] = []
    rates: dict[str, float] = {}
    for subject, flag in ((SUBJECT_AUDIT_ON, "--audit"), (SUBJECT_AUDIT_OFF, "--no-audit")):
        slug = f"audit-{flag.strip('-')}"
        params = sqlgate_params(ctx.folder / f"{slug}.db", flag)
        got = stdio_rows(
            ctx,
            BENCH_AUDIT,
            subject,
            slug,
            params,
            "read_query",
            lambda _i: {"query": "SELECT 1"},
            ctx.plan.warmup,
            ctx.plan.audit_calls,
        )
        if isinstance(got, Row):
            rows.append(got)
            continue
        rates[subject] = got[0].rate
        rows.append(latency_row(BENCH_AUDIT, subject, got[0], f"sequential, one client; `{flag}`"))
    if len(rates) == 2:
        ratio = rates[SUBJECT_AUDIT_ON] / rates[SUBJECT_AUDIT_OFF]
        rows.append(
            Row(
                BENCH_AUDIT,
                SUBJECT_AUDIT_RATIO,
                "",
                f"{ratio:.2f}x",
                "",
                "",
                f"the audit row costs {1 - ratio:.0%} of the rate",
            )
        )
    else:
        rows.append(Row(BENCH_AUDIT, SUBJECT_AUDIT_RATIO, "", "n/a", "", "", "needs both rows"))
    return rows


def append_arguments(worker: int) -> Callable[[int], dict[str, object]]:
    def arguments(i: int) -> dict[str, object]:
        content = f"worker {worker}, event {i}: tried the migration again, the retry worked"
        return {"content": content, "kind": "note", "tags": ["bench"]}

    return arguments


async def append_concurrently(
    params: StdioServerParameters, workers: int, each: int, errlog: TextIO
) -> float:
    """Connect `workers` stdio servers on one file, then append from all at once: seconds."""
    async with contextlib.AsyncExitStack() as stack:
        clients = [
            await stack.enter_async_context(Client(stdio_client(params, errlog=errlog)))
            for _ in range(workers)
        ]
        for worker, client in enumerate(clients):  # warm each process up
            await client.call_tool("append_event", append_arguments(worker)(-1))
        failures: list[str] = []

        async def run(worker: int, client: Client) -> None:
            arguments = append_arguments(worker)
            for i in range(each):
                result = await client.call_tool("append_event", arguments(i))
                if result.is_error:
                    failures.append(text_of(result)[:200])

        started = time.perf_counter()
        async with anyio.create_task_group() as group:
            for worker, client in enumerate(clients):
                group.start_soon(run, worker, client)
        seconds = time.perf_counter() - started
        if failures:
            raise RuntimeError(f"{len(failures)} appends failed, first: {failures[0]}")
        return seconds


def chain(ctx: Context) -> list[Row]:
    """append_event from one and four processes; verify_chain; repeated get_resume_context."""
    plan = ctx.plan
    rows: list[Row] = []
    got = stdio_rows(
        ctx,
        BENCH_APPEND,
        SUBJECT_APPEND_ONE,
        "append-one",
        sqlgate_params(ctx.folder / "append-one.db"),
        "append_event",
        append_arguments(0),
        5,
        plan.appends_one,
    )
    if isinstance(got, Row):
        rows.append(got)
    else:
        rows.append(latency_row(BENCH_APPEND, SUBJECT_APPEND_ONE, got[0], "sequential"))

    workers, each = 4, plan.appends_each
    ctx.log(f"{BENCH_APPEND}, {SUBJECT_APPEND_FOUR}: {workers} x {each} calls")
    errlog_path = ctx.folder / "append-four.stderr.txt"
    with errlog_path.open("w", encoding="utf-8") as errlog:
        try:
            params = sqlgate_params(ctx.folder / "append-four.db")
            seconds = anyio.run(append_concurrently, params, workers, each, errlog)
        except Exception as error:
            errlog.flush()
            reason = server_failure(error, errlog_path)
            rows.append(Row(BENCH_APPEND, SUBJECT_APPEND_FOUR, "", "not available", "", "", reason))
        else:
            total = workers * each
            rows.append(
                Row(
                    BENCH_APPEND,
                    SUBJECT_APPEND_FOUR,
                    f"{total:,}",
                    f"{total / seconds:,.0f} calls/s",
                    "",
                    "",
                    f"aggregate over {workers} concurrent clients, {each:,} calls each",
                )
            )

    sizes = sorted({*plan.verify_sizes, *plan.resume_sizes, *plan.search_sizes})
    paths = {}
    for size in sizes:
        path = ctx.folder / f"chain-{size}.db"
        started = time.perf_counter()
        mb.build(path, size)
        ctx.log(f"built and verified {size:,} events in {time.perf_counter() - started:.1f} s")
        paths[size] = path
    ctx.paths.update(paths)

    for size in plan.verify_sizes:
        with mb.open_service(paths[size]) as service:
            samples = mb.timed(service.verify_chain, plan.heavy_repeats)
        seconds = statistics.median(samples)
        growth = verify_rss_growth(paths[size])
        ctx.log(f"verify_chain {size:,}: {seconds:.3f} s; peak RSS growth {growth}")
        rows.append(
            Row(
                BENCH_VERIFY,
                f"sqlgate, {size:,} events",
                f"{len(samples)}",
                f"{size / seconds:,.0f} events/s",
                ms(seconds),
                "",
                "in-process `Service.verify_chain`; p50 = median time of one full walk; "
                f"peak RSS growth of one walk in a fresh process: {growth}",
            )
        )

    small, large = plan.resume_sizes
    medians = {}
    for size in (small, large):
        with mb.open_service(paths[size]) as service:
            service.get_resume_context()  # records the verified position
            lat = time_sync(service.get_resume_context, plan.repeats)
        medians[size] = lat.percentile(50)
        rows.append(
            Row(
                BENCH_RESUME,
                f"sqlgate, {size:,} events",
                f"{plan.repeats:,}",
                "",
                ms(lat.percentile(50)),
                ms(lat.percentile(99)),
                "in-process `Service`, no checkpoint, after a first call",
            )
        )
    ratio = medians[large] / medians[small]
    verdict = "goal met (<= 2)" if ratio <= 2 else "goal not met (> 2)"
    rows.append(
        Row(
            BENCH_RESUME,
            SUBJECT_RESUME_RATIO,
            "",
            f"{ratio:.2f}x",
            "",
            "",
            f"p50 at {large:,} / p50 at {small:,}; {verdict}",
        )
    )
    return rows


def search(ctx: Context) -> list[Row]:
    """memory_search p50 over the built chain; search_text over 1 KB rows, in-process."""
    plan = ctx.plan
    rows: list[Row] = []
    mb_plan = dataclasses.replace(mb.QUICK, search_repeats=max(plan.repeats // 3, 3))
    for size in plan.search_sizes:
        path = ctx.paths.get(size)
        if path is None:
            path = ctx.folder / f"chain-{size}.db"
            mb.build(path, size)
        medians = mb.measure_search(path, mb_plan)
        p50 = statistics.median(medians.values())
        ctx.log(f"memory_search {size:,}: p50 {ms(p50)}")
        rows.append(
            Row(
                BENCH_MEMORY_SEARCH,
                f"sqlgate, {size:,} events",
                f"{len(medians)} queries",
                "",
                ms(p50),
                ms(max(medians.values())),
                "in-process `Service`, top_k=10; median of per-query medians; p99 column = "
                "slowest query",
            )
        )

    db = ctx.folder / "text.db"
    n = plan.text_rows
    with Service.open(Settings(db=db, query_timeout=600.0), session="s-bench") as service:
        fill_documents(db, n)
        ctx.log(f"built {n:,} rows of 1 KB for search_text")
        for label, request in TEXT_SEARCHES:
            service.search_text(request)  # warm the page cache
            samples = mb.timed(functools.partial(service.search_text, request), plan.heavy_repeats)
            rows.append(
                Row(
                    BENCH_TEXT_SEARCH,
                    f"sqlgate, {label}",
                    f"{len(samples)}",
                    "",
                    ms(statistics.median(samples)),
                    "",
                    f"{n:,} rows; in-process `Service.search_text`, "
                    f"pattern `{request.pattern}`, limit {request.limit}",
                )
            )
    return rows


TEXT_SEARCHES = [
    ("no match (full scan)", SearchRequest("zzqx_never", "docs", ["body"], fixed_strings=True)),
    ("rare literal", SearchRequest("needle_7", "docs", ["body"], fixed_strings=True)),
    ("regex, ignore case", SearchRequest(r"TICKET_4\d{3}\b", "docs", ["body"], ignore_case=True)),
    ("common word, limit 100", SearchRequest("deploy", "docs", ["body"], limit=100)),
]


def fill_documents(db: Path, count: int) -> None:
    """`count` rows of about 1 KB each, through a direct connection (the schema exists)."""
    rng = random.Random(count)
    words, weights = mb.vocabulary()
    bodies = []
    for _ in range(997):
        text = " ".join(rng.choices(words, cum_weights=weights, k=220))
        bodies.append(text[:1000])
    conn = apsw.Connection(str(db))
    try:
        conn.execute("CREATE TABLE docs (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
        with conn:
            conn.executemany(
                "INSERT INTO docs (id, body) VALUES (?, ?)",
                (
                    (
                        i,
                        f"ticket_{i % 10_000} "
                        + ("needle_7 " if i % 1000 == 7 else "")
                        + bodies[i % len(bodies)],
                    )
                    for i in range(1, count + 1)
                ),
            )
    finally:
        conn.close()


def destructive(ctx: Context) -> list[Row]:
    """A 10-row DELETE: row-level undo beside a whole-file snapshot (bench/destructive_bench.py)."""
    try:
        import destructive_bench
    except ImportError as error:
        why = f"bench/destructive_bench.py is not importable: {error}"
        return [Row(BENCH_DESTRUCTIVE, SUBJECT_DESTRUCTIVE, "", "not available", "", "", why)]
    folder = ctx.folder / "destructive"
    folder.mkdir(exist_ok=True)
    ctx.log(f"{BENCH_DESTRUCTIVE}: {ctx.plan.destructive_mb} MB, {ctx.plan.destructive_repeats} x")
    found = destructive_bench.destructive_cost(
        folder, ctx.plan.destructive_mb, ctx.plan.destructive_repeats, ctx.log
    )
    return [destructive_row(found_row) for found_row in found]


def destructive_row(found: dict[str, object]) -> Row:
    """One dict of destructive_cost as a table row.

    The keys named like Row's columns fill them (`subject` is required); a float p50 or p99
    is seconds; any other key goes into the notes as `key=value`.
    """
    columns = ("calls", "figure", "p50", "p99", "notes")

    def cell(name: str) -> str:
        value = found.get(name, "")
        return ms(value) if name in ("p50", "p99") and isinstance(value, float) else str(value)

    extra = [f"{key}={value}" for key, value in found.items() if key not in {"subject", *columns}]
    notes = "; ".join(filter(None, [cell("notes"), *extra]))
    return Row(
        BENCH_DESTRUCTIVE,
        str(found["subject"]),
        cell("calls"),
        cell("figure"),
        cell("p50"),
        cell("p99"),
        notes,
    )


VERIFY_RSS = """
import json, resource, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import memory_bench as mb
def resident():  # now, in ru_maxrss units: VmRSS where /proc has it (KiB), else the peak
    try:
        with open("/proc/self/status") as status:
            return next(int(ln.split()[1]) for ln in status if ln.startswith("VmRSS:"))
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
with mb.open_service(Path(sys.argv[2])) as service:
    before = resident()
    service.verify_chain()
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps([before, after]))
"""


def verify_rss_growth(path: Path) -> str:
    """How much one full verify_chain raises the peak RSS of a fresh process (flat = streams).

    The resident size is read after opening the Service (VmRSS on Linux; elsewhere the
    peak so far), then the peak (ru_maxrss) after the walk: the difference is what the walk
    itself needed at most. Needs the `resource` module.
    """
    if os.name == "nt":
        return "n/a (no ru_maxrss on Windows)"
    done = subprocess.run(
        [sys.executable, "-c", VERIFY_RSS, str(BENCH), str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        return f"n/a ({done.stderr.strip()[-120:]})"
    before, after = json.loads(done.stdout.strip().splitlines()[-1])
    unit = 1 if sys.platform == "darwin" else 1024  # bytes on macOS, KiB on Linux
    return f"{(after - before) * unit / 1e6:.1f} MB (peak {after * unit / 1e6:.0f} MB)"


BENCHMARKS: list[Benchmark] = [call_overhead, result_size, audit_cost, chain, search, destructive]


# -- reporting -------------------------------------------------------------------------------
HEADER = "| benchmark | subject | calls | figure | p50 | p99 | notes |"


def table(rows: Sequence[Row]) -> str:
    lines = [HEADER, "|---|---|---:|---:|---:|---:|---|"]
    lines += [
        f"| {r.benchmark} | {r.subject} | {r.calls} | {r.figure} | {r.p50} | {r.p99} | "
        f"{r.notes.replace('|', '/')} |"
        for r in rows
    ]
    return "\n".join(lines) + "\n"


def report(rows: Sequence[Row], command: str, plan: Plan) -> str:
    return "\n".join(
        [
            "# sqlgate benchmarks",
            "",
            f"Written by `bench/run.py` ({plan.name} run) on "
            f"{time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC. Ratios are the figures: "
            "absolute rates move with the machine's load.",
            "",
            "Command:",
            "",
            "```",
            command,
            "```",
            "",
            "Machine:",
            "",
            *mb.machine(),
            "",
            table(rows),
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--quick", action="store_true", help="few calls, no peer install, a few seconds"
    )
    parser.add_argument(
        "--out",
        type=Path,
        help=f"where to write the report (default: {DEFAULT_OUT.name} beside this script; "
        "with --quick, none unless given)",
    )
    args = parser.parse_args(argv)
    plan = QUICK if args.quick else FULL
    command = shlex.join(["python", "bench/run.py", *(argv if argv is not None else sys.argv[1:])])

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="sqlgate-bench-") as temp:
        ctx = Context(plan, Path(temp), log)
        for benchmark in BENCHMARKS:
            rows += benchmark(ctx)
    print(table(rows), end="")
    out = args.out or (None if args.quick else DEFAULT_OUT)
    if out is not None:
        out.write_text(report(rows, command, plan), encoding="utf-8")
        log(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
