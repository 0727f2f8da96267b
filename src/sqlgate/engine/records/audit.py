"""The audit log: one `query_log` row for every tool call, successful or not.

A row is written at once when the write lock is free, on the audit log's own connection,
which never waits for it (busy timeout 0). When another connection holds the lock, the row
goes to the audit queue (`engine.records.audit_queue`) and a background drainer writes it as soon
as the lock frees, so no call waits for another writer to record itself and no row is lost.

Every text is stored as text SQLite can hold: a lone surrogate (which UTF-8 cannot encode)
is kept as its `\\udXXX` escape rather than losing the row. `redact`, when given, is applied
to every text of the row (statement, error, detail values) before it is stored.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import apsw

from sqlgate.engine.framing import counted
from sqlgate.engine.records.audit_queue import AuditQueue, QueueDrainer

__all__ = [
    "ACTOR_SINCE",
    "AuditEntry",
    "AuditLog",
    "json_value",
    "storable_text",
    "utc_timestamp",
]

log = logging.getLogger("sqlgate.audit")

MAX_QUERY_CHARS = 20_000
ACTOR_SINCE = 9  # the schema version whose migration added query_log.actor (issue 22)


MAX_DETAIL_VALUE_CHARS = 2_000


def json_value(text: Any) -> Any:
    """A JSON text column (`detail`, `tags`, ...) as its value; the stored text itself when it
    is not valid JSON (another program may have written the file)."""
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


@functools.lru_cache(maxsize=8)
def _utc_second(whole_seconds: int) -> str:
    return datetime.fromtimestamp(whole_seconds, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")


def utc_timestamp(epoch_seconds: float) -> str:
    """ISO-8601 UTC with milliseconds and `Z`, the form every server table stores.

    The same text as `datetime.fromtimestamp(epoch_seconds, timezone.utc)` truncated to
    milliseconds (microseconds rounded half-even first, as datetime does); the date and
    time of day are formatted once per second, since every call writes one of these.
    """
    whole = math.floor(epoch_seconds)
    micro = round((epoch_seconds - whole) * 1_000_000)
    if micro >= 1_000_000:
        whole, micro = whole + 1, micro - 1_000_000
    return f"{_utc_second(int(whole))}.{micro // 1000:03d}Z"


@dataclass
class AuditEntry:
    """Filled in while a call runs; written once, whatever happened."""

    tool: str
    query: str | None = None
    ok: bool = False
    rows: int | None = None
    error: str | None = None
    detail: dict[str, Any] | None = None
    # who made the call and under which session (engine.records.actors); the log's own when None
    actor: str | None = None
    session: str | None = None


# one encoder for every row: json.dumps with options builds a new one on each call
_detail_json = json.JSONEncoder(ensure_ascii=False, default=str).encode


_DRAIN_BATCH = 500
_COLUMNS = (
    "ts", "session", "tool", "query", "ok", "rows", "error", "duration_ms", "detail", "actor",
)  # fmt: skip
_INSERT = f"INSERT INTO query_log ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))})"
# a queued row already in query_log (a drain interrupted after its commit) is not added twice
_INSERT_QUEUED = f"{_INSERT} ON CONFLICT DO NOTHING"


def storable_text(text: str) -> str:
    """`text`, with any lone surrogate (not encodable in UTF-8) written as its escape."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def _clean(value: Any, redact: Callable[[str], str] | None) -> Any:
    """A detail value as stored: texts redacted and cut, containers cleaned throughout."""
    if isinstance(value, str):
        text = redact(storable_text(value)) if redact is not None else value
        if len(text) > MAX_DETAIL_VALUE_CHARS:
            text = text[:MAX_DETAIL_VALUE_CHARS] + "…"
        return text
    if isinstance(value, dict):
        return {str(key): _clean(item, redact) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(item, redact) for item in value]
    return value


class AuditLog:
    """Appends rows to query_log through its own connection, queueing what must wait."""

    def __init__(
        self,
        conn: apsw.Connection | None,
        session: str,
        lock: threading.Lock,
        *,
        enabled: bool = True,
        wall_clock: Callable[[], float] = time.time,
        queue: AuditQueue | None = None,
        redact: Callable[[str], str] | None = None,
        actor: str | None = None,
    ) -> None:
        self._conn = conn
        self.actor = actor  # rows of calls that name no actor of their own
        self._session = session
        self._lock = lock
        self._enabled = enabled and conn is not None
        self._wall_clock = wall_clock
        self._queue = queue
        self._redact = redact
        self._drain_lock = threading.Lock()
        self.drainer = QueueDrainer(self.drain)

    def row(self, entry: AuditEntry, duration_ms: float) -> dict[str, Any]:
        """The query_log columns (all but id) for `entry`, redacted and bounded."""
        redact = self._redact
        detail = _clean(entry.detail or {}, redact)
        query = entry.query[:MAX_QUERY_CHARS] if entry.query else entry.query
        error = entry.error
        if redact is not None:
            query = redact(storable_text(query)) if query else query
            error = redact(storable_text(error)) if error else error
        return {
            "ts": utc_timestamp(self._wall_clock()),
            "session": entry.session or self._session,
            "tool": entry.tool,
            "query": query,
            "ok": int(entry.ok),
            "rows": entry.rows,
            "error": error,
            "duration_ms": round(duration_ms, 3),
            "detail": _detail_json(detail) if detail else None,
            "actor": entry.actor if entry.actor is not None else self.actor,
        }

    def write(self, entry: AuditEntry, duration_ms: float) -> int | None:
        """Record one call; returns its id, or None when the row was queued (the write lock
        was held elsewhere) or not written. Never raises and never waits for the lock."""
        if not self._enabled:
            return None
        try:
            row = self.row(entry, duration_ms)
        except Exception as exc:  # a redactor or encoder failure must not lose the call
            log.warning("audit row for %s could not be prepared: %s", entry.tool, exc)
            bare = AuditEntry(entry.tool, ok=entry.ok, error=entry.error)
            bare.actor, bare.session = entry.actor, entry.session
            row = self.row(bare, duration_ms)
        try:
            return self._insert(row)
        except apsw.BusyError:
            self._enqueue(row)
            return None
        except Exception as exc:  # the tool's result matters more than its audit row
            log.warning("audit row for %s not written: %s", entry.tool, exc)
            return None

    def _insert(self, row: dict[str, Any]) -> int:
        assert self._conn is not None
        with self._lock:
            try:
                self._conn.execute(_INSERT, tuple(row[name] for name in _COLUMNS))
            except UnicodeEncodeError:
                self._conn.execute(_INSERT, _storable(row))
            return int(self._conn.last_insert_rowid())

    def _enqueue(self, row: dict[str, Any]) -> None:
        if self._queue is None:
            log.warning("audit row for %s not written: the database is locked", row["tool"])
            return
        token = f"{self._session}/{os.urandom(8).hex()}"
        detail = json.loads(row["detail"]) if row["detail"] else {}
        queued = dict(row, detail=_detail_json({"queued": token, **detail}))
        try:
            self._queue.append(token, queued)
        except Exception as exc:
            log.warning("audit row for %s not written nor queued: %s", row["tool"], exc)
            return
        self.drainer.wake()

    def drain(self, wait: float = 0.0) -> bool:
        """Move queued rows into query_log; True once the queue is empty, False when the
        write lock is still held elsewhere (after waiting up to `wait` seconds for it)."""
        if self._queue is None or self._conn is None:
            return True
        with self._drain_lock:
            while pending := self._queue.peek(_DRAIN_BATCH):
                with self._lock:
                    if not self._begin(wait):
                        return False
                    try:
                        for _, row in pending:
                            self._conn.execute(_INSERT_QUEUED, _storable(row))
                        self._conn.execute("COMMIT")
                    except BaseException:
                        if self._conn.in_transaction:
                            self._conn.execute("ROLLBACK")
                        raise
                self._queue.remove(token for token, _ in pending)
        return True

    def _begin(self, wait: float) -> bool:
        assert self._conn is not None
        self._conn.set_busy_timeout(int(wait * 1000))
        try:
            self._conn.execute("BEGIN IMMEDIATE")
        except apsw.BusyError:
            return False
        finally:
            self._conn.set_busy_timeout(0)
        return True

    def pending(self) -> int:
        """Rows waiting in the queue (written by any process on this database)."""
        return 0 if self._queue is None else self._queue.count()

    def close(self, wait: float) -> None:
        """Stop the drainer and write what is queued, waiting up to `wait` seconds for the
        lock; rows still queued then stay in the queue file for the next sqlgate process."""
        self.drainer.stop(wait)
        try:
            if not self.drain(wait):
                log.info(
                    "%s queued in %s: the write lock was held; the next sqlgate process on this "
                    "database writes what is queued",
                    counted(self.pending(), "audit row stays", "audit rows stay"),
                    self._queue.path if self._queue else "the queue",
                )
        except Exception as exc:
            log.warning("queued audit rows not written at close: %s", exc)
        if self._queue is not None:
            self._queue.close()


def _storable(row: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(storable_text(v) if isinstance(v, str) else v for v in map(row.get, _COLUMNS))
