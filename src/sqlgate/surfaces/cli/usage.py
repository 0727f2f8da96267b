"""Usage errors as sqlgate shows every error: one line on stderr, exit 2.

click shows a usage error (an unknown option or command, a missing or extra argument, a
bad choice or value) in three lines: the usage, `Try ... --help`, `Error: ...`. Every
other sqlgate error is one `sqlgate: error: ...` line, and scripts (and people) read the
first line of stderr, so a usage error is one such line too, naming the command's help:

    sqlgate: error: no such option '--bogus' (see sqlgate log --help)

`UsageLines` is the root group: every command runs inside its `invoke`, lazy and nested
ones too, so a usage error anywhere passes through it. A group given without its command
(`sqlgate claims`) still shows the group's help, as click does.
"""

from __future__ import annotations

from typing import IO, Any

import click

from sqlgate.surfaces.cli.lazy import LazyGroup
from sqlgate.surfaces.terminal import visible

__all__ = ["UsageLine", "UsageLines"]

# click >= 8.2 raises it for a group given without its command: it shows the help, kept so
_SHOWS_HELP: tuple[type[click.UsageError], ...] = tuple(
    found
    for found in (getattr(click.exceptions, "NoArgsIsHelpError", None),)
    if isinstance(found, type) and issubclass(found, click.UsageError)
)


class UsageLine(click.UsageError):
    """A usage error shown as one `sqlgate: error: <what> (see COMMAND --help)` line."""

    def __init__(self, message: str, ctx: click.Context | None, command: str) -> None:
        super().__init__(message, ctx=ctx)
        self.command = command

    def show(self, file: IO[Any] | None = None) -> None:
        command = self.ctx.command_path if self.ctx is not None else self.command
        what = self.format_message().strip().rstrip(".")
        what = (what[:1].lower() + what[1:]).replace(". Did you mean", "; did you mean")
        click.echo(f"sqlgate: error: {visible(what)} (see {command} --help)", err=True)


def _one_line(error: click.UsageError, root: click.Context, args: list[str]) -> click.UsageError:
    if isinstance(error, (UsageLine, *_SHOWS_HELP)):
        return error
    what = error.format_message().strip().rstrip(".") + _from_environment(error)
    return UsageLine(what, error.ctx, _command_path(root, args))


def _from_environment(error: click.UsageError) -> str:
    """`(given by SQLGATE_PORT)` when the bad value came from the option's variable."""
    from click.core import ParameterSource

    param, ctx = getattr(error, "param", None), error.ctx
    if not isinstance(param, click.Option) or ctx is None or param.name is None:
        return ""
    if ctx.get_parameter_source(param.name) is not ParameterSource.ENVIRONMENT:
        return ""
    names = [param.envvar] if isinstance(param.envvar, str) else list(param.envvar or ())
    return f" (given by {' or '.join(names)})" if names else ""


def _command_path(root: click.Context, args: list[str]) -> str:
    """The command `args` name below `root` (`sqlgate claims confirm`): what a usage error
    click raised without its context (an option missing its value) is about."""
    path, command = [root.command_path], root.command
    for arg in args:
        if not isinstance(command, click.Group) or arg.startswith("-"):
            break
        found = command.get_command(root, arg)
        if found is None:
            break
        path.append(arg)
        command = found
    return " ".join(path)


class UsageLines(LazyGroup):
    """The root group: a usage error raised while parsing or running any command below it
    is shown as one line (`UsageLine`)."""

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        given = list(args)
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except click.UsageError as error:
            root = click.Context(self, info_name=info_name, parent=parent)
            raise _one_line(error, root, given) from error

    def invoke(self, ctx: click.Context) -> Any:
        # the arguments below this group, read before click consumes them
        protected = getattr(ctx, "_protected_args", None)  # click >= 8.2; before, public
        pending = [*(ctx.protected_args if protected is None else protected), *ctx.args]
        try:
            return super().invoke(ctx)
        except click.UsageError as error:
            raise _one_line(error, ctx, pending) from error
