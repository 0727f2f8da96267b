"""The three SQL tiers: read, write and destructive statements from start to result."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import apsw

from sqlgate.engine.commands import db_option, shell_word
from sqlgate.engine.connect import immediate_transaction
from sqlgate.engine.csvout import CsvResult, render_csv
from sqlgate.engine.database import Database
from sqlgate.engine.framing import counted
from sqlgate.engine.limits import CallControl, Clock, Deadline, ResultCaps
from sqlgate.engine.names import fold_name
from sqlgate.engine.raw_text import UnreadableText, raw_rows, raw_select, text_codec
from sqlgate.engine.records import utc_timestamp
from sqlgate.engine.rules import check_references, guarded_statement_refusal, hidden_trailer
from sqlgate.engine.running.execute import (
    NO_ROWID,
    Bindings,
    RewriteCounter,
    RunContext,
    run_statement,
)
from sqlgate.engine.running.guard_rows import guarding, refuse_changed_rows
from sqlgate.engine.running.outcome import Outcome, unchanged, with_note
from sqlgate.engine.running.where_check import refuse_unfiltered_update
from sqlgate.engine.running.writes import UndoingWrites
from sqlgate.engine.snapshots import rotate_snapshots, take_snapshot
from sqlgate.engine.sqltext import has_more_statements
from sqlgate.engine.statements import (
    Operation,
    Statement,
    Tier,
    check_tier,
    create_if_not_exists,
    drop_if_exists,
    inspect_statement,
)
from sqlgate.engine.undo import (
    NullKeyWatch,
    ShapeCache,
    StoredChangeset,
    Summary,
    UndoFallback,
    capturing,
    chunk_size,
    prune_changesets,
    store_changeset,
    summarize,
    unrestorable_write,
    written_tables,
)
from sqlgate.errors import InvalidArgument, PolicyDenied, QueryTimeout

__all__ = ["Outcome", "SqlTiers"]

DML_KINDS = frozenset({"INSERT", "REPLACE", "UPDATE", "DELETE"})
# the reads that can be read again with TEXT as bytes: a SELECT can wrap them
REREAD_KINDS = frozenset({"SELECT", "WITH", "VALUES"})
INSERT_KINDS = frozenset({"INSERT", "REPLACE"})
Snapshotter = Callable[[], Path]
MIB = 1024 * 1024
# the catalog types a DROP <kind> IF EXISTS looks for (SQLite errors on the other type of a
# table/view pair, so either counts as present)
_DROPPED_TYPES = {
    "TABLE": ("table", "view"),
    "VIEW": ("table", "view"),
    "INDEX": ("index",),
    "TRIGGER": ("trigger",),
}
_NO_NEW = {"nothing_created": True}  # the audit detail of a CREATE ... IF NOT EXISTS no-op
# the catalog types whose object makes a CREATE <kind> IF NOT EXISTS a no-op (a table's
# name taken by an index, or an index's by a table, is SQLite's error instead)
_CREATED_TYPES = {
    "TABLE": ("table", "view"),
    "VIRTUAL TABLE": ("table", "view"),
    "INDEX": ("index",),
    "TRIGGER": ("trigger",),
}


def with_hidden(result: CsvResult, ctx: RunContext) -> CsvResult:
    """`result` with the line naming the hidden columns it read as NULL, if it read any."""
    line = hidden_trailer(ctx.recorder.hidden_reads, ctx.rules)
    return replace(result, text=f"{result.text}\n{line}") if line else result


def _require_sql(sql: object) -> str:
    # has_more_statements(text) is false when text holds only space, `;` and comments
    if not isinstance(sql, str) or not has_more_statements(sql):
        raise InvalidArgument("query is empty: pass one SQL statement")
    return sql


class _Rehearsed(Exception):
    """Ends `SqlTiers.rehearse`'s transaction, which rolls it back."""


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
        self.shapes = ShapeCache()
        self.writes = UndoingWrites(self)
        self._quoted_db: str | None = None  # `--db PATH`, the path absolute, for the shell

    @property
    def caps(self) -> ResultCaps:
        s = self.settings
        return ResultCaps(s.max_rows, s.max_result_bytes, s.max_cell_chars)

    def _deadline(self) -> Deadline:
        return Deadline(self.settings.query_timeout, self.clock)

    def context(
        self, conn: apsw.Connection, tier: Tier, control: CallControl, guard: bool = False
    ) -> RunContext:
        rewrite = None
        if guard:
            shadows = self.db.shadow_tables(conn)
            rewrite = RewriteCounter(
                self.settings.max_update_rows, conn, shadows, undo=self.settings.undo
            )
        return RunContext(
            conn, tier, self.db.protected, self._deadline(), control, rewrite,
            rules=self.db.live_rules(conn),
        )  # fmt: skip

    def preflight(self, sql: object, tier: Tier) -> tuple[str, Statement]:
        text = _require_sql(sql)
        statement = inspect_statement(text)
        try:
            check_tier(statement, tier, undo=self.settings.undo)
        except PolicyDenied:
            # a tier's advice must not send the agent to a tool the table rules refuse too
            if self.db.rules.rules:
                guarded = self._guarded_refusal(statement)
                if guarded is not None:
                    raise PolicyDenied(f"refused: {guarded}") from None
            raise
        return text, statement

    def _guarded_refusal(self, statement: Statement) -> str | None:
        with self.db.reading() as conn:
            rules = self.db.live_rules(conn)
        target = statement.on_table or statement.target
        return guarded_statement_refusal(statement.kind, target, rules)

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
            ctx = self.context(conn, Tier.READ, control)

            def consume(cursor: apsw.Cursor) -> CsvResult:
                rows: Iterator[Sequence[Any]] = iter(cursor)
                return render_csv(ctx.columns, rows, self.caps, wanted)

            try:
                result = with_hidden(run_statement(ctx, text, bindings, consume), ctx)
            except UnreadableText:
                if statement.kind not in REREAD_KINDS or not (ctx.statement and ctx.columns):
                    raise  # an EXPLAIN, a PRAGMA, or a name (not a value) that is not UTF-8
                result = self._reread(ctx, bindings, wanted)
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
    def collect(self, ctx: RunContext, cursor: apsw.Cursor) -> CsvResult | None:
        """Run the statement to its end; RETURNING rows are rendered as they stream past,
        so only what fits the caps is ever held, however many rows the statement returns.
        A row beyond them that holds TEXT that is not UTF-8 is passed over like the rest."""
        rows: Iterator[Sequence[Any]] = iter(cursor)
        result = render_csv(ctx.columns, rows, self.caps, self.caps.rows) if ctx.columns else None
        while True:
            try:
                for _ in rows:
                    pass  # the rest of a RETURNING statement's rows: run to the end, keep nothing
                break
            except UnicodeDecodeError:
                continue  # apsw moved past that row, and nothing of it is shown
        return None if result is None else with_hidden(result, ctx)

    def _apply(
        self,
        conn: apsw.Connection,
        text: str,
        bindings: Bindings,
        ctx: RunContext,
    ) -> tuple[CsvResult | None, int, int]:
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

    def summary(
        self, statement: Statement, returned: CsvResult | None, changes: int, rowid: int
    ) -> str:
        if statement.kind in DML_KINDS:
            line = f"ok: {counted(changes, 'row')} affected"
            if statement.kind in INSERT_KINDS and changes and rowid != NO_ROWID:
                line += f" (last_insert_rowid={rowid})"  # a row this statement inserted
        else:
            line = f"ok: {statement.kind} done"
        if returned is not None:
            line = f"{line}\n{returned.text}"
        return line

    def write(self, sql: object, bindings: Bindings, control: CallControl) -> Outcome:
        """Run one write; a row change keeps its changeset for `sqlgate undo`, or is refused
        when it cannot, unless write undo is off (`off_reason`: the answer says so)."""
        text, statement = self.preflight(sql, Tier.WRITE)
        with self.db.writing() as conn:
            if statement.kind == "UPDATE":  # one whose WHERE names no column is refused
                refuse_unfiltered_update(
                    self.context(conn, Tier.WRITE, control),
                    text,
                    statement,
                    bindings,
                    self.settings.undo,
                )
            existing = _already_there(conn, text)
            if existing is not None:  # run for SQLite's own checks: it creates nothing
                self._apply(conn, text, bindings, self.context(conn, Tier.WRITE, control))
                answer = _nothing_created(existing, "nothing was changed")
                return Outcome(answer, 0, {"kind": statement.kind, "changes": 0} | _NO_NEW)
            why = self.writes.off_reason(statement)
            if why is None:  # kept, or refused when it cannot be (engine.running.writes)
                return self.writes.run(conn, text, statement, bindings, control)
            ctx = self.context(conn, Tier.WRITE, control, guard=True)
            returned, changes, rowid = self._apply(conn, text, bindings, ctx)
        rows = changes if statement.kind in DML_KINDS else 0
        detail: dict[str, Any] = {"kind": statement.kind, "changes": rows}
        summary = self.summary(statement, returned, changes, rowid)
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
        progress: Callable[[int, int], None] | None = None,
    ) -> Outcome:
        """Check policy on a dry prepare, keep what undoes the call, then run. `confirm` may
        veto (raise); `progress(pages done, pages in all)` follows a whole-file snapshot.

        DML keeps its changeset (row-level undo) unless `_snapshot_reason` or the capture
        itself says it cannot; everything else takes a whole-file snapshot first.
        """
        with self.db.writing() as conn:
            text, statement, facts = self._check_destructive(conn, sql, reason, bindings, control)
            absent = _nothing_to_drop(conn, text)
            detail = {"kind": statement.kind, "changes": 0, "reason": reason}
            if absent is not None:  # nothing runs, so nothing to confirm or to keep
                return Outcome(absent, 0, detail | {"nothing_to_drop": True})
            existing = _already_there(conn, text)
            if existing is not None:  # checked by the dry prepare; SQLite would create nothing
                answer = _nothing_created(existing, "nothing was run and no snapshot was taken")
                return Outcome(answer, 0, detail | _NO_NEW)
            if confirm is not None:
                confirm()
            why = self._snapshot_reason(conn, statement, facts)
            if why is None:
                try:
                    return self._destructive_rows(conn, text, statement, reason, bindings, control)
                except UndoFallback as fallback:
                    why = fallback.reason
            return self._destructive_file(
                conn, text, statement, reason, bindings, control, progress, why
            )

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

    def undo_budget(self) -> int:
        """Bytes the session may hold: --undo-max-mb, and at most a quarter of the SQLite heap
        limit (the changeset is built beside the session, under the same limit)."""
        return min(self.settings.undo_max_mb, max(1, self.settings.heap_limit_mb // 4)) * MIB

    def _destructive_rows(
        self,
        conn: apsw.Connection,
        text: str,
        statement: Statement,
        reason: object,
        bindings: Bindings,
        control: CallControl,
    ) -> Outcome:
        ctx = self.context(conn, Tier.DESTRUCTIVE, control)
        # a Session beside our preupdate hook crashes apsw: the destructive tier has none
        assert ctx.rewrite is None, "never capture a changeset with the rewrite guard installed"
        budget = self.undo_budget()
        with immediate_transaction(conn):
            # only a change to a row whose key holds NULL needs the snapshot (engine.undo.keys)
            keys = NullKeyWatch(conn, self.writes.facts.refresh(conn).null_keys)
            with capturing(conn, budget) as capture:
                try:
                    returned = run_statement(
                        ctx, text, bindings, lambda cur: self.collect(ctx, cur)
                    )
                except QueryTimeout:
                    if capture.overflow and not control.cancelled:
                        raise UndoFallback(self._overflow_reason()) from None
                    raise
                if capture.overflow:
                    raise UndoFallback(self._overflow_reason())
                changes, rowid = conn.changes(), conn.last_insert_rowid()
            refuse_changed_rows(conn, capture.changeset, ctx.rules, ctx.recorder.operations)
            keys.check()
            if not capture.changeset:  # nothing changed: nothing to undo
                return Outcome(
                    unchanged(self.summary(statement, returned, changes, rowid), changes),
                    changes,
                    {"kind": statement.kind, "changes": changes, "reason": reason},
                )
            read = summarize(capture.changeset)
            stored = self.keep_changeset(conn, capture.changeset, statement.kind, read)
            prune_changesets(conn, ("destructive_query",), self.settings.snapshots_keep)
        rows = changes
        summary = self.summary(statement, returned, changes, rowid)
        detail = {"kind": statement.kind, "changes": rows, "reason": reason, "undo": stored.id}
        finish = self.undo_text(summary, stored.id)
        return Outcome(finish(None), rows, detail, finish=finish)

    def _overflow_reason(self) -> str:
        mib = self.undo_budget() // MIB
        return f"the changeset grew past {mib} MiB (--undo-max-mb)"

    def _destructive_file(
        self,
        conn: apsw.Connection,
        text: str,
        statement: Statement,
        reason: object,
        bindings: Bindings,
        control: CallControl,
        progress: Callable[[int, int], None] | None,
        why: str | None,
    ) -> Outcome:
        # one spare place, so a failed call (whose copy is dropped) evicts no older snapshot
        snapshot = self.snapshot(spare=1, progress=progress).absolute()
        ctx = self.context(conn, Tier.DESTRUCTIVE, control)
        try:
            returned, changes, rowid = self._apply(conn, text, bindings, ctx)
        except BaseException:
            snapshot.unlink(missing_ok=True)  # nothing changed: the copy is redundant
            raise
        rotate_snapshots(self.settings.snapshot_dir, self.settings.snapshots_keep)
        rows = changes if statement.kind in DML_KINDS else 0
        summary = self.summary(statement, returned, changes, rowid)
        first, _, rest = summary.partition("\n")
        restore = f"sqlgate snapshots restore {shell_word(snapshot.name)} {self.db_option}"
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

    def keep_changeset(
        self,
        conn: apsw.Connection,
        changeset: bytes,
        kind: str,
        summary: Summary,
        tool: str = "destructive_query",
    ) -> StoredChangeset:
        """Store one call's changeset (`engine.undo.capture.store_changeset`) in its transaction."""
        return store_changeset(
            conn,
            changeset,
            ts=utc_timestamp(self.wall_clock()),
            session=self.session,
            kind=kind,
            chunk=chunk_size(self.settings.max_value_bytes),
            shapes=self.shapes,
            summary=summary,
            tool=tool,
        )

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

    def check_destructive(
        self, sql: object, reason: object, bindings: Bindings, control: CallControl
    ) -> bool:
        """Raise what `destructive` would raise before its snapshot; nothing runs. False
        when the call would change nothing (a DROP ... IF EXISTS of nothing, a CREATE ...
        IF NOT EXISTS of what exists)."""
        with self.db.writing() as conn:
            text, _, _ = self._check_destructive(conn, sql, reason, bindings, control)
            return _nothing_to_drop(conn, text) is None and _already_there(conn, text) is None

    def _check_destructive(
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
        text, statement = self.preflight(sql, Tier.DESTRUCTIVE)
        # prepare only (EXPLAIN): the policy and the bindings are checked, nothing runs
        dry = self.context(conn, Tier.DESTRUCTIVE, control)
        run_statement(dry, f"EXPLAIN {text}", bindings, lambda cursor: None)
        return text, statement, list(dry.recorder.operations)

    def snapshot(self, spare: int = 0, progress: Callable[[int, int], None] | None = None) -> Path:
        """Snapshot the database now, keeping the newest `--snapshots-keep` (plus `spare`)."""
        with self.db.server_lock:
            return take_snapshot(
                self.db.server,
                self.settings.snapshot_dir,
                self.settings.snapshots_keep + spare,
                progress,
            )


def _nothing_to_drop(conn: apsw.Connection, sql: str) -> str | None:
    """The answer to a `DROP <kind> IF EXISTS` of an object the main schema does not hold
    (names compared as SQLite compares them); None when there is something to drop."""
    drop = drop_if_exists(sql)
    if drop is None or (drop.schema is not None and fold_name(drop.schema) != "main"):
        return None
    if _in_main(conn, _DROPPED_TYPES[drop.kind], drop.name) is not None:
        return None
    what = drop.kind.lower()
    return (
        f"ok: nothing to drop: no {what} `{_shown(drop.name)}`; nothing was run and no "
        "snapshot was taken"
    )


def _shown(name: str) -> str:
    """`name` with what would break the answer's line written as escapes."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in name)


def _already_there(conn: apsw.Connection, sql: str) -> tuple[str, str] | None:
    """(type, name) of what the main schema holds under the name a `CREATE <kind> IF NOT
    EXISTS` gives (compared as SQLite compares names); None when the CREATE would create."""
    create = create_if_not_exists(sql)
    if create is None or (create.schema is not None and fold_name(create.schema) != "main"):
        return None
    return _in_main(conn, _CREATED_TYPES[create.kind], create.name)


def _in_main(conn: apsw.Connection, types: tuple[str, ...], name: str) -> tuple[str, str] | None:
    """(type, name) of the object of one of `types` the main schema holds under `name`
    (compared as SQLite compares names), or None."""
    marks = ", ".join("?" * len(types))
    found = conn.execute(
        f"SELECT type, name FROM main.sqlite_schema WHERE type IN ({marks}) "
        "AND name = ? COLLATE NOCASE LIMIT 1",
        (*types, name),
    ).fetchone()
    return None if found is None else (str(found[0]), str(found[1]))


def _nothing_created(existing: tuple[str, str], tail: str) -> str:
    """The answer to a CREATE ... IF NOT EXISTS of what `existing` (type, name) is."""
    kind, name = existing
    see = f"describe_table {_shown(name)}" if kind in ("table", "view") else "get_schema"
    return (
        f"ok: nothing created: {kind} `{_shown(name)}` already exists and IF NOT EXISTS left it "
        f"as it is, whatever its definition ({see} shows it); {tail}"
    )
