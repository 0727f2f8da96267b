"""The benchmarks of bench/run.py that compare servers over real stdio: call overhead,
result size and audit cost; and the concurrent appends the chain benchmark times."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

import anyio
import apsw
from benchkit import (
    BENCH_AUDIT,
    BENCH_CALLS,
    BENCH_RESULT,
    SUBJECT_AUDIT_OFF,
    SUBJECT_AUDIT_ON,
    SUBJECT_AUDIT_RATIO,
    SUBJECT_FLOOR,
    SUBJECT_NOOP,
    SUBJECT_NOOP_RATIO,
    SUBJECT_RATIO,
    SUBJECT_REFERENCE,
    SUBJECT_RESULT_RATIO,
    SUBJECT_RESULT_RAW,
    SUBJECT_RESULT_TIME,
    SUBJECT_RESULT_VALUES,
    SUBJECT_SQLGATE,
    Context,
    Latencies,
    Row,
    latency_row,
    ms,
    time_sync,
)
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from peers import (
    REFERENCE_VENV,
    noop_params,
    peer_versions,
    reference_params,
    server_failure,
    sqlgate_params,
    stdio_rows,
    text_of,
    time_stdio_read_query,
    time_stdio_side_by_side,
    version_of,
)


# -- benchmarks ------------------------------------------------------------------------------
def call_overhead(ctx: Context) -> list[Row]:
    """read_query('SELECT 1'): sqlgate and the reference over stdio, raw apsw in-process."""
    rows: list[Row] = []
    rates: dict[str, float] = {}
    p50: dict[str, float] = {}
    servers: list[tuple[str, str, StdioServerParameters | str]] = [
        (SUBJECT_SQLGATE, "sqlgate", sqlgate_params(ctx.folder / "calls-sqlgate.db")),
        (SUBJECT_NOOP, "noop", noop_params()),
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
        p50[subject] = lat.percentile(50)
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

    if SUBJECT_SQLGATE in p50 and SUBJECT_NOOP in p50:
        ratio = p50[SUBJECT_SQLGATE] / p50[SUBJECT_NOOP]
        rows.append(Row(BENCH_CALLS, SUBJECT_NOOP_RATIO, "", f"{ratio:.2f}x", "", "",
                        "what sqlgate adds to the SDK's own cost of a call"))  # fmt: skip
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
    servers: list[ResultServer] = []
    for slug in ("sqlgate", "reference"):
        make_items(ctx.folder / f"result-{slug}.db", n)
    servers.append(
        (
            SUBJECT_SQLGATE,
            "result-sqlgate",
            # the bench made the items table itself: consent to add sqlgate's tables beside it
            sqlgate_params(ctx.folder / "result-sqlgate.db", *caps, "--adopt-db"),
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
    measured = side_by_side(ctx, servers)
    p50: dict[str, float] = {}
    for subject, slug, params, args in servers:
        got = measured.get(subject) or stdio_rows(
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
        p50[subject] = lat.percentile(50)
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
    if SUBJECT_SQLGATE in p50 and SUBJECT_REFERENCE in p50:
        ratio = p50[SUBJECT_SQLGATE] / p50[SUBJECT_REFERENCE]
        verdict = "goal met (<= 1.5x)" if ratio <= 1.5 else "goal not met (> 1.5x)"
        how = "one call to each server in turn" if measured else "one server after the other"
        rows.append(
            Row(BENCH_RESULT, SUBJECT_RESULT_TIME, "", f"{ratio:.2f}x", "", "", f"{verdict}; {how}")
        )
    else:
        rows.append(
            Row(BENCH_RESULT, SUBJECT_RESULT_TIME, "", "n/a", "", "", "needs both stdio rows")
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


ResultServer = tuple[str, str, StdioServerParameters | str, dict[str, object]]


def side_by_side(ctx: Context, servers: Sequence[ResultServer]) -> dict[str, tuple[Latencies, str]]:
    """The result-size calls of every available server, alternating (peers.py); empty when
    fewer than two can start, or when this fails (each server is then timed alone)."""
    ready = [
        (subject, params, args)
        for subject, _, params, args in servers
        if not isinstance(params, str)
    ]
    if len(ready) < 2:
        return {}
    errlog_path = ctx.folder / "result-side-by-side.stderr.txt"
    subjects = [subject for subject, _, _ in ready]
    ctx.log(
        f"{BENCH_RESULT}, {' and '.join(subjects)}: {ctx.plan.result_calls} calls each, "
        "in turn, after 2 warm-up"
    )
    calls = [(params, args) for _, params, args in ready if not isinstance(params, str)]
    with errlog_path.open("w", encoding="utf-8") as errlog:
        try:
            got = anyio.run(
                time_stdio_side_by_side, calls, "read_query", 2, ctx.plan.result_calls, errlog
            )
        except Exception as error:
            errlog.flush()
            ctx.log(f"side by side failed, {server_failure(error, errlog_path)}: one at a time")
            return {}
    return dict(zip(subjects, got, strict=True))


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
