"""Checkpoints and the resume context: where the last session left off, cheaply.

A checkpoint is a summary anchored to the chain's head at that moment. The resume context
is the latest checkpoint, the events since (newest kept when there are too many) and the
chain's status, verified incrementally so its cost follows what was added since.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import apsw

from sqlgate.engine.connect import immediate_transaction
from sqlgate.engine.csvout import csv_line
from sqlgate.engine.database import Database
from sqlgate.engine.framing import LINE_BREAKS, FramedReply, counted, data_bytes, inline
from sqlgate.engine.records import session_now, utc_timestamp
from sqlgate.errors import InvalidArgument
from sqlgate.memory.chain import ChainStatus, EventChain
from sqlgate.memory.search import preview

__all__ = ["Checkpoints", "Saved"]

MAX_RESUME_EVENTS = 1000


@dataclass(frozen=True)
class Saved:
    id: int
    last_event_id: int
    head_hash: str
    ts: str


class Checkpoints:
    def __init__(
        self, db: Database, chain: EventChain, session: str, wall_clock: Callable[[], float]
    ) -> None:
        self.db = db
        self.chain = chain
        self.session = session
        self.wall_clock = wall_clock

    def save(self, summary: str) -> Saved:
        conn = self.db.server
        with self.db.server_lock, immediate_transaction(conn):
            row = conn.execute(
                "SELECT id, hash FROM memory_events ORDER BY id DESC LIMIT 1"
            ).fetchone()
            last_id, head_hash = (0, "0" * 64) if row is None else (int(row[0]), str(row[1]))
            ts = utc_timestamp(self.wall_clock())
            conn.execute(
                "INSERT INTO memory_checkpoints (ts, session, summary, last_event_id, head_hash) "
                "VALUES (?, ?, ?, ?, ?)",
                (ts, session_now(self.session), summary, last_id, head_hash),
            )
            new_id = int(conn.last_insert_rowid())
        return Saved(new_id, last_id, head_hash, ts)

    def resume(self, max_events: int, exclude_kinds: tuple[str, ...]) -> tuple[str, int]:
        if (
            isinstance(max_events, bool)
            or not isinstance(max_events, int)
            or not 1 <= max_events <= MAX_RESUME_EVENTS
        ):
            raise InvalidArgument(
                f"max_events must be a whole number from 1 to {MAX_RESUME_EVENTS}"
            )
        status = self.chain.verify(incremental=True)
        excluded = json.dumps(list(exclude_kinds))
        with self.db.reading_records() as conn:
            checkpoint = conn.execute(
                "SELECT id, ts, session, summary, last_event_id FROM memory_checkpoints "
                "ORDER BY id DESC LIMIT 1"
            ).fetchone()
            after = int(checkpoint[4]) if checkpoint else 0
            condition = "id > ? AND kind NOT IN (SELECT value FROM json_each(?))"
            total = self._count_since(conn, after, exclude_kinds, status.ok)
            rows = list(
                conn.execute(
                    f"SELECT id, ts, kind, tags, content FROM memory_events WHERE {condition} "
                    "ORDER BY id DESC LIMIT ?",
                    (after, excluded, max_events),
                )
            )
        rows.reverse()
        return self._render(status, checkpoint, rows, total, exclude_kinds), len(rows)

    @staticmethod
    def _count_since(
        conn: apsw.Connection, after: int, exclude_kinds: tuple[str, ...], chain_ok: bool
    ) -> int:
        """Events after `after`, less the excluded kinds, without scanning the table.

        A whole chain has ids 1..head without gaps, so the count is head - after; each
        excluded kind is counted on its index. A broken chain is counted row by row.
        """
        if not chain_ok:
            return _scalar(
                conn.execute(
                    "SELECT count(*) FROM memory_events WHERE id > ? "
                    "AND kind NOT IN (SELECT value FROM json_each(?))",
                    (after, json.dumps(list(exclude_kinds))),
                ).fetchone()
            )
        head = _scalar(conn.execute("SELECT coalesce(max(id), 0) FROM memory_events").fetchone())
        excluded = sum(
            _scalar(
                conn.execute(
                    "SELECT count(*) FROM memory_events WHERE kind = ? AND id > ?", (kind, after)
                ).fetchone()
            )
            for kind in exclude_kinds
        )
        return max(0, head - after - excluded)

    def _render(
        self,
        status: ChainStatus,
        checkpoint: Any,
        rows: list[Any],
        total: int,
        exclude_kinds: tuple[str, ...],
    ) -> str:
        cells = self.db.settings.max_cell_chars
        chain = _chain_line(status)
        reply = FramedReply().server(chain.rstrip("\n"))
        used = len(chain.encode())
        if checkpoint:
            cid, ts, session, summary, last_event_id = checkpoint
            shown_summary = str(summary).rstrip(LINE_BREAKS)
            line = (
                f"# checkpoint {cid} · {inline(str(ts))} · session {inline(str(session))} · "
                f"after event {last_event_id}"
            )
            reply.server(line).data(shown_summary)
            used += len(line.encode()) + 1 + data_bytes(shown_summary) + 1
            since = "since the checkpoint"
        else:
            line = "# no checkpoint yet: call checkpoint(summary) when you reach a milestone"
            reply.server(line)
            used += len(line.encode()) + 1
            since = "in the memory"
        skipped = f", not counting kinds {', '.join(exclude_kinds)}" if exclude_kinds else ""
        header = csv_line(("id", "date", "kind", "tags", "content"), cells)
        budget = self.db.settings.max_result_bytes - used
        kept: list[str] = []  # newest first, while they fit: the oldest are dropped first
        size = len(header.encode())
        for event_id, ts, kind, tags, content in reversed(rows):
            shown_content = content if len(content) <= cells else preview(content, cells)
            when = ts[:16].replace("T", " ")
            line = csv_line((event_id, when, kind, _tag_text(tags) or None, shown_content), cells)
            if kept and size + len(line.encode()) > budget:
                break
            kept.append(line)
            size += len(line.encode())
        shown = f" (the newest {len(kept)} shown)" if len(kept) < total else ""
        reply.server(f"# {counted(total, 'event')} {since}{skipped}{shown}")
        if kept:
            reply.data("".join([header, *reversed(kept)]).removesuffix("\n"))
        reply.server(
            "# next: memory_search for older context, memory_details(ids=[...]) for full text"
        )
        return reply.render()


def _tag_text(raw: object) -> str:
    """Stored tags as words; a damaged value (tampering) shows as nothing, not an error."""
    try:
        tags = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        return ""
    return " ".join(t for t in tags if isinstance(t, str)) if isinstance(tags, list) else ""


def _scalar(row: tuple[Any, ...] | None) -> int:
    return int(row[0]) if row else 0


def _chain_line(status: ChainStatus) -> str:
    if status.ok:
        head = (
            f", head {status.head_id} ({(status.head_hash or '')[:12]}…)" if status.head_id else ""
        )
        pending = (
            "; newer events unconfirmed (another writer held the lock)"
            if status.unconfirmed
            else ""
        )
        return f"# chain: ok, {counted(status.events, 'event')}{head}{pending}\n"
    return (
        f"# chain: BROKEN at event {status.first_broken_id}: {status.reason}. Tell the user; "
        "verify_chain gives the details\n"
    )
