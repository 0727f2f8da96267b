"""What a snapshot restore writes in sqlgate's records (`records.sqlite` of the database's
home): the user's file holds none of them, so a restore never rolls them back.

In one transaction on the records file, held open while the snapshot is copied in and
committed once the copy is done (`RecordsWork`):

- the undo data of every call made after the snapshot (its `ts`, kept to the millisecond,
  later than the millisecond the snapshot's name records) is marked undone by the restore,
  so `undo --list` no longer offers it and `sqlgate undo` of such a call says what
  happened: the rows it changed are the snapshot's again. `undone_by` names the restore
  and the copy of before it kept;
- restoring such a copy of before (`restored/NAME`) puts back the rows of the calls the
  restore that kept it marked, so their marks are taken back first;
- the restore's audit row (tool `snapshots restore`) and the recorder's memory event.

The records are committed after the user's file is replaced: a restore killed in between
leaves the file restored and the records without the restore; the calls it rolled back then
still show in `undo --list`, and their undo is refused by undo's own checks (their rows are
no longer the ones the call left). The other order would mark calls undone whose rows are
still there.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Protocol

import apsw

from sqlgate.engine.records import AuditEntry, AuditLog
from sqlgate.engine.schema import migrate
from sqlgate.engine.snapshots.restore_plan import RestorePlan
from sqlgate.errors import SnapshotError

__all__ = [
    "RecordsWork",
    "RestoreFacts",
    "RestoreRecorder",
    "calls_after",
    "restore_label",
    "snapshot_moment",
]

# strictly later: the records keep milliseconds, a snapshot's name microseconds, so a call of
# the snapshot's own millisecond may have come before it; one that came after is left
# unmarked, and its undo is still refused by the row checks (its rows are not there)
_AFTER = "undone_at IS NULL AND ts > ?"
_KEPT_MARK = "(previous content: {})"
STAMP = "%Y%m%dT%H%M%S%fZ"  # the UTC moment a snapshot name starts with


class RestoreRecorder(Protocol):
    """What the memory adds to a restore: an event recording it, and the witness of it."""

    def record(self, staging: apsw.Connection, facts: RestoreFacts) -> int | None:
        """Inside the records transaction: append the record; returns its event id."""

    def publish(self) -> None:
        """After the records committed: move the witness on to the event."""

    def revert(self) -> None:
        """The restore was not recorded after all: take back what `publish` did."""


@dataclass(frozen=True)
class RestoreFacts:
    plan: RestorePlan
    before_name: str
    moment: str  # ISO-8601 UTC of the restore
    carried: dict[str, int] = field(default_factory=dict)  # undo_changesets: calls marked


def snapshot_moment(name: str) -> str:
    """The UTC moment snapshot `name` records, as the records store times (ISO-8601 with
    milliseconds and `Z`); "" (before every call) for a name that records none."""
    stamp = name.rsplit("/", 1)[-1].split("-", 1)[0]
    try:
        moment = datetime.strptime(stamp, STAMP)
    except ValueError:
        return ""
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def restore_label(name: str, before_name: str) -> str:
    """What `undone_by` says of the calls a restore rolled back."""
    return f"snapshot restore {name} " + _KEPT_MARK.format(before_name)


def calls_after(records: apsw.Connection, name: str) -> int:
    """How many calls made after snapshot `name` still have undo data not marked undone."""
    row = records.execute(
        f"SELECT count(*) FROM undo_changesets WHERE {_AFTER}", (snapshot_moment(name),)
    ).fetchone()
    return 0 if row is None else int(row[0])


def _mark(conn: apsw.Connection, facts: RestoreFacts) -> int:
    name = facts.plan.name
    # a copy of before kept by a restore: the calls that restore rolled back are back
    mark = _KEPT_MARK.format(name)
    conn.execute(
        "UPDATE undo_changesets SET undone_at = NULL, undone_by = NULL "
        "WHERE substr(undone_by, -length(?)) = ?",
        (mark, mark),
    )
    conn.execute(
        f"UPDATE undo_changesets SET undone_at = ?, undone_by = ? WHERE {_AFTER}",
        (facts.moment, restore_label(name, facts.before_name), snapshot_moment(name)),
    )
    return int(conn.changes())


@dataclass
class RecordsWork:
    """The records' part of one restore: `begin` before the copy, `commit` after it."""

    path: Path  # records.sqlite
    session: str
    wall_clock: Callable[[], float]
    recorder: RestoreRecorder | None = None
    conn: apsw.Connection | None = None
    event_id: int | None = None
    undone: int = 0
    committed: bool = False

    def begin(self, facts: RestoreFacts) -> None:
        """Open the records (none yet: nothing to record) and write the restore's rows in a
        transaction left open."""
        if not self.path.is_file():
            return
        try:
            self.conn = apsw.Connection(str(self.path), flags=apsw.SQLITE_OPEN_READWRITE)
            self.conn.set_busy_timeout(5000)
            migrate(self.conn)
            self.conn.execute("BEGIN IMMEDIATE")
            self.undone = _mark(self.conn, facts)
            done = RestoreFacts(facts.plan, facts.before_name, facts.moment,
                                {"undo_changesets": self.undone})  # fmt: skip
            if self.recorder is not None:
                self.event_id = self.recorder.record(self.conn, done)
            self._audit(done)
        except apsw.Error as exc:
            self.close()
            raise SnapshotError(f"cannot record the restore in {self.path}: {exc}") from None

    def _audit(self, facts: RestoreFacts) -> None:
        assert self.conn is not None
        detail = {"snapshot": facts.plan.name, "before": facts.before_name,
                  "undone": self.undone, "event": self.event_id}  # fmt: skip
        if facts.plan.left_out:
            detail["left_out"] = len(facts.plan.left_out)
        log = AuditLog(self.conn, self.session, threading.Lock(), wall_clock=self.wall_clock)
        rows = sum(t.snapshot or 0 for t in facts.plan.tables)
        log.write(AuditEntry("snapshots restore", ok=True, rows=rows, detail=detail), 0.0)

    def commit(self) -> None:
        """After the user's file was replaced: keep the rows."""
        if self.conn is None:
            return
        try:
            self.conn.execute("COMMIT")
        finally:
            self.close()
        self.committed = True

    def publish(self) -> None:
        """After `commit`: move the memory's witness on to the restore's event."""
        if self.committed and self.recorder is not None:
            self.recorder.publish()

    def close(self) -> None:
        """Drop what was not committed (the restore failed) and close the records."""
        if self.conn is None:
            return
        try:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
        finally:
            self.conn.close()
            self.conn = None
