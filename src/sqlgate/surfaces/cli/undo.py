"""`sqlgate undo`: put back the rows one destructive_query changed (row-level undo).

    sqlgate undo AUDIT_ID         the call's id in query_log (the agent was told it)
    sqlgate undo --changeset N    the stored changeset, when the call has no audit row
    sqlgate undo --list           calls that can still be undone, newest first

The undo is itself audited (tool `undo`). It is refused, with nothing changed, when rows
it would restore were changed after the call. A database file that does not exist is
reported (exit 3), never created.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from sqlgate.errors import InvalidArgument
from sqlgate.surfaces.cli.options import (
    existing_service,
    reports_errors,
    settings_options,
)
from sqlgate.surfaces.terminal import json_dumps, one_line, visible

if TYPE_CHECKING:  # imported when the command runs, not at start-up
    pass

__all__ = ["undo"]

DB_OPTIONS = ("db", "busy_timeout", "max_value_bytes")
_COLUMNS = ("audit_id", "changeset", "ts", "kind", "tables", "rows", "reason")
_LARGEST_ID = 2**63 - 1


def _cell(name: str, value: Any) -> str:
    """One line, control characters shown as escapes (agents write names and reasons)."""
    if value is None:
        return "-"
    if name == "tables":
        return visible(",".join(value))
    return one_line(str(value), 60)


def _print_list(items: list[dict[str, Any]]) -> None:
    if not items:
        click.echo("nothing to undo: no destructive_query with row-level undo data is kept")
        return
    rows = [_COLUMNS, *(tuple(_cell(c, item[c]) for c in _COLUMNS) for item in items)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(_COLUMNS))]
    for row in rows:
        click.echo(
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
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
@click.option("--json", "as_json", is_flag=True, help="with --list: print JSON for scripts")
@settings_options(DB_OPTIONS)
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
            if as_json:
                click.echo(json_dumps(items))
            else:
                _print_list(items)
            return
        click.echo(visible(service.undo(audit_id, changeset)))
