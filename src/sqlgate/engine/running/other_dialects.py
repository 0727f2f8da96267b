"""A statement SQLite refused that reads as another dialect: the answer carries SQLite's.

Tried only after SQLite has refused the statement (`engine.running.execute`), so a statement
that runs never pays for it. A rewrite is offered only when SQLite prepares it (EXPLAIN: it
is compiled, never run) under the policy of the tool that takes it, which is the tool
called, or read_query, or, for a statement that itself changes data, its own tool (a
TRUNCATE becomes a DELETE for destructive_query): a read never turns into a write. The
server never runs a rewrite; the agent decides.

    other tools' commands   SHOW TABLES, DESCRIBE t, \\dt: the tool, and the SQLite query
    ADD COLUMN IF NOT EXISTS  the statement without it, or that the column is there
    a dialect's statement   the first of `engine.dialects.rewrites` that passes
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Protocol

import apsw

from sqlgate.engine.dialects import has_sign
from sqlgate.engine.framing import one_line
from sqlgate.engine.limits import REWRITE_MAX_CHARS
from sqlgate.engine.rules import PolicyRecorder, recording
from sqlgate.engine.running.next_steps import next_step
from sqlgate.engine.sqltext import has_more_statements
from sqlgate.engine.statements import Tier, check_tier, home_tool, inspect_statement
from sqlgate.errors import SqlError, SqlgateError

if TYPE_CHECKING:
    from sqlgate.engine.dialects import Rewrite, ToolCommand
    from sqlgate.engine.rules import LiveRules

__all__ = ["RewriteContext", "dialect_error", "trap_note"]

log = logging.getLogger("sqlgate")


class RewriteContext(Protocol):
    """What of `engine.running.execute.RunContext` a rewrite is checked with."""

    conn: apsw.Connection
    tier: Tier
    protected: frozenset[str]
    rules: LiveRules
    sent: tuple[str, str] | None


# SQLite's words for a statement it could not compile, which another dialect may explain
_WORTH_TRYING = (
    "syntax error",
    "no such function",
    "no such table",
    "unrecognized token",
    "no such column",
    "incomplete input",
    "wrong number of arguments",
)
# SQLite's words for a name the database does not have: a rewrite failing so is worth telling
_NAMES_MISSING = re.compile(r"no such (?:column|table)")
# a statement that itself changes data: its SQLite form may be named for the tool that takes it
_CHANGES = re.compile(
    r"\s*(?:TRUNCATE|INSERT|UPDATE|DELETE|REPLACE|MERGE|UPSERT|CREATE|ALTER|DROP)\b", re.I
)


def _accepted(
    ctx: RewriteContext, original: str, candidate: str, failures: list[str] | None = None
) -> Tier | None:
    """The tool that would take `candidate`, when that may be offered and SQLite prepares it
    under that tool's policy; None otherwise (SQLite's words, when it could not prepare it,
    appended to `failures`)."""
    try:
        statement = inspect_statement(candidate)
        home = Tier(home_tool(statement))
    except (SqlgateError, ValueError):
        return None
    if home is Tier.VIEW or (home not in (ctx.tier, Tier.READ) and not _CHANGES.match(original)):
        return None  # read_query's, or another tool's only for a statement that changes data
    try:
        check_tier(statement, home)
    except SqlgateError:
        return None
    if home is Tier.WRITE and statement.kind == "UPDATE":
        from sqlgate.engine.running.where_columns import update_filters

        if not update_filters(ctx.conn, candidate):
            return None  # write_query would refuse it: an UPDATE of every row
    recorder = PolicyRecorder(home, ctx.protected, ctx.rules)
    explained = f"EXPLAIN {candidate}"
    cursor = ctx.conn.cursor()
    cursor.exec_trace = lambda _, text, __: not has_more_statements(explained[len(text) :])
    try:  # compiled only; a text of two statements is aborted before the first runs
        with recording(ctx.conn, recorder):
            cursor.execute(explained, can_cache=False)
    except apsw.Error as exc:
        if failures is not None:
            failures.append(re.sub(r"^\w+Error: ", "", str(exc)))
        return None
    finally:
        cursor.close(True)
    return home if recorder.refusal is None else None


def _send(home: Tier, ctx: RewriteContext, candidate: str) -> str:
    """`instead: STATEMENT`, naming the tool when it is not the one called."""
    as_what = "" if home is ctx.tier else f", as {home.value}"
    return f"instead{as_what}: {candidate}"


def _command(ctx: RewriteContext, message: str, command: ToolCommand) -> SqlError:
    said = f"SQLite error: {message}. {command.what} is a command of another database tool"
    if command.table is not None and not _table_exists(ctx.conn, command.table):
        return SqlError(f"{said}; there is no table {command.table}: call list_tables")
    said = f"{said}, not SQL: {command.tool}"
    if command.query is None:
        return SqlError(said)
    home = _accepted(ctx, "", command.query)
    if home is None:
        return SqlError(said)
    return SqlError(f"{said}, or send {_send(home, ctx, command.query)}")


def _table_exists(conn: apsw.Connection, name: str) -> bool:
    found = conn.execute(
        "SELECT 1 FROM main.sqlite_schema WHERE type IN ('table', 'view') AND name = ? "
        "COLLATE NOCASE",
        (name,),
    ).fetchone()
    return found is not None


def _column_exists(conn: apsw.Connection, table: str, column: str) -> bool:
    found = conn.execute(
        "SELECT 1 FROM pragma_table_info(?, 'main') WHERE name = ? COLLATE NOCASE",
        (table, column),
    ).fetchone()
    return found is not None


def _added_column(ctx: RewriteContext, sql: str, message: str) -> SqlError | None:
    from sqlgate.engine.dialects import added_column

    added = added_column(sql)
    if added is None:
        return None
    said = f"SQLite error: {message}. SQLite's ADD COLUMN has no IF NOT EXISTS"
    if _column_exists(ctx.conn, added.table, added.column):
        return SqlError(
            f"{said}; {added.table} has a column {added.column} already, so there is nothing "
            "to add: no statement is needed"
        )
    home = _accepted(ctx, sql, added.sql)
    if home is None:
        return None
    return SqlError(f"{said}. Send {_send(home, ctx, added.sql)}")


def dialect_error(ctx: RewriteContext, sql: str, message: str) -> SqlError | None:
    """The answer to `sql`, which SQLite refused with `message`, when it reads as another
    dialect's statement (or another tool's command) that SQLite can be given; else None.
    A fault in the rewriting is logged and the answer is SQLite's own: never an error."""
    try:
        return _dialect_error(ctx, sql, message)
    except Exception:
        log.exception("no dialect answer for a statement SQLite refused")
        return None


def _dialect_error(ctx: RewriteContext, sql: str, message: str) -> SqlError | None:
    if ctx.sent is not None:
        argument, sql = ctx.sent  # the agent's text, which the statement run wraps
        if argument:
            return None  # create_view's select_sql, search_text's where: answered as they were
    if len(sql) > REWRITE_MAX_CHARS:
        return None
    if not any(words in message for words in _WORTH_TRYING):
        return None
    from sqlgate.engine.dialects import other_tool_command, rewrites

    command = other_tool_command(sql)
    if command is not None:
        return _command(ctx, message, command)
    added = _added_column(ctx, sql, message)
    if added is not None:
        return added
    failed: tuple[Rewrite, str] | None = None
    for rewrite in rewrites(sql):
        if one_line(rewrite.sql) != rewrite.sql:
            continue  # a control character the answer could not carry as it is
        failures: list[str] = []
        home = _accepted(ctx, sql, rewrite.sql, failures)
        if home is None:
            why = failures[0] if failures else ""
            # a missing name SQLite did not already give in its first answer
            if failed is None and why != message and _NAMES_MISSING.match(why):
                failed = rewrite, one_line(why)
            continue
        said = f"SQLite error: {message}. That reads as {rewrite.dialect_name}"
        said += "".join(f"; {note}" for note in rewrite.notes)
        if home is ctx.tier or home is Tier.READ:
            return SqlError(f"{said}. Send {_send(home, ctx, rewrite.sql)}")
        # a change sent to a tool that does not make it (`_accepted` allows no other)
        return SqlError(
            f"{said}. In SQLite it is {rewrite.sql}, which only {home.value} runs "
            f"({ctx.tier.value} does not)"
        )
    if failed is None:
        return None
    rewrite, why = failed  # the translation stands; a name in it is not in this database
    return SqlError(
        f"SQLite error: {message}. That reads as {rewrite.dialect_name}, but its SQLite form "
        f"fails too: {why}. Next: {next_step(why)}"
    )


def trap_note(ctx: RewriteContext, sql: str) -> str | None:
    """`_trap_note`, whose fault is logged and never fails the read that ran."""
    if len(sql) > REWRITE_MAX_CHARS or not has_sign(sql):
        return None
    try:
        return _trap_note(ctx, sql)
    except Exception:
        log.exception("no note for a statement that ran")
        return None


def _trap_note(ctx: RewriteContext, sql: str) -> str | None:
    """The trailer line of a statement that ran but shows another dialect's meaning SQLite
    does not share (`engine.dialects.trap`): what differs, and the statement that gives the
    intended result (prepared under the same policy first); None for nearly every statement,
    at the cost of one regular-expression search."""
    from sqlgate.engine.dialects import trap

    found = trap(sql)  # its statement keeps no line break inside a string or name
    if found is None:
        return None
    home = _accepted(ctx, sql, found.sql)
    if home is not ctx.tier:
        return None
    return f"# note: {found.why}; for the intended result send {_send(home, ctx, found.sql)}"
