"""Reading memory for the surfaces that show it: the console's Memory pages, `sqlgate export`
and the capture health check (and, for the claims room, which evidence ids exist). The
memory room's SQL those surfaces need, on a connection they hold (one read transaction: a
consistent page, a consistent export).

The tools read memory through `MemoryStore`; these readers only show what is stored.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import apsw

from sqlgate.engine.records import json_value
from sqlgate.engine.sqltext import quote_identifier

__all__ = [
    "MEMORY_EXPORT",
    "EventRow",
    "count_rows",
    "event_and_neighbours",
    "event_times",
    "events_by_id",
    "head_event",
    "last_event_time",
    "newest_events",
    "sessions_since",
    "table_records",
]

# what `sqlgate export` writes of memory, in this order: (table, the `type` of its lines,
# its JSON text columns)
MEMORY_EXPORT: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("memory_events", "event", ("tags",)),
    ("memory_checkpoints", "checkpoint", ()),
)
_SHOWN = "id, ts, session, kind, content"
_WHOLE = "id, ts, session, kind, content, tags, prev_hash, hash"

EventRow = tuple[Any, ...]  # (id, ts, session, kind, content)


def head_event(conn: apsw.Connection) -> int | None:
    """The id of the newest event; None when there is none."""
    (head,) = conn.execute("SELECT max(id) FROM memory_events").fetchall()[0]
    return None if head is None else int(head)


def last_event_time(conn: apsw.Connection) -> Any:
    """The time of the newest event as stored (None when there is none)."""
    rows = conn.execute("SELECT max(ts) FROM memory_events").fetchall()
    return rows[0][0] if rows else None


def sessions_since(conn: apsw.Connection, after: int) -> list[tuple[Any, int, int, int]]:
    """(session, events, first id, last id) of the events with an id above `after`."""
    return [
        (session, int(count), int(first), int(last))
        for session, count, first, last in conn.execute(
            "SELECT session, count(*), min(id), max(id) FROM memory_events WHERE id > ? "
            "GROUP BY session",
            (after,),
        )
    ]


def event_times(conn: apsw.Connection, ids: Sequence[int]) -> dict[Any, Any]:
    """id -> time of the events `ids` (the ones that exist)."""
    return dict(
        conn.execute(
            "SELECT id, ts FROM memory_events WHERE id IN (SELECT value FROM json_each(?))",
            (json.dumps(list(ids)),),
        )
    )


def events_by_id(conn: apsw.Connection, ids: Sequence[int]) -> list[EventRow]:
    """(id, ts, session, kind, content) of the events `ids`, in the order of `ids`."""
    rows = list(conn.execute(
        f"SELECT {_SHOWN} FROM memory_events WHERE id IN (SELECT value FROM json_each(?))",
        (json.dumps(list(ids)),),
    ))  # fmt: skip
    order = list(ids)
    rows.sort(key=lambda r: order.index(r[0]))
    return rows


def newest_events(
    conn: apsw.Connection, session: str | None, before: int | None, limit: int
) -> list[EventRow]:
    """(id, ts, session, kind, content) newest first, of one session or all, below
    `before` (a keyset page), at most `limit`."""
    where: list[str] = []
    params: list[object] = []
    if session:
        where.append("session = ?")
        params.append(session)
    if before is not None:
        where.append("id < ?")
        params.append(before)
    return list(conn.execute(
        f"SELECT {_SHOWN} FROM memory_events "
        f"WHERE {' AND '.join(where) or '1'} ORDER BY id DESC LIMIT ?",
        (*params, limit),
    ))  # fmt: skip


def event_and_neighbours(
    conn: apsw.Connection, event_id: int
) -> tuple[EventRow, tuple[Any, Any] | None, int | None] | None:
    """Event `event_id` whole (id, ts, session, kind, content, tags, prev_hash, hash), the
    (id, hash) of the event before it and the id of the one after; None when it does not
    exist."""
    row = conn.execute(f"SELECT {_WHOLE} FROM memory_events WHERE id = ?", (event_id,)).fetchone()
    if row is None:
        return None
    previous = conn.execute(
        "SELECT id, hash FROM memory_events WHERE id < ? ORDER BY id DESC LIMIT 1", (event_id,)
    ).fetchone()
    following = conn.execute(
        "SELECT id FROM memory_events WHERE id > ? ORDER BY id LIMIT 1", (event_id,)
    ).fetchone()
    return (
        tuple(row),
        None if previous is None else (previous[0], previous[1]),
        None if following is None else int(following[0]),
    )


def count_rows(conn: apsw.Connection, table: str) -> int:
    """How many rows server table `table` holds."""
    rows: list[tuple[Any, ...]] = conn.execute(
        f"SELECT count(*) FROM {quote_identifier(table)}"
    ).fetchall()
    return int(rows[0][0])


def table_records(
    conn: apsw.Connection, table: str, kind: str, json_columns: Sequence[str]
) -> Iterator[dict[str, Any]]:
    """Every row of server table `table` by id, as a record of `type` `kind`, its JSON
    columns parsed: one statement stepped row by row (constant memory however long)."""
    columns = [str(name) for (name,) in conn.execute(
        "SELECT name FROM pragma_table_info(?) ORDER BY cid", (table,))]  # fmt: skip
    shown = ", ".join(quote_identifier(name) for name in columns)
    for row in conn.execute(f"SELECT {shown} FROM {quote_identifier(table)} ORDER BY id"):
        record: dict[str, Any] = {"type": kind, **dict(zip(columns, row, strict=True))}
        for column in json_columns:
            record[column] = json_value(record[column])
        yield record
