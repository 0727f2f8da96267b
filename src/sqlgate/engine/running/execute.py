"""Running agent SQL: one statement, prepared uncached under the tier's authorizer.

    run_statement   preflight -> authorizer installed -> deadline/cancel watched
                    -> SQLite's own split proves there is one statement -> rows streamed
    the write path  BEGIN IMMEDIATE (by the server) -> statement -> rewrite guard -> COMMIT
                    (ROLLBACK on any failure: a refused or failed call changes nothing)

Errors leave here as `SqlgateError`s whose message tells the agent what to do next.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import apsw

from sqlgate.engine.framing import abridged, counted, one_line
from sqlgate.engine.limits import (
    REWRITE_MAX_CHARS,
    SQLITE_INT_MAX,
    SQLITE_INT_MIN,
    CallControl,
    Deadline,
    watched,
)
from sqlgate.engine.names import SERVER_SCHEMA, fold_name
from sqlgate.engine.raw_text import UnreadableText
from sqlgate.engine.rules import (
    NO_RULES,
    HiddenWatch,
    LiveRules,
    PolicyRecorder,
    recording,
    veiled_error,
)
from sqlgate.engine.running.next_steps import next_step
from sqlgate.engine.running.other_dialects import dialect_error
from sqlgate.engine.sqltext import has_more_statements
from sqlgate.engine.statements import Tier, destructive_keeps, double_quoted_string, single_quoted
from sqlgate.errors import (
    DatabaseBusy,
    InvalidArgument,
    LimitExceeded,
    MassRewrite,
    PolicyDenied,
    QueryTimeout,
    SqlError,
)

__all__ = [
    "NO_ROWID",
    "Bindings",
    "RewriteCounter",
    "RunContext",
    "busy_error",
    "mass_rewrite",
    "normalize_params",
    "params_mismatch",
    "row_shadow",
    "run_statement",
    "unreadable_text",
]

Bindings = Sequence[Any] | Mapping[str, Any] | None
T = TypeVar("T")

_SCALARS = (str, int, float, type(None))
# last_insert_rowid before a statement that may insert: still this value afterwards, the
# statement inserted no row of a rowid table itself (an upsert that updated, an ignored row,
# a WITHOUT ROWID table; a trigger's insert is undone when it ends). A row the statement
# gives this very rowid is not named: an answer leaves out what it cannot tell apart
NO_ROWID = SQLITE_INT_MIN
# a lone UTF-16 surrogate is a valid Python str but no UTF-8: SQLite could not store it
_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ADVICE = (
    "holds an unpaired UTF-16 surrogate (U+D800-U+DFFF), which is not text; send valid Unicode"
)
# SQLite looked a name up in main (DDL, a qualified name): it may be one of sqlgate's records
_NO_SUCH = re.compile(r"no such (table|view|trigger|index): (?:main\.)?(.+)", re.IGNORECASE)


def busy_error(busy_timeout: float) -> DatabaseBusy:
    """Another connection (often another server on the same file) kept the write lock."""
    return DatabaseBusy(
        f"the database is busy: another writer held its lock for more than {busy_timeout:g} s "
        "(--busy-timeout); nothing was changed. Retry the call; if it keeps happening, raise "
        "--busy-timeout for servers that share this file",
        seconds=busy_timeout,
    )


def normalize_params(params: object) -> Bindings:
    """Validate `params`: a JSON list for `?`, or an object for `:name` (prefix optional)."""
    if params is None:
        return None
    if isinstance(params, (list, tuple)):
        values: Sequence[Any] = list(params)
        for index, value in enumerate(values):
            _check_param(value, f"params[{index}]")
        return [int(v) if isinstance(v, bool) else v for v in values]
    if isinstance(params, Mapping):
        named: dict[str, Any] = {}
        for key, value in params.items():
            if not isinstance(key, str) or not key.lstrip(":@$"):
                raise InvalidArgument(f"params key {key!r} must be a parameter name like 'id'")
            if _SURROGATE.search(key):
                raise InvalidArgument(f"params key {key!r} {_SURROGATE_ADVICE}")
            _check_param(value, f"params[{key!r}]")
            named[key.lstrip(":@$")] = int(value) if isinstance(value, bool) else value
        return named
    raise InvalidArgument("params must be a list (for ? placeholders) or an object (for :name)")


def _check_param(value: object, where: str) -> None:
    if not isinstance(value, (*_SCALARS, bool)):
        raise InvalidArgument(
            f"{where} is a {type(value).__name__}; bound values must be strings, numbers, "
            "booleans or null"
        )
    if isinstance(value, int) and not SQLITE_INT_MIN <= value <= SQLITE_INT_MAX:
        raise InvalidArgument(
            f"{where} = {value} is outside SQLite's 64-bit integer range ({SQLITE_INT_MIN} to "
            f'{SQLITE_INT_MAX}); pass it as text ("{value}") or as a float'
        )
    if isinstance(value, str) and _SURROGATE.search(value):
        raise InvalidArgument(f"{where} {_SURROGATE_ADVICE}")


def row_shadow(table: str, shadows: frozenset[str]) -> bool:
    """Whether `table` is the shadow table holding one row per row of its virtual table.

    Virtual tables never fire the preupdate hook themselves; their modules' writes to this
    shadow table stand in for them: fts5's `_docsize` (or `_content` when built without
    column sizes) and rtree's `_rowid`.
    """
    if table.endswith(("_docsize", "_rowid")):
        return True
    return table.endswith("_content") and table[: -len("_content")] + "_docsize" not in shadows


@dataclass
class RewriteCounter:
    """Counts existing rows an agent statement updates or deletes (REPLACE deletes too).

    Installed as a preupdate hook on the write connection. Once the count passes the
    limit it interrupts the statement, so a runaway rewrite stops early.
    Caution: never create an apsw.Session while this hook is installed (apsw crashes).
    """

    limit: int
    conn: apsw.Connection
    shadow_tables: frozenset[str] = frozenset()
    undo: str = "rows"  # --undo, which the refusal's advice describes
    count: int = 0
    exceeded: bool = False

    def __call__(self, change: apsw.PreUpdate) -> None:
        table = fold_name(change.table_name)
        if change.op == "INSERT":
            return
        if table in self.shadow_tables and not row_shadow(table, self.shadow_tables):
            return
        self.count += 1
        if self.count > self.limit and not self.exceeded:
            self.exceeded = True
            self.conn.interrupt()


@dataclass
class RunContext:
    """Everything one statement run needs besides its text."""

    conn: apsw.Connection
    tier: Tier
    protected: frozenset[str]
    deadline: Deadline
    control: CallControl
    rewrite: RewriteCounter | None = None
    # the agent's argument and its text, when the statement run wraps it (create_view's
    # EXPLAIN of select_sql, search_text's where): a suggested rewrite is of that text
    sent: tuple[str, str] | None = None
    rules: LiveRules = NO_RULES  # the user's table rules on this connection's schema now
    recorder: PolicyRecorder = field(init=False)
    columns: list[str] = field(default_factory=list)  # result columns, known once prepared
    statement: str = ""  # the statement's own text as SQLite split it, once prepared

    def __post_init__(self) -> None:
        self.recorder = PolicyRecorder(self.tier, self.protected, self.rules)


def _sqlite_message(exc: apsw.Error) -> str:
    text = str(exc)
    for prefix in ("SQLError: ", "ConstraintError: ", "Error: "):
        if text.startswith(prefix):
            text = text[len(prefix) :]
    return text


def params_mismatch(names: Sequence[str | None], bindings: Bindings) -> InvalidArgument:
    """Our words for apsw's BindingsError: what the statement's placeholders (`names`, None
    for a `?`, as `Cursor.bindings_names` gives them) need, against what was given."""
    count = len(names)
    if count == 0:
        given = len(bindings) if isinstance(bindings, Sequence) else 0
        return InvalidArgument(
            f"the statement has no placeholders but params has {counted(given, 'value')}; "
            "leave params out"
        )
    named = [name for name in names if name is not None and not name.isdigit()]  # ?NNN: digits
    shown = ", ".join(f":{name}" if name in named else f"?{name or ''}" for name in names)
    has = f"the statement has {counted(count, 'placeholder')} ({shown}) but"
    want = f"pass a list of {counted(count, 'value')}"
    if len(named) == count:
        want = f"pass an object with {', '.join(named)} (or a list of {counted(count, 'value')})"
    if bindings is None:
        return InvalidArgument(f"{has} no params were given; {want}")
    if isinstance(bindings, Mapping):
        return InvalidArgument(
            f"{has} params is an object, which binds only :name placeholders; {want}"
        )
    return InvalidArgument(f"{has} params has {counted(len(bindings), 'value')}; {want}")


def _double_quoted(ctx: RunContext, sql: str, text: str) -> SqlError:
    """SQLite read a "double-quoted" string as a column: say so, with the rewrite to send."""
    said = f'SQLite error: no such column: "{abridged(one_line(text))}" - double quotes name a '
    said += "column; text goes in 'single quotes'"
    argument, sent = ctx.sent if ctx.sent is not None else ("", sql)
    rewrite = None  # a long statement is not sent back: the agent has it
    if len(sent) <= REWRITE_MAX_CHARS:
        rewrite = single_quoted(ctx.conn, sent, text, statement=argument != "where")
    if rewrite is None:
        return SqlError(f"{said}. Next: rewrite the string, or call describe_table for the columns")
    as_what = f", as {argument}" if argument else ""
    return SqlError(f"{said}. Send instead{as_what}: {one_line(rewrite)}")


def _translate(exc: apsw.Error, ctx: RunContext, sql: str) -> Exception:
    # a denied function comes back from SQLite as a plain SQLError ("not authorized to use
    # function"), so the recorder's refusal, not the exception class, says it was the policy
    if isinstance(exc, apsw.AuthError) or ctx.recorder.refusal is not None:
        refusal = ctx.recorder.refusal
        reason = refusal.reason if refusal else "not authorized"
        return PolicyDenied(f"refused: {one_line(reason)}")  # it may name a stored trigger
    if isinstance(exc, apsw.ExecTraceAbort):
        return PolicyDenied(
            "one statement per call: the text holds more than one, and no tool will run them "
            "together; send each in its own call"
        )
    if isinstance(exc, apsw.TooBigError):
        return LimitExceeded(
            "a string or blob grew past the size limit (--max-value-bytes); nothing was changed"
        )
    if isinstance(exc, (apsw.NoMemError, apsw.FullError)):
        return LimitExceeded(
            "the statement needed more memory or disk than sqlgate allows (--heap-limit-mb); "
            "nothing was changed. Narrow the query"
        )
    if ctx.rules.hides:  # SQLite's words may quote a hidden value: then its words go
        veiled = veiled_error(ctx.conn, ctx.recorder, exc, _sqlite_message(exc))
        if veiled is not None:
            return SqlError(veiled)
    message = one_line(_sqlite_message(exc))  # it may quote stored SQL or a RAISE message
    if message == "FOREIGN KEY constraint failed":
        from sqlgate.engine.statements import foreign_key_advice

        advice = foreign_key_advice(ctx.conn, sql)
        if advice is not None:
            failed, step = (one_line(part) for part in advice)  # names are stored text
            return SqlError(f"SQLite error: {message}: {failed}. Next: {step}")
    quoted = double_quoted_string(message)
    if quoted is not None:
        return _double_quoted(ctx, sql, quoted)
    record = _records_object(ctx.conn, message)
    if record is not None:
        return record
    other = dialect_error(ctx, sql, message)
    if other is not None:
        return other
    return SqlError(f"SQLite error: {message}. Next: {next_step(message)}")


def _records_object(conn: apsw.Connection, message: str) -> PolicyDenied | None:
    """SQLite found no such object in main, where DDL and qualified names look: when sqlgate's
    records (attached as `sqlgate`) hold one of that name, say so: no tool changes them."""
    match = _NO_SUCH.fullmatch(message)
    if match is None:
        return None
    kind, name = match.groups()
    try:
        found = conn.execute(
            f"SELECT type, name FROM {SERVER_SCHEMA}.sqlite_schema WHERE name = ? COLLATE NOCASE",
            (name,),
        ).fetchone()
    except apsw.Error:  # no records attached: SQLite's own words stand
        return None
    if found is None:
        return None
    what, stored = (one_line(str(part)) for part in found)
    return PolicyDenied(
        f"refused: your database has no {kind} {name}; {SERVER_SCHEMA}.{stored} is one of "
        f"sqlgate's records (a {what}), read-only: no tool changes it, and no index, trigger, "
        "view or foreign key of yours can reach it; nothing was changed. Next: read it with "
        f"read_query (SELECT ... FROM {SERVER_SCHEMA}.{stored}), or call list_tables to see "
        "your own tables"
    )


@contextmanager
def _rewrite_watch(ctx: RunContext) -> Iterator[None]:
    if ctx.rewrite is None:
        yield
        return
    ctx.conn.preupdate_hook(ctx.rewrite, id="sqlgate-rewrite-guard")
    try:
        yield
    finally:
        ctx.conn.preupdate_hook(None, id="sqlgate-rewrite-guard")


def unreadable_text(tier: Tier) -> UnreadableText:
    """A value of the statement's result is TEXT that is not UTF-8. A read is read again as
    bytes by its caller where it can be (`engine.raw_text`); this is the answer otherwise."""
    if tier is Tier.READ:
        return UnreadableText(
            "the result holds text that is not valid UTF-8, which read_query shows as "
            "CAST(x'…' AS TEXT) only in the rows of a SELECT, WITH or VALUES (read again as "
            "bytes). Next: run the statement without EXPLAIN, read a PRAGMA through its table "
            "function (SELECT * FROM pragma_table_info('t')), or select hex() of the text"
        )
    return UnreadableText(
        "refused and rolled back: a row the statement returns (RETURNING) holds text that is "
        "not valid UTF-8, which the answer cannot carry; nothing was changed. Next: send the "
        "statement without RETURNING (or returning other columns), then read those rows with "
        "read_query, which shows such text as CAST(x'…' AS TEXT)"
    )


def mass_rewrite(limit: int, undo: str = "rows") -> MassRewrite:
    """The refusal of a write_query statement that changes more than `limit` existing rows;
    `undo` is the --undo setting, which says what destructive_query keeps."""
    return MassRewrite(
        "refused and rolled back: the statement changes more than "
        f"{counted(limit, 'existing row')} "
        f"(--max-update-rows). Mass rewrites belong in {destructive_keeps(undo)}; or narrow "
        "the WHERE clause"
    )


def _only_one_statement(
    ctx: RunContext, sql: str, watch: HiddenWatch | None
) -> Callable[[apsw.Cursor, str, apsw.Bindings | None], bool]:
    """The cursor's exec trace: SQLite's own split proves `sql` is one statement, which the
    hidden-column watch passes; the statement's text and columns go into `ctx`."""
    recorder = ctx.recorder
    traced: list[str] = []

    def only_one_statement(cursor: apsw.Cursor, text: str, __: apsw.Bindings | None) -> bool:
        traced.append(text)
        if len(traced) > 1:
            # apsw also traces a tail that holds only comments ("SELECT 1; -- done")
            return not has_more_statements(text)
        if has_more_statements(sql[len(text) :]):
            return False
        if watch is not None and not watch.prepared(recorder, sql):
            return False  # the recorder holds the refusal
        recorder.running = True
        ctx.statement = text
        try:
            ctx.columns = [name for name, _ in cursor.get_description()]
        except apsw.ExecutionCompleteError:
            ctx.columns = []
        return True

    return only_one_statement


def run_statement(
    ctx: RunContext,
    sql: str,
    bindings: Bindings,
    consume: Callable[[apsw.Cursor], T],
) -> T:
    """Prepare and run `sql` under the tier's policy and budgets; `consume` reads the cursor.

    `consume` runs while the authorizer and the deadline are still installed, since fetching
    rows is where nested statements and long scans actually happen.
    """
    recorder = ctx.recorder
    watch = HiddenWatch(ctx.conn, ctx.rules) if ctx.rules.hides else None
    cursor = ctx.conn.cursor()
    cursor.exec_trace = _only_one_statement(ctx, sql, watch)
    if ctx.tier is not Tier.READ:
        ctx.conn.set_last_insert_rowid(NO_ROWID)  # what the statement inserts, or nothing
    try:
        if watch is not None:
            watch.check_plan(recorder, sql, bindings)
        with (
            recording(ctx.conn, recorder),
            watched(ctx.conn, ctx.deadline, ctx.control),
            _rewrite_watch(ctx),
        ):
            try:
                cursor.execute(sql, bindings, can_cache=False)
            except KeyError as exc:  # apsw: a :name placeholder missing from the params object
                raise InvalidArgument(
                    f"params has no value for :{exc.args[0]}; add it to the params object"
                ) from None
            result = consume(cursor)
        if watch is not None:  # the authorizer is off: the checks read the schema freely
            watch.finished(recorder)
    except (apsw.Error, QueryTimeout) as exc:
        if ctx.rewrite is not None and ctx.rewrite.exceeded:
            raise mass_rewrite(ctx.rewrite.limit, ctx.rewrite.undo) from None
        if isinstance(exc, (QueryTimeout, apsw.BusyError)):
            raise  # a busy lock is told apart by the service, which knows --busy-timeout
        if isinstance(exc, apsw.BindingsError):
            raise params_mismatch(cursor.bindings_names, bindings) from None
        raise _translate(exc, ctx, sql) from None
    except UnicodeDecodeError:  # a value (or a name) is TEXT that is not UTF-8
        raise unreadable_text(ctx.tier) from None
    finally:
        cursor.close(True)
    if ctx.rewrite is not None and ctx.rewrite.count > ctx.rewrite.limit:
        raise mass_rewrite(ctx.rewrite.limit, ctx.rewrite.undo)
    if ctx.tier is not Tier.READ and ctx.conn.status(apsw.SQLITE_DBSTATUS_DEFERRED_FKS)[0]:
        raise _deferred_keys(ctx)  # COMMIT would fail: answered now, and rolled back
    return result


def _deferred_keys(ctx: RunContext) -> SqlError:
    """A deferred foreign key the statement left broken, in the words of an immediate one."""
    from sqlgate.engine.statements import deferred_key_advice

    advice = deferred_key_advice(ctx.conn, ctx.recorder.operations)
    failed, step = (one_line(part) for part in advice)  # names are stored text
    return SqlError(
        "SQLite error: FOREIGN KEY constraint failed (a deferred key, checked as the call "
        f"commits): {failed}; nothing was changed. Next: {step}"
    )
