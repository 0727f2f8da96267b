"""The three SQL tiers: read, write and destructive statements from start to result."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import apsw

from sqlgate.engine.connect import immediate_transaction
from sqlgate.engine.csvout import CsvResult, render_csv
from sqlgate.engine.database import Database
from sqlgate.engine.execute import Bindings, RewriteCounter, RunContext, run_statement
from sqlgate.engine.limits import CallControl, Clock, Deadline, ResultCaps
from sqlgate.engine.policy import Tier
from sqlgate.engine.preflight import Statement, check_tier, inspect_statement
from sqlgate.engine.snapshots import take_snapshot
from sqlgate.errors import InvalidArgument

__all__ = ["Outcome", "SqlTiers"]

DML_KINDS = frozenset({"INSERT", "REPLACE", "UPDATE", "DELETE"})
INSERT_KINDS = frozenset({"INSERT", "REPLACE"})
Snapshotter = Callable[[], Path]


@dataclass
class Outcome:
    """A finished call: the text the agent reads, and facts for the audit row."""

    text: str
    rows: int
    detail: dict[str, Any] = field(default_factory=dict)


def _require_sql(sql: object) -> str:
    if not isinstance(sql, str) or not sql.strip():
        raise InvalidArgument("query is empty: pass one SQL statement")
    return sql


@dataclass
class _Written:
    columns: list[str]
    rows: list[Sequence[Any]]
    extra_rows: int


class SqlTiers:
    """read_query, write_query and destructive_query over one `Database`."""

    def __init__(self, db: Database, clock: Clock) -> None:
        self.db = db
        self.settings = db.settings
        self.clock = clock

    @property
    def caps(self) -> ResultCaps:
        s = self.settings
        return ResultCaps(s.max_rows, s.max_result_bytes, s.max_cell_chars)

    def _deadline(self) -> Deadline:
        return Deadline(self.settings.query_timeout, self.clock)

    def _context(
        self, conn: apsw.Connection, tier: Tier, control: CallControl, guard: bool = False
    ) -> RunContext:
        rewrite = None
        if guard:
            shadows = self.db.shadow_tables(conn)
            rewrite = RewriteCounter(self.settings.max_update_rows, conn, shadows)
        return RunContext(conn, tier, self.db.protected, self._deadline(), control, rewrite)

    def preflight(self, sql: object, tier: Tier) -> tuple[str, Statement]:
        text = _require_sql(sql)
        statement = inspect_statement(text)
        check_tier(statement, tier)
        return text, statement

    # -- read ---------------------------------------------------------------------------
    def read(
        self, sql: object, limit: int | None, bindings: Bindings, control: CallControl
    ) -> Outcome:
        text, statement = self.preflight(sql, Tier.READ)
        wanted = self.settings.default_limit if limit is None else limit
        if not isinstance(wanted, int) or isinstance(wanted, bool) or wanted < 1:
            raise InvalidArgument(
                f"limit must be a whole number from 1 to {self.settings.max_rows}"
            )

        with self.db.reading() as conn:
            ctx = self._context(conn, Tier.READ, control)

            def consume(cursor: apsw.Cursor) -> CsvResult:
                rows: Iterator[Sequence[Any]] = iter(cursor)
                return render_csv(ctx.columns, rows, self.caps, wanted)

            result = run_statement(ctx, text, bindings, consume)
        detail = {"kind": statement.kind}
        if result.truncated:
            detail["truncated"] = result.truncated
        return Outcome(result.text, result.rows, detail)

    # -- write and destructive ----------------------------------------------------------
    def _collect(self, ctx: RunContext, cursor: apsw.Cursor) -> _Written:
        """Run the statement to the end; keep RETURNING rows up to the row cap."""
        kept: list[Sequence[Any]] = []
        extra = 0
        for row in cursor:
            if len(kept) <= self.caps.rows:
                kept.append(row)
            else:
                extra += 1
        return _Written(ctx.columns, kept, extra)

    def _apply(
        self,
        conn: apsw.Connection,
        text: str,
        bindings: Bindings,
        ctx: RunContext,
    ) -> tuple[_Written, int, int]:
        with immediate_transaction(conn):
            written = run_statement(ctx, text, bindings, lambda cur: self._collect(ctx, cur))
            return written, conn.changes(), conn.last_insert_rowid()

    def _summary(self, statement: Statement, written: _Written, changes: int, rowid: int) -> str:
        if statement.kind in DML_KINDS:
            line = f"ok: {changes} rows affected"
            if statement.kind in INSERT_KINDS and changes:
                line += f" (last_insert_rowid={rowid})"
        else:
            line = f"ok: {statement.kind} done"
        if written.columns:
            csv = render_csv(written.columns, iter(written.rows), self.caps, self.caps.rows)
            line = f"{line}\n{csv.text}"
        return line

    def write(self, sql: object, bindings: Bindings, control: CallControl) -> Outcome:
        text, statement = self.preflight(sql, Tier.WRITE)
        with self.db.writing() as conn:
            ctx = self._context(conn, Tier.WRITE, control, guard=True)
            written, changes, rowid = self._apply(conn, text, bindings, ctx)
        rows = changes if statement.kind in DML_KINDS else 0
        detail = {"kind": statement.kind, "changes": rows}
        return Outcome(self._summary(statement, written, changes, rowid), rows, detail)

    def destructive(
        self,
        sql: object,
        reason: object,
        bindings: Bindings,
        control: CallControl,
        confirm: Callable[[], None] | None = None,
    ) -> Outcome:
        """Check policy on a dry prepare, snapshot, then run. `confirm` may veto (raise)."""
        if not isinstance(reason, str) or not reason.strip():
            raise InvalidArgument(
                "reason is required: say in a sentence why this destructive change is needed"
            )
        text, statement = self.preflight(sql, Tier.DESTRUCTIVE)
        with self.db.writing() as conn:
            # prepare only (EXPLAIN): the policy and the bindings are checked, nothing runs
            dry = self._context(conn, Tier.DESTRUCTIVE, control)
            run_statement(dry, f"EXPLAIN {text}", bindings, lambda cursor: None)
            if confirm is not None:
                confirm()
            snapshot = self.snapshot()
            ctx = self._context(conn, Tier.DESTRUCTIVE, control)
            try:
                written, changes, rowid = self._apply(conn, text, bindings, ctx)
            except BaseException:
                snapshot.unlink(missing_ok=True)  # nothing changed: the copy is redundant
                raise
        rows = changes if statement.kind in DML_KINDS else 0
        summary = self._summary(statement, written, changes, rowid)
        first, _, rest = summary.partition("\n")
        text_out = f"{first}; snapshot: {snapshot}" + (f"\n{rest}" if rest else "")
        detail = {
            "kind": statement.kind,
            "changes": rows,
            "reason": reason,
            "snapshot": str(snapshot),
        }
        return Outcome(text_out, rows, detail)

    def snapshot(self) -> Path:
        with self.db.server_lock:
            return take_snapshot(
                self.db.server, self.settings.snapshot_dir, self.settings.snapshots_keep
            )
