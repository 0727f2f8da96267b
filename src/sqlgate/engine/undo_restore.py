"""Row-level undo, restore side: `sqlgate undo AUDIT_ID` and `sqlgate undo --list`.

The stored changeset is inverted and applied on the write connection inside one IMMEDIATE
transaction, with triggers and foreign-key actions off (the rows they changed during the
original call are in the changeset already, so firing them again would change more).
Before anything is written, `engine.undo_checks` compares each table with what the call
recorded (the same table, the same columns) and each row an UPDATE changed with the state
the call left it in. Every conflict (a table gone, replaced or reshaped; a row changed,
deleted or re-created after the call) is recorded, then the whole transaction is rolled
back: either every row comes back, or nothing changes and `UndoConflict` lists what stands
in the way.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw

from sqlgate.engine.audit import utc_timestamp
from sqlgate.engine.connect import immediate_transaction
from sqlgate.engine.database import Database
from sqlgate.engine.names import fold_name
from sqlgate.engine.undo_checks import (
    DIGEST_BYTES,
    Conflict,
    TableShape,
    changed_rows,
    shape_conflict,
    table_shape,
)
from sqlgate.errors import InvalidArgument, NotFound, UndoConflict, UndoRefused

__all__ = ["Conflict", "UndoRestore", "UndoTarget"]

_CONFLICT_NAMES = {
    apsw.SQLITE_CHANGESET_DATA: "DATA",
    apsw.SQLITE_CHANGESET_NOTFOUND: "NOTFOUND",
    apsw.SQLITE_CHANGESET_CONFLICT: "CONFLICT",
    apsw.SQLITE_CHANGESET_CONSTRAINT: "CONSTRAINT",
    apsw.SQLITE_CHANGESET_FOREIGN_KEY: "FOREIGN_KEY",
}
_SHOWN_CONFLICTS = 5
# ids are SQLite integers: signed 64-bit
_LARGEST_ID = 2**63 - 1


@dataclass(frozen=True)
class UndoTarget:
    """Which call to undo, as the user named it."""

    audit_id: int | None = None
    changeset: int | None = None

    @property
    def label(self) -> str:
        if self.audit_id is not None:
            return f"call {self.audit_id}"
        return f"changeset {self.changeset}"


def _whole_number(value: object, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= _LARGEST_ID:
        raise InvalidArgument(
            f"{what} must be a whole number from 1 to {_LARGEST_ID}; "
            "`sqlgate undo --list` shows the calls that can be undone"
        )
    return value


def _conflict(kind: int, change: apsw.TableChange) -> Conflict:
    name = _CONFLICT_NAMES.get(kind, f"UNKNOWN_{kind}")
    if name == "FOREIGN_KEY":
        return Conflict(name, "", (change.fk_conflicts,))
    row = change.old if change.op in ("UPDATE", "DELETE") else change.new
    flags = change.pk_columns or set()
    key = tuple(row[i] for i in sorted(flags)) if row is not None else ()
    return Conflict(name, change.name, key)


def _detail(text: object) -> dict[str, Any]:
    try:
        parsed = json.loads(str(text)) if text is not None else {}
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _joined(conn: apsw.Connection, table: str, column: str, changeset_id: int) -> bytes:
    """The chunks one changeset's `column` was stored in, joined again."""
    sql = f"SELECT {column} FROM {table} WHERE changeset_id = ? ORDER BY seq"
    return b"".join(bytes(chunk) for (chunk,) in conn.execute(sql, (changeset_id,)))


class UndoRestore:
    """Undo of destructive DML calls over one `Database`."""

    def __init__(self, db: Database, session: str, wall_clock: Callable[[], float]) -> None:
        self.db = db
        self.session = session
        self.wall_clock = wall_clock

    def _changeset_of_call(self, conn: apsw.Connection, audit_id: int) -> int:
        row = conn.execute(
            "SELECT tool, ok, detail FROM query_log WHERE id = ?", (audit_id,)
        ).fetchone()
        if row is None:
            raise NotFound(f"no call {audit_id} in query_log; `sqlgate undo --list` shows them")
        tool, ok, text = row
        if tool != "destructive_query" or not ok:
            what = f"a call of {tool}" if tool != "destructive_query" else "a failed call"
            raise UndoRefused(
                f"call {audit_id} is {what}: only a successful destructive_query can be undone; "
                "`sqlgate undo --list` shows those that can"
            )
        detail = _detail(text)
        if "undo" not in detail:
            snapshot = detail.get("snapshot")
            name = Path(str(snapshot)).name if snapshot else "NAME"
            raise UndoRefused(
                f"call {audit_id} took a whole-file snapshot instead of row-level undo data. "
                f"To go back, run `sqlgate snapshots restore {name}` with the server stopped: "
                "that restores the WHOLE file, losing every change made after the call"
            )
        return int(detail["undo"])

    def undo(self, target: UndoTarget) -> tuple[str, int, dict[str, Any]]:
        """Restore the rows of one call. Returns (text, rows restored, audit detail)."""
        if (target.audit_id is None) == (target.changeset is None):
            raise InvalidArgument("name the call to undo: an audit id, or --changeset N")
        if target.audit_id is not None:
            _whole_number(target.audit_id, "the audit id")
        else:
            _whole_number(target.changeset, "the changeset id")
        with self.db.writing() as conn, immediate_transaction(conn):
            changeset_id = (
                self._changeset_of_call(conn, target.audit_id)
                if target.audit_id is not None
                else int(target.changeset or 0)
            )
            record = conn.execute(
                "SELECT kind, tables, changes, undone_at, undone_by FROM undo_changesets "
                "WHERE id = ?",
                (changeset_id,),
            ).fetchone()
            if record is None:  # for a call: rotated out; a changeset id may never have been
                gone = UndoRefused if target.audit_id is not None else NotFound
                raise gone(
                    f"the undo data of {target.label} (changeset {changeset_id}) is gone: only "
                    "the newest --snapshots-keep changesets are kept; nothing was undone"
                )
            kind, tables_json, changes, undone_at, undone_by = record
            if undone_at is not None:
                raise UndoRefused(
                    f"{target.label} was already undone at {undone_at} by session {undone_by}; "
                    "nothing was done"
                )
            data = _joined(conn, "undo_chunks", "data", changeset_id)
            conflicts = self._checks(conn, target, changeset_id, data, int(changes))
            if not conflicts:
                conflicts = self._apply_inverse(conn, data)
            if conflicts:
                raise self._refusal(target, conflicts)
            conn.execute(
                "UPDATE undo_changesets SET undone_at = ?, undone_by = ? WHERE id = ?",
                (utc_timestamp(self.wall_clock()), self.session, changeset_id),
            )
        tables = ", ".join(json.loads(str(tables_json))) or "no table"
        text = f"undone: {target.label} ({kind}, {changes} rows in {tables})"
        detail = {"undoes": target.audit_id, "changeset": changeset_id}
        return text, int(changes), detail

    def _checks(
        self,
        conn: apsw.Connection,
        target: UndoTarget,
        changeset_id: int,
        data: bytes,
        changes: int,
    ) -> list[Conflict]:
        """What stands in the way before anything is written: tables that are gone, are
        other tables now or have other columns; rows an UPDATE changed that differ now."""
        shapes = {
            fold_name(str(name)): TableShape.from_row(str(name), int(rowid), int(root), str(text))
            for name, rowid, root, text in conn.execute(
                "SELECT name, schema_rowid, rootpage, shape FROM undo_table_shapes "
                "WHERE changeset_id = ?",
                (changeset_id,),
            )
        }
        if changes and not shapes:
            raise UndoConflict(
                f"undo of {target.label} refused: its changeset was kept by an older sqlgate, "
                "without the table shapes and row states an undo checks, so it cannot be "
                "undone safely. Nothing was undone. Next: restore the rows by hand, or the "
                "whole file from a snapshot (`sqlgate snapshots list`)"
            )
        conflicts: list[Conflict] = []
        for name in dict.fromkeys(change.name for change in apsw.Changeset.iter(data)):
            if fold_name(name) in self.db.protected:
                continue  # server tables are never written by an undo
            recorded = shapes.get(fold_name(name))
            if recorded is None:
                conflicts.append(Conflict("SCHEMA", name, (), "its shape was not recorded"))
                continue
            reason = shape_conflict(recorded, table_shape(conn, name))
            if reason is not None:
                conflicts.append(Conflict("SCHEMA", name, (), reason))
        if conflicts:
            return conflicts
        digests = _joined(conn, "undo_row_states", "digests", changeset_id)
        updates = sum(1 for change in apsw.Changeset.iter(data) if change.op == "UPDATE")
        if len(digests) != updates * DIGEST_BYTES:
            raise UndoConflict(
                f"undo of {target.label} refused: the row states kept with changeset "
                f"{changeset_id} are incomplete. Nothing was undone. Next: restore the rows by "
                "hand, or the whole file from a snapshot (`sqlgate snapshots list`)"
            )
        return changed_rows(conn, data, shapes, digests)

    def _apply_inverse(self, conn: apsw.Connection, data: bytes) -> list[Conflict]:
        conflicts: list[Conflict] = []
        inverse = apsw.Changeset.invert(data)
        expected: Counter[str] = Counter(
            change.name
            for change in apsw.Changeset.iter(inverse)
            if fold_name(change.name) not in self.db.protected
        )
        offered: Counter[str] = Counter()

        def record(kind: int, change: apsw.TableChange) -> int:
            conflicts.append(_conflict(kind, change))
            return int(apsw.SQLITE_CHANGESET_OMIT)  # keep looking; all is rolled back after

        def agent_table(change: apsw.TableChange) -> bool:
            if fold_name(change.name) in self.db.protected:
                return False  # server tables are never written by an undo
            offered[change.name] += 1
            return True

        triggers = conn.config(apsw.SQLITE_DBCONFIG_ENABLE_TRIGGER, -1)
        conn.config(apsw.SQLITE_DBCONFIG_ENABLE_TRIGGER, 0)
        try:
            apsw.Changeset.apply(
                inverse,
                conn,
                filter_change=agent_table,
                conflict=record,
                flags=apsw.SQLITE_CHANGESETAPPLY_FKNOACTION,
            )
        finally:
            conn.config(apsw.SQLITE_DBCONFIG_ENABLE_TRIGGER, triggers)
        # SQLite skips, without a word, every change to a table that was dropped or whose
        # columns or primary key no longer match the changeset: the checks above refuse
        # those first; counting what it offered makes sure no row is reported restored
        for table, count in expected.items():
            if offered[table] < count:
                skipped = count - offered[table]
                reason = f"SQLite skipped {skipped} of its rows: its columns no longer match"
                conflicts.append(Conflict("SCHEMA", table, (), reason))
        return conflicts

    def _refusal(self, target: UndoTarget, conflicts: list[Conflict]) -> UndoConflict:
        shown = "; ".join(c.describe() for c in conflicts[:_SHOWN_CONFLICTS])
        more = len(conflicts) - _SHOWN_CONFLICTS
        if more > 0:
            shown += f"; and {more} more"
        return UndoConflict(
            f"undo of {target.label} refused: {len(conflicts)} conflict(s) with changes made "
            f"after it ({shown}). Nothing was undone. Next: look at those rows; put them back "
            "as they were right after the call and run the undo again, or fix the rows by hand"
        )

    def undoable(self) -> list[dict[str, Any]]:
        """Changesets not undone yet, newest first, each with the audit id of its call."""
        with self.db.reading() as conn:
            found = [
                {
                    "changeset": int(cid),
                    "audit_id": None,
                    "ts": str(ts),
                    "kind": str(kind),
                    "tables": json.loads(str(tables)),
                    "rows": int(changes),
                    "reason": None,
                }
                for cid, ts, kind, tables, changes in conn.execute(
                    "SELECT id, ts, kind, tables, changes FROM undo_changesets "
                    "WHERE undone_at IS NULL ORDER BY id DESC"
                )
            ]
            if found:
                self._match_calls(conn, found)
        return found

    @staticmethod
    def _match_calls(conn: apsw.Connection, found: list[dict[str, Any]]) -> None:
        """Fill in each changeset's audit id and reason: walk query_log back from its end
        until every changeset is matched (a call's audit row is written just after it)."""
        wanted = {item["changeset"]: item for item in found}
        for audit_id, text in conn.execute(
            "SELECT id, detail FROM query_log WHERE tool = 'destructive_query' AND ok = 1 "
            "ORDER BY id DESC"
        ):
            detail = _detail(text)
            item = wanted.pop(detail.get("undo"), None) if "undo" in detail else None
            if item is not None:
                item["audit_id"] = int(audit_id)
                item["reason"] = detail.get("reason")
            if not wanted:
                break
