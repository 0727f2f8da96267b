"""The audit log: one `query_log` row for every tool call, successful or not."""

from __future__ import annotations

import functools
import json
import logging
import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import apsw

__all__ = ["AuditEntry", "AuditLog", "utc_timestamp"]

log = logging.getLogger("sqlgate.audit")

MAX_QUERY_CHARS = 20_000
MAX_DETAIL_VALUE_CHARS = 2_000


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


# one encoder for every row: json.dumps with options builds a new one on each call
_detail_json = json.JSONEncoder(ensure_ascii=False, default=str).encode


def _bounded(value: Any) -> Any:
    if isinstance(value, str) and len(value) > MAX_DETAIL_VALUE_CHARS:
        return value[:MAX_DETAIL_VALUE_CHARS] + "…"
    return value


class AuditLog:
    """Appends rows to query_log through the server's own connection."""

    def __init__(
        self,
        conn: apsw.Connection,
        session: str,
        lock: threading.Lock,
        *,
        enabled: bool = True,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self._conn = conn
        self._session = session
        self._lock = lock
        self._enabled = enabled
        self._wall_clock = wall_clock

    def write(self, entry: AuditEntry, duration_ms: float) -> int | None:
        """Record one call; returns its id. Never raises: a failed write is logged instead."""
        if not self._enabled:
            return None
        try:
            detail: Mapping[str, Any] = {k: _bounded(v) for k, v in (entry.detail or {}).items()}
            query = entry.query[:MAX_QUERY_CHARS] if entry.query else entry.query
            with self._lock:
                self._conn.execute(
                    "INSERT INTO query_log "
                    "(ts, session, tool, query, ok, rows, error, duration_ms, detail) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        utc_timestamp(self._wall_clock()),
                        self._session,
                        entry.tool,
                        query,
                        int(entry.ok),
                        entry.rows,
                        entry.error,
                        round(duration_ms, 3),
                        _detail_json(detail) if detail else None,
                    ),
                )
                return int(self._conn.last_insert_rowid())
        except Exception as exc:  # the tool's result matters more than its audit row
            log.warning("audit row for %s not written: %s", entry.tool, exc)
            return None
