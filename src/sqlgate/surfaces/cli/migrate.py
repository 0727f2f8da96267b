"""`sqlgate migrate`: move sqlgate 0.1.0's tables out of a database into its records folder.

A file of sqlgate 0.1.0 (its own `memory.db` / `.sqlgate/agent.db`, or an app file adopted
with `--adopt-db`) holds sqlgate's tables inside it. `serve` moves them on its first start
and prints the same listing on stderr (`report_move`); this command shows what moves and
what stays (`--dry-run` changes nothing), then moves it: a backup of the whole file first,
in `dbs/<key>/migrated/`. The engine side is `engine.database.legacy`.

Exit codes as the other commands': 3 no such database, 8 the file cannot be moved now (held
open by another program, records that already hold history).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from sqlgate.config import Settings
from sqlgate.errors import NotFound
from sqlgate.service import counted
from sqlgate.surfaces.cli.listing import Column, print_listing
from sqlgate.surfaces.cli.options import (
    JSON_OPTION,
    reports_errors,
    settings_from,
    settings_options,
)
from sqlgate.surfaces.terminal import json_dumps, visible

if TYPE_CHECKING:  # imported when the command runs
    from sqlgate.service import MovePlan, MoveResult, Service

__all__ = ["migrate", "move_lines", "report_move"]

DB_OPTIONS = ("db", "busy_timeout")
COLUMNS = (
    Column("kind", "KIND", keep_whole=True),
    Column("name", "NAME"),
    Column("rows", "ROWS", keep_whole=True),
    Column("goes", "GOES TO"),
)


def _records(plan: MovePlan) -> list[dict[str, Any]]:
    """One record per object and file: what moves into the records folder, what stays."""
    records: list[dict[str, Any]] = [
        {"kind": m.kind, "name": m.name, "rows": m.rows, "goes": "records.sqlite"}
        for m in plan.moving
        if m.kind in ("table", "view", "fts5")
    ]
    records += [
        {"kind": "file", "name": str(f.source), "rows": None, "goes": str(f.target)}
        for f in plan.files
    ]
    records += [
        {"kind": kind, "name": name, "rows": None, "goes": "stays"} for kind, name in plan.staying
    ]
    return records


def move_lines(plan: MovePlan, result: MoveResult | None) -> list[str]:
    """The lines that say what happened (or would): backup, header, journal mode."""
    ours = sum(1 for m in plan.moving if m.kind in ("table", "view", "fts5"))
    verb = "moved" if result is not None else "would move"
    lines = [
        f"{visible(str(plan.db))}: sqlgate 0.1.0's tables (schema {plan.version}) {verb} to "
        f"{visible(str(plan.folder))}: {counted(ours, 'table or view', 'tables and views')}, "
        f"{counted(len(plan.files), 'file')} beside it; {len(plan.staying)} of your objects stay"
    ]
    if plan.unfinished is not None:
        lines.append(f"a move that stopped after its step {plan.unfinished!r} is finished")
    if result is not None and result.backup is not None:
        lines.append(f"backup of the file as it was: {visible(str(result.backup))}")
    elif result is None:
        lines.append(f"a backup of the whole file goes first to {visible(str(plan.backups))}/")
    lines.append("its application_id and user_version go back to 0; nothing else of yours changes")
    if plan.journal_mode.lower() == "wal":
        lines.append(
            "it stays in WAL mode (sqlgate 0.1.0 switched it); to go back to the rollback "
            f"journal: sqlite3 {visible(str(plan.db))} 'PRAGMA journal_mode=delete'"
        )
    if result is not None and result.relocated:
        tables = counted(result.relocated, "table")
        lines.append(f"the undo data of {tables}: moved with their b-trees")
    return lines


def report_move(service: Service) -> None:
    """What opening the database moved out of a 0.1.0 file, on stderr (`serve`)."""
    result = service.db.moved
    if result is None:
        return
    for line in move_lines(result.plan, result):
        click.echo(f"sqlgate: {line}", err=True)


def _moved(settings: Settings) -> MoveResult | None:
    """Open the database as `serve` does on its first start, which moves the tables."""
    from sqlgate.service import Service

    service = Service.open(settings, actor="cli")
    try:
        return service.db.moved
    finally:
        service.close()


@click.command()
@click.option("--dry-run", is_flag=True, help="list what would move and change nothing")
@JSON_OPTION
@settings_options(DB_OPTIONS, existing_db=True)
@reports_errors
def migrate(dry_run: bool, as_json: bool, **values: Any) -> None:
    """Move sqlgate 0.1.0's tables out of a database into .sqlgate/, keeping a backup.

    Lists what moves (sqlgate's tables with their rows, the snapshots folder, witness and
    audit queue beside the file) and what stays (every other object), then moves it: a
    backup of the whole file first, in the records folder's migrated/. Refused, with
    nothing changed, while another program has the file open. `serve` does the same on
    its first start.
    """
    from sqlgate.service import plan_move

    settings = settings_from(values)
    if not settings.db.is_file():
        raise NotFound(f"database {settings.db} does not exist")
    plan = plan_move(settings.db, settings.busy_timeout)
    if not plan.needed:
        if as_json:
            click.echo(json_dumps({**plan.as_dict(), "moved": False}))
        else:
            click.echo(f"nothing to move: {visible(str(plan.db))} holds no sqlgate 0.1.0 tables")
        return
    result = None if dry_run else _moved(settings)
    if as_json:
        shown = plan.as_dict() if result is None else result.as_dict()
        click.echo(json_dumps({**shown, "moved": result is not None}))
        return
    shown_plan = plan if result is None else result.plan
    print_listing(
        _records(shown_plan), COLUMNS, as_json=False, title="sqlgate 0.1.0 files", empty=""
    )
    for line in move_lines(shown_plan, result):
        click.echo(line, err=True)
