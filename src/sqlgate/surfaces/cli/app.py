"""The command line: `sqlgate serve` and the commands humans use to inspect and restore.

Errors end a command with one readable line on stderr and the error's exit code:
1 unexpected, 2 bad usage or argument, 3 not found, 4 refused by policy, 5 limit (or a busy
database), 6 SQLite error, 7 snapshot or undo problem, 8 the database cannot be opened (or
replication cannot start), 9 the memory chain is broken (`sqlgate verify`, `sqlgate
restore`), 10 `sqlgate doctor` found a problem, 130 Ctrl-C. README's "Exit codes" table
is the reference; a test holds them equal.
"""

from __future__ import annotations

from typing import Any

import click

from sqlgate import __version__
from sqlgate.surfaces.cli.capture import capture
from sqlgate.surfaces.cli.claims import claims
from sqlgate.surfaces.cli.doctor import doctor
from sqlgate.surfaces.cli.export import export
from sqlgate.surfaces.cli.imports import import_group
from sqlgate.surfaces.cli.inspection import INSPECT_COMMANDS
from sqlgate.surfaces.cli.install import install, uninstall
from sqlgate.surfaces.cli.listing import Column, print_listing
from sqlgate.surfaces.cli.options import reports_errors, settings_from, settings_options
from sqlgate.surfaces.cli.replicate import REPLICATE_COMMANDS
from sqlgate.surfaces.cli.snapshot_restore import snapshots_restore
from sqlgate.surfaces.cli.tools import tools
from sqlgate.surfaces.cli.undo import undo
from sqlgate.surfaces.mcp.http import http_options
from sqlgate.surfaces.ui.serve import ui

__all__ = ["main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="sqlgate")
def main() -> None:
    """sqlgate: SQL over one SQLite file for coding agents, with the safety in the server."""


@main.command()
@settings_options()
@click.option(
    "--transport", type=click.Choice(["stdio", "http"]), default="stdio", show_default=True,
    help="how clients connect: stdio (one client) or streamable http (several, with a token)",
)  # fmt: skip
@http_options
@reports_errors
def serve(
    transport: str, host: str, port: int, token: str | None, insecure_no_token: bool, **values: Any
) -> None:
    """Serve MCP on stdio for one client (what MCP clients launch), or over HTTP.

    Only protocol messages go to stdout; errors and logs go to stderr. Ctrl-C (exit 130)
    and SIGTERM (exit 0) stop it cleanly.
    """
    from sqlgate.surfaces.cli.serve import run_server

    run_server(values, transport=transport, host=host, port=port, token=token,
               insecure_no_token=insecure_no_token)  # fmt: skip


@main.group()
def snapshots() -> None:
    """List and restore whole-file snapshots (taken before destructive schema changes)."""


@snapshots.command("list")
@settings_options(("db",), db_help="SQLite database file whose snapshots to list (only read)")
@click.option("--json", "as_json", is_flag=True, help="print JSON lines for scripts")
@reports_errors
def snapshots_list(as_json: bool, **values: Any) -> None:
    """Snapshots of the database, newest first, then the copies of before that restores
    kept (restored/NAME, never rotated)."""
    from sqlgate.engine.snapshots import list_kept, list_snapshots

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

main.add_command(claims)
main.add_command(import_group)
main.add_command(install)
main.add_command(uninstall)
main.add_command(capture)
main.add_command(doctor)
main.add_command(undo)
main.add_command(ui)
for _command in (*INSPECT_COMMANDS, export, tools, *REPLICATE_COMMANDS):
    main.add_command(_command)


def _entry() -> None:  # pragma: no cover - `python -m sqlgate`
    main(prog_name="sqlgate")


if __name__ == "__main__":  # pragma: no cover
    _entry()
