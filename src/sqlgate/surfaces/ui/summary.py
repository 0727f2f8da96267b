"""Calls per hour and `query_patterns`, kept in memory and brought up to date by id.

Both are aggregates over the whole audit log: SQLite answers them by reading every row
(`query_patterns` is a GROUP BY over a JSON field), about 200 ms at 100,000 rows. The
console reads the log once when it starts, then on each page only the rows with an id above
the last one it folded in. query_log is append-only (triggers), so the figures equal the
view's; a row the audit queue wrote late gets a new id and is counted when it lands.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import apsw

from sqlgate.service import AuditFilter, AuditReader, sessions_since

__all__ = ["AuditSummary", "Pattern", "SessionSummary"]

_BATCH = 5000
# a row as the summary folds it in: its hour, whether it was refused, its statement's shape
# and the start of its statement (the shape's example)
_FOLDED = ("id", "hour", "ts", "tool", "ok", "refused", "fingerprint", "example", "actor")


@dataclass
class Pattern:
    fingerprint: str
    calls: int
    failures: int
    last_used: str
    example: str
    actors: set[str] = field(default_factory=set)  # the view's: the recorded ones, no NULL

    def actors_sorted(self) -> list[str]:
        return sorted(self.actors, key=_by_name)


def _by_name(name: str) -> tuple[str, str]:
    """Names in any case together (member names are unique ignoring case), then exact."""
    return (name.lower(), name)


class AuditSummary:
    """Hourly counts by outcome, the distinct tools and actors, and the statement shapes."""

    def __init__(self, audit: AuditReader | None = None) -> None:
        self._lock = threading.Lock()
        self._audit = audit or AuditReader()
        self.high = 0  # the newest query_log id folded in
        self.hours: dict[str, list[int]] = {}  # "2026-12-01T10" -> [ok, refused, error]
        self.tools: set[str] = set()
        self.actors: set[str] = set()
        self.unnamed = False  # a row names no actor (written before migration 9)
        self.patterns: dict[str, Pattern] = {}

    def refresh(self, conn: apsw.Connection) -> None:
        """Fold in the rows added since the last call (all of them the first time)."""
        with self._lock:
            while True:
                rows = self._audit.rows(conn, AuditFilter(after=self.high), _FOLDED, _BATCH)
                for row in rows:
                    self._fold(row)
                if len(rows) < _BATCH:
                    return

    def _fold(self, row: tuple[object, ...]) -> None:
        row_id, hour, ts, tool, ok, refused, fingerprint, example, actor = row
        self.high = int(row_id)  # type: ignore[call-overload]
        counts = self.hours.setdefault(str(hour), [0, 0, 0])
        counts[0 if ok else 1 if refused else 2] += 1
        self.tools.add(str(tool))
        if actor is None:
            self.unnamed = True
        else:
            self.actors.add(str(actor))
        if fingerprint is None:
            return
        key = str(fingerprint)
        found = self.patterns.get(key)
        if found is None:
            found = self.patterns[key] = Pattern(key, 0, 0, str(ts), str(example or ""))
        found.calls += 1
        found.failures += 0 if ok else 1
        if actor is not None:
            found.actors.add(str(actor))
        if str(ts) >= found.last_used:  # the view's example is the row of max(ts)
            found.last_used = str(ts)
            found.example = str(example or "")

    def repeated(self, limit: int) -> list[Pattern]:
        """query_patterns' rows with more than one call, most calls first."""
        with self._lock:
            found = [p for p in self.patterns.values() if p.calls > 1]
        found.sort(key=lambda p: (-p.calls, _descending(p.last_used)))
        return found[:limit]

    def hour_counts(self, hours: list[str]) -> list[tuple[int, int, int]]:
        with self._lock:
            return [tuple(self.hours.get(h, [0, 0, 0])) for h in hours]  # type: ignore[misc]

    def newest_hour(self) -> str | None:
        with self._lock:
            return max(self.hours) if self.hours else None

    def known_tools(self) -> list[str]:
        with self._lock:
            return sorted(self.tools)

    def known_actors(self) -> list[str]:
        """The recorded actors by name, then `-` when some rows name none (the filter's
        value for them)."""
        with self._lock:
            return sorted(self.actors, key=_by_name) + (["-"] if self.unnamed else [])


def _descending(text: str) -> list[int]:
    return [-ord(c) for c in text]


class SessionSummary:
    """Per memory session: events, first and last event id; folded in by id like the log."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.high = 0
        self.sessions: dict[str, list[int]] = {}  # session -> [events, first id, last id]

    def refresh(self, conn: apsw.Connection) -> None:
        with self._lock:
            for session, count, first, last in sessions_since(conn, self.high):
                found = self.sessions.get(str(session))
                if found is None:
                    self.sessions[str(session)] = [count, first, last]
                else:
                    found[0] += count
                    found[2] = max(found[2], last)
                self.high = max(self.high, last)

    def newest(self, limit: int) -> list[tuple[str, int, int, int]]:
        """(session, events, first id, last id) of the sessions with the newest events."""
        with self._lock:
            found = [(name, v[0], v[1], v[2]) for name, v in self.sessions.items()]
        found.sort(key=lambda item: -item[3])
        return found[:limit]
