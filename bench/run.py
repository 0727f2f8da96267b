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
import os
import platform
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


@dataclass(frozen=True)
class Plan:
    name: str
    calls: int  # timed calls over stdio
    warmup: int  # untimed calls before them
    floor_calls: int  # timed calls of the in-process floor
    install_peers: bool


FULL = Plan("full", calls=2000, warmup=100, floor_calls=100_000, install_peers=True)
QUICK = Plan("quick", calls=50, warmup=5, floor_calls=1000, install_peers=False)


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
def sqlgate_params(db: Path) -> StdioServerParameters:
    """`python -m sqlgate serve --db DB`, importable from this checkout, no SQLGATE_* flags."""
    path = os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")]))
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "sqlgate", "serve", "--db", str(db)],
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


BENCHMARKS: list[Benchmark] = [call_overhead]


# -- reporting -------------------------------------------------------------------------------
def machine() -> list[str]:
    cpu = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text(errors="replace").splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return [
        f"- CPU: {cpu}; nproc: {os.cpu_count()}",
        f"- OS: {platform.system()} {platform.release()}",
        f"- Python {platform.python_version()}; SQLite {apsw.sqlite_lib_version()} "
        f"(apsw {apsw.apsw_version()})",
    ]


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
            *machine(),
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
