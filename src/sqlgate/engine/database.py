"""One database file and the three connections sqlgate keeps on it.

Each connection has its own lock: SQL from concurrent tool calls queues per connection,
so reads run beside a write (WAL) while writes stay serial.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import apsw

from sqlgate.config import Settings
from sqlgate.engine.authorizer import shadow_tables
from sqlgate.engine.connect import (
    apply_process_limits,
    check_database_file,
    open_agent_connection,
    open_server_connection,
)
from sqlgate.engine.schema import check_owner, migrate, protected_names
from sqlgate.errors import StartupError

__all__ = ["Database"]


def _check_owner_read_only(path: Path, busy_timeout: float) -> None:
    """Refuse another application's file before the server connection switches it to WAL."""
    if not path.is_file() or path.stat().st_size == 0:
        return
    try:
        conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
        conn.set_busy_timeout(int(busy_timeout * 1000))  # another server may be starting too
    except apsw.Error as exc:
        raise StartupError(f"cannot open {path}: {exc}") from None
    try:
        check_owner(conn)
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
    ) -> None:
        self.settings = settings
        self.server = server
        self.reader = reader
        self.writer = writer
        self.server_lock = threading.Lock()
        self.read_lock = threading.Lock()
        self.write_lock = threading.Lock()
        self.protected = protected_names()
        self.schema_version = 0

    @property
    def path(self) -> Path:
        return self.settings.db

    @classmethod
    def open(cls, settings: Settings, *, create_parent: bool = False) -> Database:
        """Open (creating if needed) and migrate the database. Raises StartupError."""
        if create_parent:
            try:
                settings.db.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StartupError(f"cannot create {settings.db.parent}: {exc.strerror}") from None
        check_database_file(settings.db)
        _check_owner_read_only(settings.db, settings.busy_timeout)
        apply_process_limits(settings)
        server = open_server_connection(settings)
        opened = [server]
        try:
            try:
                version = migrate(server)
            except apsw.Error as exc:
                raise StartupError(f"cannot prepare {settings.db}: {exc}") from None
            opened.append(writer := open_agent_connection(settings, readonly=False))
            opened.append(reader := open_agent_connection(settings, readonly=True))
        except BaseException:
            for conn in reversed(opened):
                conn.close()
            raise
        db = cls(settings, server, reader, writer)
        db.schema_version = version
        return db

    def close(self) -> None:
        for lock, conn in (
            (self.read_lock, self.reader),
            (self.write_lock, self.writer),
            (self.server_lock, self.server),
        ):
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
        for long server-side reads, so they neither wait for nor hold up the tools' reader."""
        conn = open_agent_connection(self.settings, readonly=True)
        try:
            conn.execute("BEGIN")
            try:
                yield conn
            finally:
                conn.execute("COMMIT")
        finally:
            conn.close()

    def shadow_tables(self, conn: apsw.Connection) -> frozenset[str]:
        """Names of virtual-table shadow tables (module bookkeeping, not agent rows)."""
        return shadow_tables(conn)
