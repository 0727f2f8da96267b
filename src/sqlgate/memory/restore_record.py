"""The memory chain records every restore: one server-written event of kind `restore`.

A snapshot restore puts back the user's file only; the memory lives in the records file and
is never rolled back, so the chain stays whole and the witness simply moves on to the
restore's event: nothing is rewritten. The event says what was rolled back (the snapshot, the
rows of each user table now and in it), how many calls made after the snapshot it marked
undone, and where the previous content is kept. A restore of a replica
(`sqlgate restore`) cannot carry what the replica lacked: its event names the events a
witness knew that the copy does not hold.

`verify` (the CLI and the verify_chain tool) names the restores recorded, so a rollback is
never silent: `recorded_restores` is what it shows.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import apsw

from sqlgate.engine.commands import db_option, shell_word
from sqlgate.engine.framing import counted
from sqlgate.errors import SqlgateError
from sqlgate.memory.chain import ChainWriter, next_witness
from sqlgate.memory.witness import Witness, WitnessFile

if TYPE_CHECKING:
    from sqlgate.engine.snapshots import RestoreFacts, RestorePlan

__all__ = [
    "RESTORE_KIND",
    "ChainRestoreRecorder",
    "append_restore_event",
    "recorded_restores",
    "snapshot_restore_text",
]

RESTORE_KIND = "restore"
UNDONE_KEY = "undo_changesets"  # the restore's facts: calls made after the snapshot, marked


def _rows(count: int | None) -> str:
    return "absent" if count is None else str(count)


def snapshot_restore_text(plan: RestorePlan, before_name: str, carried: dict[str, int]) -> str:
    """The event's content: its first clause (up to `;`) is what `verify` shows."""
    tables = (
        ", ".join(f"{t.name} {_rows(t.now)} -> {_rows(t.snapshot)}" for t in plan.tables)
        or "no user tables"
    )
    undone = counted(carried.get(UNDONE_KEY, 0), "call", "calls")
    created = _taken(plan.name)
    return (
        f"rolled back to snapshot {plan.name} (taken {created}); user tables, rows before -> "
        f"after: {tables}; {undone} made after the snapshot marked undone; sqlgate's records "
        "(memory, claims, audit log, members) are not rolled back; the previous content is "
        f"kept as {before_name} (`sqlgate snapshots restore {shell_word(before_name)} "
        f"{db_option(plan.db)}` puts it back)"
    )


def _taken(name: str) -> str:
    """The UTC time a snapshot's name records, as ISO-8601 (the name itself if it has none)."""
    stamp = name.split("/")[-1].split("-", 1)[0]
    try:
        moment = datetime.strptime(stamp, "%Y%m%dT%H%M%S%fZ")
    except ValueError:
        return name
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def append_restore_event(
    conn: apsw.Connection, session: str, wall_clock: Callable[[], float], content: str
) -> tuple[int, str, str]:
    """Append the restore's event inside the caller's transaction: (id, hash, prev_hash)."""
    writer = ChainWriter(conn, session, wall_clock)
    appended = writer.append(RESTORE_KIND, content, [RESTORE_KIND])
    return appended.id, appended.hash, writer.first_prev


class ChainRestoreRecorder:
    """engine.snapshots' RestoreRecorder for the memory chain of `db` (in its records file,
    on the connection the restore records on) and its witness (in its records folder)."""

    def __init__(self, db: Path, session: str, wall_clock: Callable[[], float]) -> None:
        self.witness = WitnessFile.beside(db)
        self.session = session
        self.wall_clock = wall_clock
        self._next: Witness | None = None
        self._previous: bytes | None = None

    def record(self, staging: apsw.Connection, facts: RestoreFacts) -> int | None:
        content = snapshot_restore_text(facts.plan, facts.before_name, facts.carried)
        writer = ChainWriter(staging, self.session, self.wall_clock)
        appended = writer.append(RESTORE_KIND, content, [RESTORE_KIND])
        try:
            previous = self.witness.read()
        except SqlgateError:
            previous = None
        self._next = next_witness(previous, appended.id, writer.first_prev, appended)
        return appended.id

    def publish(self) -> None:
        if self._next is None:
            return
        self._previous = self.witness.read_raw()
        self.witness.write(self._next)

    def revert(self) -> None:
        self.witness.restore(self._previous)


def recorded_restores(conn: apsw.Connection) -> dict[str, Any] | None:
    """How many restores the chain records and the latest one, or None when there is none."""
    try:
        found = conn.execute(
            "SELECT count(*), max(id) FROM memory_events WHERE kind = ?", (RESTORE_KIND,)
        ).fetchone()
    except apsw.SQLError:  # no memory_events: not a sqlgate file
        return None
    if found is None or not found[0]:
        return None
    latest = conn.execute(
        "SELECT id, ts, content FROM memory_events WHERE id = ?", (found[1],)
    ).fetchone()
    if latest is None:
        return None
    summary = str(latest[2]).split(";", 1)[0]
    return {"count": int(found[0]), "latest": {"id": int(latest[0]), "ts": str(latest[1]),
                                               "summary": summary}}  # fmt: skip
