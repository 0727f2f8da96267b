"""`sqlgate doctor`'s look at a database file and at the capture log beside it: facts read
without writing anything (never a create, a migration, a `-wal` file), then pure
judgements that tests drive case by case.

A missing database that `serve` creates on its first start is a note, not a problem; a
file that `serve` would refuse (a link to nowhere, an unwritable file or folder, not
SQLite, a file of sqlgate 0.1.0 still holding its tables) is a failure, each with its fix.
Any other SQLite file (an app's, an ORM's) is fine as it is: the verdict names the records
folder in .sqlgate/ that sqlgate keeps for it.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import apsw

from sqlgate.config import creates_parent
from sqlgate.errors import StartupError
from sqlgate.home import record_files
from sqlgate.service import (
    MIGRATIONS,
    Owner,
    check_database_file,
    connect_read_only,
    counted,
    last_event_time,
    owner_of,
    read_facts,
    shown_path,
)
from sqlgate.surfaces.terminal import one_line

__all__ = [
    "RECENT_SECONDS",
    "DbFacts",
    "DbVerdict",
    "LogFacts",
    "db_facts",
    "judge_db",
    "judge_log",
    "log_facts",
]

RECENT_SECONDS = 24 * 3600  # a capture error this recent is reported
_LOG_TAIL_BYTES = 256 * 1024
_STAMP = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z) (.*)")


@dataclass(frozen=True)
class DbFacts:
    """What a read-only look at a database path found."""

    path: Path
    exists: bool
    link_to: Path | None = None  # a symlink's target (the link dangles when not `exists`)
    missing_folder: Path | None = None  # the nearest missing folder above the file
    creatable: bool = True  # serve may create what is missing (folder writable, ...)
    problem: str | None = None  # what serve would refuse, in its words
    records: Path | None = None  # sqlgate's records file of the database (in .sqlgate/)
    schema: int = 0  # the records' schema version (0: none yet)


@dataclass(frozen=True)
class DbVerdict:
    status: str  # ok, warn, fail
    detail: str
    fix: str | None = None
    ready: bool = False  # the server may be started on it without creating or migrating


def _q(path: Path) -> str:
    return shlex.quote(str(path))


def db_facts(path: Path) -> DbFacts:
    """Facts about the database `serve` would open at `path` and about its records (nothing
    is written)."""
    link = Path(os.readlink(path)) if path.is_symlink() else None
    if link is not None and not link.is_absolute():
        link = path.parent / link
    if not path.exists():
        if link is not None:
            return DbFacts(path, False, link_to=link)
        folder = path.parent
        missing = None
        while not folder.exists():
            missing, folder = folder, folder.parent
        writable = folder.is_dir() and os.access(folder, os.W_OK | os.X_OK)
        if missing is not None and not creates_parent(path):
            return DbFacts(path, False, missing_folder=missing, creatable=False)
        return DbFacts(path, False, missing_folder=missing, creatable=writable)
    try:
        check_database_file(path, writable=True)
        facts = read_facts(path, 0.5)
    except StartupError as exc:
        return DbFacts(path, True, link_to=link, problem=str(exc))
    if not os.access(path.parent, os.W_OK | os.X_OK):
        return DbFacts(path, True, link_to=link, problem=f"folder {path.parent} is not writable "
                       "(SQLite writes its -wal and -shm files beside the database)")  # fmt: skip
    records = record_files(path).records
    if owner_of(facts) is Owner.SQLGATE:
        return DbFacts(path, True, link_to=link, records=records, problem=(
            f"{shown_path(path)} holds sqlgate 0.1.0's own tables inside it; this version "
            f"keeps them in {records.parent} and leaves the file untouched until they are "
            "moved out"))  # fmt: skip
    return DbFacts(path, True, link_to=link, records=records, schema=_records_schema(records))


def _records_schema(records: Path) -> int:
    """The schema version of sqlgate's records file (0 when there is none yet)."""
    try:
        return read_facts(records, 0.5).user_version
    except StartupError:
        return 0


def judge_db(facts: DbFacts, reinstall: str) -> DbVerdict:
    """The verdict on `facts`; `reinstall` is the command that points the entry elsewhere."""
    path = facts.path
    if facts.link_to is not None and not facts.exists:
        return DbVerdict("fail", f"{path} is a symlink to {facts.link_to}, which does not exist",
                         f"point the link at the database (`ln -sfn FILE {_q(path)}`), or "
                         f"remove it (`rm {_q(path)}`) and serve creates a new one")  # fmt: skip
    if not facts.exists:
        if facts.missing_folder is not None and not facts.creatable and not creates_parent(path):
            return DbVerdict("fail", f"folder {path.parent} does not exist; serve refuses a "
                             "--db in a missing folder", f"mkdir -p {_q(path.parent)}")  # fmt: skip
        if not facts.creatable:
            return DbVerdict("fail", f"{path} does not exist and its folder is not writable",
                             f"chmod u+w {_q(path.parent)}, or {reinstall}")  # fmt: skip
        return DbVerdict("ok", f"{path} does not exist yet: serve creates it on its first start")
    if facts.problem is not None:
        return DbVerdict("fail", facts.problem, _fix_of(facts, reinstall))
    newest = MIGRATIONS[-1].version
    folder = facts.records.parent if facts.records is not None else None
    if facts.schema == 0:
        return DbVerdict("ok", f"{path}: left as it is; serve keeps sqlgate's records in "
                         f"{folder} (made on its first start)")  # fmt: skip
    if facts.schema < newest:
        return DbVerdict("ok", f"{path}: sqlgate's records in {folder} (schema {facts.schema}); "
                         f"serve upgrades them to {newest} on its next start")  # fmt: skip
    return DbVerdict("ok", f"{path}: writable; sqlgate's records in {folder} (schema "
                     f"{facts.schema})", ready=True)  # fmt: skip


def _fix_of(facts: DbFacts, reinstall: str) -> str:
    problem = facts.problem or ""
    path = _q(facts.path)
    if "is not writable" in problem and problem.startswith("folder"):
        return f"chmod u+w {_q(facts.path.parent)}"
    if "is not writable" in problem:
        return f"chmod u+w {path}"
    return reinstall


# -- the capture log ---------------------------------------------------------------------------
@dataclass(frozen=True)
class LogFacts:
    path: Path
    errors: tuple[tuple[float, str], ...]  # (UTC seconds, the line) of every dated line read
    last_event: float | None  # when the newest memory event was stored, if known


def _seconds(stamp: str) -> float:
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=timezone.utc
    ).timestamp() if "." in stamp else datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=timezone.utc).timestamp()  # fmt: skip


def log_facts(path: Path, db: Path) -> LogFacts | None:
    """The capture log's dated lines (its tail) and the newest event in `db`; None when
    there is no log."""
    try:
        with path.open("rb") as handle:
            size = handle.seek(0, 2)
            handle.seek(max(0, size - _LOG_TAIL_BYTES))
            tail = handle.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return None
    except OSError as exc:
        return LogFacts(path, ((0.0, f"cannot read the log: {exc.strerror}"),), None)
    errors = []
    for line in tail.splitlines():
        found = _STAMP.match(line)
        if found:
            try:
                errors.append((_seconds(found.group(1)), line))
            except ValueError:
                continue
    return LogFacts(path, tuple(errors), _last_event(db))


def _last_event(db: Path) -> float | None:
    db = record_files(db).records  # the memory lives in the database's records file
    if not db.is_file():
        return None
    try:
        conn = connect_read_only(db)
    except (apsw.Error, StartupError):
        return None
    try:
        stamp = last_event_time(conn)
    except apsw.Error:
        return None
    finally:
        conn.close()
    try:
        return _seconds(stamp) if isinstance(stamp, str) else None
    except ValueError:
        return None


def judge_log(facts: LogFacts | None, now: float) -> DbVerdict:
    """ok without errors in the last 24 h; warn when events were stored after the newest
    error (capture recovered); fail when nothing was stored since it (capture is failing)."""
    if facts is None:
        return DbVerdict("ok", "no capture log: no capture problem recorded")
    recent = [(at, line) for at, line in facts.errors if now - at <= RECENT_SECONDS]
    if not recent:
        return DbVerdict("ok", f"{facts.path}: no errors in the last 24 h")
    at, line = recent[-1]
    newest = one_line(line, 300)
    said = f"{counted(len(recent), 'error')} in the last 24 h in {facts.path}, the newest: {newest}"
    fix = (
        f"fix what the newest line says (`tail {_q(facts.path)}`), then send a prompt and "
        "check again"
    )
    if facts.last_event is not None and facts.last_event > at:
        return DbVerdict("warn", f"{said}; events were stored since", fix)
    return DbVerdict("fail", f"{said}; no event was stored since", fix)
