"""The write path with its undo data (issue 19): one capture for every tool that changes rows,
and write_query's statements, each kept with what undoes it in its own transaction.

    capture  `UndoKeeping.capture`, for write_query and destructive_query alike: an
             `apsw.Session` records the rows the statement (its triggers and foreign-key
             actions too) changes, within the tool's budget (`RowUndo`); the rows are judged
             (guarded tables, NULL keys, virtual tables; write_query's mass-rewrite guard counts
             the changeset, `engine.undo.writes`); the changeset is stored by
             `engine.undo.capture.store_changeset` and pruned on the tool's turn
    rows     write_query's INSERT, UPDATE, upsert, REPLACE: kept by that capture
    schema   CREATE TABLE / INDEX / VIRTUAL TABLE: the catalog rows it added
             (`engine.undo.ddl`); the undo drops exactly those, or refuses

A call that changed nothing keeps nothing and offers no undo. A change no changeset can undo
(`UndoFallback`: a row whose PRIMARY KEY holds NULL, `engine.undo.keys`; a virtual table;
a change over the undo budget) is refused by write_query (`NotUndoable`), rolled back, naming
why and what to do: write_query never changes what it cannot undo. Only with write undo turned
off (`off_reason`) does `engine.running.queries` run a write without undo data, saying so in
its answer. destructive_query takes a whole-file snapshot instead (`engine.running.destructive`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import apsw

from sqlgate.config import Settings
from sqlgate.engine.connect import immediate_transaction
from sqlgate.engine.csvout import CsvResult
from sqlgate.engine.faults import fault_point
from sqlgate.engine.limits import CallControl, Clock
from sqlgate.engine.names import fold_name
from sqlgate.engine.records import utc_timestamp
from sqlgate.engine.rules import check_references
from sqlgate.engine.running.execute import Bindings, RunContext, mass_rewrite, run_statement
from sqlgate.engine.running.guard_rows import guarding, refuse_changed_rows
from sqlgate.engine.running.outcome import Outcome, unchanged
from sqlgate.engine.running.runner import Runner, summary_line
from sqlgate.engine.statements import Statement, Tier
from sqlgate.engine.undo import (
    SPLIT_ADVICE,
    CreatedObject,
    NullKeyWatch,
    ShapeCache,
    StoredChangeset,
    Summary,
    UndoFallback,
    WriteFacts,
    capturing,
    capturing_schema,
    prune_one,
    prune_writes,
    store_changeset,
    store_created,
    summarize,
    written_tables,
)
from sqlgate.errors import NotUndoable, QueryTimeout

__all__ = [
    "DDL_KINDS",
    "MIB",
    "ROW_KINDS",
    "Intent",
    "RowUndo",
    "UndoKeeping",
    "UndoingWrites",
    "Written",
    "not_undoable",
    "undo_budget",
]

MIB = 1024 * 1024
ROW_KINDS = frozenset({"INSERT", "REPLACE", "UPDATE"})
DDL_KINDS = frozenset({"CREATE TABLE", "CREATE INDEX", "CREATE VIRTUAL TABLE"})
if TYPE_CHECKING:  # a type only: nothing reads it at run time
    # the agent's answer once its audit id is known: the summary with how to undo the call
    UndoHint = Callable[[str, int], Callable[[int | None], str]]


def not_undoable(fallback: UndoFallback) -> NotUndoable:
    """write_query's refusal of a change whose undo it cannot keep (already rolled back)."""
    return NotUndoable(
        "refused and rolled back, nothing was changed: write_query keeps what undoes every "
        f"change it makes, and cannot for this one: {fallback.reason}. {fallback.advice}"
    )


def undo_budget(settings: Settings) -> int:
    """Bytes one call's session may hold: --undo-max-mb, and at most a quarter of the SQLite
    heap limit (the changeset is built beside the session, under the same limit)."""
    return min(settings.undo_max_mb, max(1, settings.heap_limit_mb // 4)) * MIB


@dataclass(frozen=True)
class RowUndo:
    """How one tool keeps the changeset of its statement (`UndoKeeping.capture`)."""

    tool: str  # whose undo data it is: pruned with that tool's
    kind: str  # the statement's kind, kept with its changeset
    budget: int  # bytes the session may hold while the statement runs
    overflow: UndoFallback  # what is raised when the session outgrows the budget
    limit: int | None  # the most bytes the changeset may take once built (None: no more)
    max_rewrites: int | None  # existing rows it may change (None: no mass-rewrite guard)
    undo: str  # --undo, which the mass-rewrite refusal's advice describes
    prune: Callable[[apsw.Connection, StoredChangeset], None]  # on this record's turn


@dataclass(frozen=True)
class Written:
    """A statement run by the capture: what it returned, and the changeset it kept (None:
    it changed no row, and there is nothing to undo)."""

    returned: CsvResult | None
    changes: int
    rowid: int
    stored: StoredChangeset | None


@dataclass
class Intent:
    """The undo record one change keeps, once `UndoKeeping.keep` committed it, and the
    pruning its turn asks for once the change itself has committed."""

    id: int | None = None
    prune: Callable[[apsw.Connection], None] | None = None


@dataclass
class UndoKeeping:
    """The undo data the tools that write keep, on one database: who keeps it and when, the
    chunk size it is stored in, and the schema facts it is judged by (read once per schema
    version).

    The undo data lives in the records file, the change in the user's file: no transaction
    spans both. `change` runs the user's transaction; inside it `keep` commits the undo
    record to the records file first, so a change that commits always has its undo data
    (docs/decisions.md, "Two files, one order"); a change that then fails to commit has its
    record removed again, and one a crash cut off is found at the next start."""

    session: str
    wall_clock: Clock
    chunk: int
    records: apsw.Connection | None = None  # the records file (`Database.keeper`)
    shapes: ShapeCache = field(default_factory=ShapeCache)
    facts: WriteFacts = field(default_factory=WriteFacts)

    @contextmanager
    def change(self, conn: apsw.Connection) -> Iterator[Intent]:
        """The user's write transaction on `conn` (BEGIN IMMEDIATE ... COMMIT); the undo
        record kept inside it is removed again when the change does not commit."""
        intent = Intent()
        try:
            with immediate_transaction(conn):
                yield intent
                fault_point("write.before_commit")
        except BaseException:
            if intent.id is not None:
                self._void(intent.id)
            raise
        fault_point("write.committed")
        if intent.prune is not None:
            self._prune(intent.prune)

    def keep(
        self,
        intent: Intent,
        store: Callable[[apsw.Connection], int],
        prune: Callable[[apsw.Connection], None] | None = None,
    ) -> int:
        """Commit the undo record `store` writes on the records connection (returning its
        id), before the user's change commits; `prune` runs once the change has committed
        (a change that never commits evicts no older undo data)."""
        records = self._records()
        with immediate_transaction(records):
            intent.id = store(records)
        intent.prune = prune
        fault_point("write.kept")
        return intent.id

    def _prune(self, prune: Callable[[apsw.Connection], None]) -> None:
        """Older undo data past its keep limits goes, after the change committed; a records
        file that is busy (or fails) leaves it for a later turn: the change is done, and
        answered as such."""
        records = self._records()
        with contextlib.suppress(apsw.Error), immediate_transaction(records):
            prune(records)

    def _void(self, changeset_id: int) -> None:
        """The change did not commit: its undo record goes (a crash leaves it for the
        start-up recovery instead)."""
        records = self._records()
        with contextlib.suppress(apsw.Error), immediate_transaction(records):
            prune_one(records, changeset_id)

    def _records(self) -> apsw.Connection:
        if self.records is None:
            raise AssertionError("a read-only database keeps no undo data")
        return self.records

    def capture(
        self,
        conn: apsw.Connection,
        ctx: RunContext,
        text: str,
        bindings: Bindings,
        plan: RowUndo,
        collect: Callable[[RunContext, apsw.Cursor], CsvResult | None],
    ) -> Written:
        """Run the statement in its own transaction with a session recording every row it
        changes; refuse what the changeset cannot undo (`UndoFallback`, rolled back); keep
        the changeset, when there is one, before COMMIT."""
        assert ctx.rewrite is None, "never capture a changeset with the rewrite guard installed"
        with self.change(conn) as intent:
            facts = self.facts.refresh(conn)  # under the write lock: no schema change between
            keys = NullKeyWatch(conn, facts.null_keys)
            with capturing(conn, plan.budget) as capture:
                try:
                    returned = run_statement(ctx, text, bindings, lambda c: collect(ctx, c))
                except QueryTimeout:
                    if capture.overflow and not ctx.control.cancelled:
                        raise plan.overflow from None
                    raise
                changes, rowid = conn.changes(), conn.last_insert_rowid()
            changeset = capture.changeset
            # an INSERT's session holds only keys: its changeset reads the rows when built
            if capture.overflow or (plan.limit is not None and len(changeset) > plan.limit):
                raise plan.overflow
            read = _judged(conn, ctx, changeset, facts)
            keys.check()
            if plan.max_rewrites is not None and read.rewrites > plan.max_rewrites:
                raise mass_rewrite(plan.max_rewrites, plan.undo)
            stored = None
            if changeset:
                stored = self.store(conn, changeset, plan, read, intent)
        return Written(returned, changes, rowid, stored)

    def store(
        self,
        conn: apsw.Connection,
        changeset: bytes,
        plan: RowUndo,
        summary: Summary,
        intent: Intent,
    ) -> StoredChangeset:
        """Keep one call's changeset (`engine.undo.capture.store_changeset`: the row states
        read on `conn`, inside the change) in the records, pruned on its turn."""
        stored: list[StoredChangeset] = []

        def write(records: apsw.Connection) -> int:
            kept = store_changeset(
                records,
                conn,
                changeset,
                ts=utc_timestamp(self.wall_clock()),
                session=self.session,
                kind=plan.kind,
                chunk=self.chunk,
                shapes=self.shapes,
                summary=summary,
                tool=plan.tool,
            )
            stored.append(kept)
            return kept.id

        self.keep(intent, write, lambda records: plan.prune(records, stored[0]))
        return stored[0]


def _judged(conn: apsw.Connection, ctx: RunContext, changeset: bytes, facts: WriteFacts) -> Summary:
    """The changeset read once, after refusing what the statement may not change (a guarded
    table's rows, a foreign key to a server table) or what no changeset can restore."""
    # foreign keys are never shown to the authorizer: judged as stored, before COMMIT
    check_references(conn, ctx.recorder.operations, ctx.protected)
    refuse_changed_rows(conn, changeset, ctx.rules, ctx.recorder.operations)
    read = summarize(changeset)
    written = written_tables(ctx.recorder.operations)
    why = facts.unrestorable(written | {fold_name(name) for name in read.tables})
    if why is not None:
        raise UndoFallback(why)
    return read


class UndoingWrites:
    """write_query's statements run with what undoes them."""

    def __init__(self, runner: Runner, keeping: UndoKeeping, hint: UndoHint) -> None:
        self.runner = runner
        self.settings = runner.settings
        self.keeping = keeping
        self.hint = hint

    def off_reason(self, statement: Statement) -> str | None:
        """Why this write keeps no undo data at all, or None when it tries to."""
        if statement.kind not in ROW_KINDS | DDL_KINDS | {"CREATE VIEW"}:
            return "not a row change"
        if self.settings.write_undo_keep == 0:
            return "--write-undo-keep is 0"
        if not self.settings.audit:
            return "the audit log is off (--no-audit); undo is keyed by its rows"
        return None

    def budget(self) -> int:
        """Bytes one write_query's changeset may take: the destructive budget, and at most
        the whole write budget (--write-undo-mb)."""
        return min(undo_budget(self.settings), self.settings.write_undo_mb * MIB)

    def run(
        self,
        conn: apsw.Connection,
        text: str,
        statement: Statement,
        bindings: Bindings,
        control: CallControl,
    ) -> Outcome:
        if statement.kind in DDL_KINDS:
            return self._schema(conn, text, statement, bindings, control)
        try:
            return self._rows(conn, text, statement, bindings, control)
        except UndoFallback as fallback:  # its transaction is rolled back: nothing changed
            # a guarded table's refusal comes first: no tool takes such a change
            self.runner.rehearse(conn, text, bindings, control)
            raise not_undoable(fallback) from None

    def prune(self, conn: apsw.Connection, changeset_id: int, size: int) -> None:
        """Prune write_query's and create_view's undo data when this record's turn says so."""
        s = self.settings
        prune_writes(conn, changeset_id, size, s.write_undo_keep, s.write_undo_mb * MIB)

    def _rows(
        self,
        conn: apsw.Connection,
        text: str,
        statement: Statement,
        bindings: Bindings,
        control: CallControl,
    ) -> Outcome:
        budget = self.budget()
        overflow = UndoFallback(
            f"the change is larger than the {max(1, budget // MIB)} MiB undo budget "
            "(--write-undo-mb)",
            SPLIT_ADVICE,
        )
        plan = RowUndo(
            tool="write_query",
            kind=statement.kind,
            budget=budget,
            overflow=overflow,
            limit=budget,
            max_rewrites=self.settings.max_update_rows,
            undo=self.settings.undo,
            prune=lambda conn, stored: self.prune(conn, stored.id, stored.bytes),
        )
        ctx = self.runner.context(conn, Tier.WRITE, control)
        done = self.keeping.capture(conn, ctx, text, bindings, plan, self.runner.collect)
        summary = summary_line(statement, done.returned, done.changes, done.rowid)
        if done.stored is None:  # nothing changed: nothing to undo
            return self._answer(unchanged(summary, done.changes), statement, done.changes, None)
        return self._answer(summary, statement, done.changes, done.stored.id)

    def _schema(
        self,
        conn: apsw.Connection,
        text: str,
        statement: Statement,
        bindings: Bindings,
        control: CallControl,
    ) -> Outcome:
        runner, keeping = self.runner, self.keeping
        ctx = runner.context(conn, Tier.WRITE, control, guard=True)
        with keeping.change(conn) as intent:
            with guarding(conn, ctx.rules), capturing_schema(conn) as created:
                returned = run_statement(ctx, text, bindings, lambda c: runner.collect(ctx, c))
                changes, rowid = conn.changes(), conn.last_insert_rowid()
            check_references(conn, ctx.recorder.operations, ctx.protected)
            record = None
            if created.objects:  # IF NOT EXISTS of an existing object made nothing
                record = self.keep_created(intent, created.objects, "write_query", statement.kind)
        summary = summary_line(statement, returned, changes, rowid)
        return self._answer(summary, statement, 0, record)

    def keep_created(
        self, intent: Intent, objects: tuple[CreatedObject, ...], tool: str, kind: str
    ) -> int:
        """Keep the undo record of a CREATE (the catalog rows it added) in the records,
        pruned on its turn (a catalog record is small)."""
        keeping = self.keeping

        def write(records: apsw.Connection) -> int:
            return store_created(
                records,
                objects,
                ts=utc_timestamp(keeping.wall_clock()),
                session=keeping.session,
                tool=tool,
                kind=kind,
            )

        def prune(records: apsw.Connection) -> None:
            if intent.id is not None:
                self.prune(records, intent.id, 0)

        return keeping.keep(intent, write, prune)

    def _answer(
        self, summary: str, statement: Statement, rows: int, changeset_id: int | None
    ) -> Outcome:
        """The call's outcome: with the undo hint once its audit id is known, when it kept
        undo data; as it is (nothing changed, nothing to undo) when it did not."""
        detail: dict[str, Any] = {"kind": statement.kind, "changes": rows}
        if changeset_id is None:
            return Outcome(summary, rows, detail)
        detail["undo"] = changeset_id
        finish = self.hint(summary, changeset_id)
        return Outcome(finish(None), rows, detail, finish=finish)
