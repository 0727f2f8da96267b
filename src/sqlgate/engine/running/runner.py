"""One statement of a tier on a connection: read for its tier, its context, its rows, its line.

    preflight   the statement read (`engine.statements`) and checked against the tier; a tier's
                refusal names no tool the table rules refuse too
    context     the `RunContext` it runs under: policy, deadline, table rules, and for a
                write without undo data the mass-rewrite guard
    apply       a write run in its own IMMEDIATE transaction, guarded rows judged before COMMIT
    rehearse    a write run under the guards and rolled back: what they would refuse it for
    summary     the answer's first line (`ok: 3 rows affected`) and any RETURNING rows

What every tier shares (`engine.running.queries`, `engine.running.writes`,
`engine.running.destructive`); the undo data a write keeps is `engine.running.writes`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

import apsw

from sqlgate.engine.connect import immediate_transaction
from sqlgate.engine.csvout import CsvResult, render_csv
from sqlgate.engine.database import Database
from sqlgate.engine.framing import counted
from sqlgate.engine.limits import CallControl, Clock, Deadline, ResultCaps
from sqlgate.engine.rules import check_references, guarded_statement_refusal, hidden_trailer
from sqlgate.engine.running.execute import (
    NO_ROWID,
    Bindings,
    RewriteCounter,
    RunContext,
    run_statement,
)
from sqlgate.engine.running.guard_rows import guarding
from sqlgate.engine.running.other_dialects import dialect_error
from sqlgate.engine.sqltext import has_more_statements
from sqlgate.engine.statements import Statement, Tier, check_tier, inspect_statement
from sqlgate.errors import InvalidArgument, PolicyDenied, SqlError

__all__ = ["DML_KINDS", "Applied", "Runner", "summary_line", "with_hidden"]

DML_KINDS = frozenset({"INSERT", "REPLACE", "UPDATE", "DELETE"})
# ANALYZE with no name analyzes every attached file, sqlgate's read-only records too
_BARE_ANALYZE = re.compile(r"\s*ANALYZE\s*;?\s*", re.IGNORECASE)


def main_only(text: str) -> str:
    """A bare ANALYZE as `ANALYZE main`: the user's file, never the records attached beside
    it (which no agent statement writes); any other statement as it is."""
    return "ANALYZE main" if _BARE_ANALYZE.fullmatch(text) else text


INSERT_KINDS = frozenset({"INSERT", "REPLACE"})
# what a write returns: its RETURNING rows (or None), its changes and last_insert_rowid
Applied = tuple[CsvResult | None, int, int]


def with_hidden(result: CsvResult, ctx: RunContext) -> CsvResult:
    """`result` with the line naming the hidden columns it read as NULL, if it read any."""
    line = hidden_trailer(ctx.recorder.hidden_reads, ctx.rules)
    return replace(result, text=f"{result.text}\n{line}") if line else result


def summary_line(statement: Statement, returned: CsvResult | None, changes: int, rowid: int) -> str:
    """A write's answer: `ok: N rows affected` (with the rowid it inserted), or `ok: KIND
    done`, then its RETURNING rows."""
    if statement.kind in DML_KINDS:
        line = f"ok: {counted(changes, 'row')} affected"
        if statement.kind in INSERT_KINDS and changes and rowid != NO_ROWID:
            line += f" (last_insert_rowid={rowid})"  # a row this statement inserted
    else:
        line = f"ok: {statement.kind} done"
    if returned is not None:
        line = f"{line}\n{returned.text}"
    return line


def _require_sql(sql: object) -> str:
    # has_more_statements(text) is false when text holds only space, `;` and comments
    if not isinstance(sql, str) or not has_more_statements(sql):
        raise InvalidArgument("query is empty: pass one SQL statement")
    return sql


class _Rehearsed(Exception):
    """Ends `Runner.rehearse`'s transaction, which rolls it back."""


class Runner:
    """Statements of the tiers run on connections of one `Database`, under its settings."""

    def __init__(self, db: Database, clock: Clock) -> None:
        self.db = db
        self.settings = db.settings
        self.clock = clock

    @property
    def caps(self) -> ResultCaps:
        s = self.settings
        return ResultCaps(s.max_rows, s.max_result_bytes, s.max_cell_chars)

    def context(
        self, conn: apsw.Connection, tier: Tier, control: CallControl, guard: bool = False
    ) -> RunContext:
        """What one statement runs under; `guard`: with the mass-rewrite guard (a write that
        keeps no changeset, which would count the rewrites otherwise)."""
        rewrite = None
        if guard:
            shadows = self.db.shadow_tables(conn)
            rewrite = RewriteCounter(
                self.settings.max_update_rows, conn, shadows, undo=self.settings.undo
            )
        deadline = Deadline(self.settings.query_timeout, self.clock)
        return RunContext(
            conn, tier, self.db.protected, deadline, control, rewrite,
            rules=self.db.live_rules(conn),
        )  # fmt: skip

    def preflight(self, sql: object, tier: Tier) -> tuple[str, Statement]:
        """The statement's text and what reading it learned; PolicyDenied when `tier` does
        not take it."""
        text = _require_sql(sql)
        statement = inspect_statement(text)
        try:
            check_tier(statement, tier, undo=self.settings.undo)
        except InvalidArgument:
            if tier is Tier.WRITE and statement.kind == "UNKNOWN":  # TRUNCATE, SHOW, ...
                other = self._other_dialect(text)
                if other is not None:
                    raise other from None
            raise
        except PolicyDenied:
            # a tier's advice must not send the agent to a tool the table rules refuse too
            if self.db.rules.rules:
                guarded = self._guarded_refusal(statement)
                if guarded is not None:
                    raise PolicyDenied(f"refused: {guarded}") from None
            raise
        return text, statement

    def _other_dialect(self, text: str) -> SqlError | None:
        """write_query's answer to a statement no SQL verb starts, when it reads as another
        dialect's (`engine.running.other_dialects`): what SQLite would say, and its form."""
        first = text.split(None, 1)[0] if text.split() else ""
        with self.db.writing() as conn:
            ctx = self.context(conn, Tier.WRITE, CallControl())
            return dialect_error(ctx, text, f'near "{first}": syntax error')

    def _guarded_refusal(self, statement: Statement) -> str | None:
        with self.db.reading() as conn:
            rules = self.db.live_rules(conn)
        target = statement.on_table or statement.target
        return guarded_statement_refusal(statement.kind, target, rules)

    def collect(self, ctx: RunContext, cursor: apsw.Cursor) -> CsvResult | None:
        """Run the statement to its end; RETURNING rows are rendered as they stream past,
        so only what fits the caps is ever held, however many rows the statement returns.
        A row beyond them that holds TEXT that is not UTF-8 is passed over like the rest."""
        caps = self.caps
        rows: Iterator[Sequence[Any]] = iter(cursor)
        result = render_csv(ctx.columns, rows, caps, caps.rows) if ctx.columns else None
        while True:
            try:
                for _ in rows:
                    pass  # the rest of a RETURNING statement's rows: run to the end, keep nothing
                break
            except UnicodeDecodeError:
                continue  # apsw moved past that row, and nothing of it is shown
        return None if result is None else with_hidden(result, ctx)

    def apply(
        self, conn: apsw.Connection, text: str, bindings: Bindings, ctx: RunContext
    ) -> Applied:
        """Run a write that keeps no changeset in its own transaction."""
        text = main_only(text)
        with immediate_transaction(conn):
            with guarding(conn, ctx.rules):  # guarded rows it changed, what it leaves behind
                returned = run_statement(ctx, text, bindings, lambda cur: self.collect(ctx, cur))
                changes, rowid = conn.changes(), conn.last_insert_rowid()
            # foreign keys are never shown to the authorizer: judged as stored, before COMMIT
            check_references(conn, ctx.recorder.operations, ctx.protected)
            return returned, changes, rowid

    def rehearse(
        self, conn: apsw.Connection, text: str, bindings: Bindings, control: CallControl
    ) -> None:
        """Raise what a write without undo data would be refused for by a guarded table's
        rule (or the mass-rewrite guard): run it under those guards, then roll it back.
        write_query calls it before refusing a change it cannot undo, so that the refusal
        names no tool when none would take the change. Nothing runs while no table is
        guarded."""
        ctx = self.context(conn, Tier.WRITE, control, guard=True)
        if not (ctx.rules.protected or ctx.rules.append_only):
            return
        try:
            with immediate_transaction(conn):
                with guarding(conn, ctx.rules):
                    run_statement(ctx, text, bindings, lambda cur: self.collect(ctx, cur))
                check_references(conn, ctx.recorder.operations, ctx.protected)
                raise _Rehearsed  # rolled back: it was only tried
        except _Rehearsed:
            pass
