"""`sqlgate undo`: put back what one write_query, destructive_query or create_view changed.

    sqlgate undo 15@3f9a1c07 --db PATH   the call as its answer named it (audit id @ database)
    sqlgate undo 15                      call 15 of the --db database
    sqlgate undo --changeset 7@3f9a1c07  the stored changeset, when the call has no audit row
    sqlgate undo --list                  calls that can still be undone, newest first

The undo is itself audited (tool `undo`). It is refused, with nothing changed, when rows
it would restore were changed after the call, or when the id names another database's
call (exit 7). A database file that does not exist is reported (exit 3), never created.
"""

from __future__ import annotations

from typing import Any

import click

from sqlgate.errors import InvalidArgument
from sqlgate.surfaces.cli.listing import Column, print_listing
from sqlgate.surfaces.cli.options import (
    existing_service,
    reports_errors,
    settings_from,
    settings_options,
)
from sqlgate.surfaces.terminal import one_line, visible

__all__ = ["undo"]

DB_OPTIONS = ("db", "busy_timeout", "max_value_bytes", "adopt_db")


_UNDO_TABLE = (
    Column("audit_id", "call", keep_whole=True),
    Column("changeset", "changeset", keep_whole=True),
    Column("ts", "time (UTC)", keep_whole=True),
    Column("tool", "tool", keep_whole=True),
    Column("kind", "kind", keep_whole=True),
    Column("tables", "tables", render=lambda names: ",".join(names)),
    Column("rows", "rows", keep_whole=True),
    Column("reason", "reason", render=lambda reason: one_line(str(reason))),
)


@click.command("undo")
@click.argument("audit_id", metavar="CALL", required=False)
@click.option(
    "--changeset", metavar="ID", default=None, help="undo this stored changeset (N or N@DATABASE)"
)
@click.option("--list", "listing", is_flag=True, help="list the calls that can be undone")
@click.option("--json", "as_json", is_flag=True, help="with --list: JSON lines for scripts")
@settings_options(DB_OPTIONS, existing_db=True)
@reports_errors
def undo(
    audit_id: str | None,
    changeset: str | None,
    listing: bool,
    as_json: bool,
    **values: Any,
) -> None:
    """Put back what call CALL changed: its id as the agent's answer gave it
    (AUDIT_ID@DATABASE_ID, e.g. 15@3f9a1c07), or a plain audit id of the --db database."""
    from sqlgate.service import list_calls, parse_call_ref

    chosen = sum((audit_id is not None, changeset is not None, listing))
    if chosen != 1:
        raise InvalidArgument(
            "give one of: a CALL id (e.g. 15@3f9a1c07), --changeset N, or --list "
            "(see `sqlgate undo --help`)"
        )
    listed = list_calls(settings_from(values).db)
    for given in (audit_id, changeset):
        if given is not None:
            parse_call_ref(given, listed)  # a malformed id is refused before the file is opened
    with existing_service(values, read_only=listing) as service:
        if listing:
            items = service.undoable()
            print_listing(
                items, _UNDO_TABLE, as_json=as_json,
                title=f"calls that can be undone in {service.db.path.absolute()}",
                empty="nothing to undo: no call with undo data is kept in "
                f"{service.db.path.absolute()}",
            )  # fmt: skip
            return
        click.echo(visible(service.undo(audit_id, changeset)))
