"""What every CLI command shares: options built from the settings table, and errors
turned into one line on stderr with the error's exit code."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import click

from sqlgate.config import FLAGS, Flag, Settings, load_settings
from sqlgate.errors import NotFound, SqlgateError

if TYPE_CHECKING:  # imported when a command runs, not at start-up
    from sqlgate.service import Service

__all__ = ["existing_service", "reports_errors", "settings_from", "settings_options"]

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


def settings_from(values: dict[str, Any]) -> Settings:
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


@contextmanager
def existing_service(values: dict[str, Any]) -> Iterator[Service]:
    """The database named by the options, opened as the server opens it; never created.

    The CLI run is its own session, `cli-<UTC time>-<random>`."""
    from sqlgate.service import Service, new_session_id

    settings = settings_from(values)
    if not settings.db.is_file():
        raise NotFound(f"no database at {settings.db}; give its path with --db or SQLGATE_DB")
    service = Service.open(settings, session=new_session_id().replace("s-", "cli-", 1))
    try:
        yield service
    finally:
        service.close()
