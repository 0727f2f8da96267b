"""`sqlgate capture`: the command Claude Code's hooks run (see surfaces/clients/capture.py).

It always exits 0 and prints nothing but the resume context on SessionStart: a hook that
fails or prints noise would disturb the session it is recording. Problems go to the
capture log, `<db>.capture.log` unless `--log` names another file.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

import click

from sqlgate.config import (
    FLAGS,
    PROJECT_DB,
    Settings,
    creates_parent,
    default_db_path,
    load_settings,
    project_folder,
)
from sqlgate.surfaces.integrations.capture import (
    DEFAULT_DEADLINE,
    MAX_PAYLOAD_BYTES,
    CaptureLog,
    run_bounded,
    run_hook,
)
from sqlgate.surfaces.terminal import visible

__all__ = ["capture"]


def _abandon() -> None:  # pragma: no cover - ends the test process; tests replace it
    """The deadline passed with the work still running: leave without waiting for it."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(0)


def _stderr_line(text: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        click.echo(visible(text), err=True)


def _emit(text: str, log: CaptureLog) -> None:
    """UTF-8 to stdout whatever the console's code page; a closed pipe is logged."""
    if not text:
        return
    try:
        stream = sys.stdout.buffer  # bytes: the console's code page may not have every character
        stream.write(text.encode("utf-8", errors="replace"))
        stream.flush()
    except (OSError, ValueError) as exc:
        log.write(f"could not print the resume context: {exc}")


_PROJECT_DB_FLAG = next(flag for flag in FLAGS if flag.name == "project_db")


def _db_guess(db: str | None, project_db: bool | None) -> Path:
    """The database the log sits beside, even when the settings cannot be loaded."""
    if db and db.strip():
        return Path(db).expanduser()
    try:
        per_project = project_db or _PROJECT_DB_FLAG.parse(os.environ.get("SQLGATE_PROJECT_DB", ""))
    except ValueError:
        per_project = False
    if per_project:
        return project_folder(os.environ, Path.cwd()) / PROJECT_DB
    raw = os.environ.get("SQLGATE_DB") or ""
    return Path(raw).expanduser() if raw.strip() else default_db_path()


@click.command("capture")
@click.option("--db", "db", default=None, metavar="PATH",
              help="SQLite database file [env SQLGATE_DB]")  # fmt: skip
@click.option("--project-db", "project_db", is_flag=True, default=None,
              help="the project's database, PROJECT/.sqlgate/agent.db (PROJECT: "
                   "$CLAUDE_PROJECT_DIR, else the project above the working folder, else "
                   "the working folder) "
                   "[env SQLGATE_PROJECT_DB]")  # fmt: skip
@click.option("--log", "log_path", default=None, metavar="PATH",
              help="file for problems [default: <db>.capture.log]")  # fmt: skip
@click.option("--deadline", default=None, metavar="SECONDS",
              help=f"most seconds the run may take [default: {DEFAULT_DEADLINE:g}]")  # fmt: skip
@click.option("--adopt-db", "adopt_db", is_flag=True, default=None,
              help="no longer needed, accepted for this release with no effect: sqlgate keeps "
                   "its tables in .sqlgate/ and leaves the database as it is "
                   "[env SQLGATE_ADOPT_DB=1]")  # fmt: skip
def capture(
    db: str | None,
    project_db: bool | None,
    log_path: str | None,
    deadline: str | None,
    adopt_db: bool | None,
) -> None:
    """Record one Claude Code hook payload (JSON on stdin) as a memory event.

    For the hooks SessionStart (prints the resume context for the new session),
    UserPromptSubmit (kind prompt), PostToolUse (kind tool) and Stop (kind response);
    each event is redacted and tagged cc-<session id>. Always exits 0; problems go to
    the log. `sqlgate install claude-code --capture` registers the hooks.
    """
    own_log = bool(log_path and log_path.strip())
    guess = _db_guess(db, project_db)
    log = CaptureLog(
        Path(log_path).expanduser() if log_path and own_log else CaptureLog.beside(guess),
        fallback=_stderr_line,
        make_folder=not own_log and creates_parent(guess),
    )
    seconds = _seconds(deadline, log)

    def load() -> Settings:
        given: dict[str, object] = {"adopt_db": adopt_db, "project_db": project_db}
        if db and db.strip():
            given["db"] = Path(db).expanduser()
        return load_settings(given, find_home=False)  # the hooks' database, as the server's

    def read_payload() -> bytes:
        return sys.stdin.buffer.read(MAX_PAYLOAD_BYTES + 1)

    output = run_bounded(lambda: run_hook(read_payload, load, log, seconds), seconds)
    if output is None:
        log.write(f"gave up after {seconds:g} s (--deadline); the event may not be stored")
        _abandon()
        return
    _emit(output, log)


def _seconds(text: str | None, log: CaptureLog) -> float:
    if text is None:
        return DEFAULT_DEADLINE
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value <= 600:  # also false for nan
        log.write(f"--deadline {text!r} is not a number of seconds up to 600; using 5")
        return DEFAULT_DEADLINE
    return value
