"""What every CLI command shares: options built from the settings table, and errors
turned into one line on stderr with the error's exit code."""

from __future__ import annotations

import dataclasses
import functools
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import click

from sqlgate.config import FLAGS, Flag, Settings, default_db_path, load_settings, quoted
from sqlgate.errors import DatabaseBusy, NotFound, SqlError, SqlgateError
from sqlgate.home import home_of
from sqlgate.surfaces.terminal import is_terminal, visible

if TYPE_CHECKING:  # imported when a command runs, not at start-up
    from sqlgate.service import Service

__all__ = [
    "JSON_OPTION",
    "ProgressBar",
    "existing_service",
    "reports_errors",
    "say_database",
    "settings_from",
    "settings_options",
    "stderr_progress",
]

JSON_OPTION = click.option("--json", "as_json", is_flag=True, help="print JSON for scripts")

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
        except ValueError as exc:  # the words of the environment variable's error
            raise click.UsageError(f"{self.flag.option} {exc} (got {quoted(value)})", ctx) from None


EXISTING_DB_HELP = "SQLite database file (must exist: this command never creates one)"

_DEFAULTS = {field.name: field.default for field in dataclasses.fields(Settings)}


def default_text(flag: Flag) -> str:
    """What `--help` says a flag's default is: Settings' default as one would type it
    (`10`, `sql,memory,claims`, `on`); for --db the path on this machine (computed when
    help is shown: only then is platformdirs imported), the home folder as `~`."""
    if flag.name == "db":
        path, home = str(default_db_path()), str(Path.home())
        shown = "~" + path[len(home) :] if path.startswith(home + os.sep) else path
        return f"{shown} (this platform's per-user data folder)"
    value = _DEFAULTS[flag.name]
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, tuple):
        return ",".join(value) or "none"
    if isinstance(value, float):
        return f"{value:g}"
    return "none" if value is None else str(value)


class _FlagOption(click.Option):
    """A settings option: its default is None (so the environment, then Settings, decide:
    `load_settings`), and `--help` shows the default that then applies."""

    def __init__(self, *args: Any, flag: Flag, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.flag = flag

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        record = super().get_help_record(ctx)
        if record is None:
            return None
        names, text = record
        return names, f"{text}  [default: {default_text(self.flag)}]"


def settings_options(
    names: tuple[str, ...] | None = None,
    *,
    existing_db: bool = False,
    db_help: str | None = None,
) -> Callable[[F], F]:
    """Add one option per flag (all of them, or `names`), each documented with its env var.

    `existing_db`: the command refuses a missing database (exit 3) instead of creating it,
    and `--db`'s help says so; `db_help` says what `--db` is for any other command that
    does not create it."""
    if existing_db:
        db_help = EXISTING_DB_HELP
    if names is not None and "db" in names:  # the other way to name the database
        names = (*names, "project_db")
    chosen = [flag for flag in FLAGS if names is None or flag.name in names]

    def decorate(fn: F) -> F:
        for flag in reversed(chosen):
            if flag.name == "audit":
                option = click.option(
                    "--audit/--no-audit", "audit", default=None, cls=_FlagOption, flag=flag,
                    help=f"{flag.help} [env {flag.env_var}]",
                )  # fmt: skip
            elif flag.repeatable:  # each use adds names; settings_from joins them
                option = click.option(
                    flag.option, flag.name, type=_FlagType(flag), multiple=True, default=None,
                    metavar=flag.metavar, cls=_FlagOption, flag=flag,
                    help=f"{flag.help} [env {flag.env_var}, comma-separated]",
                )  # fmt: skip
            elif flag.name in ("adopt_db", "project_db"):  # a switch turned on, not off
                option = click.option(
                    flag.option, flag.name, is_flag=True, default=None, cls=_FlagOption,
                    flag=flag, help=f"{flag.help} [env {flag.env_var}=1]",
                )  # fmt: skip
            else:
                text = db_help if db_help is not None and flag.name == "db" else flag.help
                option = click.option(
                    flag.option, flag.name, type=_FlagType(flag), default=None,
                    metavar=flag.metavar, cls=_FlagOption, flag=flag,
                    help=f"{text} [env {flag.env_var}]",
                )  # fmt: skip
            fn = option(fn)
        return fn

    return decorate


def _given(value: Any) -> Any:
    """A repeatable option's uses (each a tuple of names) joined; None when it was not used."""
    if isinstance(value, tuple) and all(isinstance(part, tuple) for part in value):
        return tuple(name for part in value for name in part) or None
    return value


def settings_from(values: dict[str, Any], *, find_home: bool = True, say: bool = True) -> Settings:
    """The settings of a command's options. `find_home`: with no database named, use the
    one the project's home guards (`config.load_settings`); `say`: on a terminal, say
    which database the command reads when no --db nor SQLGATE_DB named it (`say_database`).
    """
    given = {k: _given(v) for k, v in values.items()}
    settings = load_settings({k: v for k, v in given.items() if v is not None},
                             find_home=find_home)  # fmt: skip
    if settings.adopt_db:
        say_adopt_is_gone()
    if say:
        say_database(settings, walked=find_home)
    return settings


ADOPT_GONE = (
    "--adopt-db is no longer needed: sqlgate keeps its tables in .sqlgate/ and leaves the "
    "database as it is"
)


def say_adopt_is_gone() -> None:
    """--adopt-db (SQLGATE_ADOPT_DB) is still accepted, with no effect: one stderr line per
    command says so."""
    ctx = click.get_current_context(silent=True)
    meta = {} if ctx is None else ctx.find_root().meta
    if meta.get(_ADOPT_SAID):
        return
    meta[_ADOPT_SAID] = True
    click.echo(f"sqlgate: {ADOPT_GONE}", err=True)


def _why(settings: Settings, walked: bool) -> str:
    """Why a command reads settings.db, in the words of its stderr line."""
    if settings.db_source == "home":
        return f"from {home_of(settings.db).folder}"
    if settings.db_source == "project":
        return f"--project-db: the project {settings.db.parent.parent}"
    if not walked:  # `serve`: no project is looked for
        return "the per-user default"
    try:
        here: Path | str = Path.cwd().resolve()
    except OSError:
        here = "the working folder"
    return f"the per-user default: above {here}, no project's .sqlgate/ keeps one"


def say_database(settings: Settings, *, walked: bool = True) -> None:
    """One stderr line naming the database a command reads and why, and the records folder
    that keeps sqlgate's tables of it (`Settings.records`), on a terminal only,
    once per command, and only when the person did not name it (--db, SQLGATE_DB).
    `walked`: the settings looked for the project's home (`settings_from`'s `find_home`)."""
    if settings.db_source in ("option", "env") or not is_terminal(stderr=True):
        return
    ctx = click.get_current_context(silent=True)
    meta = {} if ctx is None else ctx.find_root().meta
    if meta.get(_SAID) == settings.db:
        return
    meta[_SAID] = settings.db
    shown = str(settings.db)
    if settings.db.is_symlink():
        shown += f" (a link to {settings.db.resolve()})"
    records = visible(str(settings.records.folder))
    why = visible(_why(settings, walked))
    click.echo(f"sqlgate: database {visible(shown)} ({why}); records in {records}", err=True)


_SAID = "sqlgate.database_said"  # the click context's note that the line was written
_ADOPT_SAID = "sqlgate.adopt_said"


def reports_errors(fn: F) -> F:
    """Turn SqlgateError (and SQLite's own errors, a busy lock among them) into one line on
    stderr and its exit code; never a traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        import apsw

        try:
            return fn(*args, **kwargs)
        except apsw.Error as exc:
            error = _sqlite_error(exc, kwargs)
            click.echo(f"sqlgate: error: {visible(str(error))}", err=True)
            sys.exit(error.exit_code)
        except SqlgateError as exc:
            click.echo(f"sqlgate: error: {visible(exc.for_cli())}", err=True)  # agent text
            sys.exit(exc.exit_code)

    return wrapper  # type: ignore[return-value]


def _sqlite_error(exc: Exception, values: dict[str, Any]) -> SqlgateError:
    """What a command tells a person when SQLite itself failed it."""
    import apsw

    from sqlgate.service import busy_error

    if isinstance(exc, apsw.BusyError):
        known = {flag.name for flag in FLAGS}
        try:
            given = {k: v for k, v in values.items() if k in known}
            timeout = settings_from(given, say=False).busy_timeout
        except SqlgateError:
            timeout = Settings(db=Path()).busy_timeout
        return busy_error(timeout)
    return SqlError(f"SQLite error: {exc}; nothing more was done")


@contextmanager
def existing_service(
    values: dict[str, Any], *, read_only: bool = False, create: bool = False
) -> Iterator[Service]:
    """The database named by the options, opened as the server opens it, as actor `cli`.

    `read_only`: for commands that only look (the file is opened read-only: they work on a
    read-only copy, and never wait for nor take the write lock). `create`: for the commands
    that may start a database (`claims add`, `members add`), which make it and its folder
    when missing; every other command needs it to exist (a mistyped --db is exit 3, not a
    new empty file). The CLI run is its own session, `cli-<UTC time>-<random>`.

    A command whose change found the write lock held past --busy-timeout has waited once:
    closing does not wait again to write its audit row, which stays queued for the next
    command."""
    from sqlgate.config import creates_parent
    from sqlgate.service import Service, new_session_id

    settings = settings_from(values)
    if not create and not settings.db.is_file():
        raise NotFound(f"no database at {settings.db}; give its path with --db or SQLGATE_DB")
    service = Service.open(
        settings,
        session=new_session_id().replace("s-", "cli-", 1),
        read_only=read_only,
        create_parent=create and creates_parent(settings.db),
        actor="cli",
    )
    import apsw  # loaded with the database already

    wait = None
    try:
        yield service
    except (DatabaseBusy, apsw.BusyError):  # a call's, or a command's own transaction's
        wait = 0.0
        raise
    finally:
        service.close(wait)


class ProgressBar(Protocol):
    """What commands use of a progress bar (rich's `Progress` is one)."""

    def __enter__(self) -> ProgressBar: ...

    def __exit__(self, *exc: Any) -> None: ...

    def add_task(self, description: str, *, total: float | None = ...) -> Any: ...

    def update(
        self, task_id: Any, *, total: float | None = ..., completed: float | None = ...
    ) -> None: ...


class _NoProgress:
    """The progress bar of a stderr that is no terminal: nothing shown, rich not imported."""

    def __enter__(self) -> _NoProgress:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def add_task(self, description: str, *, total: float | None = None) -> int:
        return 0

    def update(
        self, task_id: Any, *, total: float | None = None, completed: float | None = None
    ) -> None:
        return None


def stderr_progress() -> ProgressBar:
    """A progress bar on stderr, shown only when stderr is a terminal (pipes stay clean)."""
    if not is_terminal(stderr=True):
        return _NoProgress()
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    console = Console(stderr=True)
    return Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
        TimeRemainingColumn(), console=console, transient=True, disable=not console.is_terminal,
    )  # fmt: skip
