"""The servers the benchmarks of bench/run.py talk to over stdio: how to start sqlgate
from this checkout and the reference mcp-server-sqlite from its own venv under bench/.peers/
(installed there on a full run), how to time calls to them with the SDK client, and a
one-line reason when one fails."""

from __future__ import annotations

import contextlib
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import TextIO

import anyio
from benchkit import BENCH, SRC, Context, Latencies, Plan, Row, time_async
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types import CallToolResult

PEERS = BENCH / ".peers"
REFERENCE_VENV = PEERS / "reference"
REFERENCE_REQUIREMENTS = ["mcp-server-sqlite", "mcp<2"]
PIP_TIMEOUT = 300.0


# -- stdio servers ---------------------------------------------------------------------------
def sqlgate_params(db: Path, *flags: str) -> StdioServerParameters:
    """`python -m sqlgate serve --db DB [FLAGS]`, importable from this checkout."""
    path = os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")]))
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "sqlgate", "serve", "--db", str(db), *flags],
        env={"PYTHONPATH": path},
    )


def noop_params() -> StdioServerParameters:
    """bench/noop_server.py on stdio: the same SDK, a tool that does nothing."""
    return StdioServerParameters(command=sys.executable, args=[str(BENCH / "noop_server.py")])


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


async def time_stdio_side_by_side(
    servers: Sequence[tuple[StdioServerParameters, dict[str, object]]],
    tool: str,
    warmup: int,
    calls: int,
    errlog: TextIO,
) -> list[tuple[Latencies, str]]:
    """The same tool on several stdio servers, one call to each in turn: all of them see the
    same moments of the machine's load, so their ratio holds even when the load moves.
    Each server's latencies (its `total` is the sum of its calls) and last result's text."""
    clock = time.perf_counter
    async with contextlib.AsyncExitStack() as stack:
        clients = [
            await stack.enter_async_context(Client(stdio_client(params, errlog=errlog)))
            for params, _ in servers
        ]
        seconds: list[list[float]] = [[] for _ in servers]
        last: list[str] = [""] * len(servers)
        for turn in range(warmup + calls):
            for i, (client, (_, arguments)) in enumerate(zip(clients, servers, strict=True)):
                before = clock()
                result = await client.call_tool(tool, arguments)
                took = clock() - before
                if result.is_error:
                    raise RuntimeError(f"{tool} failed: {text_of(result)[:200]}")
                if turn >= warmup:
                    seconds[i].append(took)
                last[i] = text_of(result)
        return [(Latencies(s, sum(s)), text) for s, text in zip(seconds, last, strict=True)]


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
