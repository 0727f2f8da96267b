"""Opening connections, with the hardening applied as a list of named steps.

Three kinds of connection, all on one file:
- `server`: the server's own (migrations, audit rows, snapshots); never runs agent SQL;
- `agent_write`: runs agent SQL of the write, destructive and view tiers;
- `agent_read`: opened read-only with `query_only`, runs the read tier.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import apsw

from sqlgate.config import Settings
from sqlgate.errors import StartupError

__all__ = [
    "SQLITE_HEADER",
    "apply_process_limits",
    "check_database_file",
    "immediate_transaction",
    "open_agent_connection",
    "open_server_connection",
]

SQLITE_HEADER = b"SQLite format 3\x00"

Step = Callable[[apsw.Connection, Settings], None]


def defensive(conn: apsw.Connection, _: Settings) -> None:
    """No writes to sqlite_master, no shadow-table corruption, no writable_schema."""
    conn.config(apsw.SQLITE_DBCONFIG_DEFENSIVE, 1)


def untrusted_schema(conn: apsw.Connection, _: Settings) -> None:
    """Functions with side effects may not run from inside views and triggers."""
    conn.config(apsw.SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0)


def no_extensions(conn: apsw.Connection, _: Settings) -> None:
    conn.config(apsw.SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0)
    conn.enable_load_extension(False)


def no_attached_files(conn: apsw.Connection, _: Settings) -> None:
    """Should an ATTACH ever get past the policy, it can neither create nor write a file."""
    conn.config(apsw.SQLITE_DBCONFIG_ENABLE_ATTACH_CREATE, 0)
    conn.config(apsw.SQLITE_DBCONFIG_ENABLE_ATTACH_WRITE, 0)


def no_double_quoted_ddl(conn: apsw.Connection, _: Settings) -> None:
    """Schema text must not turn a misspelt identifier into a string."""
    conn.config(apsw.SQLITE_DBCONFIG_DQS_DDL, 0)


def no_double_quoted_strings(conn: apsw.Connection, _: Settings) -> None:
    """`"name"` is always a column: a misspelt one is an error, never a silent string."""
    conn.config(apsw.SQLITE_DBCONFIG_DQS_DML, 0)


def sorts_in_memory(conn: apsw.Connection, _: Settings) -> None:
    """Sorts and temporary b-trees of reads stay on the heap, under --heap-limit-mb, so a
    huge ORDER BY fails cleanly instead of filling the disk with temporary files."""
    conn.pragma("temp_store", "memory")


def size_limits(conn: apsw.Connection, settings: Settings) -> None:
    """SQLite's own limits, lowered to what an agent plausibly needs."""
    for limit, value in (
        (apsw.SQLITE_LIMIT_ATTACHED, 0),
        (apsw.SQLITE_LIMIT_LENGTH, settings.max_value_bytes),
        (apsw.SQLITE_LIMIT_SQL_LENGTH, 1_000_000),
        (apsw.SQLITE_LIMIT_COLUMN, 2000),
        (apsw.SQLITE_LIMIT_EXPR_DEPTH, 200),
        (apsw.SQLITE_LIMIT_COMPOUND_SELECT, 100),
        (apsw.SQLITE_LIMIT_VDBE_OP, 250_000),
        (apsw.SQLITE_LIMIT_FUNCTION_ARG, 100),
        (apsw.SQLITE_LIMIT_TRIGGER_DEPTH, 10),
        (apsw.SQLITE_LIMIT_LIKE_PATTERN_LENGTH, 1000),
        (apsw.SQLITE_LIMIT_VARIABLE_NUMBER, 10_000),
    ):
        conn.limit(limit, value)


def busy_timeout(conn: apsw.Connection, settings: Settings) -> None:
    conn.set_busy_timeout(int(settings.busy_timeout * 1000))


def wal(conn: apsw.Connection, settings: Settings) -> None:
    """WAL lets readers run beside the writer; NORMAL sync survives a process crash.

    Switching a new file to WAL can answer SQLITE_BUSY at once, without the busy handler,
    when several servers start on it together: retried until the busy timeout runs out.
    """
    deadline = time.monotonic() + settings.busy_timeout
    while True:
        try:
            conn.pragma("journal_mode", "wal")
            break
        except apsw.BusyError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.01)  # another process holds the lock for a moment: wait, then retry
    conn.pragma("synchronous", "normal")


def foreign_keys(conn: apsw.Connection, _: Settings) -> None:
    conn.pragma("foreign_keys", True)


def query_only(conn: apsw.Connection, _: Settings) -> None:
    conn.pragma("query_only", True)


def no_mmap(conn: apsw.Connection, _: Settings) -> None:
    conn.pragma("mmap_size", 0)


COMMON: tuple[Step, ...] = (defensive, untrusted_schema, no_extensions, busy_timeout, no_mmap)
AGENT: tuple[Step, ...] = (*COMMON, no_attached_files, no_double_quoted_strings, size_limits)
SERVER_STEPS: tuple[Step, ...] = (*COMMON, no_double_quoted_ddl, wal)
WRITE_STEPS: tuple[Step, ...] = (*AGENT, no_double_quoted_ddl, foreign_keys)
READ_STEPS: tuple[Step, ...] = (*AGENT, sorts_in_memory, query_only)


def apply_process_limits(settings: Settings) -> None:
    """The hard heap limit is process-wide: SQLite fails allocations beyond it (SQLITE_NOMEM)."""
    apsw.hard_heap_limit(settings.heap_limit_mb * 1024 * 1024)


def check_database_file(path: Path) -> None:
    """Refuse, before SQLite touches anything, a path that cannot be a database we may open."""
    if path.exists() and path.is_dir():
        raise StartupError(f"{path} is a directory; --db needs a file path")
    if not path.parent.exists():
        raise StartupError(f"folder {path.parent} does not exist; create it or choose another --db")
    if path.exists():
        try:
            with path.open("rb") as handle:
                header = handle.read(len(SQLITE_HEADER))
        except OSError as exc:
            raise StartupError(f"cannot read {path}: {exc.strerror}") from None
        if header and header != SQLITE_HEADER:
            raise StartupError(f"{path} is not a SQLite database; it was left untouched")
        if not os.access(path, os.W_OK):
            raise StartupError(
                f"{path} is not writable; fix its permissions or choose another --db"
            )
    elif not os.access(path.parent, os.W_OK):
        raise StartupError(f"folder {path.parent} is not writable; choose another --db")


def _open(path: Path, flags: int, steps: Sequence[Step], settings: Settings) -> apsw.Connection:
    try:
        conn = apsw.Connection(str(path), flags=flags)
        for step in steps:
            step(conn, settings)
    except apsw.Error as exc:
        raise StartupError(f"cannot open {path}: {exc}") from None
    return conn


def open_server_connection(settings: Settings) -> apsw.Connection:
    flags = apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
    return _open(settings.db, flags, SERVER_STEPS, settings)


def open_agent_connection(settings: Settings, *, readonly: bool) -> apsw.Connection:
    if readonly:
        return _open(settings.db, apsw.SQLITE_OPEN_READONLY, READ_STEPS, settings)
    return _open(settings.db, apsw.SQLITE_OPEN_READWRITE, WRITE_STEPS, settings)


@contextmanager
def immediate_transaction(conn: apsw.Connection) -> Iterator[None]:
    """BEGIN IMMEDIATE ... COMMIT, or ROLLBACK on any exception (the write lock up front).

    A COMMIT that fails (disk full, I/O error) is rolled back too, so the connection never
    stays inside a transaction that the next call's BEGIN would trip over.
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
