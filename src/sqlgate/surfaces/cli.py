"""The command line: `sqlgate serve` and the commands humans use to inspect and restore.

Errors end a command with one readable line on stderr and the error's exit code:
1 unexpected, 2 bad usage or argument, 3 not found, 4 refused by policy, 5 limit,
6 SQLite error, 7 snapshot problem, 8 the database cannot be opened.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from sqlgate import __version__
from sqlgate.config import FLAGS, Flag, Settings, default_db_path, load_settings
from sqlgate.errors import SqlgateError

__all__ = ["main"]

F = TypeVar("F", bound=Callable[..., Any])

# ParamType is generic only in recent click; subscripting it at runtime breaks older ones
if TYPE_CHECKING:
    _ParamType = click.ParamType[Any]
else:
    _ParamType = click.ParamType


class _FlagType(_ParamType):
    """A click type that parses with the same function as the environment variable."""

    def __init__(self, flag: Flag) -> None:
        self.flag = flag
        self.name = flag.name

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if not isinstance(value, str):
            return value
        try:
            return self.flag.parse(value)
        except ValueError as exc:
            self.fail(f"{value!r}: {exc}", param, ctx)


def settings_options(names: tuple[str, ...] | None = None) -> Callable[[F], F]:
    """Add one option per flag (all of them, or `names`), each documented with its env var."""
    chosen = [flag for flag in FLAGS if names is None or flag.name in names]

    def decorate(fn: F) -> F:
        for flag in reversed(chosen):
            if flag.name == "audit":
                option = click.option(
                    "--audit/--no-audit", "audit", default=None,
                    help=f"{flag.help} [env {flag.env_var}]",
                )  # fmt: skip
            else:
                option = click.option(
                    flag.option, flag.name, type=_FlagType(flag), default=None,
                    help=f"{flag.help} [env {flag.env_var}]",
                )  # fmt: skip
            fn = option(fn)
        return fn

    return decorate


def _settings(values: dict[str, Any]) -> Settings:
    return load_settings({k: v for k, v in values.items() if v is not None})


def reports_errors(fn: F) -> F:
    """Turn SqlgateError into one line on stderr and its exit code; never a traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except SqlgateError as exc:
            click.echo(f"sqlgate: error: {exc}", err=True)
            sys.exit(exc.exit_code)

    return wrapper  # type: ignore[return-value]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="sqlgate")
def main() -> None:
    """sqlgate: SQL over one SQLite file for coding agents, with the safety in the server."""


@main.command()
@settings_options()
@click.option(
    "--transport", type=click.Choice(["stdio"]), default="stdio", show_default=True,
    help="how clients connect",
)  # fmt: skip
@reports_errors
def serve(transport: str, **values: Any) -> None:
    """Serve MCP on stdio for one client (what MCP clients launch).

    Only protocol messages go to stdout; errors and logs go to stderr.
    """
    from sqlgate.service import Service

    settings = _settings(values)
    service = Service.open(settings, create_parent=settings.db == default_db_path())
    try:
        # imported after the database opened: a start-up error does not pay for the SDK
        from sqlgate.surfaces.mcp_server import build_server

        build_server(service).run("stdio")
    except KeyboardInterrupt:
        sys.exit(130)
    finally:
        service.close()


@main.group()
def snapshots() -> None:
    """List and restore the snapshots taken before destructive statements."""


@snapshots.command("list")
@settings_options(("db",))
@click.option("--json", "as_json", is_flag=True, help="print JSON lines for scripts")
@reports_errors
def snapshots_list(as_json: bool, **values: Any) -> None:
    """Snapshots of the database, newest first."""
    from sqlgate.engine.snapshots import list_snapshots

    settings = _settings(values)
    found = list_snapshots(settings.snapshot_dir)
    if as_json:
        for info in found:
            record = {"name": info.name, "created": info.created, "bytes": info.size,
                      "path": str(info.path)}  # fmt: skip
            click.echo(json.dumps(record))
        return
    if not found:
        click.echo(f"no snapshots in {settings.snapshot_dir}")
        return
    from rich.console import Console
    from rich.table import Table

    table = Table("name", "created (UTC)", "size", title=str(settings.snapshot_dir))
    for info in found:
        table.add_row(info.name, info.created, _size(info.size))
    Console().print(table)


def _size(count: int) -> str:
    value = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{count} B"


@snapshots.command("restore")
@click.argument("name")
@settings_options(("db", "snapshots_keep"))
@reports_errors
def snapshots_restore(name: str, **values: Any) -> None:
    """Put snapshot NAME back as the database (the current file is kept as a snapshot)."""
    from sqlgate.engine.snapshots import restore_snapshot
    from sqlgate.memory.chain import witness_restored_chain

    settings = _settings(values)
    source, before = restore_snapshot(
        settings.db, settings.snapshot_dir, name, settings.snapshots_keep
    )
    click.echo(f"restored {settings.db} from {source.name}; the previous content is {before.name}")
    kept = before.with_name(before.name + ".witness.json")
    restored = witness_restored_chain(settings.db, kept)
    if kept.exists():
        click.echo(f"the memory witness now names the restored head; the old one is {kept.name}")
    elif restored is not None:
        click.echo(f"the memory witness now names the restored head (event {restored.head_id})")


def _entry() -> None:  # pragma: no cover - `python -m sqlgate`
    main(prog_name="sqlgate")


if __name__ == "__main__":  # pragma: no cover
    _entry()
