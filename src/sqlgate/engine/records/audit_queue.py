"""The audit queue: query_log rows that could not be written at once, kept until they can.

A tool call never waits for another writer to record itself. Its row is tried once without
waiting; when another connection holds the records' write lock (a second server, a capture
hook, a migration, a backup), the row goes to this queue: a small SQLite file in the
database's records folder, `audit-queue.sqlite` beside `records.sqlite` (`sqlgate.home`),
whose lock only sqlgate takes, for one insert or one delete at a time.
The rows are moved into query_log as soon as the write lock is free (see `AuditLog.drain`).

Exactly once: a queued row carries a token in its detail (`"queued"`), and query_log has a
unique index on it (migration 5). A drain inserts in one transaction, commits, then deletes
the rows from the queue; interrupted between the two, the next drain inserts nothing twice.

Durability: the queue commits as the database does (WAL, synchronous=NORMAL). A queued row
survives the crash of the process; like the database's own last transactions, it may not
survive a power cut or an OS crash.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import apsw

__all__ = ["AuditQueue", "QueueDrainer", "queue_path", "queued_rows"]

log = logging.getLogger("sqlgate.audit")

_SCHEMA = "CREATE TABLE IF NOT EXISTS pending (token TEXT PRIMARY KEY, row TEXT NOT NULL)"


def queue_path(db: Path) -> Path:
    """Where the audit queue of the database `db` lives: in its records folder."""
    from sqlgate.home import record_files

    return record_files(db).queue


def queued_rows(db: Path) -> int:
    """How many audit rows wait in the queue of the database `db`, read without writing
    anything (for inspection commands); 0 when there is no queue file."""
    path = queue_path(db)
    if not path.is_file():
        return 0
    from sqlgate.engine.connect import connect_read_only

    conn = connect_read_only(path)
    try:
        row = conn.execute("SELECT count(*) FROM pending").fetchone()
    except apsw.SQLError:  # created, but its table not yet
        return 0
    finally:
        conn.close()
    return int(row[0]) if row is not None and isinstance(row[0], int) else 0


class AuditQueue:
    """The queue file, opened (and created) on first use. Thread-safe."""

    def __init__(self, path: Path, busy_timeout: float) -> None:
        self.path = path
        self._busy_ms = max(1, int(busy_timeout * 1000))
        self._conn: apsw.Connection | None = None
        self._lock = threading.Lock()

    def _connection(self, *, create: bool) -> apsw.Connection | None:
        if self._conn is not None:
            return self._conn
        if not create and not self.path.exists():
            return None
        flags = apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_NOFOLLOW
        if create:
            flags |= apsw.SQLITE_OPEN_CREATE
        conn = apsw.Connection(str(self.path), flags=flags)
        try:
            conn.set_busy_timeout(self._busy_ms)
            conn.config(apsw.SQLITE_DBCONFIG_DEFENSIVE, 1)
            conn.config(apsw.SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0)
            conn.pragma("journal_mode", "wal")
            conn.pragma("synchronous", "normal")
            conn.execute(_SCHEMA)
        except BaseException:
            conn.close()
            raise
        self._conn = conn
        return conn

    def append(self, token: str, row: dict[str, Any]) -> None:
        """Keep one audit row (the query_log columns but id) until it can be written."""
        text = json.dumps(row, ensure_ascii=True)  # \\u escapes: no text can fail to encode
        with self._lock:
            conn = self._connection(create=True)
            assert conn is not None
            conn.execute("INSERT INTO pending (token, row) VALUES (?, ?)", (token, text))

    def peek(self, limit: int) -> list[tuple[str, dict[str, Any]]]:
        """Up to `limit` queued rows, oldest first; nothing when there is no queue file."""
        with self._lock:
            conn = self._connection(create=False)
            if conn is None:
                return []
            found = conn.execute(
                "SELECT token, row FROM pending ORDER BY rowid LIMIT ?", (limit,)
            ).fetchall()
        return [(str(token), _parsed(token, text)) for token, text in found]

    def count(self) -> int:
        with self._lock:
            conn = self._connection(create=False)
            if conn is None:
                return 0
            row = conn.execute("SELECT count(*) FROM pending").fetchone()
            return int(row[0]) if row is not None and isinstance(row[0], int) else 0

    def remove(self, tokens: Iterable[str]) -> None:
        """Forget rows that are in query_log now."""
        chosen = list(tokens)
        if not chosen:
            return
        with self._lock:
            conn = self._connection(create=False)
            if conn is None:
                return
            conn.execute(
                "DELETE FROM pending WHERE token IN (SELECT value FROM json_each(?))",
                (json.dumps(chosen),),
            )

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def _parsed(token: object, text: object) -> dict[str, Any]:
    """A queued row as written by `append`; a damaged one becomes a row that says so, so
    the call still has its row and the drain is never stuck on it."""
    try:
        row = json.loads(str(text))
    except ValueError:
        row = None
    if isinstance(row, dict) and _well_formed(row):
        return row
    return {
        "ts": "1970-01-01T00:00:00.000Z",
        "session": "unknown",
        "tool": "unknown",
        "query": None,
        "ok": 0,
        "rows": None,
        "error": f"this audit row was damaged while it waited in the audit queue: {text!r:.500}",
        "duration_ms": None,
        "detail": json.dumps({"queued": str(token)}),
    }


_TEXT = (str,)
_OPTIONAL_TEXT = (str, type(None))
_FIELDS: dict[str, tuple[type, ...]] = {
    "ts": _TEXT,
    "session": _TEXT,
    "tool": _TEXT,
    "query": _OPTIONAL_TEXT,
    "ok": (int,),
    "rows": (int, type(None)),
    "error": _OPTIONAL_TEXT,
    "duration_ms": (int, float, type(None)),
    "detail": _TEXT,
}


def _well_formed(row: dict[str, Any]) -> bool:
    return all(
        isinstance(row.get(name), kinds) and not isinstance(row.get(name), bool)
        for name, kinds in _FIELDS.items()
    ) and row["ok"] in (0, 1)


class QueueDrainer:
    """A background thread that calls `drain` while queued rows wait for the write lock.

    `drain()` returns True once the queue is empty, False while the lock is still held: then
    the thread waits, `first_wait` seconds at first and twice as long each time after, up to
    `max_wait`, and tries again. `wake()` says rows were queued; `stop()` ends the thread.
    """

    def __init__(
        self, drain: Callable[[], bool], *, first_wait: float = 0.01, max_wait: float = 0.5
    ) -> None:
        self._drain = drain
        self._first_wait = first_wait
        self._max_wait = max_wait
        self._wake = threading.Event()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()

    def wake(self) -> None:
        with self._start_lock:
            if self._stopping:
                return
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="sqlgate-audit-drainer", daemon=True
                )
                self._thread.start()
        self._wake.set()

    def stop(self, timeout: float) -> None:
        with self._start_lock:
            self._stopping = True
            thread = self._thread
        self._wake.set()
        if thread is not None:
            thread.join(timeout)

    def _run(self) -> None:
        wait: float | None = None
        while True:
            self._wake.wait(wait)
            self._wake.clear()
            if self._stopping:
                return
            try:
                empty = self._drain()
            except Exception as exc:  # a failing drain must not end the thread
                log.warning("queued audit rows not written yet: %s", exc)
                empty = False
            if empty:
                wait = None
            else:
                wait = self._first_wait if wait is None else min(wait * 2, self._max_wait)
