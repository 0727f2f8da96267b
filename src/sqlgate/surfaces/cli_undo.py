"""`sqlgate undo`: put back the rows one destructive_query changed (row-level undo).

    sqlgate undo AUDIT_ID         the call's id in query_log (the agent was told it)
    sqlgate undo --changeset N    the stored changeset, when the call has no audit row
    sqlgate undo --list           calls that can still be undone, newest first

The undo is itself audited (tool `undo`). It is refused, with nothing changed, when rows
it would restore were changed after the call. A database file that does not exist is
reported (exit 3), never created.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

from sqlgate.errors import InvalidArgument
from sqlgate.surfaces.cli_options import (
    existing_service,
    reports_errors,
    settings_options,
)

if TYPE_CHECKING:  # imported when the command runs, not at start-up
    pass

__all__ = ["undo"]

DB_OPTIONS = ("db", "busy_timeout", "max_value_bytes")
_COLUMNS = ("audit_id", "changeset", "ts", "kind", "tables", "rows", "reason")


def _cell(name: str, value: Any) -> str:
    if value is None:
        return "-"
    if name == "tables":
        return ",".join(value)
    text = " ".join(str(value).split())
    return text if len(text) <= 60 else text[:59] + "…"


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
    with existing_service(values) as service:
        if listing:
            items = service.undoable()
            if as_json:
                click.echo(json.dumps(items, ensure_ascii=False))
            else:
                _print_list(items)
            return
        click.echo(service.undo(audit_id, changeset))
