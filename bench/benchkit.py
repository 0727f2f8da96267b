"""What every benchmark of bench/run.py shares: the paths, the plans, the table rows and
their names, the latency timers and the markdown table."""

from __future__ import annotations

import dataclasses
import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent
SRC = BENCH.parent / "src"

# Row names of the table; tests/test_bench_run_smoke.py looks for them.
BENCH_CALLS = "call overhead: read_query('SELECT 1')"
SUBJECT_SQLGATE = "sqlgate (stdio)"
SUBJECT_REFERENCE = "reference mcp-server-sqlite (stdio)"
SUBJECT_FLOOR = "raw apsw in-process (floor)"
SUBJECT_RATIO = "sqlgate / reference (calls/s)"
SUBJECT_NOOP = "no-op tool, same SDK (stdio, floor)"
SUBJECT_NOOP_RATIO = "sqlgate / no-op (stdio p50 latency)"
BENCH_HTTP_CALLS = "call overhead over HTTP: read_query('SELECT 1')"
SUBJECT_HTTP_SQLGATE = "sqlgate (streamable HTTP)"
SUBJECT_HTTP_NOOP = "no-op tool, same SDK (streamable HTTP, floor)"
SUBJECT_HTTP_RATIO = "sqlgate / no-op (HTTP p50 latency)"
SUBJECT_HTTP_ADMIN = "sqlgate, --token (admin), in turn with a member"
SUBJECT_HTTP_MEMBER = "sqlgate, a member's token, in turn with --token"
SUBJECT_HTTP_IDENTITY_RATIO = "member / --token (HTTP p50 latency)"
BENCH_HTTP_LOAD = "load over HTTP: append, insert, read, search"
SUBJECT_HTTP_LOAD_RATIO = "sqlgate / no-op (calls/s)"
BENCH_RESULT = "result size: 1,000 rows x 8 columns"
SUBJECT_RESULT_RAW = "raw apsw fetchall (floor)"
SUBJECT_RESULT_VALUES = "the values alone"
SUBJECT_RESULT_RATIO = "sqlgate / reference (bytes)"
SUBJECT_RESULT_TIME = "sqlgate / reference (p50 time)"
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
    load_sessions: tuple[int, ...]  # concurrent HTTP sessions of the load benchmark
    load_calls: int  # calls per load level, shared among its sessions
    load_repeats: int  # runs of each load level, sqlgate and the no-op in turn


FULL = Plan(
    "full",
    calls=2000,
    warmup=100,
    floor_calls=100_000,
    install_peers=True,
    result_rows=1000,
    result_calls=200,
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
    load_sessions=(1, 16, 64),
    load_calls=3200,
    load_repeats=2,
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
    load_sessions=(4,),
    load_calls=40,
    load_repeats=1,
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


def merge_rows(
    path: Path, rows: Sequence[Row], prefixes: tuple[str, ...], label: str, command: str
) -> None:
    """Put one benchmark's `rows` into the table in `path` in place of its old ones (lines
    starting with one of `prefixes`; where the first of them was, else after the table's
    last row), keep every other row, and end the file with one line
    `<label> rows: <command> on <time>` for it (the other benchmarks' lines stay)."""
    new = [line for line in table(rows).splitlines() if line.startswith(prefixes)]
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    trailer = f"{label} rows: "
    first = next((i for i, line in enumerate(lines) if line.startswith(prefixes)), None)
    if first is not None:
        lines[first:first] = ["\0"]  # marks the place of the old rows
    kept = [line for line in lines if not line.startswith(prefixes)]
    kept = [line for line in kept if not line.startswith(trailer)]
    last = max((i for i, line in enumerate(kept) if line.startswith("| ")), default=None)
    if first is not None:
        place = kept.index("\0")
        kept[place : place + 1] = new
    elif last is None:
        kept += ["", *table(rows).splitlines()]
    else:
        kept[last + 1 : last + 1] = new
    while kept and not kept[-1].strip():
        kept.pop()
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    kept += ["", f"{trailer}`{command}` on {stamp} (same machine)."]
    path.write_text("\n".join(kept) + "\n", encoding="utf-8")


def leftovers(path: Path) -> list[Path]:
    """The files a kept --workdir may hold of an earlier run's database at `path`: the
    file, its records (in its records folder) and the witness, each with -wal and -shm."""
    from sqlgate.home import record_files

    files = record_files(path)
    return [
        *(Path(f"{base}{end}") for base in (path, files.records) for end in ("", "-wal", "-shm")),
        files.witness,
    ]
