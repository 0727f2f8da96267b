"""Reading a copy of the chain on a connection of one's own, without a server.

Replication's witness log mirrors the events a witness vouches for from such a connection,
and a restored replica is judged by what it holds (surfaces/replication): these are the
only reads of `memory_events` they need. Nothing here verifies: a caller compares what it
reads with what a witness holds, and `verify` checks the chain.
"""

from __future__ import annotations

import apsw

from sqlgate.memory.contract import GENESIS, head_of
from sqlgate.memory.witness_check import stored_hash

__all__ = ["chain_hash_at", "holds_chain", "stored_head", "stored_links"]


def holds_chain(conn: apsw.Connection) -> bool:
    """Whether the file has the chain's table (a sqlgate database does)."""
    found = conn.execute(
        "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'memory_events'"
    ).fetchone()
    return found is not None


def chain_hash_at(conn: apsw.Connection, event_id: int) -> str | None:
    """The stored hash of event `event_id` as text (64 zeros for 0), or None when there is
    none."""
    if event_id == 0:
        return GENESIS
    found = stored_hash(conn, event_id)
    return None if found is None else str(found)


def stored_head(conn: apsw.Connection) -> tuple[int, str]:
    """(id, hash) of the newest event stored; (0, 64 zeros) for an empty chain."""
    return head_of(conn)


def stored_links(
    conn: apsw.Connection, first: int, last: int, limit: int
) -> list[tuple[int, object, object]]:
    """(id, prev_hash, hash) as stored for the events first..last, at most `limit`, in id
    order: a missing event is simply absent, and the values are not checked."""
    found = conn.execute(
        "SELECT id, prev_hash, hash FROM memory_events WHERE id >= ? AND id <= ? "
        "ORDER BY id LIMIT ?",
        (first, last, limit),
    )
    return [(int(event_id), prev_hash, digest) for event_id, prev_hash, digest in found]
