"""A click group whose commands are imported only when they run.

`sqlgate capture` must not pay for the MCP SDK that `serve` needs, nor `--help` for any
command's module. Each command is named in a table as `"module:attr"`, beside its one-line
help, so that `--help` lists the commands without importing one (a test holds each held
help equal to the real command's, so they cannot drift). A command is imported the first
time it is looked up, and kept.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import click

__all__ = ["LazyCommand", "LazyGroup"]


@dataclass(frozen=True)
class LazyCommand:
    """Where a command lives (`"package.module:attr"`) and its one-line help."""

    target: str
    help: str

    def load(self, name: str) -> click.Command:
        module_name, _, attr = self.target.partition(":")
        found = getattr(importlib.import_module(module_name), attr)
        if not isinstance(found, click.Command):  # a wrong entry in the table is a bug
            raise TypeError(f"{self.target} is not a click command (for `{name}`)")
        return found


class LazyGroup(click.Group):
    """A group with eager `commands` (as click has them) and `lazy` ones, imported on use."""

    def __init__(self, *args: Any, lazy: Mapping[str, LazyCommand] | None = None, **kw: Any):
        super().__init__(*args, **kw)
        self.lazy: dict[str, LazyCommand] = dict(lazy or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy:
            self.add_command(self.lazy[cmd_name].load(cmd_name), cmd_name)
        return self.commands.get(cmd_name)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """click's, suggesting among every command (click >= 8.4 suggests among the
        imported ones only, so a suggestion would depend on what ran before)."""
        no_such = getattr(click.exceptions, "NoSuchCommand", None)
        if no_such is None:  # pragma: no cover - click < 8.4 suggests nothing
            return super().resolve_command(ctx, args)
        try:
            return super().resolve_command(ctx, args)
        except no_such as error:
            name = error.command_name
            raise no_such(name, possibilities=self.list_commands(ctx), ctx=ctx) from None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """click's listing of the commands, with the held help of those not imported yet."""
        rows: list[tuple[str, str]] = []
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max((len(name) for name in names), default=0)
        for name in names:
            command = self.commands.get(name)
            if command is None:  # shortened as click shortens a command's own help
                held = click.Command(name, help=self.lazy[name].help)
                rows.append((name, held.get_short_help_str(limit)))
            elif not command.hidden:
                rows.append((name, command.get_short_help_str(limit)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)
