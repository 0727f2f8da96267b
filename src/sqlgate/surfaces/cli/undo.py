"""`sqlgate undo`: put back the rows one destructive_query changed (row-level undo).

    sqlgate undo AUDIT_ID         the call's id in query_log (the agent was told it)
    sqlgate undo --changeset N    the stored changeset, when the call has no audit row
    sqlgate undo --list           calls that can still be undone, newest first

The undo is itself audited (tool `undo`). It is refused, with nothing changed, when rows
it would restore were changed after the call. A database file that does not exist is
reported (exit 3), never created.
"""

from __future__ import annotations

from typing import Any

import click

from sqlgate.errors import InvalidArgument
from sqlgate.surfaces.cli.listing import Column, print_listing
from sqlgate.surfaces.cli.options import (
    existing_service,
    reports_errors,
    settings_options,
)
from sqlgate.surfaces.terminal import one_line, visible

__all__ = ["undo"]

DB_OPTIONS = ("db", "busy_timeout", "max_value_bytes", "adopt_db")
_LARGEST_ID = 2**63 - 1


_UNDO_TABLE = (
    Column("audit_id", "audit id", keep_whole=True),
    Column("changeset", "changeset", keep_whole=True),
    Column("ts", "time (UTC)", keep_whole=True),
    Column("kind", "kind", keep_whole=True),
    Column("tables", "tables", render=lambda names: ",".join(names)),
    Column("rows", "rows", keep_whole=True),
    Column("reason", "reason", render=lambda reason: one_line(str(reason))),
)


def _check_id_range(value: int | None, what: str) -> None:
    """Ids are SQLite integers (signed 64-bit): refuse others before the file is opened."""
    if value is not None and not 1 <= value <= _LARGEST_ID:
        raise InvalidArgument(
            f"{what} must be a whole number from 1 to {_LARGEST_ID}; "
            "`sqlgate undo --list` shows the calls that can be undone"
        )


@click.command("undo")
@click.argument("audit_id", type=int, required=False)
@click.option("--changeset", type=int, default=None, help="undo this stored changeset id")
@click.option("--list", "listing", is_flag=True, help="list the calls that can be undone")
@click.option("--json", "as_json", is_flag=True, help="with --list: JSON lines for scripts")
@settings_options(DB_OPTIONS, existing_db=True)
@reports_errors
def undo(
    audit_id: int | None,
    changeset: int | None,
    listing: bool,
    as_json: bool,
    **values: Any,
) -> None:
    """Restore the rows that destructive_query call AUDIT_ID deleted or changed."""
    chosen = sum((audit_id is not None, changeset is not None, listing))
    if chosen != 1:
        raise InvalidArgument(
            "give one of: an AUDIT_ID, --changeset N, or --list (see `sqlgate undo --help`)"
        )
    _check_id_range(audit_id, "the audit id")
    _check_id_range(changeset, "the changeset id")
    with existing_service(values, read_only=listing) as service:
        if listing:
            items = service.undoable()
            print_listing(
                items, _UNDO_TABLE, as_json=as_json, title="calls that can be undone",
                empty="nothing to undo: no destructive_query with row-level undo data is kept",
            )  # fmt: skip
            return
        click.echo(visible(service.undo(audit_id, changeset)))
