"""destructive_query: a statement checked on a dry prepare, then run with what undoes it.

check      the reason, the tier and the bindings on a prepare (EXPLAIN) that runs nothing;
           the authorizer's facts name the tables it writes
no-ops     a DROP ... IF EXISTS of nothing, a CREATE ... IF NOT EXISTS of what exists: an
           answer, and nothing run (`engine.running.if_exists`)
rows       DML keeps its changeset (`engine.running.writes`, the capture write_query uses
           too), unless `snapshot_reason` or the capture itself says it cannot
file       everything else (and DML whose changeset cannot be kept) takes a whole-file
           snapshot first, dropped again when the statement fails
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import apsw

from sqlgate.engine.commands import shell_word
from sqlgate.engine.limits import CallControl
from sqlgate.engine.running.execute import Bindings, run_statement
from sqlgate.engine.running.if_exists import (
    NO_NEW,
    already_there,
    nothing_created,
    nothing_to_drop,
)
from sqlgate.engine.running.outcome import Outcome, unchanged
from sqlgate.engine.running.runner import DML_KINDS, Runner, summary_line
from sqlgate.engine.running.writes import MIB, RowUndo, UndoKeeping, undo_budget
from sqlgate.engine.snapshots import Progress, rotate_snapshots, take_snapshot
from sqlgate.engine.statements import Operation, Statement, Tier
from sqlgate.engine.undo import (
    StoredChangeset,
    UndoFallback,
    prune_changesets,
    unrestorable_write,
    written_tables,
)
from sqlgate.errors import InvalidArgument

if TYPE_CHECKING:
    from sqlgate.engine.running.writes import UndoHint

__all__ = ["DestructiveQuery", "Progress"]


class DestructiveQuery:
    """destructive_query over one database: row-level undo or a whole-file snapshot."""

    def __init__(
        self, runner: Runner, keeping: UndoKeeping, hint: UndoHint, db_option: Callable[[], str]
    ) -> None:
        self.runner = runner
        self.db = runner.db
        self.settings = runner.settings
        self.keeping = keeping
        self.hint = hint
        self.db_option = db_option  # `--db PATH`, for the restore command an answer names

    def run(
        self,
        sql: object,
        reason: object,
        bindings: Bindings,
        control: CallControl,
        confirm: Callable[[], None] | None = None,
        progress: Progress | None = None,
    ) -> Outcome:
        """Check policy on a dry prepare, keep what undoes the call, then run. `confirm` may
        veto (raise); `progress(pages done, pages in all)` follows a whole-file snapshot."""
        with self.db.writing() as conn:
            text, statement, facts = self._checked(conn, sql, reason, bindings, control)
            absent = nothing_to_drop(conn, text)
            detail = {"kind": statement.kind, "changes": 0, "reason": reason}
            if absent is not None:  # nothing runs, so nothing to confirm or to keep
                return Outcome(absent, 0, detail | {"nothing_to_drop": True})
            existing = already_there(conn, text)
            if existing is not None:  # checked by the dry prepare; SQLite would create nothing
                answer = nothing_created(existing, "nothing was run and no snapshot was taken")
                return Outcome(answer, 0, detail | NO_NEW)
            if confirm is not None:
                confirm()
            why = self._snapshot_reason(conn, statement, facts)
            if why is None:
                try:
                    return self._rows(conn, text, statement, reason, bindings, control)
                except UndoFallback as fallback:
                    why = fallback.reason
            return self._file(conn, text, statement, reason, bindings, control, progress, why)

    def check(self, sql: object, reason: object, bindings: Bindings, control: CallControl) -> bool:
        """Raise what `run` would raise before its snapshot; nothing runs. False when the
        call would change nothing (a DROP ... IF EXISTS of nothing, a CREATE ... IF NOT
        EXISTS of what exists)."""
        with self.db.writing() as conn:
            text, _, _ = self._checked(conn, sql, reason, bindings, control)
            return nothing_to_drop(conn, text) is None and already_there(conn, text) is None

    def _checked(
        self,
        conn: apsw.Connection,
        sql: object,
        reason: object,
        bindings: Bindings,
        control: CallControl,
    ) -> tuple[str, Statement, list[Operation]]:
        """Validate and prepare (EXPLAIN) without running; returns the text, what preflight
        learned and the authorizer's facts from the prepare (which tables it writes)."""
        if not isinstance(reason, str) or not reason.strip():
            raise InvalidArgument(
                "reason is required: say in a sentence why this destructive change is needed"
            )
        text, statement = self.runner.preflight(sql, Tier.DESTRUCTIVE)
        # prepare only (EXPLAIN): the policy and the bindings are checked, nothing runs
        dry = self.runner.context(conn, Tier.DESTRUCTIVE, control)
        dry.sent = ("", text)  # an answer's rewrite is of the statement, not of its EXPLAIN
        run_statement(dry, f"EXPLAIN {text}", bindings, lambda cursor: None)
        return text, statement, list(dry.recorder.operations)

    def _snapshot_reason(
        self, conn: apsw.Connection, statement: Statement, facts: list[Operation]
    ) -> str | None:
        """Why this call takes a whole-file snapshot instead of row-level undo, or None."""
        if self.settings.undo == "file":
            return "--undo file"
        if statement.kind not in DML_KINDS:
            return f"{statement.kind} is not a row change"
        if not self.settings.audit:
            return "the audit log is off (--no-audit); row-level undo is keyed by its rows"
        return unrestorable_write(conn, written_tables(facts))

    def _prune(self, conn: apsw.Connection, _: StoredChangeset) -> None:
        prune_changesets(conn, ("destructive_query",), self.settings.snapshots_keep)

    def _rows(
        self,
        conn: apsw.Connection,
        text: str,
        statement: Statement,
        reason: object,
        bindings: Bindings,
        control: CallControl,
    ) -> Outcome:
        budget = undo_budget(self.settings)
        plan = RowUndo(
            tool="destructive_query",
            kind=statement.kind,
            budget=budget,
            overflow=UndoFallback(f"the changeset grew past {budget // MIB} MiB (--undo-max-mb)"),
            limit=None,
            max_rewrites=None,
            undo=self.settings.undo,
            prune=self._prune,
        )
        # a Session beside our preupdate hook crashes apsw: the destructive tier has none
        ctx = self.runner.context(conn, Tier.DESTRUCTIVE, control)
        done = self.keeping.capture(conn, ctx, text, bindings, plan, self.runner.collect)
        changes = done.changes
        summary = summary_line(statement, done.returned, changes, done.rowid)
        detail: dict[str, Any] = {"kind": statement.kind, "changes": changes, "reason": reason}
        if done.stored is None:  # nothing changed: nothing to undo
            return Outcome(unchanged(summary, changes), changes, detail)
        detail["undo"] = done.stored.id
        finish = self.hint(summary, done.stored.id)
        return Outcome(finish(None), changes, detail, finish=finish)

    def _file(
        self,
        conn: apsw.Connection,
        text: str,
        statement: Statement,
        reason: object,
        bindings: Bindings,
        control: CallControl,
        progress: Progress | None,
        why: str | None,
    ) -> Outcome:
        # one spare place, so a failed call (whose copy is dropped) evicts no older snapshot
        snapshot = self.snapshot(spare=1, progress=progress).absolute()
        ctx = self.runner.context(conn, Tier.DESTRUCTIVE, control)
        try:
            returned, changes, rowid = self.runner.apply(conn, text, bindings, ctx)
        except BaseException:
            snapshot.unlink(missing_ok=True)  # nothing changed: the copy is redundant
            raise
        rotate_snapshots(self.settings.snapshot_dir, self.settings.snapshots_keep)
        rows = changes if statement.kind in DML_KINDS else 0
        summary = summary_line(statement, returned, changes, rowid)
        first, _, rest = summary.partition("\n")
        restore = f"sqlgate snapshots restore {shell_word(snapshot.name)} {self.db_option()}"
        text_out = f"{first}; snapshot: {snapshot}; restore: {restore}" + (
            f"\n{rest}" if rest else ""
        )
        detail = {
            "kind": statement.kind,
            "changes": rows,
            "reason": reason,
            "snapshot": str(snapshot),
        }
        if why is not None:
            detail["undo_fallback"] = why
        return Outcome(text_out, rows, detail)

    def snapshot(self, spare: int = 0, progress: Progress | None = None) -> Path:
        """Snapshot the database now, keeping the newest `--snapshots-keep` (plus `spare`)."""
        with self.db.snapshot_source() as source:
            return take_snapshot(
                source,
                self.settings.snapshot_dir,
                self.settings.snapshots_keep + spare,
                progress,
            )
