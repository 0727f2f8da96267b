"""One database file and the connections sqlgate keeps on it.

    server   the server's own rows: migrations, memory appends, checkpoints, snapshots
    audit    query_log rows, tried without waiting (busy timeout 0): a call never waits for
             another writer to record itself; a row that cannot be written at once is queued
    writer   agent SQL of the write, destructive and view tiers
    reader   agent SQL of the read tier, opened read-only

Each connection has its own lock: SQL from concurrent tool calls queues per connection,
so reads run beside a write (WAL) while writes stay serial. A database opened with
`read_only=True` (the CLI's inspection commands) holds read-only connections only: it is
never migrated, never written and never takes the write lock.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import apsw

from sqlgate.config import Settings
from sqlgate.engine.commands import db_option
from sqlgate.engine.connect import (
    apply_process_limits,
    check_database_file,
    connect_read_only,
    open_agent_connection,
    open_audit_connection,
    open_server_connection,
)
from sqlgate.engine.database.ownership import check_ownership
from sqlgate.engine.records import database_id
from sqlgate.engine.rules import (
    LiveRules,
    RuleResolver,
    check_against,
    listed,
    rules_from_settings,
    shadow_tables,
)
from sqlgate.engine.schema import MIGRATIONS, check_owner, migrate, protected_names
from sqlgate.errors import StartupError

__all__ = ["READABLE_FROM", "Database"]

# the oldest schema whose every table the read-only commands read (undo tables came in 4)
READABLE_FROM = 4


def _check_owner_read_only(path: Path, busy_timeout: float) -> int:
    """Refuse another application's file before the server connection switches it to WAL.

    Returns the file's schema version (0 for a new or empty file)."""
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
        read_only: bool = False,
    ) -> None:
        self.settings = settings
        self.server = server
        self.reader = reader
        self.writer = writer
        self.audit = audit
        self.read_only = read_only
        self.server_lock = threading.Lock()
        self.read_lock = threading.Lock()
        self.write_lock = threading.Lock()
        self.audit_lock = threading.Lock()
        self.protected = protected_names()
        self.rules = RuleResolver(rules_from_settings(settings))
        self.schema_version = 0
        self.database_id: str | None = None  # server_info's id (None before migration 8)

    @property
    def path(self) -> Path:
        return self.settings.db

    @classmethod
    def open(
        cls, settings: Settings, *, create_parent: bool = False, read_only: bool = False
    ) -> Database:
        """Open (creating if needed) and migrate the database. Raises StartupError, also
        for a file of another program's (`engine.database.ownership`) unless `settings.adopt_db`.

        `read_only`: open an existing sqlgate database for reading only (nothing is created,
        migrated or written, and no lock is waited for)."""
        if read_only:
            return cls._open_read_only(settings)
        if create_parent:
            try:
                settings.db.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StartupError(f"cannot create {settings.db.parent}: {exc.strerror}") from None
        check_database_file(settings.db)
        # another program's file is refused, untouched, unless the user consented
        check_ownership(
            settings.db, settings.busy_timeout, adopt=settings.adopt_db, read_only=False
        )
        _check_owner_read_only(settings.db, settings.busy_timeout)
        apply_process_limits(settings)
        server = open_server_connection(settings)
        opened = [server]
        try:
            try:
                version = migrate(server)
            except apsw.BusyError:
                raise StartupError(
                    f"cannot prepare {settings.db}: another process held its write lock for "
                    f"more than {settings.busy_timeout:g} s (--busy-timeout) while sqlgate "
                    "needed it to create or upgrade its tables; retry when it is free"
                ) from None
            except apsw.Error as exc:
                raise StartupError(f"cannot prepare {settings.db}: {exc}") from None
            opened.append(audit := open_audit_connection(settings))
            opened.append(writer := open_agent_connection(settings, readonly=False))
            opened.append(reader := open_agent_connection(settings, readonly=True))
        except BaseException:
            for conn in reversed(opened):
                conn.close()
            raise
        db = cls(settings, server, reader, writer, audit)
        db.schema_version = version
        db.database_id = database_id(server)
        return db

    @classmethod
    def _open_read_only(cls, settings: Settings) -> Database:
        check_database_file(settings.db, writable=False)
        if not settings.db.is_file():
            raise StartupError(f"no database at {settings.db}; nothing to read")
        check_ownership(settings.db, settings.busy_timeout, adopt=False, read_only=True)
        version = _check_owner_read_only(settings.db, settings.busy_timeout)
        if version < READABLE_FROM:
            raise StartupError(
                f"{settings.db} holds sqlgate schema {version}, older than this command reads "
                f"(it reads {READABLE_FROM} to {MIGRATIONS[-1].version}); run `sqlgate serve "
                f"{db_option(settings.db)}` once, which upgrades the file, then retry"
            )
        apply_process_limits(settings)
        opened: list[apsw.Connection] = []
        try:
            for _ in range(3):
                opened.append(open_agent_connection(settings, readonly=True))
        except BaseException:
            for conn in opened:
                conn.close()
            raise
        server, writer, reader = opened
        db = cls(settings, server, reader, writer, None, read_only=True)
        db.schema_version = version
        db.database_id = database_id(server)
        return db

    def close(self) -> None:
        for lock, conn in (
            (self.read_lock, self.reader),
            (self.write_lock, self.writer),
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
    def writing(self) -> Iterator[apsw.Connection]:
        with self.write_lock:
            yield self.writer

    @contextmanager
    def snapshot_reader(self) -> Iterator[apsw.Connection]:
        """A fresh read-only connection holding one read transaction (a consistent snapshot)
        for long server-side reads, so they neither wait for nor hold up the tools' reader.

        The snapshot is taken on entry (BEGIN alone defers it to the first read): whatever
        was committed before the block starts is in it, nothing committed later is."""
        conn = open_agent_connection(self.settings, readonly=True)
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
        with self.server_lock:
            problems = check_against(self.server, self.rules.rules)
        if problems:
            raise StartupError(listed(problems))

    def live_rules(self, conn: apsw.Connection) -> LiveRules:
        """The user's table rules as they apply to `conn`'s schema now."""
        return self.rules.live(conn)

    def shadow_tables(self, conn: apsw.Connection) -> frozenset[str]:
        """Names of virtual-table shadow tables (module bookkeeping, not agent rows)."""
        return shadow_tables(conn)
