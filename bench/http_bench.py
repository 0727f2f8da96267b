"""The benchmarks of bench/run.py over streamable HTTP: one client's call latency beside a
no-op server on the same SDK, and a team's load (N concurrent sessions) with a check that
nothing acknowledged was lost.

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
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import apsw
import httpx2
from benchkit import (
    BENCH,
    BENCH_HTTP_CALLS,
    BENCH_HTTP_LOAD,
    SRC,
    SUBJECT_HTTP_NOOP,
    SUBJECT_HTTP_RATIO,
    SUBJECT_HTTP_SQLGATE,
    Context,
    Latencies,
    Row,
    latency_row,
    ms,
    time_async,
)
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult
from peers import text_of, version_of

TOKEN = "bench-" + "t" * 26
_SERVING = re.compile(r"serving MCP over streamable HTTP at (\S+)")
START_TIMEOUT = 60.0
LOAD_SECONDS_LIMIT = 120.0  # each load level stops here even if calls remain


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


async def _client_calls(url: str, calls: int, warmup: int) -> Latencies:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60, trust_env=False) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):

        async def call() -> CallToolResult:
            return await client.call_tool("read_query", {"query": "SELECT 1"})

        first = await call()
        if first.is_error or "1" not in text_of(first):
            raise RuntimeError(f"read_query('SELECT 1') failed: {text_of(first)[:200]}")
        for _ in range(warmup):
            await call()
        return await time_async(call, calls)


def http_call_overhead(ctx: Context) -> list[Row]:
    """read_query('SELECT 1') over streamable HTTP, sequential, one client: sqlgate beside a
    no-op tool on the same SDK (the floor any server on it pays)."""
    rows: list[Row] = []
    p50: dict[str, float] = {}
    servers = [
        (SUBJECT_HTTP_SQLGATE, sqlgate_http(ctx.folder / "http-calls.db"), "sqlgate"),
        (SUBJECT_HTTP_NOOP, noop_http(), "noop"),
    ]
    versions = f"sqlgate {version_of('sqlgate')}, mcp {version_of('mcp')}"
    for subject, command, slug in servers:
        ctx.log(f"{subject}: {ctx.plan.calls} calls after {ctx.plan.warmup} warm-up")
        try:
            with http_server(command, ctx.folder / f"http-{slug}.stderr.txt") as url:
                lat = anyio.run(_client_calls, url, ctx.plan.calls, ctx.plan.warmup)
        except Exception as error:
            reason = f"{type(error).__name__}: {str(error)[:200]}"
            rows.append(Row(BENCH_HTTP_CALLS, subject, "", "not available", "", "", reason))
            continue
        p50[subject] = lat.percentile(50)
        rows.append(
            latency_row(BENCH_HTTP_CALLS, subject, lat, f"sequential, one client; {versions}")
        )
    if len(p50) == 2:
        ratio = p50[SUBJECT_HTTP_SQLGATE] / p50[SUBJECT_HTTP_NOOP]
        verdict = "goal met (<= 1.2)" if ratio <= 1.2 else "goal not met (> 1.2)"
        rows.append(Row(BENCH_HTTP_CALLS, SUBJECT_HTTP_RATIO, "", f"{ratio:.2f}x", "", "",
                        f"p50 latency ratio; {verdict}"))  # fmt: skip
    return rows


# -- load --------------------------------------------------------------------------------------
MIX = ("append_event", "write_query", "read_query", "memory_search")


@dataclass
class LoadResult:
    latencies: list[float] = field(default_factory=list)
    by_tool: dict[str, list[float]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    calls: dict[str, int] = field(default_factory=dict)  # made, by tool
    appended: list[str] = field(default_factory=list)  # markers acknowledged
    inserted: list[str] = field(default_factory=list)
    elapsed: float = 0.0


def _arguments(tool: str, marker: str) -> dict[str, Any]:
    if tool == "append_event":
        return {"content": f"load event {marker}", "kind": "note"}
    if tool == "write_query":
        return {"query": "INSERT INTO load(marker) VALUES (?)", "params": [marker]}
    if tool == "read_query":
        return {"query": "SELECT count(*) AS n FROM load"}
    return {"query": "load event", "top_k": 5}


async def _session(
    url: str, calls: int, deadline: float, result: LoadResult, index: int, mix: Sequence[str]
) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=120, trust_env=False) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        for n in range(calls):
            if time.monotonic() > deadline:
                break
            tool = mix[(index + n) % len(mix)]
            marker = uuid.uuid4().hex
            result.calls[tool] = result.calls.get(tool, 0) + 1
            before = time.perf_counter()
            try:
                answer = await client.call_tool(tool, _arguments(tool, marker))
            except Exception as error:  # a transport failure is an error, not a crash
                result.errors.append(f"{tool}: {type(error).__name__}: {error}"[:300])
                continue
            took = time.perf_counter() - before
            result.latencies.append(took)
            result.by_tool.setdefault(tool, []).append(took)
            if answer.is_error:
                result.errors.append(f"{tool}: {text_of(answer)[:300]}")
            elif tool == "append_event":
                result.appended.append(marker)
            elif tool == "write_query":
                result.inserted.append(marker)


async def _load(url: str, sessions: int, per_session: int, mix: Sequence[str] = MIX) -> LoadResult:
    result = LoadResult()
    deadline = time.monotonic() + LOAD_SECONDS_LIMIT
    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        for index in range(sessions):
            group.start_soon(_session, url, per_session, deadline, result, index, mix)
    result.elapsed = time.perf_counter() - started
    return result


def _prepare(db: Path) -> None:
    from sqlgate.config import Settings
    from sqlgate.service import Service

    with Service.open(Settings(db=db)) as service:
        service.write_query("CREATE TABLE load(id INTEGER PRIMARY KEY, marker TEXT NOT NULL)")


def _lost(db: Path, result: LoadResult, audit_before: int) -> dict[str, Any]:
    """What the database says after the server stopped: acknowledged writes missing, the
    chain's verdict, and calls without their audit row."""
    from sqlgate.config import Settings
    from sqlgate.service import Service

    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        contents = {str(c) for (c,) in conn.execute("SELECT content FROM memory_events")}
        markers = {str(m) for (m,) in conn.execute("SELECT marker FROM load")}
        audited = int(conn.execute("SELECT count(*) FROM query_log").fetchall()[0][0])
    finally:
        conn.close()
    with Service.open(Settings(db=db), read_only=True) as service:
        chain = service.memory.chain.verify()
    made = sum(result.calls.values())
    return {
        "events lost": sum(f"load event {m}" not in contents for m in result.appended),
        "rows lost": sum(m not in markers for m in result.inserted),
        "chain": "ok" if chain.ok else f"BROKEN at {chain.first_broken_id}: {chain.reason}",
        "audit rows missing": made - (audited - audit_before),
    }


def http_load(ctx: Context) -> list[Row]:
    """N concurrent MCP sessions over HTTP, each its own connection, cycling through
    append_event, write_query (insert), read_query and memory_search."""
    rows: list[Row] = []
    for sessions in ctx.plan.load_sessions:
        per_session = max(4, ctx.plan.load_calls // sessions)
        subject = f"sqlgate, {sessions} session{'s' if sessions > 1 else ''}"
        db = ctx.folder / f"load-{sessions}.db"
        _prepare(db)
        audit_before = _audit_rows(db)
        ctx.log(f"{BENCH_HTTP_LOAD}: {sessions} sessions x {per_session} calls")
        try:
            with http_server(sqlgate_http(db), ctx.folder / f"load-{sessions}.stderr.txt") as url:
                result = anyio.run(_load, url, sessions, per_session)
        except Exception as error:
            reason = f"{type(error).__name__}: {str(error)[:200]}"
            rows.append(Row(BENCH_HTTP_LOAD, subject, "", "not available", "", "", reason))
            continue
        checked = _lost(db, result, audit_before)
        made = sum(result.calls.values())
        lat = Latencies(result.latencies, result.elapsed) if result.latencies else None
        notes = (
            f"{len(result.errors)} errors; lost after the run: {checked['events lost']} events, "
            f"{checked['rows lost']} rows, {checked['audit rows missing']} audit rows; chain "
            f"{checked['chain']}"
        )
        if result.errors:
            notes += f"; first error: {result.errors[0][:120]}"
        rows.append(Row(
            BENCH_HTTP_LOAD, subject, f"{made:,}",
            f"{made / result.elapsed:,.0f} calls/s",
            ms(lat.percentile(50)) if lat else "", ms(lat.percentile(99)) if lat else "", notes,
        ))  # fmt: skip
        rows.append(_load_floor(ctx, sessions, per_session))
    return rows


def _load_floor(ctx: Context, sessions: int, per_session: int) -> Row:
    """The same sessions and client against the no-op server: what the SDK alone allows."""
    subject = f"no-op tool, same SDK, {sessions} session{'s' if sessions > 1 else ''} (floor)"
    try:
        with http_server(noop_http(), ctx.folder / f"load-noop-{sessions}.stderr.txt") as url:
            result = anyio.run(_load, url, sessions, per_session, ("read_query",))
    except Exception as error:
        reason = f"{type(error).__name__}: {str(error)[:200]}"
        return Row(BENCH_HTTP_LOAD, subject, "", "not available", "", "", reason)
    made = sum(result.calls.values())
    lat = Latencies(result.latencies, result.elapsed)
    return Row(
        BENCH_HTTP_LOAD, subject, f"{made:,}", f"{made / result.elapsed:,.0f} calls/s",
        ms(lat.percentile(50)), ms(lat.percentile(99)),
        f"{len(result.errors)} errors; every call is read_query, answered without a database",
    )  # fmt: skip


def _audit_rows(db: Path) -> int:
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return int(conn.execute("SELECT count(*) FROM query_log").fetchall()[0][0])
    finally:
        conn.close()
