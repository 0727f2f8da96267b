"""One user database, sqlgate's records file beside it in its home, and the connections
sqlgate keeps on them.

    server   records: the server's own rows (migrations, memory appends, checkpoints, claims,
             members)
    audit    records: query_log rows, tried without waiting (busy timeout 0): a call never
             waits for another writer to record itself; a row that cannot be written at once
             is queued
    keeper   records: the undo data of a change, committed before the change itself (used
             only under the write lock)
    records  records, read-only: the server's own reads (memory search, claims, undo lookup)
    writer   the user's file: agent SQL of the write, destructive and view tiers
    reader   the user's file, opened read-only: agent SQL of the read tier

The agent connections attach the records file read-only as `sqlgate`. The user's file is
never migrated, never switched to WAL and never marked: only the agent's statements change it.
Each connection has its own lock: SQL from concurrent tool calls queues per connection. A
database opened with `read_only=True` (the CLI's inspection commands) holds read-only
connections only: nothing is created, migrated or written and no write lock is taken.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

import apsw

from sqlgate.config import Settings
from sqlgate.engine.commands import db_option
from sqlgate.engine.connect import (
    apply_process_limits,
    check_database_file,
    connect_read_only,
    open_agent_connection,
    open_audit_connection,
    open_keeper_connection,
    open_records_reader,
    open_server_connection,
    wal,
)
from sqlgate.engine.database.ownership import shown_path
from sqlgate.engine.records import (
    check_binding,
    database_id,
    note_history_lost,
    refuse_foreign_records,
)
from sqlgate.engine.rules import (
    LiveRules,
    RuleResolver,
    check_against,
    listed,
    rules_from_settings,
    shadow_tables,
)
from sqlgate.engine.schema import (
    APPLICATION_ID,
    LITESTREAM_TABLES,
    MIGRATIONS,
    check_owner,
    migrate,
    text_encoding,
)
from sqlgate.errors import StartupError
from sqlgate.home import RecordFiles, remember_records, remembered_records

if TYPE_CHECKING:
    from sqlgate.engine.database.legacy import MoveResult, Relocate

__all__ = ["READABLE_FROM", "Database"]

# the oldest schema whose every table the read-only commands read (undo tables came in 4)
READABLE_FROM = 4


def _records_version(path: Path, busy_timeout: float) -> int:
    """The records file's schema version (0 for a new one); refuses a file of another
    application or a newer sqlgate before anything writes it."""
    if not path.is_file() or path.stat().st_size == 0:
        return 0
    try:
        conn = connect_read_only(path, busy_timeout)  # another server may be starting too
    except apsw.Error as exc:
        raise StartupError(f"cannot open {path}: {exc}") from None
    try:
        return check_owner(conn)
    except apsw.Error as exc:
        raise StartupError(f"cannot read {path} as a SQLite database: {exc}") from None
    finally:
        conn.close()


def _refuse_tables_inside(settings: Settings, relocate: Relocate | None) -> MoveResult | None:
    """A user file that still holds sqlgate 0.1.0's own tables has them moved out first
    (`engine.database.legacy`), and a move that stopped is finished; an open that cannot
    move them (read-only, or no `relocate` for the undo data) refuses such a file, naming
    the command that moves it."""
    path = settings.db
    if not path.is_file() or path.stat().st_size == 0:
        return None
    if not _maybe_legacy(path, settings.records):
        return None  # the common case, decided from 4 bytes: the move's code is not loaded
    from sqlgate.engine.database.legacy import move, move_pending

    if relocate is not None:
        return move(path, settings, relocate)
    if move_pending(path):
        raise StartupError(
            f"{shown_path(path)} holds sqlgate 0.1.0's own tables (audit log, memory, undo "
            "data) inside it, which this version keeps in .sqlgate/ beside the project; "
            f"it was left untouched. Run `sqlgate migrate {db_option(path)}` (or start "
            "`sqlgate serve` once) to move them, then retry"
        )
    return None


def _maybe_legacy(path: Path, files: RecordFiles) -> bool:
    """Whether `path` may be a 0.1.0 file, or one whose move stopped: its header's
    application_id is sqlgate's (bytes 68-71), or a move left its journal."""
    try:
        with path.open("rb") as handle:
            handle.seek(68)
            mark = handle.read(4)
    except OSError:
        return True  # let the move's own checks say what is wrong
    stopped = (files.folder / "migrated" / "move.json").exists()
    return stopped or int.from_bytes(mark, "big") == APPLICATION_ID


def _make_records(files: RecordFiles, db: Path) -> None:
    """The records folder (0700) and an empty records file readable by its owner only (it
    holds the audit log's statements and values); SQLite gives its -wal and -shm the same
    mode."""
    try:
        files.make(db)
        fd = os.open(files.records, os.O_CREAT | os.O_WRONLY, 0o600)
        os.close(fd)
    except OSError as exc:
        raise StartupError(f"cannot create {files.folder}: {exc.strerror}") from None


def _create_user_file(path: Path, settings: Settings) -> None:
    """A database sqlgate starts itself (none was there): in WAL mode, so reads run beside
    a write. An existing file keeps its journal mode."""
    try:
        conn = apsw.Connection(
            str(path), flags=apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
        )
        try:
            wal(conn, settings)
        finally:
            conn.close()
    except apsw.Error as exc:
        raise StartupError(f"cannot create {path}: {exc}") from None


def _bound(
    server: apsw.Connection, settings: Settings, files: RecordFiles, *, moved_in: bool
) -> str | None:
    """The records' binding to the user's file checked (`engine.database.binding`); new
    records of a file that had records before note that its history is gone (unless this
    open just moved a 0.1.0 file's history into them: `moved_in`)."""
    moment = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    try:
        reason = check_binding(server, settings.db, files.records, moment)
        before = remembered_records(settings.db)
        if reason == "first open" and before is not None and not moved_in:
            note_history_lost(server, before, moment)
        if before is None or reason == "first open":
            remember_records(settings.db, files.folder, moment)
        return reason
    except apsw.BusyError:
        raise StartupError(
            f"cannot check the records of {settings.db}: another process held their write "
            f"lock for more than {settings.busy_timeout:g} s (--busy-timeout); retry"
        ) from None


def _migrated(server: apsw.Connection, settings: Settings) -> int:
    try:
        return migrate(server, text_encoding(settings.db))
    except apsw.BusyError:
        raise StartupError(
            f"cannot prepare the records of {settings.db}: another process held their write "
            f"lock for more than {settings.busy_timeout:g} s (--busy-timeout) while sqlgate "
            "needed it to create or upgrade its tables; retry when it is free"
        ) from None
    except apsw.Error as exc:
        raise StartupError(f"cannot prepare the records of {settings.db}: {exc}") from None


def _closing_last(settings: Settings, records: Path) -> apsw.Connection:
    """The user's file for a command that only reads: opened read-write when it may be
    (`query_only` keeps it from writing), so that on a WAL file the connection closing last
    removes the -wal and -shm the reading made, as any program's last connection does; a
    file or folder sqlgate may not write is opened read-only."""
    db = settings.db
    if not (os.access(db, os.W_OK) and os.access(db.parent, os.W_OK)):
        return open_agent_connection(settings, readonly=True, records=records)
    conn = open_agent_connection(settings, readonly=False, records=records)
    conn.pragma("query_only", True)
    return conn


class Database:
    """Opened with `Database.open(settings)`; close it when done."""

    def __init__(
        self,
        settings: Settings,
        server: apsw.Connection,
        reader: apsw.Connection,
        writer: apsw.Connection,
        audit: apsw.Connection | None = None,
        *,
        records: apsw.Connection | None = None,
        keeper: apsw.Connection | None = None,
        read_only: bool = False,
    ) -> None:
        self.settings = settings
        self.server = server
        self.reader = reader
        self.writer = writer
        self.audit = audit
        self.records = server if records is None else records
        self.keeper = keeper
        self.read_only = read_only
        self.server_lock = threading.Lock()
        self.read_lock = threading.Lock()
        self.write_lock = threading.Lock()
        self.audit_lock = threading.Lock()
        self.records_lock = self.server_lock if records is None else threading.Lock()
        # Litestream's tables, when it replicates the user's file: no other server table is there
        self.protected: frozenset[str] = frozenset(LITESTREAM_TABLES)
        self.rules = RuleResolver(rules_from_settings(settings))
        self.schema_version = 0
        self.database_id: str | None = None  # server_info's id (None before migration 8)
        # why the records bound this file anew at this open ("file replaced", ...), if they did
        self.binding_note: str | None = None
        self.moved: MoveResult | None = None  # what opening moved out of a 0.1.0 file

    @property
    def path(self) -> Path:
        return self.settings.db

    @property
    def files(self) -> RecordFiles:
        """The records file, snapshots, witness and audit queue of this database."""
        return self.settings.records

    @classmethod
    def open(
        cls,
        settings: Settings,
        *,
        create_parent: bool = False,
        read_only: bool = False,
        relocate: Relocate | None = None,
    ) -> Database:
        """Open (creating if needed) the database and its records file, migrating the
        records. Raises StartupError.

        `relocate` (`engine.undo.relocate_shapes`): a file of sqlgate 0.1.0 has its tables
        moved out first (`engine.database.legacy`); without it such a file is refused.

        `read_only`: open an existing database for reading only (nothing is created,
        migrated or written, and no lock is waited for)."""
        if read_only:
            return cls._open_read_only(settings)
        files = settings.records
        if create_parent:  # a folder of sqlgate's own: the home first (0700, .gitignore)
            _make_records(files, settings.db)
            try:
                settings.db.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StartupError(f"cannot create {settings.db.parent}: {exc.strerror}") from None
        check_database_file(settings.db)
        moved = _refuse_tables_inside(settings, relocate)
        _make_records(files, settings.db)
        _records_version(files.records, settings.busy_timeout)
        apply_process_limits(settings)
        if not settings.db.exists():
            _create_user_file(settings.db, settings)
        server = open_server_connection(files.records, settings)
        opened = [server]
        try:
            version = _migrated(server, settings)
            bound = _bound(server, settings, files, moved_in=moved is not None)
            opened.append(audit := open_audit_connection(files.records, settings))
            opened.append(keeper := open_keeper_connection(files.records, settings))
            opened.append(records := open_records_reader(files.records, settings))
            # the writer first: on a WAL file the last connection to close (the writer,
            # see close) checkpoints and removes the -wal and -shm it made
            opened.append(
                writer := open_agent_connection(settings, readonly=False, records=files.records)
            )
            opened.append(
                reader := open_agent_connection(settings, readonly=True, records=files.records)
            )
        except BaseException:
            for conn in reversed(opened):
                conn.close()
            raise
        db = cls(settings, server, reader, writer, audit, records=records, keeper=keeper)
        db.schema_version = version
        db.database_id = database_id(server)
        db.binding_note = bound
        db.moved = moved
        return db

    @classmethod
    def _open_read_only(cls, settings: Settings) -> Database:
        check_database_file(settings.db, writable=False)
        if not settings.db.is_file():
            raise StartupError(f"no database at {settings.db}; nothing to read")
        _refuse_tables_inside(settings, None)
        files = settings.records
        version = _records_version(files.records, settings.busy_timeout)
        if version < READABLE_FROM:
            raise StartupError(
                f"{settings.db} has no sqlgate records at {files.folder} yet (schema "
                f"{version}; this command reads {READABLE_FROM} to {MIGRATIONS[-1].version}); "
                f"run `sqlgate serve {db_option(settings.db)}` once, then retry"
            )
        apply_process_limits(settings)
        opened: list[apsw.Connection] = []
        try:
            opened.append(open_records_reader(files.records, settings))
            opened.append(_closing_last(settings, files.records))
            opened.append(open_agent_connection(settings, readonly=True, records=files.records))
        except BaseException:
            for conn in opened:
                conn.close()
            raise
        server, writer, reader = opened
        try:
            refuse_foreign_records(server, settings.db, files.records)
        except BaseException:
            for conn in opened:
                conn.close()
            raise
        db = cls(settings, server, reader, writer, None, read_only=True)
        db.schema_version = version
        db.database_id = database_id(server)
        return db

    def close(self) -> None:
        # the user's file: reader before writer, so the read-write connection closes last
        for lock, conn in (
            (self.read_lock, self.reader),
            (self.write_lock, self.writer),
            (self.write_lock, self.keeper),
            (self.records_lock, None if self.records is self.server else self.records),
            (self.audit_lock, self.audit),
            (self.server_lock, self.server),
        ):
            if conn is not None:
                with lock:
                    conn.close()

    @contextmanager
    def reading(self) -> Iterator[apsw.Connection]:
        with self.read_lock:
            yield self.reader

    @contextmanager
    def reading_records(self) -> Iterator[apsw.Connection]:
        """The records file, read-only: sqlgate's tables under their plain names."""
        with self.records_lock:
            yield self.records

    @contextmanager
    def writing(self) -> Iterator[apsw.Connection]:
        with self.write_lock:
            yield self.writer

    @contextmanager
    def snapshot_source(self) -> Iterator[apsw.Connection]:
        """A fresh read-only connection to the user's file, for a whole-file snapshot."""
        try:
            conn = connect_read_only(self.path, self.settings.busy_timeout)
        except apsw.Error as exc:
            raise StartupError(f"cannot open {self.path}: {exc}") from None
        try:
            yield conn
        finally:
            conn.close()

    @contextmanager
    def snapshot_reader(self) -> Iterator[apsw.Connection]:
        """A fresh read-only connection to the records file holding one read transaction (a
        consistent snapshot) for long server-side reads, so they neither wait for nor hold
        up the other readers.

        The snapshot is taken on entry (BEGIN alone defers it to the first read): whatever
        was committed before the block starts is in it, nothing committed later is."""
        conn = open_records_reader(self.files.records, self.settings)
        try:
            conn.execute("BEGIN")
            try:
                conn.execute("SELECT 1 FROM sqlite_schema LIMIT 1").fetchall()
                yield conn
            finally:
                conn.execute("COMMIT")
        finally:
            conn.close()

    def check_rules(self) -> None:
        """Refuse (StartupError) table rules that do not fit the schema now, every problem
        listed: a hidden column an existing table lacks, a contradiction."""
        with self.read_lock:
            problems = check_against(self.reader, self.rules.rules)
        if problems:
            raise StartupError(listed(problems))

    def live_rules(self, conn: apsw.Connection) -> LiveRules:
        """The user's table rules as they apply to `conn`'s schema now."""
        return self.rules.live(conn)

    def shadow_tables(self, conn: apsw.Connection) -> frozenset[str]:
        """Names of virtual-table shadow tables (module bookkeeping, not agent rows)."""
        return shadow_tables(conn)
