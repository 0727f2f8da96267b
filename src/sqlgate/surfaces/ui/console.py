"""What the pages read from: one read-only `Service` and the chain's status, kept fresh in
the background so no page waits for a walk over the whole chain.

The database is opened as `sqlgate verify|log|stats` open it (`Service.open(read_only=True)`):
read-only connections only, nothing migrated, written or audited, no lock taken or waited
for, and verification never records its position in the witness.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone

import apsw

from sqlgate.config import Settings
from sqlgate.service import AuditReader, ChainStatus, Service
from sqlgate.surfaces.ui.summary import AuditSummary, SessionSummary

__all__ = ["ChainWatch", "Console", "WatchedStatus"]


@dataclass(frozen=True)
class WatchedStatus:
    status: ChainStatus | None  # None until the first verification finished
    head_id: int | None  # the newest event when the page asked
    checking: bool  # a verification is running now
    checked_at: str | None


class ChainWatch:
    """The chain's verdict, recomputed in a background thread whenever the head moved."""

    def __init__(self, service: Service, wall_clock: Callable[[], float] = time.time) -> None:
        self.service = service
        self.wall_clock = wall_clock
        self._lock = threading.Lock()
        self._status: ChainStatus | None = None
        self._verified_head: int | None = -1
        self._checked_at: str | None = None
        self._thread: threading.Thread | None = None

    def current(self, head_id: int | None) -> WatchedStatus:
        with self._lock:
            stale = head_id != self._verified_head
            running = self._thread is not None and self._thread.is_alive()
            if stale and not running:
                self._thread = threading.Thread(
                    target=self._verify, args=(head_id,), name="sqlgate-ui-verify", daemon=True
                )
                self._thread.start()
                running = True
            return WatchedStatus(self._status, head_id, running, self._checked_at)

    def wait(self, timeout: float | None = None) -> None:
        """For tests and the screenshot script: let a running verification finish."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)

    def _verify(self, head_id: int | None) -> None:
        try:
            status = self.service.memory.chain.verify(incremental=False)
        except Exception as exc:  # shown on the page, never a crash of the console
            status = ChainStatus(ok=False, reason=f"could not verify: {type(exc).__name__}")
        moment = datetime.fromtimestamp(self.wall_clock(), tz=timezone.utc)
        with self._lock:
            self._status = status
            self._verified_head = head_id
            self._checked_at = moment.strftime("%Y-%m-%d %H:%M:%S UTC")


class Console:
    """The read-only service the console's pages share, and its chain watch."""

    def __init__(self, service: Service, wall_clock: Callable[[], float] = time.time) -> None:
        self.service = service
        self.settings: Settings = service.settings
        self.wall_clock = wall_clock
        self.chain = ChainWatch(service, wall_clock)
        # the audit log as this file holds it: no actor in a file older than migration 9,
        # opened without upgrading
        self.audit = AuditReader.for_schema(service.db.schema_version)
        self.summary = AuditSummary(self.audit)
        self.sessions = SessionSummary()

    @classmethod
    def open(cls, settings: Settings, wall_clock: Callable[[], float] = time.time) -> Console:
        """Open the database read-only and read the audit log's summary once."""
        service = Service.open(settings, read_only=True, session="ui", wall_clock=wall_clock)
        console = cls(service, wall_clock)
        try:
            with console.reading() as conn:
                console.summary.refresh(conn)
                console.sessions.refresh(conn)
        except BaseException:
            service.close()
            raise
        return console

    def close(self) -> None:
        self.chain.wait(5.0)
        self.service.close()

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.wall_clock(), tz=timezone.utc)

    @contextmanager
    def reading(self) -> Iterator[apsw.Connection]:
        """sqlgate's records, read-only, inside one read transaction (a consistent page)."""
        with self.service.db.reading_records() as conn, _one_read(conn):
            yield conn

    @contextmanager
    def reading_tables(self) -> Iterator[apsw.Connection]:
        """The user's database, read-only, inside one read transaction (a consistent page)."""
        with self.service.db.reading() as conn, _one_read(conn):
            yield conn


@contextmanager
def _one_read(conn: apsw.Connection) -> Iterator[None]:
    conn.execute("BEGIN")
    try:
        yield
    finally:
        conn.execute("COMMIT")
