"""write_query with its undo data (issue 19): every row change keeps its changeset, and every
CREATE keeps the catalog rows it made, in the statement's own transaction.

    rows     INSERT, UPDATE, upsert, REPLACE: an `apsw.Session` records the rows the statement
             (its triggers and foreign-key actions too) changes; the mass-rewrite guard counts
             the changeset (`engine.undo.writes`); stored by `engine.undo.capture.store_changeset`
    schema   CREATE TABLE / INDEX / VIRTUAL TABLE: the catalog rows it added
             (`engine.undo.ddl`); the undo drops exactly those, or refuses

A call that changed nothing keeps nothing and offers no undo. A change no changeset can undo
(`UndoFallback`: a row whose PRIMARY KEY holds NULL, `engine.undo.keys`; a virtual table;
a change over the undo budget) is refused (`NotUndoable`), rolled back, naming why and what
to do: write_query never changes what it cannot undo. Only with write undo turned off
(`off_reason`) does the caller run a write without undo data, saying so in its answer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import apsw

from sqlgate.config import Settings
from sqlgate.engine.connect import immediate_transaction
from sqlgate.engine.csvout import CsvResult
from sqlgate.engine.limits import CallControl
from sqlgate.engine.names import fold_name
from sqlgate.engine.records import utc_timestamp
from sqlgate.engine.rules import check_references
from sqlgate.engine.running.execute import RunContext, mass_rewrite, run_statement
from sqlgate.engine.running.guard_rows import guarding, refuse_changed_rows
from sqlgate.engine.running.outcome import Outcome, unchanged
from sqlgate.engine.statements import Statement, Tier
from sqlgate.engine.undo import (
    SPLIT_ADVICE,
    NullKeyWatch,
    ShapeCache,
    StoredChangeset,
    Summary,
    UndoFallback,
    WriteFacts,
    capturing,
    capturing_schema,
    prune_writes,
    store_created,
    summarize,
    written_tables,
)
from sqlgate.errors import NotUndoable, QueryTimeout

__all__ = ["DDL_KINDS", "ROW_KINDS", "UndoingWrites", "WriteHost", "not_undoable"]

MIB = 1024 * 1024
ROW_KINDS = frozenset({"INSERT", "REPLACE", "UPDATE"})
DDL_KINDS = frozenset({"CREATE TABLE", "CREATE INDEX", "CREATE VIRTUAL TABLE"})


def not_undoable(fallback: UndoFallback) -> NotUndoable:
    """write_query's refusal of a change whose undo it cannot keep (already rolled back)."""
    return NotUndoable(
        "refused and rolled back, nothing was changed: write_query keeps what undoes every "
        f"change it makes, and cannot for this one: {fallback.reason}. {fallback.advice}"
    )


class WriteHost(Protocol):
    """What the write path needs of `engine.running.queries.SqlTiers`."""

    settings: Settings
    session: str
    wall_clock: Callable[[], float]
    shapes: ShapeCache

    def context(
        self, conn: apsw.Connection, tier: Tier, control: CallControl, guard: bool = False
    ) -> RunContext: ...

    def collect(self, ctx: RunContext, cursor: apsw.Cursor) -> CsvResult | None: ...

    def summary(
        self, statement: Statement, returned: CsvResult | None, changes: int, rowid: int
    ) -> str: ...

    def undo_budget(self) -> int: ...

    def keep_changeset(
        self,
        conn: apsw.Connection,
        changeset: bytes,
        kind: str,
        summary: Summary,
        tool: str,
    ) -> StoredChangeset: ...

    def undo_text(self, summary: str, changeset_id: int) -> Callable[[int | None], str]: ...

    def rehearse(
        self, conn: apsw.Connection, text: str, bindings: Any, control: CallControl
    ) -> None: ...


class UndoingWrites:
    """write_query's statements run with what undoes them."""

    def __init__(self, host: WriteHost) -> None:
        self.host = host
        self.facts = WriteFacts()

    @property
    def settings(self) -> Settings:
        return self.host.settings

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
        return min(self.host.undo_budget(), self.settings.write_undo_mb * MIB)

    def _overflow(self) -> UndoFallback:
        mib = max(1, self.budget() // MIB)
        return UndoFallback(
            f"the change is larger than the {mib} MiB undo budget (--write-undo-mb)",
            SPLIT_ADVICE,
        )

    def run(
        self,
        conn: apsw.Connection,
        text: str,
        statement: Statement,
        bindings: Any,
        control: CallControl,
    ) -> Outcome:
        if statement.kind in DDL_KINDS:
            return self._schema(conn, text, statement, bindings, control)
        try:
            return self._rows(conn, text, statement, bindings, control)
        except UndoFallback as fallback:  # its transaction is rolled back: nothing changed
            # a guarded table's refusal comes first: no tool takes such a change
            self.host.rehearse(conn, text, bindings, control)
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
        bindings: Any,
        control: CallControl,
    ) -> Outcome:
        host = self.host
        ctx = host.context(conn, Tier.WRITE, control)
        assert ctx.rewrite is None, "never capture a changeset with the rewrite guard installed"
        budget = self.budget()
        with immediate_transaction(conn):
            facts = self.facts.refresh(conn)  # under the write lock: no schema change between
            keys = NullKeyWatch(conn, facts.null_keys)
            with capturing(conn, budget) as capture:
                try:
                    returned = run_statement(ctx, text, bindings, lambda c: host.collect(ctx, c))
                except QueryTimeout:
                    if capture.overflow and not control.cancelled:
                        raise self._overflow() from None
                    raise
                changes, rowid = conn.changes(), conn.last_insert_rowid()
            # an INSERT's session holds only keys: its changeset reads the rows when built
            if capture.overflow or len(capture.changeset) > budget:
                raise self._overflow()
            # foreign keys are never shown to the authorizer: judged as stored, before COMMIT
            check_references(conn, ctx.recorder.operations, ctx.protected)
            refuse_changed_rows(conn, capture.changeset, ctx.rules, ctx.recorder.operations)
            read = summarize(capture.changeset)
            written = written_tables(ctx.recorder.operations)
            why = facts.unrestorable(written | {fold_name(name) for name in read.tables})
            if why is not None:
                raise UndoFallback(why)
            keys.check()
            if read.rewrites > self.settings.max_update_rows:
                raise mass_rewrite(self.settings.max_update_rows, self.settings.undo)
            stored = None
            if capture.changeset:
                stored = host.keep_changeset(
                    conn, capture.changeset, statement.kind, read, tool="write_query"
                )
                self.prune(conn, stored.id, stored.bytes)
        summary = host.summary(statement, returned, changes, rowid)
        if stored is None:  # nothing changed: nothing to undo
            return self._answer(unchanged(summary, changes), statement, changes, None)
        return self._answer(summary, statement, changes, stored.id)

    def _schema(
        self,
        conn: apsw.Connection,
        text: str,
        statement: Statement,
        bindings: Any,
        control: CallControl,
    ) -> Outcome:
        host = self.host
        ctx = host.context(conn, Tier.WRITE, control, guard=True)
        with immediate_transaction(conn):
            with guarding(conn, ctx.rules), capturing_schema(conn) as created:
                returned = run_statement(ctx, text, bindings, lambda c: host.collect(ctx, c))
                changes, rowid = conn.changes(), conn.last_insert_rowid()
            check_references(conn, ctx.recorder.operations, ctx.protected)
            record = None
            if created.objects:  # IF NOT EXISTS of an existing object made nothing
                record = store_created(
                    conn,
                    created.objects,
                    ts=utc_timestamp(host.wall_clock()),
                    session=host.session,
                    tool="write_query",
                    kind=statement.kind,
                )
                self.prune(conn, record, 0)  # a catalog record: small, pruned on its turn
        summary = host.summary(statement, returned, changes, rowid)
        return self._answer(summary, statement, 0, record)

    def _answer(
        self, summary: str, statement: Statement, rows: int, changeset_id: int | None
    ) -> Outcome:
        """The call's outcome: with the undo hint once its audit id is known, when it kept
        undo data; as it is (nothing changed, nothing to undo) when it did not."""
        detail: dict[str, Any] = {"kind": statement.kind, "changes": rows}
        if changeset_id is None:
            return Outcome(summary, rows, detail)
        detail["undo"] = changeset_id
        finish = self.host.undo_text(summary, changeset_id)
        return Outcome(finish(None), rows, detail, finish=finish)
