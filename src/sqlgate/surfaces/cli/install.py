"""`sqlgate install CLIENT` and `sqlgate uninstall CLIENT`: edit an MCP client's own config.

The logic (locations, editing, the atomic writer) is in `surfaces/clients/install.py`; this module
turns options into a plan, prints it, and carries it out unless `--dry-run`.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import Any

import click

from sqlgate.errors import InvalidArgument
from sqlgate.surfaces.cli.options import reports_errors, settings_from, settings_options
from sqlgate.surfaces.integrations import install as setup
from sqlgate.surfaces.terminal import visible

__all__ = ["install", "uninstall"]

_CLIENTS = ", ".join(setup.CLIENTS)


def _common(fn: Any) -> Any:
    for option in reversed((
        click.argument("client", metavar="CLIENT"),
        click.option("--name", default="sqlgate", show_default=True,
                     help="the server's name in the client's config"),
        click.option("--scope", default=None,
                     help="user (every project; the default) or project (the current "
                          "folder's config); not for claude-desktop"),
        click.option("--dry-run", is_flag=True, help="print the change; write nothing"),
    )):  # fmt: skip
        fn = option(fn)
    return fn


@click.command()
@_common
@settings_options(("db",))
@click.option(
    "--capture", is_flag=True,
    help="claude-code only: also register hooks that record the session into sqlgate's memory",
)  # fmt: skip
@reports_errors
def install(
    client: str, name: str, scope: str | None, dry_run: bool, capture: bool, **values: Any
) -> None:
    """Add sqlgate to CLIENT's MCP config (claude-code, claude-desktop, cursor, vscode, codex).

    The entry runs this installation's `sqlgate serve --db DB` with absolute paths. Running it
    twice changes nothing; other servers and settings stay as they are; the old file is backed
    up beside itself (`<file>.sqlgate-backup-<UTC time>`) before it is replaced.
    """
    spec = setup.client_named(client)
    chosen = setup.resolve_scope(spec, scope)
    if capture and spec.name != "claude-code":
        raise InvalidArgument("--capture is only for claude-code (it uses its hooks)")
    db = Path(os.path.abspath(settings_from(values).db))
    where = setup.Where.here()
    launcher = setup.find_launcher(platform=where.platform)
    changes = [setup.plan_install(spec, name, launcher, db, chosen, where)]
    if capture:
        command = setup.capture_command(launcher, db, where.platform)
        changes.append(setup.plan_capture(command, chosen, where))
    _carry_out(changes, dry_run)
    if not dry_run and any(change.needed for change in changes):
        click.echo(f"restart {spec.title} (or reload its MCP servers) to use {name!r}")


@click.command()
@_common
@reports_errors
def uninstall(client: str, name: str, scope: str | None, dry_run: bool) -> None:
    """Remove sqlgate's entry from CLIENT's MCP config; nothing else changes.

    For claude-code it also removes the capture hooks of the same scope.
    """
    spec = setup.client_named(client)
    chosen = setup.resolve_scope(spec, scope)
    where = setup.Where.here()
    changes = [setup.plan_uninstall(spec, name, chosen, where)]
    if spec.name == "claude-code" and setup.settings_path(chosen, where).exists():
        changes.append(setup.plan_uncapture(chosen, where))
    _carry_out(changes, dry_run)


def _carry_out(changes: list[setup.Change], dry_run: bool) -> None:
    """Every plan is made (and every file checked) before the first write."""
    for change in changes:
        shown = visible(str(change.path))
        target = setup.link_target(change.path)
        link = f"the link {shown} -> {visible(str(target))}" if target else ""
        if not change.needed:
            click.echo(f"{shown}: {change.summary}; nothing to change")
        elif dry_run:
            click.echo(f"would {change.summary} in {shown}{f' (through {link})' if link else ''}:")
            click.echo(_diff(change), nl=False)
        else:
            backup = setup.apply(change)
            made = f"backup: {visible(str(backup))}" if backup else "new file"
            click.echo(f"{shown}: {change.summary} ({made})")
            if link:
                click.echo(f"  wrote through {link}; the link is kept")


def _diff(change: setup.Change) -> str:
    """A unified diff; each line shown visibly (the file can hold any text)."""
    before = (change.before or "").splitlines(keepends=True)
    after = (change.after or "").splitlines(keepends=True)
    label = str(change.path)
    lines = difflib.unified_diff(before, after, "(none)" if change.before is None else label, label)
    return "".join(visible(line.removesuffix("\n").removesuffix("\r")) + "\n" for line in lines)
