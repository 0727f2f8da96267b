"""The schema cookie (`PRAGMA schema_version`), read once per statement.

Every schema change, by any connection, moves the cookie, so caches of schema facts (the
virtual tables' shadow tables, the table rules as they apply) are keyed by it. Reading it
costs a few microseconds, which is most of what the table rules would add to a small
statement if each cache read it again: the first reader of a statement hands its value on
to the next, once and only within a millisecond (`hand_on`): a value handed on by a call
that never ran its statement is not taken by a later one. Every other read goes to SQLite.
"""

from __future__ import annotations

import threading
import time
import weakref

import apsw

__all__ = ["read_schema_version", "schema_version"]

_SCHEMA_VERSION = "PRAGMA schema_version"
_FRESH_NS = 1_000_000  # how long a handed-on value may be taken over
_handed: weakref.WeakKeyDictionary[apsw.Connection, tuple[int, int]] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def read_schema_version(conn: apsw.Connection, *, hand_on: bool = False) -> int:
    """The cookie as SQLite has it now; `hand_on`: the next `schema_version(conn)` of the
    same statement takes this value instead of reading it again."""
    (version,) = conn.execute(_SCHEMA_VERSION).fetchone() or (0,)
    value = int(version) if isinstance(version, int) else 0
    if hand_on:
        with _lock:
            _handed[conn] = (value, time.monotonic_ns())
    return value


def schema_version(conn: apsw.Connection) -> int:
    """The value handed on by this statement's first reader, else the cookie read now."""
    with _lock:
        handed = _handed.pop(conn, None)
    if handed is None or time.monotonic_ns() - handed[1] > _FRESH_NS:
        return read_schema_version(conn)
    return handed[0]
