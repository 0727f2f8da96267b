"""The load benchmark of bench/run.py over streamable HTTP: N concurrent MCP sessions, each
its own HTTP connection and each a different member (its own token), cycling through
append_event, write_query (insert), read_query and memory_search; beside it the same
sessions against the no-op server. After the server stopped, the database is read back:
acknowledged events and rows that are missing, calls without their audit row, and audit rows
or events that name someone other than the member whose session made them.
"""

from __future__ import annotations

import json
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import apsw
from benchkit import BENCH_HTTP_LOAD, SUBJECT_HTTP_LOAD_RATIO, Context, Latencies, Row, ms
from http_bench import TOKEN, add_members, http_client, http_server, noop_http, sqlgate_http
from peers import text_of

LOAD_SECONDS_LIMIT = 120.0  # each load level stops here even if calls remain
MIX = ("append_event", "write_query", "read_query", "memory_search")
WARMUP_MEMBER = "load-warmup"
WARMUP_ROUNDS = 2  # untimed calls of each tool of the mix before a level is timed


def member_name(index: int) -> str:
    return f"load-{index:02d}"


@dataclass
class LoadResult:
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    calls: Counter[tuple[str, str]] = field(default_factory=Counter)  # (member, tool) made
    appended: dict[str, str] = field(default_factory=dict)  # marker acknowledged -> member
    inserted: dict[str, str] = field(default_factory=dict)
    elapsed: float = 0.0

    @property
    def made(self) -> int:
        return sum(self.calls.values())


def _arguments(tool: str, marker: str) -> dict[str, Any]:
    if tool == "append_event":
        return {"content": f"load event {marker}", "kind": "note"}
    if tool == "write_query":
        return {"query": "INSERT INTO load(marker) VALUES (?)", "params": [marker]}
    if tool == "read_query":
        return {"query": "SELECT count(*) AS n FROM load"}
    return {"query": "load event", "top_k": 5}


async def _session(
    url: str,
    member: str,
    token: str,
    calls: int,
    deadline: float,
    result: LoadResult,
    index: int,
    mix: Sequence[str],
) -> None:
    http, client = http_client(url, token, timeout=120)
    async with http, client:
        for n in range(calls):
            if time.monotonic() > deadline:
                break
            tool = mix[(index + n) % len(mix)]
            marker = uuid.uuid4().hex
            result.calls[member, tool] += 1
            before = time.perf_counter()
            try:
                answer = await client.call_tool(tool, _arguments(tool, marker))
            except Exception as error:  # a transport failure is an error, not a crash
                result.errors.append(f"{tool}: {type(error).__name__}: {error}"[:300])
                continue
            result.latencies.append(time.perf_counter() - before)
            if answer.is_error:
                result.errors.append(f"{tool}: {text_of(answer)[:300]}")
            elif tool == "append_event":
                result.appended[marker] = member
            elif tool == "write_query":
                result.inserted[marker] = member


async def _load(
    url: str, tokens: dict[str, str], per_session: int, mix: Sequence[str] = MIX
) -> tuple[LoadResult, LoadResult]:
    """A warm-up (one session, each tool of the mix WARMUP_ROUNDS times, untimed), then one
    session per member of `tokens` but the warm-up's, all at once. Returns (warm-up, timed)."""
    warm = LoadResult()
    warm_token = tokens.get(WARMUP_MEMBER, TOKEN)
    await _session(url, WARMUP_MEMBER, warm_token, len(mix) * WARMUP_ROUNDS, float("inf"),
                   warm, 0, mix)  # fmt: skip
    result = LoadResult()
    members = [(name, token) for name, token in tokens.items() if name != WARMUP_MEMBER]
    deadline = time.monotonic() + LOAD_SECONDS_LIMIT
    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        for index, (member, token) in enumerate(members):
            group.start_soon(_session, url, member, token, per_session, deadline, result,
                             index, mix)  # fmt: skip
    result.elapsed = time.perf_counter() - started
    return warm, result


def _prepare(db: Path, sessions: int) -> dict[str, str]:
    """The database of one load level: the `load` table, and a member (tier write) for each
    session and for the warm-up; returns member -> token."""
    from sqlgate.config import Settings
    from sqlgate.service import Service

    with Service.open(Settings(db=db)) as service:
        service.write_query("CREATE TABLE load(id INTEGER PRIMARY KEY, marker TEXT NOT NULL)")
    names = [WARMUP_MEMBER, *(member_name(i) for i in range(sessions))]
    return add_members(db, names, "write")


def _records(db: Path) -> apsw.Connection:
    """A read-only connection to the records file of `db` (the audit log, the memory)."""
    from sqlgate.home import record_files

    return apsw.Connection(str(record_files(db).records), flags=apsw.SQLITE_OPEN_READONLY)


def _last_audit_id(db: Path) -> int:
    conn = _records(db)
    try:
        return int(conn.execute("SELECT coalesce(max(id), 0) FROM query_log").fetchall()[0][0])
    finally:
        conn.close()


def _misattributed(audited: Counter[tuple[str, str]], made: Counter[tuple[str, str]]) -> int:
    """Audit rows of the run that no call of the row's (actor, tool) accounts for: rows of an
    actor that made no such call, or more rows than it made calls."""
    return sum(max(0, n - made.get(key, 0)) for key, n in audited.items())


def _checked(db: Path, runs: Sequence[LoadResult], audit_before: int) -> dict[str, Any]:
    """What the database says after the server stopped: acknowledged writes missing, the
    chain's verdict, calls without their audit row, and rows naming the wrong member."""
    from sqlgate.config import Settings
    from sqlgate.service import Service

    made: Counter[tuple[str, str]] = Counter()
    appended: dict[str, str] = {}
    inserted: dict[str, str] = {}
    for run in runs:
        made.update(run.calls)
        appended.update(run.appended)
        inserted.update(run.inserted)
    conn, records = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY), _records(db)
    try:
        events = {str(c): str(s) for c, s in records.execute(
            "SELECT content, session FROM memory_events")}  # fmt: skip
        markers = {str(m) for (m,) in conn.execute("SELECT marker FROM load")}
        rows = records.execute(
            "SELECT actor, tool, detail FROM query_log WHERE id > ?", (audit_before,)
        ).fetchall()
    finally:
        conn.close()
        records.close()
    with Service.open(Settings(db=db), read_only=True) as service:
        chain = service.memory.chain.verify()
    audited: Counter[tuple[str, str]] = Counter((str(a), str(t)) for a, t, _ in rows)
    # an insert's row names its marker (params): exactly whose call it was
    wrong_inserts = 0
    for actor, tool, detail in rows:
        if tool == "write_query" and isinstance(detail, str):
            params = json.loads(json.loads(detail).get("params") or "[]")
            owner = inserted.get(params[0]) if params else None
            wrong_inserts += owner is not None and owner != actor
    # an event's session is `<server session>/<actor>`, then `/<connection>` with a protocol
    # revision that has sessions (engine.records.actors)
    wrong_events = sum(
        (f"load event {marker}" in events)
        and events[f"load event {marker}"].split("/")[1:2] != [member]
        for marker, member in appended.items()
    )
    return {
        "events lost": sum(f"load event {m}" not in events for m in appended),
        "rows lost": sum(m not in markers for m in inserted),
        "chain": "ok" if chain.ok else f"BROKEN at {chain.first_broken_id}: {chain.reason}",
        "audit rows missing": sum(made.values()) - len(rows),
        "audit rows naming another": _misattributed(audited, made) + wrong_inserts,
        "events naming another": wrong_events,
    }


def _rate_row(subject: str, result: LoadResult, notes: str) -> Row:
    lat = Latencies(result.latencies, result.elapsed) if result.latencies else None
    rate = f"{result.made / result.elapsed:,.0f} calls/s"
    return Row(
        BENCH_HTTP_LOAD, subject, f"{result.made:,}", rate,
        ms(lat.percentile(50)) if lat else "", ms(lat.percentile(99)) if lat else "", notes,
    )  # fmt: skip


def _sessions(n: int) -> str:
    return f"{n} session{'s' if n > 1 else ''}"


def _merged(results: Sequence[LoadResult]) -> LoadResult:
    """Several runs of one level as one: their calls, latencies and errors, and their time."""
    total = LoadResult()
    for result in results:
        total.latencies += result.latencies
        total.errors += result.errors
        total.calls.update(result.calls)
        total.appended.update(result.appended)
        total.inserted.update(result.inserted)
        total.elapsed += result.elapsed
    return total


def _sqlgate_level(ctx: Context, sessions: int, per_session: int, run: int) -> tuple[
    LoadResult, dict[str, Any]
]:  # fmt: skip
    """One timed run of sqlgate on a fresh database, and what the database says after it."""
    db = ctx.folder / f"load-{sessions}-{run}.db"
    tokens = _prepare(db, sessions)
    audit_before = _last_audit_id(db)
    with http_server(sqlgate_http(db), ctx.folder / f"load-{sessions}-{run}.stderr.txt") as url:
        warm, result = anyio.run(_load, url, tokens, per_session)
    result.errors = warm.errors + result.errors
    return result, _checked(db, (warm, result), audit_before)


def _floor_level(sessions: int, per_session: int, log: Path) -> LoadResult:
    """The same sessions and client against the no-op server: what the SDK alone allows."""
    tokens = {member_name(i): TOKEN for i in range(sessions)}  # it takes any token
    with http_server(noop_http(), log) as url:
        _, result = anyio.run(_load, url, tokens, per_session, ("read_query",))
    return result


def _load_notes(result: LoadResult, checks: Sequence[dict[str, Any]]) -> str:
    def total(key: str) -> int:
        return sum(int(check[key]) for check in checks)

    chains = [str(check["chain"]) for check in checks if check["chain"] != "ok"]
    notes = (
        f"{len(result.errors)} errors; lost after the run: {total('events lost')} events, "
        f"{total('rows lost')} rows, {total('audit rows missing')} audit rows; naming another "
        f"member: {total('audit rows naming another')} audit rows, "
        f"{total('events naming another')} events; chain {chains[0] if chains else 'ok'}"
    )
    if result.errors:
        notes += f"; first error: {result.errors[0][:120]}"
    return notes


def http_load(ctx: Context) -> list[Row]:
    """Each level of sessions: sqlgate (one member a session), then the no-op floor with the
    same sessions and client, `load_repeats` times in turn (sqlgate, no-op, sqlgate, ...),
    then the ratio of their rates over all the runs."""
    rows: list[Row] = []
    runs = ctx.plan.load_repeats
    for sessions in ctx.plan.load_sessions:
        per_session = max(4, ctx.plan.load_calls // sessions)
        subject = f"sqlgate, {_sessions(sessions)} ({sessions} member{'s' if sessions > 1 else ''})"
        floor_subject = f"no-op tool, same SDK, {_sessions(sessions)} (floor)"
        ours: list[LoadResult] = []
        floors: list[LoadResult] = []
        checks: list[dict[str, Any]] = []
        failed: dict[str, str] = {}
        for run in range(runs):
            ctx.log(f"{BENCH_HTTP_LOAD}: {sessions} sessions (members) x {per_session} calls, "
                    f"run {run + 1} of {runs}")  # fmt: skip
            try:
                result, checked = _sqlgate_level(ctx, sessions, per_session, run)
                ours.append(result)
                checks.append(checked)
            except Exception as error:
                failed.setdefault(subject, f"{type(error).__name__}: {str(error)[:200]}")
            try:
                log = ctx.folder / f"load-noop-{sessions}-{run}.stderr.txt"
                floors.append(_floor_level(sessions, per_session, log))
            except Exception as error:
                failed.setdefault(floor_subject, f"{type(error).__name__}: {str(error)[:200]}")
        for name, reason in failed.items():
            rows.append(Row(BENCH_HTTP_LOAD, name, "", "not available", "", "", reason))
        if failed:
            continue
        result, floor = _merged(ours), _merged(floors)
        rows.append(_rate_row(subject, result, _load_notes(result, checks)))
        rows.append(_rate_row(floor_subject, floor, f"{len(floor.errors)} errors; every call "
                              "is read_query, answered without a database"))  # fmt: skip
        pairs = [
            (a.made / a.elapsed) / (b.made / b.elapsed) for a, b in zip(ours, floors, strict=True)
        ]
        ratio = (result.made / result.elapsed) / (floor.made / floor.elapsed)
        goal = "; goal >= 0.8x at 16 sessions" if sessions == 16 else ""
        each = f" (each run in turn: {', '.join(f'{p:.2f}x' for p in pairs)})" if runs > 1 else ""
        rows.append(Row(BENCH_HTTP_LOAD, f"{SUBJECT_HTTP_LOAD_RATIO}, {_sessions(sessions)}",
                        "", f"{ratio:.2f}x", "", "", f"calls/s ratio over {runs} run"
                        f"{'s' if runs > 1 else ''} of each{each}{goal}"))  # fmt: skip
    return rows
