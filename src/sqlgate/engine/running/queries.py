"""The three SQL tiers: read, write and destructive statements from start to result.

    read         read_query here: one statement under the read policy, its rows rendered within
                 the caps (read again with TEXT as bytes when a value is not UTF-8)
    write        write_query here up to its undo data: the unfiltered-UPDATE check, a CREATE
                 ... IF NOT EXISTS of what exists, then `engine.running.writes` (kept with what
                 undoes it), or, with write undo off, run without undo data and said so
    destructive  destructive_query: `engine.running.destructive`

What the tiers share is `engine.running.runner`; the undo hint an answer ends with
(`undo_text`) names this database, so that it works as written from any folder.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import apsw

from sqlgate.engine.commands import db_option
from sqlgate.engine.csvout import CsvResult, render_csv
from sqlgate.engine.database import Database
from sqlgate.engine.limits import CallControl, Clock, ResultCaps
from sqlgate.engine.raw_text import UnreadableText, raw_rows, raw_select, text_codec
from sqlgate.engine.running.destructive import DestructiveQuery, Progress
from sqlgate.engine.running.execute import Bindings, RunContext, run_statement
from sqlgate.engine.running.if_exists import NO_NEW, already_there, nothing_created
from sqlgate.engine.running.other_dialects import trap_note
from sqlgate.engine.running.outcome import Outcome, with_note
from sqlgate.engine.running.runner import DML_KINDS, Runner, summary_line, with_hidden
from sqlgate.engine.running.where_check import refuse_unfiltered_update
from sqlgate.engine.running.writes import UndoingWrites, UndoKeeping
from sqlgate.engine.statements import Statement, Tier
from sqlgate.engine.undo import chunk_size
from sqlgate.errors import InvalidArgument

__all__ = ["Outcome", "SqlTiers"]

# the reads that can be read again with TEXT as bytes: a SELECT can wrap them
REREAD_KINDS = frozenset({"SELECT", "WITH", "VALUES"})


class SqlTiers:
    """read_query, write_query and destructive_query over one `Database`."""

    def __init__(
        self,
        db: Database,
        clock: Clock,
        *,
        session: str = "",
        wall_clock: Clock = time.time,
    ) -> None:
        self.db = db
        self.settings = db.settings
        self.clock = clock
        self.session = session
        self.wall_clock = wall_clock
        self.runner = Runner(db, clock)
        # write_query and destructive_query keep their undo data alike, with one cache
        keeping = UndoKeeping(
            session, wall_clock, chunk_size(self.settings.max_value_bytes), db.keeper
        )
        self.writes = UndoingWrites(self.runner, keeping, self.undo_text)
        self.destructive_query = DestructiveQuery(
            self.runner, keeping, self.undo_text, lambda: self.db_option
        )
        self._quoted_db: str | None = None  # `--db PATH`, the path absolute, for the shell

    @property
    def caps(self) -> ResultCaps:
        return self.runner.caps

    def preflight(self, sql: object, tier: Tier) -> tuple[str, Statement]:
        """The statement's text and what reading it learned (`Runner.preflight`)."""
        return self.runner.preflight(sql, tier)

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
            ctx = self.runner.context(conn, Tier.READ, control)

            def consume(cursor: apsw.Cursor) -> CsvResult:
                rows: Iterator[Sequence[Any]] = iter(cursor)
                return render_csv(ctx.columns, rows, self.caps, wanted)

            try:
                result = with_hidden(run_statement(ctx, text, bindings, consume), ctx)
            except UnreadableText:
                if statement.kind not in REREAD_KINDS or not (ctx.statement and ctx.columns):
                    raise  # an EXPLAIN, a PRAGMA, or a name (not a value) that is not UTF-8
                result = self._reread(ctx, bindings, wanted)
            note = trap_note(ctx, text)
        if note is not None:  # it ran, but reads as another dialect's meaning
            result = replace(result, text=f"{result.text}\n{note}")
        detail = {"kind": statement.kind}
        if result.truncated:
            detail["truncated"] = result.truncated
        return Outcome(result.text, result.rows, detail)

    def _reread(self, first: RunContext, bindings: Bindings, wanted: int) -> CsvResult:
        """The read again, when a value was TEXT that is not UTF-8: the same statement,
        wrapped to hand TEXT over as bytes (`engine.raw_text.raw_select`), under the same
        policy, deadline and caps; such text is shown as `CAST(x'…' AS TEXT)`."""
        conn = first.conn
        ctx = RunContext(
            conn, Tier.READ, first.protected, first.deadline, first.control, rules=first.rules
        )
        columns, codec = first.columns, text_codec(conn)

        def consume(cursor: apsw.Cursor) -> CsvResult:
            return render_csv(columns, raw_rows(cursor, codec), self.caps, wanted)

        sql = raw_select(first.statement, len(columns))
        return with_hidden(run_statement(ctx, sql, bindings, consume), ctx)

    # -- write and destructive ----------------------------------------------------------
    def write(self, sql: object, bindings: Bindings, control: CallControl) -> Outcome:
        """Run one write; a row change keeps its changeset for `sqlgate undo`, or is refused
        when it cannot, unless write undo is off (`off_reason`: the answer says so)."""
        text, statement = self.preflight(sql, Tier.WRITE)
        runner = self.runner
        with self.db.writing() as conn:
            if statement.kind == "UPDATE":  # one whose WHERE names no column is refused
                refuse_unfiltered_update(
                    runner.context(conn, Tier.WRITE, control),
                    text,
                    statement,
                    bindings,
                    self.settings.undo,
                )
            existing = already_there(conn, text)
            if existing is not None:  # run for SQLite's own checks: it creates nothing
                runner.apply(conn, text, bindings, runner.context(conn, Tier.WRITE, control))
                answer = nothing_created(existing, "nothing was changed")
                return Outcome(answer, 0, {"kind": statement.kind, "changes": 0} | NO_NEW)
            why = self.writes.off_reason(statement)
            if why is None:  # kept, or refused when it cannot be (engine.running.writes)
                return self.writes.run(conn, text, statement, bindings, control)
            ctx = runner.context(conn, Tier.WRITE, control, guard=True)
            returned, changes, rowid = runner.apply(conn, text, bindings, ctx)
        rows = changes if statement.kind in DML_KINDS else 0
        detail: dict[str, Any] = {"kind": statement.kind, "changes": rows}
        summary = summary_line(statement, returned, changes, rowid)
        if rows and why is not None:
            detail["undo_fallback"] = why
            summary = with_note(summary, f"undo: none kept ({why})")
        return Outcome(summary, rows, detail)

    def destructive(
        self,
        sql: object,
        reason: object,
        bindings: Bindings,
        control: CallControl,
        confirm: Callable[[], None] | None = None,
        progress: Progress | None = None,
    ) -> Outcome:
        """destructive_query (`engine.running.destructive`): `confirm` may veto (raise);
        `progress(pages done, pages in all)` follows a whole-file snapshot."""
        return self.destructive_query.run(sql, reason, bindings, control, confirm, progress)

    def check_destructive(
        self, sql: object, reason: object, bindings: Bindings, control: CallControl
    ) -> bool:
        """Raise what `destructive` would raise before its snapshot; nothing runs. False
        when the call would change nothing (a DROP ... IF EXISTS of nothing, a CREATE ...
        IF NOT EXISTS of what exists)."""
        return self.destructive_query.check(sql, reason, bindings, control)

    def snapshot(self, spare: int = 0, progress: Progress | None = None) -> Path:
        """Snapshot the database now, keeping the newest `--snapshots-keep` (plus `spare`)."""
        return self.destructive_query.snapshot(spare, progress)

    # -- the undo hint -----------------------------------------------------------------
    @property
    def db_option(self) -> str:
        """`--db PATH` naming this database, for the commands an answer gives a person."""
        if self._quoted_db is None:
            self._quoted_db = db_option(self.db.path)
        return self._quoted_db

    def undo_command(self, ref: str) -> str:
        """The command that undoes call (or, with `--changeset`, changeset) `ref`, naming
        this database so that it works as written from any folder."""
        return f"sqlgate undo {ref} {self.db_option}"

    def call_ref(self, number: int) -> str:
        """`15@3f9a1c07`: a call (or changeset) id that only this database accepts."""
        identity = self.db.database_id
        return f"{number}@{identity}" if identity else str(number)

    def undo_text(self, summary: str, changeset_id: int) -> Callable[[int | None], str]:
        """The agent's text once the audit id is known: how to undo this very call (by its
        changeset, `changeset_id`, when no audit row was written)."""

        def finish(audit_id: int | None) -> str:
            if audit_id is not None:
                how = self.undo_command(self.call_ref(audit_id))
            else:
                how = self.undo_command(f"--changeset {self.call_ref(changeset_id)}")
            return with_note(summary, f"undo: {how}")

        return finish
