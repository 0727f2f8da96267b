"""Landing an import in the chain: another tool's events and checkpoints, then its provenance.

An importer plans (surfaces/integrations/importers); this module writes. A landing is ONE
write transaction (`EventChain.writing`): the planned events are appended under the hash
contract, each with the source's moment and session (the writer's are put back before the
provenance event, which is the server's own, now); a checkpoint is anchored to the last
event landed before it, or to the head the landing started on. Then comes the provenance
event: kind `import`, in a session `import-…` (which no agent can have), its content the
importer's JSON record. All of it lands, or nothing does.

`prior_imports` reads those records back, so an importer knows what was taken already.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import apsw

from sqlgate.engine.names import fold_name
from sqlgate.engine.records import utc_timestamp
from sqlgate.errors import InvalidArgument
from sqlgate.memory.chain import ChainWriter, EventChain
from sqlgate.memory.contract import head_of
from sqlgate.memory.inputs import event_kind
from sqlgate.memory.store import SERVER_KINDS

__all__ = [
    "IMPORT_KIND",
    "IMPORT_SESSION_PREFIX",
    "Prepared",
    "append_provenance",
    "imported_kind",
    "land_chain",
    "prior_imports",
]

IMPORT_KIND = "import"
IMPORT_SESSION_PREFIX = "import-"


@dataclass(frozen=True)
class Prepared:
    """One item to land: an event, or a checkpoint (anchored to the last event landed)."""

    ref: int  # its seq or id in the source
    content: str
    epoch: float
    kind: str = "note"
    tags: tuple[str, ...] = ()
    session: str | None = None
    checkpoint: bool = False


def imported_kind(value: str | None) -> str:
    """The source's kind when an agent could append it here; `note` otherwise."""
    try:
        kind = event_kind(value)
    except InvalidArgument:
        return "note"
    return "note" if kind in SERVER_KINDS else kind


def prior_imports(conn: apsw.Connection, source: str) -> list[dict[str, Any]]:
    """The provenance records of earlier imports of this kind of source, oldest first."""
    found = conn.execute("SELECT name FROM pragma_table_info(?)", ("memory_events",))
    if "session" not in {fold_name(str(name)) for (name,) in found}:
        return []  # a database without memory yet: nothing was imported
    records = []
    for (content,) in conn.execute(
        "SELECT content FROM memory_events WHERE kind = ? AND substr(session, 1, ?) = ? "
        "ORDER BY id",
        (IMPORT_KIND, len(IMPORT_SESSION_PREFIX), IMPORT_SESSION_PREFIX),
    ):
        try:
            record = json.loads(content)
        except (TypeError, ValueError):
            continue
        if isinstance(record, dict) and record.get("source") == source:
            records.append(record)
    return records


def append_provenance(writer: ChainWriter, record: dict[str, Any]) -> int:
    """The import's provenance event, in the writer's transaction; -> its id."""
    text = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
    return writer.append(IMPORT_KIND, text, [IMPORT_KIND, str(record["source"])]).id


def land_chain(
    chain: EventChain,
    source: str,
    plan: Sequence[Prepared],
    provenance: Callable[[int, int, int | None], dict[str, Any]],
    check: Callable[[list[dict[str, Any]]], None],
) -> int:
    """Land `plan` and its provenance event in one transaction; -> the provenance event's id.

    `provenance(events, checkpoints, first event id)` gives the provenance event's record.
    `check` is first given the earlier imports of `source`, read under the write lock: it
    raises to land nothing (a concurrent import must not double up).
    """
    with chain.writing() as writer:
        check(prior_imports(writer.conn, source))
        return append_provenance(writer, provenance(*_land(writer, plan)))


def _land(writer: ChainWriter, plan: Sequence[Prepared]) -> tuple[int, int, int | None]:
    """Append the plan's events with their own moments and sessions, and insert its
    checkpoints: (events, checkpoints, the first event's id)."""
    conn = writer.conn
    base = head_of(conn)
    own_session, own_clock = writer.session, writer.wall_clock
    events = checkpoints = 0
    first: int | None = None
    try:
        for item in plan:
            session = item.session or own_session
            if item.checkpoint:
                anchor = (writer.last.id, writer.last.hash) if writer.last else base
                conn.execute(
                    "INSERT INTO memory_checkpoints (ts, session, summary, last_event_id, "
                    "head_hash) VALUES (?, ?, ?, ?, ?)",
                    (utc_timestamp(item.epoch), session, item.content, *anchor),
                )
                checkpoints += 1
                continue
            writer.session = session
            writer.wall_clock = lambda epoch=item.epoch: epoch  # type: ignore[misc]
            appended = writer.append(item.kind, item.content, item.tags)
            first = appended.id if first is None else first
            events += 1
    finally:
        writer.session, writer.wall_clock = own_session, own_clock
    return events, checkpoints, first
