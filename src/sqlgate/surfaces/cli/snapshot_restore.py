"""`sqlgate snapshots restore NAME`: say what the restore takes away, ask, then restore.

The listing comes first (stdout, or one JSON object with `--json`): the rows of every user
table now and in the snapshot, and the calls made since whose undo the restore marks done
(sqlgate's records are in its home, not in the database file: the restore leaves them as
they are and adds itself to them). On a terminal it asks `restore? [y/N]`; anywhere else
it needs `--yes`, and without it exits 2 having changed nothing. A name that is not a
snapshot of this database's folder exits 3; refusals (a database another process holds)
exit 7 with one line naming the next step.
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Any

import click

from sqlgate.errors import InvalidArgument
from sqlgate.service import counted, db_option, shell_word
from sqlgate.surfaces import terminal
from sqlgate.surfaces.cli.options import (
    JSON_OPTION,
    reports_errors,
    settings_from,
    settings_options,
)

if TYPE_CHECKING:
    from sqlgate.service import RestorePlan, RestoreResult

__all__ = ["snapshots_restore"]


def on_terminal() -> bool:
    """Whether a person can be asked (stdin and stdout are a terminal)."""
    return sys.stdin.isatty() and sys.stdout.isatty()


def _rows(count: int | None) -> str:
    return "absent" if count is None else str(count)


def print_plan(plan: RestorePlan) -> None:
    show = terminal.visible
    click.echo(f"restore {show(str(plan.db))} to snapshot {show(plan.name)}")
    click.echo("user tables, rows now -> in the snapshot (the restore puts the snapshot's back):")
    if not plan.tables:
        click.echo("  (none)")
    width = max((len(show(t.name)) for t in plan.tables), default=0)
    for change in plan.tables:
        what = ""
        if change.snapshot is None:
            what = "  (dropped by the restore)"
        elif change.now is None:
            what = "  (comes back)"
        elif change.now != change.snapshot:
            what = f"  ({counted(change.now - change.snapshot, 'row', spec='+d')})"
        click.echo(f"  {show(change.name):<{width}}  {_rows(change.now)} -> "
                   f"{_rows(change.snapshot)}{what}")  # fmt: skip
    if plan.left_out:
        click.echo(
            f"the snapshot was taken by sqlgate 0.1.0 and holds sqlgate's tables: "
            f"{counted(len(plan.left_out), 'object')} left out (they are in sqlgate's records now)"
        )
    click.echo(
        f"calls made after the snapshot, marked undone by the restore: {plan.undone}; "
        "sqlgate's records (audit log, memory, claims, members) are not in the database file "
        "and stay as they are"
    )


def _print_result(result: RestoreResult) -> None:
    show = terminal.visible
    db = show(str(result.db))
    click.echo(f"restored {db} from snapshot {show(result.plan.name)}: its user tables and schema "
               "are the snapshot's")  # fmt: skip
    click.echo(f"calls made after the snapshot, marked undone: {result.undone}")
    where = db_option(result.db)
    if result.event_id is not None:
        click.echo(f"the memory chain records it as event {result.event_id} (`"
                   f"{show(f'sqlgate verify {where}')}` names it)")  # fmt: skip
    again = f"sqlgate snapshots restore {shell_word(result.before_name)} {where} --yes"
    click.echo(f"the previous content is kept at {show(str(result.before))} (outside the "
               f"snapshot rotation); to undo this restore: {show(again)}")  # fmt: skip


@click.command("restore")
@click.argument("name")
@click.option("--yes", is_flag=True, help="restore without asking (needed when not on a terminal)")
@JSON_OPTION
@settings_options(("db", "snapshots_keep"), existing_db=True)
@reports_errors
def snapshots_restore(name: str, yes: bool, as_json: bool, **values: Any) -> None:
    """Put snapshot NAME back as the database file; sqlgate's records stay as they are.

    Lists first each user table's rows now and in the snapshot; asks on a terminal, needs
    --yes otherwise. The current file is kept in the snapshots folder's restored/ (never
    rotated). The audit log, memory, claims and members are in sqlgate's records, not in
    the file: the restore leaves them as they are, marks the calls made after the snapshot
    undone, and the memory chain records it.
    """
    from sqlgate.service import ChainRestoreRecorder, new_session_id, plan_restore, restore_snapshot

    settings = settings_from(values)
    db = settings.db.absolute()
    folder = settings.snapshot_dir.absolute()
    plan = plan_restore(db, folder, name)
    if as_json:
        click.echo(terminal.json_dumps({"plan": plan.as_dict()}))
    else:
        print_plan(plan)
    if not yes:
        again = f"sqlgate snapshots restore {shell_word(name)} {db_option(db)} --yes"
        if not on_terminal():
            raise InvalidArgument(f"nothing was restored: pass --yes to restore ({again})")
        if not click.confirm("restore?", default=False):
            raise InvalidArgument("not restored: declined; nothing changed")
    session = new_session_id().replace("s-", "cli-", 1)
    recorder = ChainRestoreRecorder(db, session, time.time)
    result = restore_snapshot(db, folder, name, settings.snapshots_keep,
                              recorder=recorder, session=session)  # fmt: skip
    if as_json:
        click.echo(terminal.json_dumps({"restored": {
            "db": str(result.db), "snapshot": result.plan.name, "before": str(result.before),
            "before_name": result.before_name, "calls_rolled_back": result.undone,
            "event_id": result.event_id,
        }}))  # fmt: skip
    else:
        _print_result(result)
