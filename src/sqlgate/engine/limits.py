"""Budgets for one call: a wall-clock deadline, cancellation, and result caps.

    what                 how it is enforced
    wall-clock timeout   progress handler checks `Deadline` every few hundred VM steps
    client cancellation  `CallControl.cancel()` sets a flag and interrupts the connection
    rows / bytes / cell  `ResultCaps`, applied while rows are fetched (never by rewriting SQL)

The clock is injected, so tests drive time by hand instead of sleeping.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import apsw

from sqlgate.errors import QueryTimeout

__all__ = [
    "REWRITE_MAX_CHARS",
    "SQLITE_INT_MAX",
    "SQLITE_INT_MIN",
    "CallControl",
    "Clock",
    "Deadline",
    "ResultCaps",
    "watched",
]

Clock = Callable[[], float]

# the integers SQLite stores: binding anything outside raises OverflowError in apsw
# the longest statement an answer carries back rewritten, ready to send (a longer one the
# agent has: the answer names the fix instead)
REWRITE_MAX_CHARS = 2000
SQLITE_INT_MIN = -(2**63)
SQLITE_INT_MAX = 2**63 - 1

DEADLINE_CHECK_STEPS = 200  # VM instructions between checks: cheap, and sub-millisecond to react


class Deadline:
    """A point on `clock` after which the running statement is stopped."""

    def __init__(self, seconds: float, clock: Clock = time.monotonic) -> None:
        self.seconds = seconds
        self._clock = clock
        self._expires = clock() + seconds

    def expired(self) -> bool:
        return self._clock() >= self._expires


class CallControl:
    """Cancellation for one tool call, safe to trigger from another thread.

    The surface calls `cancel()` when the client cancels or times out; the statement stops
    at its next progress check, or at once through `interrupt()` while it holds the
    connection.
    """

    def __init__(self) -> None:
        # a plain flag: set once, read by the progress handler every few hundred VM steps
        # (a threading.Event costs a Condition per call and a method call per check)
        self._cancelled = False
        self._lock = threading.Lock()
        self._conn: apsw.Connection | None = None

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self) -> None:
        self._cancelled = True
        with self._lock:
            if self._conn is not None:
                self._conn.interrupt()

    @contextmanager
    def holding(self, conn: apsw.Connection) -> Iterator[None]:
        with self._lock:
            self._conn = conn
        try:
            yield
        finally:
            with self._lock:
                self._conn = None


@dataclass(frozen=True)
class ResultCaps:
    rows: int
    bytes: int
    cell_chars: int


@contextmanager
def watched(conn: apsw.Connection, deadline: Deadline, control: CallControl) -> Iterator[None]:
    """Stop the statement when the deadline passes or the call is cancelled.

    Raises QueryTimeout (instead of SQLite's InterruptError) naming which one happened.
    """

    def should_stop() -> bool:
        return control.cancelled or deadline.expired()

    conn.set_progress_handler(should_stop, DEADLINE_CHECK_STEPS)
    try:
        with control.holding(conn):
            if control.cancelled:
                raise QueryTimeout(CANCELLED_MESSAGE)
            yield
    except apsw.InterruptError:
        if control.cancelled:
            raise QueryTimeout(CANCELLED_MESSAGE) from None
        raise QueryTimeout(
            f"the statement ran past the {deadline.seconds:g} s budget (--query-timeout) and was "
            "stopped; nothing was changed. Narrow it with WHERE or LIMIT, add an index, or "
            "raise --query-timeout"
        ) from None
    finally:
        conn.set_progress_handler(None)


CANCELLED_MESSAGE = (
    "the call was cancelled by the client; the statement was stopped, nothing changed"
)
