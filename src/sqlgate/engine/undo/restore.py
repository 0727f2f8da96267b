"""Row-level undo, restore side: `sqlgate undo AUDIT_ID` and `sqlgate undo --list`.

The stored changeset is inverted and applied on the write connection inside one IMMEDIATE
transaction, with triggers and foreign-key actions off (the rows they changed during the
original call are in the changeset already, so firing them again would change more).
Before anything is written, `engine.undo.checks` compares each table with what the call
recorded (the same table, the same columns) and each row an UPDATE changed with the state
the call left it in. Every conflict (a table gone, replaced or reshaped; a row changed,
deleted or re-created after the call) is recorded, then the whole transaction is rolled
back: either every row comes back, or nothing changes and `UndoConflict` lists what stands
in the way.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import apsw

from sqlgate.engine.connect import immediate_transaction
from sqlgate.engine.database import Database
from sqlgate.engine.faults import fault_point
from sqlgate.engine.framing import counted
from sqlgate.engine.names import fold_name
from sqlgate.engine.records import utc_timestamp
from sqlgate.engine.undo.capture import Kept, load_changeset
from sqlgate.engine.undo.changesets import Change, outline, read_changeset
from sqlgate.engine.undo.checks import (
    DIGEST_BYTES,
    Conflict,
    changed_rows,
    shape_conflict,
    table_shape,
)
from sqlgate.engine.undo.ddl import undo_created
from sqlgate.engine.undo.lookup import UndoLookup, UndoTarget
from sqlgate.errors import NotFound, UndoConflict, UndoRefused

__all__ = ["Conflict", "UndoRestore", "UndoTarget", "mark_undone"]

_CONFLICT_NAMES = {
    apsw.SQLITE_CHANGESET_DATA: "DATA",
    apsw.SQLITE_CHANGESET_NOTFOUND: "NOTFOUND",
    apsw.SQLITE_CHANGESET_CONFLICT: "CONFLICT",
    apsw.SQLITE_CHANGESET_CONSTRAINT: "CONSTRAINT",
    apsw.SQLITE_CHANGESET_FOREIGN_KEY: "FOREIGN_KEY",
}
_SHOWN_CONFLICTS = 5
log = logging.getLogger("sqlgate")


def mark_undone(records: apsw.Connection, changeset_id: int, now: float, by: str) -> None:
    """Mark changeset `changeset_id` undone (in the records' current transaction)."""
    records.execute(
        "UPDATE undo_changesets SET undone_at = ?, undone_by = ? WHERE id = ?",
        (utc_timestamp(now), by, changeset_id),
    )


class _Hidden:
    """A key value an answer does not show (`_masked`)."""

    def __repr__(self) -> str:
        return "(hidden)"


def _masked(conflicts: list[Conflict], tables: frozenset[str] | None) -> list[Conflict]:
    """`conflicts` with the key values of `tables` (folded; None: of every table) hidden:
    a key is a row's values, and may be a hidden column's."""
    return [
        replace(c, key=tuple(_Hidden() for _ in c.key))
        if c.type != "FOREIGN_KEY" and (tables is None or fold_name(c.table) in tables)
        else c
        for c in conflicts
    ]


def _shown(conflicts: list[Conflict]) -> str:
    """The first conflicts, described, and how many more there are."""
    shown = "; ".join(c.describe() for c in conflicts[:_SHOWN_CONFLICTS])
    more = len(conflicts) - _SHOWN_CONFLICTS
    return shown + (f"; and {more} more" if more > 0 else "")


class _Unread:
    """A row SQLite reported that apsw cannot read (it holds TEXT that is not UTF-8), on a
    constraint: SQLite checks those again after the other rows, when no position names it."""

    def __repr__(self) -> str:
        return "one that holds text that is not UTF-8"


def _conflict(kind: int, change: apsw.TableChange, offered: Callable[[], Change]) -> Conflict:
    """The conflict SQLite reported on `change`; `offered()`: the change of the inverse
    SQLite offered last, read when apsw cannot read the row (TEXT that is not UTF-8)."""
    name = _CONFLICT_NAMES.get(kind, f"UNKNOWN_{kind}")
    if name == "FOREIGN_KEY":
        return Conflict(name, "", (change.fk_conflicts,))
    before = change.op in ("UPDATE", "DELETE")
    try:
        row = change.old if before else change.new
    except UnicodeDecodeError:
        # DATA, NOTFOUND and CONFLICT come as SQLite applies the change it offered last; a
        # CONSTRAINT when it tries the rows it put aside again, after all the others
        if name == "CONSTRAINT":
            return Conflict(name, change.name, (_Unread(),))
        found = offered()
        row = found.old if before else found.new
    flags = change.pk_columns or set()
    key = tuple(row[i] for i in sorted(flags)) if row is not None else ()
    return Conflict(name, change.name, key)


class _Changes:
    """A changeset's changes by position, read (`engine.undo.changesets`) only when asked."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._read: list[Change] | None = None

    def at(self, position: int) -> Change:
        if self._read is None:
            self._read = list(read_changeset(self._data))
        return self._read[position]


class UndoRestore:
    """Undo of destructive DML calls over one `Database`."""

    def __init__(self, db: Database, session: str, wall_clock: Callable[[], float]) -> None:
        self.db = db
        self.session = session
        self.wall_clock = wall_clock
        self.lookup = UndoLookup(db)

    def undo(self, target: UndoTarget) -> tuple[str, int, dict[str, Any]]:
        """Restore the rows of one call. Returns (text, rows restored, audit detail)."""
        self.lookup.check(target)
        with self.db.writing() as conn:
            records = self._records()
            changeset_id, record = self._record(records, target)
            kind, tables_json, changes, undone_at, undone_by, created = record
            if undone_at is not None:
                raise UndoRefused(
                    f"{target.label} was already undone at {undone_at} by {undone_by}; "
                    "nothing was done"
                )
            kept = None if created is not None else load_changeset(records, changeset_id)
            try:
                with immediate_transaction(conn):
                    if target.by_agent:
                        self._refuse_guarded(conn, target, json.loads(str(tables_json)))
                    self._restore(conn, target, changeset_id, kept, created, int(changes))
                    # the records' write lock before the user's COMMIT: busy, nothing changed
                    records.execute("BEGIN IMMEDIATE")
                    fault_point("undo.before_commit")
            except BaseException:
                if records.in_transaction:  # the user's COMMIT failed: nothing to mark
                    records.execute("ROLLBACK")
                raise
            self._mark(records, changeset_id)
        tables = ", ".join(json.loads(str(tables_json)))
        what = f"{kind}, {counted(int(changes), 'row')} in {tables}"
        if created is not None:
            replaced = any(item.get("replaces") for item in json.loads(str(created)))
            what = f"{kind} {tables}: " + (
                "the view it replaced is back" if replaced else "removed"
            )
        text = f"undone: {target.label} ({what}) in {self.db.path.absolute()}"
        detail = {"undoes": target.audit_id, "changeset": changeset_id}
        return text, int(changes), detail

    def _mark(self, records: apsw.Connection, changeset_id: int) -> None:
        """The rows are back (committed): the record says so, under the lock taken before.
        Should the mark fail or a crash come first, the record stays unmarked and a second
        undo is refused by the checks, the rows no longer being the call's (docs/decisions.md,
        "Two files, one order"); the undo itself is done and answered as such."""
        try:
            fault_point("undo.applied")
            mark_undone(records, changeset_id, self.wall_clock(), f"session {self.session}")
            records.execute("COMMIT")
        except apsw.Error:
            log.exception("undo of changeset %s: its rows are back, the mark failed", changeset_id)
        finally:
            if records.in_transaction:
                records.execute("ROLLBACK")

    def _records(self) -> apsw.Connection:
        if self.db.keeper is None:
            raise UndoRefused("this database was opened read-only; nothing was undone")
        return self.db.keeper

    def _record(self, records: apsw.Connection, target: UndoTarget) -> tuple[int, tuple[Any, ...]]:
        """The changeset the target names and its record (kind, tables, changes, undone_at,
        undone_by, created); refused when its undo data is gone."""
        changeset_id = (
            self.lookup.changeset_of_call(records, target.audit_id, target)
            if target.audit_id is not None
            else int(target.changeset or 0)
        )
        record = records.execute(
            "SELECT kind, tables, changes, undone_at, undone_by, created "
            "FROM undo_changesets WHERE id = ?",
            (changeset_id,),
        ).fetchone()
        if record is None:  # for a call: pruned; a changeset id may never have been
            gone = UndoRefused if target.audit_id is not None else NotFound
            raise gone(
                f"the undo data of {target.label} (changeset {changeset_id}) is gone: it was "
                "pruned, oldest first (--snapshots-keep for destructive_query, "
                "--write-undo-keep and --write-undo-mb for write_query); nothing was undone"
            )
        return changeset_id, tuple(record)

    def _restore(
        self,
        conn: apsw.Connection,
        target: UndoTarget,
        changeset_id: int,
        kept: Kept | None,
        created: object,
        changes: int,
    ) -> None:
        """Inside the user's transaction: drop what a CREATE made, or write the rows of a
        changeset back; refused (nothing written) on any conflict."""
        if kept is None:  # a CREATE: drop what it made (engine.undo.ddl)
            conflicts = undo_created(conn, str(created), self.db.protected)
            if conflicts:
                raise self._schema_refusal(target, conflicts)
            return
        conflicts = self._checks(conn, target, changeset_id, kept, changes)
        if not conflicts:
            conflicts = self._apply_inverse(conn, kept.data)
        if conflicts:
            raise self._refusal(target, conflicts, self._hidden_keys(conn, kept))

    def _refuse_guarded(self, conn: apsw.Connection, target: UndoTarget, tables: list[str]) -> None:
        """An agent's undo changes the tables its call changed: never a guarded one."""
        rules = self.db.live_rules(conn)
        for table in tables:
            folded = fold_name(str(table))
            if folded in rules.protected or folded in rules.append_only:
                mode = "protected" if folded in rules.protected else "append-only"
                raise UndoRefused(
                    f"undo of {target.label} refused: it would change {rules.name_of(table)}, "
                    f"which is {mode} by {rules.origin}, and no tool will; nothing was undone. "
                    "Next: ask the person who runs sqlgate (they may undo it themselves)"
                )

    def _checks(
        self,
        conn: apsw.Connection,
        target: UndoTarget,
        changeset_id: int,
        kept: Kept,
        changes: int,
    ) -> list[Conflict]:
        """What stands in the way before anything is written: tables that are gone, are
        other tables now or have other columns; rows an UPDATE changed that differ now."""
        shapes = kept.shapes
        if not shapes:
            raise UndoConflict(
                f"undo of {target.label} refused: its changeset was kept by an older sqlgate, "
                "without the table shapes and row states an undo checks, so it cannot be "
                "undone safely. Nothing was undone. Next: restore the rows by hand, or the "
                f"whole file from a snapshot (the person who runs sqlgate: `sqlgate snapshots list "
                f"{self.lookup.db_option}`)"
            )
        conflicts: list[Conflict] = []
        read = outline(kept.data)
        for name in read.tables:
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
        if len(kept.digests) != read.update_count * DIGEST_BYTES:
            raise UndoConflict(
                f"undo of {target.label} refused: the row states kept with changeset "
                f"{changeset_id} are incomplete. Nothing was undone. Next: restore the rows by "
                "hand, or the whole file from a snapshot (the person who runs sqlgate: "
                f"`sqlgate snapshots list {self.lookup.db_option}`)"
            )
        return changed_rows(conn, kept.data, shapes, kept.digests, kept.format)

    def _apply_inverse(self, conn: apsw.Connection, data: bytes) -> list[Conflict]:
        conflicts: list[Conflict] = []
        inverse = apsw.Changeset.invert(data)
        expected: Counter[str] = Counter(
            {
                name: rows
                for name, rows in outline(inverse).rows.items()
                if fold_name(name) not in self.db.protected
            }
        )
        offered: Counter[str] = Counter()
        position = [-1]  # which change of the inverse SQLite offered last
        changes = _Changes(inverse)

        def record(kind: int, change: apsw.TableChange) -> int:
            conflicts.append(_conflict(kind, change, lambda: changes.at(position[0])))
            return int(apsw.SQLITE_CHANGESET_OMIT)  # keep looking; all is rolled back after

        def agent_table(change: apsw.TableChange) -> bool:
            position[0] += 1
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

    def _hidden_keys(self, conn: apsw.Connection, kept: Kept) -> frozenset[str]:
        """Folded names of the tables whose key holds a column hidden from the agent."""
        rules = self.db.live_rules(conn)
        return frozenset(
            table
            for table, shape in kept.shapes.items()
            if any(pk and rules.is_hidden(table, name) for name, _, pk, _ in shape.columns)
        )

    def _refusal(
        self, target: UndoTarget, conflicts: list[Conflict], hidden: frozenset[str]
    ) -> UndoConflict:
        """The refusal; its text (the agent's answer, and the audit row any agent reads)
        shows no hidden key, and a person's none at all (their command may run without the
        rules): the person's terminal is told every key."""

        def text(shown: list[Conflict]) -> str:
            return (
                f"undo of {target.label} refused: {counted(len(conflicts), 'conflict')} with "
                f"changes made after it ({_shown(shown)}). Nothing was undone. Next: look at those "
                "rows; put them back as they were right after the call and run the undo again, "
                "or fix the rows by hand"
            )

        masked = _masked(conflicts, hidden if target.by_agent else None)
        return UndoConflict(text(masked), cli=None if target.by_agent else text(conflicts))

    def _schema_refusal(self, target: UndoTarget, conflicts: list[Conflict]) -> UndoConflict:
        shown = _shown(conflicts)
        return UndoConflict(
            f"undo of {target.label} refused: what it created changed after it ({shown}). "
            "Nothing was undone. Next: remove what stands in the way with destructive_query "
            "and run the undo again, or leave the object"
        )

    def describe(self, target: UndoTarget) -> str:
        """What call `target` was, for the person asked to confirm its undo
        (`UndoLookup.describe`)."""
        return self.lookup.describe(target)

    def undoable(self) -> list[dict[str, Any]]:
        """Changesets not undone yet, newest first, each with the audit id of its call."""
        return self.lookup.undoable()
