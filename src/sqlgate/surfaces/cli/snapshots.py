"""`sqlgate snapshots list|restore`: the whole-file snapshots of a database, in its records
folder (`restore` has a module of its own, snapshot_restore.py)."""

from __future__ import annotations

from typing import Any

import click

from sqlgate.surfaces.cli.listing import Column, print_listing
from sqlgate.surfaces.cli.options import reports_errors, settings_from, settings_options
from sqlgate.surfaces.cli.snapshot_restore import snapshots_restore

__all__ = ["snapshots"]


@click.group()
def snapshots() -> None:
    """List and restore whole-file snapshots (taken before destructive schema changes)."""


@snapshots.command("list")
@settings_options(("db",), db_help="SQLite database file whose snapshots to list (only read)")
@click.option("--json", "as_json", is_flag=True, help="print JSON lines for scripts")
@reports_errors
def snapshots_list(as_json: bool, **values: Any) -> None:
    """Snapshots of the database, newest first, then the copies of before that restores
    kept (restored/NAME, never rotated)."""
    from sqlgate.service import list_kept, list_snapshots

    settings = settings_from(values)
    found = [*list_snapshots(settings.snapshot_dir), *list_kept(settings.snapshot_dir)]
    records = [{"name": info.name, "created": info.created, "bytes": info.size,
                "path": str(info.path)} for info in found]  # fmt: skip
    print_listing(
        records, _SNAPSHOT_TABLE, as_json=as_json, title=str(settings.snapshot_dir),
        empty=f"no snapshots in {settings.snapshot_dir}",
    )  # fmt: skip


def _size(count: int) -> str:
    value = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{count} B"


# file names are shown as typed: any program can put a file in the folder
_SNAPSHOT_TABLE = (
    Column("name", "name", keep_whole=True),
    Column("created", "created (UTC)", keep_whole=True),
    Column("bytes", "size", keep_whole=True, render=_size),
    Column("path", "path"),
)


snapshots.add_command(snapshots_restore)
