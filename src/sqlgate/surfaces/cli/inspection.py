"""`sqlgate verify|log|stats|export|tools`: what a person (or a script) asks of a database.

Each command prints a readable table by default and JSON with `--json`. They read: nothing
is added to the audit log, and the only write is the one verification itself makes (the
witness records the last verified event). A database file that does not exist is reported
(exit 3), never created. `verify` exits 9 when the chain is broken, so a script can tell a
broken chain (9) from a database that cannot be opened (8) or a bad argument (2).
"""

from __future__ import annotations

import csv
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import click

from sqlgate.errors import ChainBroken, InvalidArgument
from sqlgate.surfaces import terminal
from sqlgate.surfaces.cli.listing import Column, is_terminal, print_listing, print_pairs
from sqlgate.surfaces.cli.options import (
    existing_service,
    reports_errors,
    settings_from,
    settings_options,
)

if TYPE_CHECKING:  # imported when a command runs, not at start-up
    import apsw
    from rich.progress import Progress

    from sqlgate.config import Settings

__all__ = [
    "CHAIN_BROKEN_EXIT",
    "EXPORT_TABLES",
    "INSPECT_COMMANDS",
    "export",
    "log",
    "stats",
    "tools",
    "verify",
]

CHAIN_BROKEN_EXIT = ChainBroken.exit_code
DB_OPTIONS = ("db", "busy_timeout")
JSON_OPTION = click.option("--json", "as_json", is_flag=True, help="print JSON for scripts")
# what `export` writes, in this order: (table, the `type` of its lines, its JSON text columns)
EXPORT_TABLES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("memory_events", "event", ("tags",)),
    ("memory_checkpoints", "checkpoint", ()),
    ("claims", "claim", ("evidence",)),
    ("claims_history", "claim_history", ("detail",)),
)
_EXPORT_FORMAT = 1
_PROGRESS_ROWS = 1000  # export rows between two progress updates


def _stderr_progress() -> Progress:
    """A progress bar on stderr, shown only when stderr is a terminal (pipes stay clean)."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    console = Console(stderr=True)
    return Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
        TimeRemainingColumn(), console=console, transient=True, disable=not console.is_terminal,
    )  # fmt: skip


# -- verify ---------------------------------------------------------------------------------
@click.command()
@JSON_OPTION
@settings_options(DB_OPTIONS, existing_db=True)
@reports_errors
def verify(as_json: bool, **values: Any) -> None:
    """Recompute every hash and link of the memory chain and check its witness.

    Exit 0 when the chain is whole, 9 when it is broken (the first broken event is named).
    """
    with existing_service(values, read_only=True) as service, _stderr_progress() as progress:
        task = progress.add_task("verifying the memory chain", total=None)

        def advance(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        status = service.memory.chain.verify(progress=advance)
    if as_json:
        click.echo(terminal.json_text(status.as_json()))
    elif status.ok and status.head_id is None:
        click.echo("chain ok: no events yet")
    elif status.ok:
        click.echo(
            f"chain ok: {status.events} events, head {status.head_id} "
            f"(hash {(status.head_hash or '')[:16]}…)"
            + (f"; {status.unconfirmed}" if status.unconfirmed else "")
        )
    else:
        where = "" if status.first_broken_id is None else f" at event {status.first_broken_id}"
        click.echo(f"chain BROKEN{where}: {terminal.visible(status.reason or '')}")
    if not status.ok:
        raise SystemExit(CHAIN_BROKEN_EXIT)


# -- log ------------------------------------------------------------------------------------
_LOG_COLUMNS = ("id", "ts", "session", "tool", "query", "ok", "rows", "error", "duration_ms",
                "detail")  # fmt: skip


@click.command()
@click.option("--errors", is_flag=True, help="only the calls that failed")
@click.option("--since", default=None, help="only calls at or after this ISO date or date-time")
@click.option("--tool", default=None, help="only calls of this tool (e.g. read_query)")
@click.option("--limit", type=click.IntRange(min=0), default=50, show_default=True,
              help="newest calls shown; 0 for all")  # fmt: skip
@JSON_OPTION
@settings_options(DB_OPTIONS, existing_db=True)
@reports_errors
def log(
    errors: bool, since: str | None, tool: str | None, limit: int, as_json: bool, **values: Any
) -> None:
    """The audit log (query_log): one row per tool call, newest first."""
    from sqlgate.memory.inputs import moment

    start = moment(since, "--since")
    where: list[str] = []
    params: list[Any] = []
    if errors:
        where.append("ok = 0")
    if start is not None:
        where.append("ts >= ?")
        params.append(start)
    if tool is not None:
        where.append("tool = ?")
        params.append(tool)
    sql = (
        f"SELECT {', '.join(_LOG_COLUMNS)} FROM query_log "
        f"{'WHERE ' + ' AND '.join(where) if where else ''} ORDER BY id DESC LIMIT ?"
    )
    params.append(limit or -1)
    with existing_service(values, read_only=True) as service, service.db.reading() as conn:
        calls = [_log_record(row) for row in conn.execute(sql, params)]
    if not as_json:
        calls = [{**call, "what": _what(call)} for call in calls]
    print_listing(
        calls, _LOG_TABLE, as_json=as_json, title="audit log, newest first",
        empty="no calls in the audit log" + (" match" if where else ""),
    )  # fmt: skip


def _log_record(row: Sequence[Any]) -> dict[str, Any]:
    record = dict(zip(_LOG_COLUMNS, row, strict=True))
    record["ok"] = bool(record["ok"])
    record["detail"] = _parsed(record["detail"])
    return record


def _what(call: Mapping[str, Any]) -> str:
    """The error of a failed call; else its statement, or its detail (key=value) if none.
    Whole: the listing wraps it on a terminal and keeps it on one line in a pipe."""
    if not call["ok"] and call["error"]:
        return terminal.one_line(call["error"])
    if call["query"]:
        return terminal.one_line(call["query"])
    detail = call["detail"]
    if isinstance(detail, dict):
        shown = (f"{key}={value}" for key, value in detail.items() if value is not None)
        return terminal.one_line(" ".join(shown))
    return terminal.one_line("" if detail is None else str(detail))


_LOG_TABLE = (
    Column("id", "id", keep_whole=True),
    Column("ts", "time (UTC)", keep_whole=True),
    Column("session", "session", keep_whole=True),
    Column("tool", "tool", keep_whole=True),
    Column("ok", "result", render=lambda ok: "ok" if ok else "error"),
    Column("rows", "rows"),
    Column("duration_ms", "ms", render=lambda ms: f"{ms:.1f}"),
    Column("what", "statement, detail or error"),
)


def _parsed(text: Any) -> Any:
    """A JSON text column as its value; the stored text itself when it is not valid JSON."""
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


# -- stats ----------------------------------------------------------------------------------
@click.command()
@JSON_OPTION
@settings_options((*DB_OPTIONS, "query_timeout"), existing_db=True)
@reports_errors
def stats(as_json: bool, **values: Any) -> None:
    """Memory, claims and audit counts, and the rows of every table (chain checked cheaply).

    `queued` counts audit rows waiting for the write lock (another process held it).
    `replication`: running, restarting (Litestream died: its exit and last error), gone (the
    process replicating it was killed), stopped, or not configured."""
    from sqlgate.engine.audit_queue import queued_rows
    from sqlgate.engine.limits import CallControl
    from sqlgate.surfaces.replication.status import replication_report

    with existing_service(values, read_only=True) as service:
        memory = json.loads(service.memory.stats().text)
        listing, _ = service.introspection.list_tables(True, CallControl())
        with service.db.reading() as conn:
            claims = dict(conn.execute("SELECT state, count(*) FROM claims GROUP BY 1 ORDER BY 1"))
            calls, failed = conn.execute(
                "SELECT count(*), coalesce(sum(ok = 0), 0) FROM query_log"
            ).fetchall()[0]
    report = {
        "db": str(service.settings.db),
        "memory": memory,
        "claims": claims,
        "audit": {"calls": calls, "errors": failed, "queued": queued_rows(service.settings.db)},
        "tables": _tables(listing),
        "replication": replication_report(service.settings.db),
    }
    if as_json:
        click.echo(terminal.json_dumps(report))
    else:
        _print_stats(report)


def _tables(listing: str) -> list[dict[str, Any]]:
    """list_tables' CSV (name,type,system,rows and a `# …` trailer) as records."""
    lines = [line for line in listing.splitlines() if not line.startswith("# ")]
    return [
        {"name": name, "type": kind, "system": system == "1", "rows": int(rows) if rows else None}
        for name, kind, system, rows in csv.reader(lines[1:])
    ]


def _print_stats(report: dict[str, Any]) -> None:
    from sqlgate.surfaces.replication.status import describe as describe_replication

    memory = report["memory"]
    chain = memory["chain"]
    if chain["ok"]:
        chain_line = f"ok up to event {chain['head_id']}" if chain["head_id"] else "ok (empty)"
        if chain.get("unconfirmed"):
            chain_line += "; newer events unconfirmed (another writer held the lock)"
    else:
        chain_line = f"BROKEN at event {chain['first_broken_id']}: {chain['reason']}"
    print_pairs(
        [
            ("database", report["db"]),
            ("database size", f"{int(memory['db_bytes']):,} bytes"),
            ("events", memory["events"]),
            ("checkpoints", memory["checkpoints"]),
            ("sessions", memory["sessions_total"]),
            ("first / last event", f"{memory['first'] or '-'} / {memory['last'] or '-'}"),
            ("event kinds", ", ".join(f"{k} {n}" for k, n in memory["kinds"].items()) or "-"),
            ("chain (incremental check)", chain_line),
            ("claims", ", ".join(f"{k} {n}" for k, n in report["claims"].items()) or "-"),
            ("audited calls", f"{report['audit']['calls']} ({report['audit']['errors']} failed)"),
            ("audit rows queued", f"{report['audit']['queued']} (waiting for the write lock)"),
            ("replication", describe_replication(report["replication"])),
        ],
        title=report["db"],
    )
    click.echo()
    print_listing(
        report["tables"], _TABLES_TABLE, as_json=False, title="tables and views",
        empty="no tables",
    )  # fmt: skip


_TABLES_TABLE = (
    Column("name", "table"),
    Column("type", "type", keep_whole=True),
    Column("system", "server", render=lambda system: "yes" if system else ""),
    Column("rows", "rows", keep_whole=True),
)


# -- export ---------------------------------------------------------------------------------
@click.command()
@click.option("--out", "out", default="-", show_default=True,
              help="file to write (replaced when complete), or - for stdout")  # fmt: skip
@settings_options(DB_OPTIONS, existing_db=True)
@reports_errors
def export(out: str, **values: Any) -> None:
    """Memory events, checkpoints, claims and claims history as JSON lines.

    The first line describes the export (`"type": "export"`, counts); every other line is
    one row with a `type` of event, checkpoint, claim or claim_history. One consistent
    snapshot, streamed: memory use does not grow with the database.
    """
    from sqlgate import __version__
    from sqlgate.engine.audit import utc_timestamp

    with existing_service(values, read_only=True) as service, service.db.snapshot_reader() as conn:
        counts = {kind: _count(conn, table) for table, kind, _ in EXPORT_TABLES}
        header = {"type": "export", "format": _EXPORT_FORMAT, "sqlgate": __version__,
                  "exported_at": utc_timestamp(time.time()), "counts": counts}  # fmt: skip
        with _output(out) as sink, _stderr_progress() as progress:
            task = progress.add_task("exporting", total=sum(counts.values()))
            sink.write(_jsonl(header))
            for done, record in enumerate(_records(conn), start=1):
                sink.write(_jsonl(record))
                if done % _PROGRESS_ROWS == 0:
                    progress.update(task, completed=done)
    if out != "-":
        shown = ", ".join(f"{kind} {n}" for kind, n in counts.items())
        click.echo(f"exported to {out}: {shown}", err=True)


def _count(conn: apsw.Connection, table: str) -> int:
    rows: list[tuple[Any, ...]] = conn.execute(f"SELECT count(*) FROM {table}").fetchall()
    return int(rows[0][0])


def _records(conn: apsw.Connection) -> Iterator[dict[str, Any]]:
    for table, kind, json_columns in EXPORT_TABLES:
        columns = [str(name) for (name,) in conn.execute(
            "SELECT name FROM pragma_table_info(?) ORDER BY cid", (table,))]  # fmt: skip
        # one statement stepped row by row: constant memory however long the table
        for row in conn.execute(f"SELECT {', '.join(columns)} FROM {table} ORDER BY id"):
            record: dict[str, Any] = {"type": kind, **dict(zip(columns, row, strict=True))}
            for column in json_columns:
                record[column] = _parsed(record[column])
            yield record


def _jsonl(record: dict[str, Any]) -> bytes:
    return (terminal.json_dumps(record, default=_blob) + "\n").encode("utf-8")


def _blob(value: object) -> str:
    if isinstance(value, bytes):  # server tables hold text; a blob can only come from outside
        return value.hex()
    raise TypeError(f"cannot export a {type(value).__name__}")


@contextmanager
def _output(out: str) -> Iterator[IO[bytes]]:
    """stdout, or a temporary file beside `out` that replaces it only once complete."""
    if out == "-":
        stream = sys.stdout.buffer
        yield stream
        stream.flush()
        return
    target = Path(out)
    try:
        handle = tempfile.NamedTemporaryFile(  # noqa: SIM115 - closed below, then renamed
            "wb", dir=target.parent, prefix=f".{target.name}.", suffix=".tmp", delete=False
        )
    except OSError as exc:
        raise InvalidArgument(f"cannot write {out}: {exc.strerror or exc}") from None
    try:
        with handle:
            yield handle
        os.replace(handle.name, target)
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise


# -- tools ----------------------------------------------------------------------------------
@click.command()
@click.option("--size", is_flag=True, help="also the bytes of tools/list, per tool and group")
@JSON_OPTION
@settings_options(("tools",))
@reports_errors
def tools(size: bool, as_json: bool, **values: Any) -> None:
    """The tools a server with these --tools groups announces, as a client lists them.

    With --size, the bytes of the `tools/list` result a client receives (an agent pays
    for them on every turn): per tool, per group (a server announcing only that group) and
    for the chosen groups, as sent on a pre-2026 connection (the initialize handshake);
    the 2026-07-28 protocol adds a small envelope, shown beside the total.
    """
    import anyio

    settings = settings_from(values)
    with tempfile.TemporaryDirectory(prefix="sqlgate-tools-") as folder:
        listings = anyio.run(_list_tools, replace(settings, db=Path(folder) / "tools.db"))
    report = _tools_report(listings, settings.tools)
    if as_json:
        if not size:
            report.pop("size")
            for tool in report["tools"]:
                tool.pop("bytes")
        click.echo(terminal.json_dumps(report))
    else:
        _print_tools(report, size)


async def _list_tools(settings: Settings) -> list[tuple[str, Any]]:
    """(protocol version, ListToolsResult) of a server on a throwaway database, listed by the
    in-memory client: first on a legacy connection, then on the newest protocol."""
    from mcp import Client

    from sqlgate.service import Service
    from sqlgate.surfaces.mcp.server import build_server

    service = Service.open(settings)
    try:
        server = build_server(service)
        listings = []
        for mode in ("legacy", "auto"):
            async with Client(server, mode=mode) as client:
                listings.append((client.protocol_version, await client.list_tools()))
        return listings
    finally:
        service.close()


def _wire_bytes(model: Any) -> int:
    """Bytes of a received result as it was on the wire: compact JSON of the fields the
    server sent (exclude_unset leaves out the defaults the client's model fills in)."""
    return len(model.model_dump_json(by_alias=True, exclude_unset=True).encode("utf-8"))


def _group_of(name: str) -> str:
    from sqlgate.surfaces.mcp.server import CLAIMS_TOOLS, MEMORY_TOOLS, SQL_TOOLS

    for group, names in (("sql", SQL_TOOLS), ("memory", MEMORY_TOOLS), ("claims", CLAIMS_TOOLS)):
        if name in names:
            return group
    return "other"


def _tools_report(listings: list[tuple[str, Any]], groups: Sequence[str]) -> dict[str, Any]:
    protocol, listed = listings[0]
    rows = []
    for tool in listed.tools:
        hints = tool.annotations
        first_line = (tool.description or "").strip().split("\n", 1)[0]
        rows.append({
            "name": tool.name,
            "group": _group_of(tool.name),
            "annotations": {} if hints is None else hints.model_dump(by_alias=True,
                                                                     exclude_none=True),
            "description": terminal.one_line(first_line),
            "bytes": _wire_bytes(tool),
        })  # fmt: skip
    by_group = {}
    for group in groups:
        alone = [tool for tool in listed.tools if _group_of(tool.name) == group]
        by_group[group] = _wire_bytes(listed.model_copy(update={"tools": alone}))
    size = {
        "protocol": protocol,
        "groups": by_group,
        "total": _wire_bytes(listed),
        "by_protocol": {version: _wire_bytes(result) for version, result in listings},
    }
    return {"tools": rows, "size": size}


def _hints(annotations: dict[str, Any]) -> str:
    words = []
    if annotations.get("readOnlyHint"):
        words.append("read-only")
    elif annotations.get("destructiveHint"):
        words.append("destructive")
    elif annotations.get("readOnlyHint") is False:
        words.append("writes")
    if annotations.get("idempotentHint"):
        words.append("idempotent")
    if annotations.get("openWorldHint"):
        words.append("open-world")
    return ", ".join(words)


def _print_tools(report: dict[str, Any], size: bool) -> None:
    columns = [
        Column("group", "group", keep_whole=True),
        Column("name", "tool", keep_whole=True),
        Column("annotations", "hints", render=_hints),
        Column("description", "description"),
        *([Column("bytes", "bytes", keep_whole=True)] if size else []),
    ]
    print_listing(
        report["tools"], columns, as_json=False,
        title=f"{len(report['tools'])} tools announced", empty="no tools announced",
    )  # fmt: skip
    if size:
        sizes = report["size"]
        per_group = ", ".join(f"{group} {n:,}" for group, n in sizes["groups"].items())
        others = ", ".join(f"{n:,} on {version}" for version, n in sizes["by_protocol"].items()
                           if version != sizes["protocol"])  # fmt: skip
        lines = [
            f"tools/list result: {sizes['total']:,} bytes on protocol {sizes['protocol']}",
            f"  each group announced alone: {per_group}",
            *([f"  the same tools: {others}"] if others else []),
        ]
        click.echo("\n".join(lines), err=not is_terminal())


INSPECT_COMMANDS: tuple[click.Command, ...] = (verify, log, stats, export, tools)
