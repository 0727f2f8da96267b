"""`sqlgate verify|log|stats`: what a person (or a script) asks of a database (`export`
and `tools` have modules of their own).

Each command prints a readable table by default and JSON with `--json`. They read: nothing
is added to the audit log, and the only write is the one verification itself makes (the
witness records the last verified event). A database file that does not exist is reported
(exit 3), never created. `verify` exits 9 when the chain is broken, so a script can tell a
broken chain (9) from a database that cannot be opened (8) or a bad argument (2).
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import click

from sqlgate.errors import ChainBroken
from sqlgate.service import (
    AUDIT_COLUMNS,
    OUTCOMES,
    AuditFilter,
    AuditReader,
    call_outcome,
    counted,
    json_value,
    recorded_restores,
)
from sqlgate.surfaces import terminal
from sqlgate.surfaces.cli.listing import Column, print_listing, print_pairs
from sqlgate.surfaces.cli.options import (
    JSON_OPTION,
    existing_service,
    reports_errors,
    settings_options,
    stderr_progress,
)
from sqlgate.surfaces.sessions import short_session as _short_session

if TYPE_CHECKING:  # imported when a command runs, not at start-up
    pass


__all__ = [
    "CHAIN_BROKEN_EXIT",
    "INSPECT_COMMANDS",
    "log",
    "stats",
    "verify",
]

CHAIN_BROKEN_EXIT = ChainBroken.exit_code
DB_OPTIONS = ("db", "busy_timeout")


# -- verify ---------------------------------------------------------------------------------
@click.command()
@JSON_OPTION
@settings_options(DB_OPTIONS, existing_db=True)
@reports_errors
def verify(as_json: bool, **values: Any) -> None:
    """Recompute every hash and link of the memory chain and check its witness.

    Exit 0 when the chain is whole, 9 when it is broken (the first broken event is named).
    """
    with existing_service(values, read_only=True) as service, stderr_progress() as progress:
        task = progress.add_task("verifying the memory chain", total=None)

        def advance(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        status = service.memory.chain.verify(progress=advance)
        restores = None
        if status.ok:
            with service.db.reading_records() as conn:
                restores = recorded_restores(conn)
    if as_json:
        answer = status.as_dict()
        if restores is not None:
            answer["restores"] = restores
        click.echo(terminal.json_dumps(answer))
    elif status.ok and status.head_id is None:
        click.echo(
            "chain ok: no events yet"
            if status.lost is None
            else f"chain ok: no events since; {terminal.visible(status.lost)}"
        )
    elif status.ok:
        click.echo(
            f"chain ok: {counted(status.events, 'event')}, head {status.head_id} "
            f"(hash {(status.head_hash or '')[:16]}…)"
            + (f"; {status.unconfirmed}" if status.unconfirmed else "")
            + ("" if restores is None else f"; {_restores_line(restores)}")
            + ("" if status.lost is None else f"; {terminal.visible(status.lost)}")
        )
    else:
        where = "" if status.first_broken_id is None else f" at event {status.first_broken_id}"
        click.echo(f"chain BROKEN{where}: {terminal.visible(status.reason or '')}")
    if not status.ok:
        raise SystemExit(CHAIN_BROKEN_EXIT)


def _restores_line(restores: dict[str, Any]) -> str:
    """`1 restore recorded (latest: event 13 at T: rolled back to snapshot NAME (taken T0))`."""
    count, latest = restores["count"], restores["latest"]
    summary = terminal.one_line(str(latest["summary"]))
    return (
        f"{counted(count, 'restore')} recorded (latest: event {latest['id']} "
        f"at {terminal.visible(str(latest['ts']))}: {summary})"
    )


# -- log ------------------------------------------------------------------------------------
NOT_RECORDED = "-"  # the actor of a row written before actors were recorded (migration 9)


@click.command()
@click.option("--errors", is_flag=True,
              help="only the calls that did not succeed: refused and error (as --outcome "
                   "refused plus --outcome error)")  # fmt: skip
@click.option("--outcome", type=click.Choice(OUTCOMES), default=None,
              help="only calls of this outcome: ok, refused (the server's policy said no) or "
                   "error (anything else failed), as the web console names them")  # fmt: skip
@click.option("--since", default=None, metavar="WHEN",
              help="only calls at or after this ISO date or date-time")  # fmt: skip
@click.option("--tool", default=None, metavar="NAME",
              help="only calls of this tool (e.g. read_query)")  # fmt: skip
@click.option("--actor", default=None, metavar="NAME",
              help="only calls made by this actor: a member's name (in any case, as member "
                   "names are unique ignoring case), admin (the --token of an HTTP server), "
                   "local (the agent on stdio) or cli; - for calls recorded before sqlgate "
                   "named actors")  # fmt: skip
@click.option("--limit", type=click.IntRange(min=0), default=50, show_default=True, metavar="N",
              help="newest calls shown; 0 for all")  # fmt: skip
@JSON_OPTION
@settings_options(DB_OPTIONS, existing_db=True)
@reports_errors
def log(
    errors: bool, outcome: str | None, since: str | None, tool: str | None,
    actor: str | None, limit: int, as_json: bool, **values: Any,
) -> None:  # fmt: skip
    """The audit log (query_log): one row per tool call, newest first.

    Each call's outcome is ok, refused or error, the words of the web console. Its actor is
    who made it (a member, admin, local, cli; `-` when not recorded)."""
    from sqlgate.service import moment

    start = moment(since, "--since")
    filters = AuditFilter(
        actor=None if actor == NOT_RECORDED else actor, actor_any_case=True,
        unrecorded=actor == NOT_RECORDED, tool=tool, outcome=outcome, failed=errors,
        since=start,
    )  # fmt: skip
    filtered = errors or any(v is not None for v in (outcome, start, tool, actor))
    with existing_service(values, read_only=True) as service, service.db.reading_records() as conn:
        reader = AuditReader.for_schema(service.db.schema_version)
        rows = reader.rows(conn, filters, AUDIT_COLUMNS, limit or None)
    calls = [_log_record(row) for row in rows]
    if not as_json:
        dates = [None, *(str(call["ts"])[:10] for call in calls)]
        calls = [
            {**call, "what": _what(call), "when": _when(str(call["ts"]), dates[number]),
             "by": NOT_RECORDED if call["actor"] is None else call["actor"],
             "who": _short_session(call["session"], call["actor"])}
            for number, call in enumerate(calls)
        ]  # fmt: skip
    print_listing(
        calls, _LOG_TABLE, as_json=as_json, title="audit log, newest first",
        empty="no calls in the audit log" + (" match" if filtered else ""),
        terminal_columns=_LOG_TERMINAL,
    )  # fmt: skip


def _log_record(row: Sequence[Any]) -> dict[str, Any]:
    record = dict(zip(AUDIT_COLUMNS, row, strict=True))
    record["ok"] = bool(record["ok"])
    record["detail"] = json_value(record["detail"])
    record["outcome"] = call_outcome(record["ok"], record["detail"])
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


_ISO_MOMENT = re.compile(r"(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2}:\d{2})(?:\.\d+)?Z")


def _when(ts: str, previous_date: str | None) -> str:
    """A call's time as the terminal table shows it: `03:58:30`, after its date
    (`2026-12-02 03:58:30`) when the date is not the row above's. TSV and JSON keep `ts`."""
    found = _ISO_MOMENT.fullmatch(ts)
    if found is None:  # another program's text: whole
        return ts
    date, time = found.groups()
    return time if date == previous_date else f"{date} {time}"


_LOG_TABLE = (
    Column("id", "id", keep_whole=True),
    Column("ts", "time (UTC)", keep_whole=True),
    Column("by", "actor"),
    Column("session", "session", keep_whole=True),
    Column("tool", "tool", keep_whole=True),
    Column("outcome", "outcome", keep_whole=True),
    Column("rows", "rows"),
    Column("duration_ms", "ms", render=lambda ms: f"{ms:.1f}"),
    Column("what", "statement, detail or error"),
)
# on a terminal: the time without its date while the date holds, the session by its random
# part and connection (`s-…471d28/…/` then `5c91b6bf` below), the date, actor and session
# wrapped narrow, so the table fits 120 columns with room for the statement
_SIDE = len("s-…471d28/…/")
_LOG_TERMINAL = (
    Column("id", "id", keep_whole=True),
    Column("when", "time (UTC)", narrowest=len("2026-12-02"), widest=len("2026-12-02")),
    Column("by", "actor", widest=_SIDE),
    Column("who", "session", widest=_SIDE),
    *_LOG_TABLE[4:],
)


# -- stats ----------------------------------------------------------------------------------
@click.command()
@JSON_OPTION
@settings_options((*DB_OPTIONS, "query_timeout"), existing_db=True)
@reports_errors
def stats(as_json: bool, **values: Any) -> None:
    """Memory, claims and audit counts, and the rows of every table (chain checked cheaply).

    The audited calls are counted by outcome and by actor (who made them; `-` for calls
    recorded before sqlgate named actors). `queued` counts audit rows waiting for the write
    lock (another process held it). `replication`: running, restarting (Litestream died: its
    exit and last error), gone (the process replicating it was killed), stopped, or not
    configured."""
    from sqlgate.service import CallControl, claims_by_state
    from sqlgate.surfaces.replication.status import replication_report

    with existing_service(values, read_only=True) as service:
        memory = json.loads(service.memory.stats().text)
        listing, _ = service.introspection.list_tables(True, CallControl())
        reader = AuditReader.for_schema(service.db.schema_version)
        with service.db.reading_records() as conn:
            claims = claims_by_state(conn)
            audit = reader.tally(conn, service.settings.db)
    report = {
        "db": str(service.settings.db),
        "db_bytes": service.settings.db.stat().st_size,
        "records": str(service.settings.records.records),
        "memory": memory,
        "claims": claims,
        "audit": audit,
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
            ("database size", counted(int(report["db_bytes"]), "byte", spec=",")),
            ("records", report["records"]),
            ("records size", counted(int(memory["db_bytes"]), "byte", spec=",")),
            ("events", memory["events"]),
            ("checkpoints", memory["checkpoints"]),
            ("sessions", memory["sessions_total"]),
            ("first / last event", f"{memory['first'] or '-'} / {memory['last'] or '-'}"),
            ("event kinds", ", ".join(f"{k} {n}" for k, n in memory["kinds"].items()) or "-"),
            ("chain (incremental check)", chain_line),
            ("claims", ", ".join(f"{k} {n}" for k, n in report["claims"].items()) or "-"),
            ("audited calls", _audited_calls(report["audit"])),
            ("calls by actor", _actors_line(report["audit"]["actors"])),
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


def _audited_calls(audit: Mapping[str, int]) -> str:
    """`4 (2 ok, 1 refused, 1 error)`: the calls by the console's three outcomes."""
    return f"{audit['calls']} (" + ", ".join(f"{audit[o]} {o}" for o in OUTCOMES) + ")"


def _actors_line(actors: Sequence[Mapping[str, Any]]) -> str:
    """`alice 12, local 40, - 3 (not recorded)`: the calls of each actor."""
    shown = [f"{NOT_RECORDED if a['actor'] is None else a['actor']} {a['calls']}" for a in actors]
    unnamed = any(a["actor"] is None for a in actors)
    return ", ".join(shown) + (" (not recorded)" if unnamed else "") if shown else "-"


_TABLES_TABLE = (
    Column("name", "table"),
    Column("type", "type", keep_whole=True),
    Column("system", "server", render=lambda system: "yes" if system else ""),
    Column("rows", "rows", keep_whole=True),
)

INSPECT_COMMANDS: tuple[click.Command, ...] = (verify, log, stats)
