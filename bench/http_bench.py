"""The benchmarks of bench/run.py over streamable HTTP: one client's call latency beside a
no-op server on the same SDK, and what a member's token costs beside the legacy --token on
the same server. The team's load (N concurrent sessions, one member each) is http_load.py.

Both servers run as subprocesses listening on 127.0.0.1 (port chosen by the OS); the client
is this process, the SDK's own streamable HTTP client, one HTTP connection per session.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import AsyncExitStack, contextmanager
from pathlib import Path

import anyio
import httpx2
from benchkit import (
    BENCH,
    BENCH_HTTP_CALLS,
    SRC,
    SUBJECT_HTTP_ADMIN,
    SUBJECT_HTTP_IDENTITY_RATIO,
    SUBJECT_HTTP_MEMBER,
    SUBJECT_HTTP_NOOP,
    SUBJECT_HTTP_RATIO,
    SUBJECT_HTTP_SQLGATE,
    Context,
    Latencies,
    Row,
    latency_row,
)
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult
from peers import text_of, version_of

TOKEN = "bench-" + "t" * 26
_SERVING = re.compile(r"serving MCP over streamable HTTP at (\S+)")
START_TIMEOUT = 60.0


def _child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SQLGATE_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))
    return env


@contextmanager
def http_server(command: Sequence[str], log: Path) -> Iterator[str]:
    """Start a server that prints `serving MCP over streamable HTTP at URL`; yield the URL.
    Its stderr goes to `log`. Stopped with SIGTERM (sqlgate then writes queued audit rows)."""
    process = subprocess.Popen(
        list(command), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True, env=_child_env(),
    )  # fmt: skip
    assert process.stderr is not None
    found: list[str] = []
    ready = threading.Event()

    def drain() -> None:
        assert process.stderr is not None
        with log.open("w", encoding="utf-8") as sink:
            for line in process.stderr:
                sink.write(line)
                sink.flush()
                match = _SERVING.search(line)
                if match and not found:
                    found.append(match.group(1))
                    ready.set()
        ready.set()

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        if not ready.wait(START_TIMEOUT) or not found:
            raise RuntimeError(f"server did not start; see {log}")
        yield found[0]
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        reader.join(10)


def sqlgate_http(db: Path, *flags: str) -> list[str]:
    return [sys.executable, "-m", "sqlgate", "serve", "--transport", "http", "--port", "0",
            "--token", TOKEN, "--db", str(db), *flags]  # fmt: skip


def noop_http() -> list[str]:
    return [sys.executable, str(BENCH / "noop_server.py"), "--http", "0"]


def add_members(db: Path, names: Sequence[str], tier: str) -> dict[str, str]:
    """Make a member of each name (through the members store, as `sqlgate members add`
    does) in the database `db`, which the server is not using yet; returns name -> token."""
    from sqlgate.config import Settings
    from sqlgate.engine.records import Members
    from sqlgate.service import Service

    with Service.open(Settings(db=db)) as service, service.db.server_lock:
        members = Members(service.db.server)
        return {name: members.add(name, tier)[1] for name in names}


def http_client(url: str, token: str, timeout: float = 60) -> tuple[httpx2.AsyncClient, Client]:
    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token}"}, timeout=timeout, trust_env=False
    )
    return http, Client(streamable_http_client(url, http_client=http))


def _select_one(client: Client) -> Callable[[], Awaitable[CallToolResult]]:
    async def call() -> CallToolResult:
        return await client.call_tool("read_query", {"query": "SELECT 1"})

    return call


async def _checked(call: Callable[[], Awaitable[CallToolResult]]) -> None:
    first = await call()
    if first.is_error or "1" not in text_of(first):
        raise RuntimeError(f"read_query('SELECT 1') failed: {text_of(first)[:200]}")


async def _in_turn(
    targets: dict[str, tuple[str, str]], calls: int, warmup: int
) -> dict[str, Latencies]:
    """One client per target (name -> (url, token)), all open at once, called in turn
    (a, b, a, b, ...) after each one's warm-up, so each sees the same moments of the load.
    Each one's rate is its calls over the time its own calls took."""
    opened = {name: http_client(url, token) for name, (url, token) in targets.items()}
    seconds: dict[str, list[float]] = {name: [] for name in targets}
    async with AsyncExitStack() as stack:
        turns = {}
        for name, (http, client) in opened.items():
            await stack.enter_async_context(http)
            turns[name] = _select_one(await stack.enter_async_context(client))
        for call in turns.values():
            await _checked(call)
            for _ in range(warmup):
                await call()
        for _ in range(calls):
            for name, call in turns.items():
                before = time.perf_counter()
                await call()
                seconds[name].append(time.perf_counter() - before)
    return {name: Latencies(taken, sum(taken)) for name, taken in seconds.items()}


def http_call_overhead(ctx: Context) -> list[Row]:
    """read_query('SELECT 1') over streamable HTTP, sequential: sqlgate beside a no-op tool on
    the same SDK (the floor any server on it pays), both running, called in turn."""
    versions = f"sqlgate {version_of('sqlgate')}, mcp {version_of('mcp')}"
    ctx.log(f"{BENCH_HTTP_CALLS}: sqlgate and no-op, {ctx.plan.calls} calls each, in turn")
    try:
        with (
            http_server(sqlgate_http(ctx.folder / "http-calls.db"),
                        ctx.folder / "http-sqlgate.stderr.txt") as ours,
            http_server(noop_http(), ctx.folder / "http-noop.stderr.txt") as floor,
        ):  # fmt: skip
            targets = {"sqlgate": (ours, TOKEN), "noop": (floor, TOKEN)}
            lat = anyio.run(_in_turn, targets, ctx.plan.calls, ctx.plan.warmup)
    except Exception as error:
        reason = f"{type(error).__name__}: {str(error)[:200]}"
        return [Row(BENCH_HTTP_CALLS, SUBJECT_HTTP_SQLGATE, "", "not available", "", "", reason)]
    notes = f"sequential, one client each, called in turn; {versions}"
    rows = [
        latency_row(BENCH_HTTP_CALLS, SUBJECT_HTTP_SQLGATE, lat["sqlgate"], notes),
        latency_row(BENCH_HTTP_CALLS, SUBJECT_HTTP_NOOP, lat["noop"], notes),
    ]
    ratio = round(lat["sqlgate"].percentile(50) / lat["noop"].percentile(50), 2)
    verdict = "goal met (<= 1.2)" if ratio <= 1.2 else "goal not met (> 1.2)"
    rows.append(Row(BENCH_HTTP_CALLS, SUBJECT_HTTP_RATIO, "", f"{ratio:.2f}x", "", "",
                    f"p50 latency ratio; {verdict}"))  # fmt: skip
    return rows


MEMBER = "bench-member"


def http_identity_cost(ctx: Context) -> list[Row]:
    """read_query('SELECT 1') over HTTP, sequential: a member's token (its digest looked up
    in the members table on every request) beside the legacy --token (one constant-time
    comparison), on the same server, in turn."""
    db = ctx.folder / "http-identity.db"
    tokens = add_members(db, [MEMBER], "read")
    ctx.log(f"{BENCH_HTTP_CALLS}: member and --token, {ctx.plan.calls} calls each, in turn")
    try:
        with http_server(sqlgate_http(db), ctx.folder / "http-identity.stderr.txt") as url:
            targets = {"admin": (url, TOKEN), "member": (url, tokens[MEMBER])}
            lat = anyio.run(_in_turn, targets, ctx.plan.calls, ctx.plan.warmup)
    except Exception as error:
        reason = f"{type(error).__name__}: {str(error)[:200]}"
        return [Row(BENCH_HTTP_CALLS, SUBJECT_HTTP_MEMBER, "", "not available", "", "", reason)]
    notes = "sequential; the two clients called in turn on one server"
    rows = [
        latency_row(BENCH_HTTP_CALLS, SUBJECT_HTTP_ADMIN, lat["admin"], notes),
        latency_row(BENCH_HTTP_CALLS, SUBJECT_HTTP_MEMBER, lat["member"], notes),
    ]
    ratio = round(lat["member"].percentile(50) / lat["admin"].percentile(50), 2)
    verdict = "goal met (<= 1.05)" if ratio <= 1.05 else "goal not met (> 1.05)"
    rows.append(Row(BENCH_HTTP_CALLS, SUBJECT_HTTP_IDENTITY_RATIO, "", f"{ratio:.2f}x", "", "",
                    f"p50 latency ratio: what the member lookup adds; {verdict}"))  # fmt: skip
    return rows
