"""Whose file is it: facts read from a database file without changing it, and the pure
judgement of whether sqlgate may add its tables to it (issue 19).

| owner              | the file                                              | alone   | consent |
|--------------------|-------------------------------------------------------|---------|---------|
| `NEW`              | missing, 0 bytes, or no schema object, header 0       | taken   | taken   |
| `SQLGATE`          | application_id "SQGT" (the agent's tables are fine)   | opened  | opened  |
| `OTHER_TABLES`     | schema objects, header 0, not sqlgate's tables        | refused | adopted |
| `OTHER_HEADER`     | another application_id, or user_version without SQGT  | refused | refused |
| `SQLGATE_UNMARKED` | sqlgate's `query_log` but no "SQGT" (a `.dump` copy)  | refused | refused |

Consent is `--adopt-db`. sqlgate keeps its schema version in `user_version` and marks its
files with `application_id`, so a file whose program uses either is never shared.
`read_only` commands (`stats`, `log`, `verify`, `export`, `ui`) refuse every file that is
not sqlgate's: there is nothing of sqlgate's to read in it.

The facts are read on a read-only connection that creates no file beside the database:
a WAL database that no program has open (no write-ahead log with content) is read as
`immutable`, since a reader of such a file would otherwise leave a `-wal` and a `-shm`
behind. Only a WAL database whose log has content but no `-shm` (its program stopped) gets
the `-shm` SQLite needs to read that log.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from pathlib import Path

import apsw

from sqlgate.engine.connect import connect_read_only
from sqlgate.engine.names import fold_name
from sqlgate.engine.schema import APPLICATION_ID
from sqlgate.errors import StartupError

__all__ = [
    "SQLGATE_LOG_COLUMNS",
    "FileFacts",
    "Owner",
    "SchemaObject",
    "check_ownership",
    "owner_of",
    "read_facts",
    "refusal",
    "shown_path",
]

# the columns of sqlgate's query_log (migration 1, never changed): sqlgate's tables by shape
SQLGATE_LOG_COLUMNS = (
    "id", "ts", "session", "tool", "query", "ok", "rows", "error", "duration_ms", "detail",
)  # fmt: skip
SHOWN_NAMES = 3  # names a refusal lists before "+N more"
_LISTED_KINDS = ("table", "view")  # what a person recognises; indexes and triggers hang on them
_PLAIN_NAME = re.compile(r"[^\W\d]\w*\Z")
_WAL_READ_VERSION = 2  # byte 18 of the header: 1 rollback journal, 2 WAL


class Owner(enum.Enum):
    NEW = "new"
    SQLGATE = "sqlgate"
    OTHER_TABLES = "another program's tables"
    OTHER_HEADER = "another application's header"
    SQLGATE_UNMARKED = "sqlgate's tables without its mark"


@dataclass(frozen=True)
class SchemaObject:
    type: str  # table, view, index, trigger
    name: str


@dataclass(frozen=True)
class FileFacts:
    """What a read-only look at the file found; `size` 0 for a missing or empty file."""

    size: int
    application_id: int = 0
    user_version: int = 0
    objects: tuple[SchemaObject, ...] = ()  # every sqlite_schema row, in schema order
    log_columns: tuple[str, ...] = ()  # columns of a table named query_log, if there is one


def owner_of(facts: FileFacts) -> Owner:
    """The pure judgement (see the module's table)."""
    if facts.size == 0:
        return Owner.NEW
    if facts.application_id == APPLICATION_ID:
        return Owner.SQLGATE
    if facts.application_id != 0:
        return Owner.OTHER_HEADER
    if facts.log_columns == SQLGATE_LOG_COLUMNS:
        return Owner.SQLGATE_UNMARKED
    if facts.user_version != 0:
        return Owner.OTHER_HEADER
    return Owner.OTHER_TABLES if facts.objects else Owner.NEW


def refusal(facts: FileFacts, shown: str, *, adopt: bool, read_only: bool) -> str | None:
    """The one-line refusal of opening the file `shown` (its path as `shown_path` gives
    it), or None when the open may go on. `adopt`: the user consented (--adopt-db);
    `read_only`: the command only reads sqlgate's tables."""
    owner = owner_of(facts)
    if owner in (Owner.NEW, Owner.SQLGATE):
        return None
    elsewhere = "Point --db at the file `sqlgate serve` uses"
    if owner is Owner.SQLGATE_UNMARKED:
        return (
            f"{shown} is not a sqlgate database as it stands: it holds sqlgate's tables but "
            f"not its mark ({_header(facts)}), as a copy made with `sqlite3 DB .dump` has, and "
            "was left untouched: sqlgate cannot tell which schema version they are"
            f"{'' if read_only else ', even with --adopt-db'}. Use the original file or a "
            "snapshot (`sqlgate snapshots list`); copy a database with `sqlite3 DB '.backup "
            "COPY'` or `VACUUM INTO`, which keep the header"
        )
    if owner is Owner.OTHER_HEADER:
        if read_only:
            return (
                f"{shown} is not a sqlgate database: it belongs to another application "
                f"({_header(facts)}); it was left untouched. {elsewhere}"
            )
        return (
            f"{shown} belongs to another application ({_header(facts)}) and was left "
            "untouched: sqlgate keeps its own schema version in these header fields, so it "
            "cannot share this file, even with --adopt-db. Point --db at a file of its own "
            "(a new path is created)"
        )
    listing = _listing(facts.objects)
    if read_only:
        return (
            f"{shown} is not a sqlgate database: it holds another program's {listing} and no "
            f"sqlgate tables to read; it was left untouched. {elsewhere}"
        )
    if adopt:
        return None
    return (
        f"{shown} holds another program's {listing} and was left untouched: sqlgate would add "
        "its own tables and switch it to WAL. Point --db at a file of its own (a new path is "
        "created), or pass --adopt-db (SQLGATE_ADOPT_DB=1) to let sqlgate add its tables to "
        "this file"
    )


def _header(facts: FileFacts) -> str:
    app_id = facts.application_id
    shown_id = "0" if app_id == 0 else f"0x{app_id & 0xFFFFFFFF:08x}"
    return f"user_version {facts.user_version}, application_id {shown_id}"


def _listing(objects: tuple[SchemaObject, ...]) -> str:
    """`tables (users, orders, alembic_version, +3 more)`: a few names, each shown safely."""
    listed = [obj for obj in objects if obj.type in _LISTED_KINDS] or list(objects)
    kinds = {obj.type for obj in listed}
    what = (
        "tables and views" if kinds == {"table", "view"}
        else "tables" if kinds == {"table"}
        else "views" if kinds == {"view"}
        else "schema objects"
    )  # fmt: skip
    names = [_shown_name(obj.name) for obj in listed[:SHOWN_NAMES]]
    if len(listed) > SHOWN_NAMES:
        names.append(f"+{len(listed) - SHOWN_NAMES} more")
    return f"{what} ({', '.join(names)})"


def _printable(text: str) -> str:
    """`text` with every character a terminal would not show as itself written as its escape."""
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in text)


def _shown_name(name: str) -> str:
    if _PLAIN_NAME.match(name):
        return name
    return '"' + _printable(name).replace('"', '""') + '"'


def shown_path(path: Path) -> str:
    """The path as a refusal names it: absolute, with the file a link points to."""
    given = _printable(str(path.absolute()))
    if path.is_symlink():
        return f"{given} (a link to {_printable(str(path.resolve()))})"
    return given


def _probe(path: Path, busy_timeout: float) -> apsw.Connection:
    """A read-only connection to `path` that creates no file beside it (module docstring)."""
    with path.open("rb") as handle:
        header = handle.read(100)
    log = path.with_name(path.name + "-wal")
    shared = path.with_name(path.name + "-shm")
    in_use = log.is_file() and shared.is_file()
    log_has_content = log.is_file() and log.stat().st_size > 0
    if len(header) > 18 and header[18] == _WAL_READ_VERSION and not in_use and not log_has_content:
        # nobody has it open: the file alone is the whole database
        uri = f"{path.resolve().as_uri()}?immutable=1"
        conn = apsw.Connection(uri, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    else:
        conn = connect_read_only(path, busy_timeout)
    conn.config(apsw.SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0)
    return conn


def _facts(conn: apsw.Connection, size: int) -> FileFacts:
    rows = conn.execute("SELECT type, name FROM sqlite_schema ORDER BY rowid").fetchall()
    objects = tuple(SchemaObject(str(kind), str(name)) for kind, name in rows)
    log_tables = [
        obj.name for obj in objects if obj.type == "table" and fold_name(obj.name) == "query_log"
    ]
    columns: tuple[str, ...] = ()
    if log_tables:
        found = conn.execute("SELECT name FROM pragma_table_info(?)", (log_tables[0],))
        columns = tuple(str(name) for (name,) in found)
    return FileFacts(
        size=size,
        application_id=int(conn.pragma("application_id")),
        user_version=int(conn.pragma("user_version")),
        objects=objects,
        log_columns=columns,
    )


def _unreadable(path: Path, exc: apsw.Error, busy_timeout: float) -> StartupError:
    shown = shown_path(path)
    if isinstance(exc, apsw.BusyError):
        return StartupError(
            f"cannot read {shown}: another program held its lock for more than "
            f"{busy_timeout:g} s (--busy-timeout) while sqlgate checked whose file it is; it "
            "was left untouched. Retry when it is free"
        )
    return StartupError(f"cannot read {shown} as a SQLite database: {exc}; it was left untouched")


def read_facts(path: Path, busy_timeout: float) -> FileFacts:
    """The facts of the file at `path`, read without writing or creating anything.
    Raises StartupError when it cannot be read (locked, corrupt, a hot journal)."""
    if not path.is_file() or path.stat().st_size == 0:
        return FileFacts(size=0)
    size = path.stat().st_size
    try:
        conn = _probe(path, busy_timeout)
    except apsw.Error as exc:
        raise _unreadable(path, exc, busy_timeout) from None
    try:
        return _facts(conn, size)
    except apsw.Error as exc:
        raise _unreadable(path, exc, busy_timeout) from None
    finally:
        conn.close()


def check_ownership(path: Path, busy_timeout: float, *, adopt: bool, read_only: bool) -> Owner:
    """Refuse (StartupError, exit 8) a file sqlgate may not open this way; else its owner."""
    facts = read_facts(path, busy_timeout)
    message = refusal(facts, shown_path(path), adopt=adopt, read_only=read_only)
    if message is not None:
        raise StartupError(message)
    return owner_of(facts)
