"""Opening connections, with the hardening applied as a list of named steps.

Two files: the user's database, and sqlgate's records file in its home (`sqlgate.home`).
- `server`, `audit`, `records reader`: the records file (migrations, audit rows, undo data,
  memory, claims, members); never run agent SQL;
- `agent_write`: the user's file, runs agent SQL of the write, destructive and view tiers;
- `agent_read`: the user's file opened read-only with `query_only`, runs the read tier
  (foreign keys on, as on the writer, so `PRAGMA foreign_keys` reads what writes enforce).

An agent connection may be given sqlgate's records file: it is attached read-only under
the schema name `sqlgate` (`attach_records`) before any hardening step runs, and no other
file can be attached after it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import apsw

from sqlgate.config import Settings
from sqlgate.engine.names import SERVER_SCHEMA
from sqlgate.errors import SqlError, StartupError

__all__ = [
    "SQLITE_HEADER",
    "apply_process_limits",
    "attach_records",
    "check_database_file",
    "connect_read_only",
    "hold_exclusively",
    "immediate_transaction",
    "lock_if_free",
    "open_agent_connection",
    "open_audit_connection",
    "open_keeper_connection",
    "open_records_reader",
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
    normal_sync(conn, settings)


def normal_sync(conn: apsw.Connection, _: Settings) -> None:
    """In WAL mode, a commit survives the crash of the process without an fsync of its own
    (it may not survive a power cut); `synchronous` is set per connection."""
    conn.pragma("synchronous", "normal")


def foreign_keys(conn: apsw.Connection, _: Settings) -> None:
    """Enforced on writes; on for reads too, so `PRAGMA foreign_keys` reads what is true."""
    conn.pragma("foreign_keys", True)


def query_only(conn: apsw.Connection, _: Settings) -> None:
    conn.pragma("query_only", True)


def no_mmap(conn: apsw.Connection, _: Settings) -> None:
    conn.pragma("mmap_size", 0)


COMMON: tuple[Step, ...] = (defensive, untrusted_schema, no_extensions, busy_timeout, no_mmap)
AGENT: tuple[Step, ...] = (*COMMON, no_attached_files, no_double_quoted_strings, size_limits)
SERVER_STEPS: tuple[Step, ...] = (*COMMON, no_double_quoted_ddl, wal)
AUDIT_STEPS: tuple[Step, ...] = (*COMMON, normal_sync)
KEEPER_STEPS: tuple[Step, ...] = (*COMMON, no_double_quoted_ddl, normal_sync)
WRITE_STEPS: tuple[Step, ...] = (*AGENT, no_double_quoted_ddl, foreign_keys)
READ_STEPS: tuple[Step, ...] = (*AGENT, sorts_in_memory, foreign_keys, query_only)
RECORDS_READ_STEPS: tuple[Step, ...] = (*COMMON, query_only)


def apply_process_limits(settings: Settings) -> None:
    """The hard heap limit is process-wide: SQLite fails allocations beyond it (SQLITE_NOMEM)."""
    apsw.hard_heap_limit(settings.heap_limit_mb * 1024 * 1024)


def check_database_file(path: Path, *, writable: bool = True) -> None:
    """Refuse, before SQLite touches anything, a path that cannot be a database we may open
    (`writable`: for writing too)."""
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
        if writable and not os.access(path, os.W_OK):
            raise StartupError(
                f"{path} is not writable; fix its permissions or choose another --db"
            )
    elif writable and not os.access(path.parent, os.W_OK):
        raise StartupError(f"folder {path.parent} is not writable; choose another --db")


def connect_read_only(path: Path, busy_timeout: float = 0.0) -> apsw.Connection:
    """A read-only connection to the database at `path`.

    A WAL database needs a shared-memory file (`-shm`) beside it even to be read. In a
    folder where SQLite can neither find nor create one (an archived copy on read-only
    media), the file is opened immutable instead: no writer can be working on it there,
    since a writer needs that file too. When a write-ahead log with content sits beside it,
    that log cannot be read without the shared memory, so the open is refused rather than
    showing the database without its newest changes.
    """
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    conn.set_busy_timeout(int(busy_timeout * 1000))  # another server may be starting on it
    try:
        conn.execute("PRAGMA schema_version").fetchall()
        return conn
    except apsw.CantOpenError:
        conn.close()
    except BaseException:
        conn.close()
        raise
    wal = path.with_name(path.name + "-wal")
    if wal.is_file() and wal.stat().st_size > 0:
        raise StartupError(
            f"cannot read {path}: its folder is not writable and its write-ahead log "
            f"{wal.name} holds changes SQLite can only read with a shared-memory file beside "
            "it; copy the database with its -wal file to a writable folder and read that copy"
        )
    uri = f"{path.resolve().as_uri()}?immutable=1"
    conn = apsw.Connection(uri, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    conn.set_busy_timeout(int(busy_timeout * 1000))
    return conn


def attach_records(conn: apsw.Connection, records: Path) -> None:
    """Attach sqlgate's records file as `sqlgate`, read-only, and allow no further ATTACH.

    SQLite applies ATTACH_WRITE when it attaches, so it is off before the ATTACH (set after,
    the attached file would stay writable); ATTACH_CREATE off, a missing file is never
    created. The path is bound, and no authorizer is installed yet: this is the server's
    own statement. Lowering the limit of attached files to 0 afterwards keeps this one and
    refuses any other ("too many attached databases").
    """
    check_database_file(records, writable=False)
    if not records.is_file():
        raise StartupError(
            f"sqlgate's records file {records} does not exist; it is made by the server when "
            "it opens the database, never by an agent's connection"
        )
    conn.config(apsw.SQLITE_DBCONFIG_ENABLE_ATTACH_WRITE, 0)
    conn.config(apsw.SQLITE_DBCONFIG_ENABLE_ATTACH_CREATE, 0)
    conn.execute(f"ATTACH ? AS {SERVER_SCHEMA}", (str(records),))
    conn.limit(apsw.SQLITE_LIMIT_ATTACHED, 0)


def _open(
    path: Path,
    flags: int,
    steps: Sequence[Step],
    settings: Settings,
    records: Path | None = None,
) -> apsw.Connection:
    conn: apsw.Connection | None = None
    try:
        if flags == apsw.SQLITE_OPEN_READONLY:
            conn = connect_read_only(path, settings.busy_timeout)
        else:
            conn = apsw.Connection(str(path), flags=flags)
            # before its first statement: a WAL file another program's last connection is
            # closing (checkpointing, removing the -wal) answers "locked" for a moment
            conn.set_busy_timeout(int(settings.busy_timeout * 1000))
        if records is not None:
            attach_records(conn, records)
        for step in steps:
            step(conn, settings)
    except apsw.Error as exc:
        if conn is not None:
            conn.close()
        raise StartupError(f"cannot open {path}: {exc}") from None
    except StartupError:
        if conn is not None:
            conn.close()
        raise
    return conn


def open_server_connection(path: Path, settings: Settings) -> apsw.Connection:
    """sqlgate's records file, read-write (created when missing), in WAL mode."""
    flags = apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
    return _open(path, flags, SERVER_STEPS, settings)


def open_audit_connection(path: Path, settings: Settings) -> apsw.Connection:
    """The audit log's own connection to the records file: it never waits for the write
    lock (busy timeout 0); a row it cannot write at once goes to the audit queue instead."""
    conn = _open(path, apsw.SQLITE_OPEN_READWRITE, AUDIT_STEPS, settings)
    conn.set_busy_timeout(0)
    return conn


def open_keeper_connection(path: Path, settings: Settings) -> apsw.Connection:
    """The records connection that keeps undo data while the writer holds the user's file:
    used only under the write lock, so it waits (busy timeout) only for other servers."""
    return _open(path, apsw.SQLITE_OPEN_READWRITE, KEEPER_STEPS, settings)


def open_records_reader(path: Path, settings: Settings) -> apsw.Connection:
    """A read-only connection to the records file, for the server's own reads."""
    return _open(path, apsw.SQLITE_OPEN_READONLY, RECORDS_READ_STEPS, settings)


def open_agent_connection(
    settings: Settings, *, readonly: bool, records: Path | None = None
) -> apsw.Connection:
    """The reader (`readonly`) or the writer of agent SQL on `settings.db`; with `records`,
    sqlgate's records file attached read-only as `sqlgate` (`attach_records`)."""
    if readonly:
        return _open(settings.db, apsw.SQLITE_OPEN_READONLY, READ_STEPS, settings, records)
    return _open(settings.db, apsw.SQLITE_OPEN_READWRITE, WRITE_STEPS, settings, records)


def hold_exclusively(db: Path) -> apsw.Connection:
    """A connection holding SQLite's exclusive lock on `db` until it is closed, taken without
    waiting: `apsw.BusyError` while another connection has the file open, another
    `apsw.Error` when it cannot be opened (nothing is left open either way).

    In WAL mode every connection that has read the database keeps a shared lock on the file
    while it stays open, idle or not, so the lock is refused exactly while another
    connection (this process or another) has the database open; held to the end, it keeps
    anyone from opening the file meanwhile.
    """
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READWRITE)
    try:
        conn.set_busy_timeout(0)
        conn.pragma("locking_mode", "exclusive")
        conn.execute("BEGIN EXCLUSIVE; COMMIT")
    except BaseException:
        conn.close()
        raise
    return conn


def lock_if_free(conn: apsw.Connection) -> bool:
    """BEGIN IMMEDIATE without waiting: True when this connection now holds the write lock,
    False when another connection holds it (or the file is read-only). The connection's
    busy timeout is put back as it was."""
    previous = conn.pragma("busy_timeout")
    conn.set_busy_timeout(0)
    try:
        conn.execute("BEGIN IMMEDIATE")
    except (apsw.BusyError, apsw.ReadOnlyError):
        return False
    finally:
        conn.set_busy_timeout(int(previous))
    return True


@contextmanager
def immediate_transaction(conn: apsw.Connection) -> Iterator[None]:
    """BEGIN IMMEDIATE ... COMMIT, or ROLLBACK on any exception (the write lock up front).

    A COMMIT that fails (disk full, I/O error) is rolled back too, so the connection never
    stays inside a transaction that the next call's BEGIN would trip over. One refused on a
    deferred foreign key is a `SqlError` (agent statements are answered before COMMIT, by
    `engine.running.execute`, naming the key; this is the last word for any other writer).
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
        try:
            conn.execute("COMMIT")
        except apsw.ConstraintError as exc:
            raise SqlError(
                f"SQLite error: {exc.args[0] if exc.args else exc} at COMMIT (a deferred "
                "foreign key); nothing was changed. Next: describe_table the tables the call "
                "changes to see their foreign keys"
            ) from None
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
