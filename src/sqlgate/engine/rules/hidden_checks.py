"""Hidden columns, statement by statement: what the authorizer's facts one at a time miss.

    prepared   once SQLite has prepared the statement, before its first step: a statement
               that changes anything may not read a hidden column (RETURNING gives the real
               value back despite IGNORE, CREATE TABLE AS and INSERT ... SELECT would copy
               NULLs silently); an INSERT may not name one (the authorizer is told only the
               table), nor leave the column list out, nor read `excluded.<hidden>`
    plan       when an index orders rows by a hidden column: EXPLAIN QUERY PLAN first, and
               a statement whose plan scans that index is refused (rows would come back in
               hidden order); `FROM t NOT INDEXED` works
    finished   after a schema change ran, inside its transaction: a new trigger, index,
               fts5 table or generated column over a hidden column is refused, and so is an
               ALTER that renames or drops a hidden column away

Stored SQL is matched word by word (`hidden_facts.names_in`), erring towards refusing.
"""

from __future__ import annotations

import functools
import re
import weakref
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import apsw

from sqlgate.engine.deferred import deferred
from sqlgate.engine.names import fold_name
from sqlgate.engine.rules.authorizer import PolicyRecorder, recording
from sqlgate.engine.rules.hidden_errors import (
    evaluated_tables,
    order_veiled_message,
    shown_as_is,
    veiled_message,
)
from sqlgate.engine.rules.hidden_facts import VALUE_TABLES, names_in
from sqlgate.engine.rules.hidden_order import order_free
from sqlgate.engine.rules.hidden_policy import ASK, changes_anything, read_in_change_message
from sqlgate.engine.rules.live_rules import LiveRules
from sqlgate.engine.sqltext import sqlite_tokens, word
from sqlgate.engine.statements import Decision
from sqlgate.errors import PolicyDenied

if TYPE_CHECKING:
    from sqlglot.tokenizer_core import TokenType
else:
    TokenType = deferred("sqlglot.tokenizer_core", "TokenType")

__all__ = ["HiddenWatch", "inserted_hidden", "trigger_literals", "veiled_error"]

_USING_INDEX = re.compile(r"USING (?:COVERING )?INDEX (\S+)")
_SQL_OF = "SELECT sql FROM main.sqlite_schema WHERE name = ? COLLATE NOCASE"
_TEMP_SQL_OF = "SELECT sql FROM sqlite_temp_schema WHERE name = ? COLLATE NOCASE"
_COLUMNS = "SELECT name FROM pragma_table_xinfo(?, 'main')"
_TRIGGERS = "SELECT sql FROM main.sqlite_schema WHERE type = 'trigger' AND sql IS NOT NULL"
_VIEWS = "SELECT name, sql FROM main.sqlite_schema WHERE type = 'view' AND sql IS NOT NULL"
_AGGREGATES = "SELECT name FROM pragma_function_list WHERE type IN ('a', 'w')"
_TABLE_OF_INDEX = (
    "SELECT tbl_name FROM main.sqlite_schema WHERE type = 'index' AND name = ? COLLATE NOCASE"
)
_TEMP_TABLE_OF_INDEX = (
    "SELECT tbl_name FROM sqlite_temp_schema WHERE type = 'index' AND name = ? COLLATE NOCASE"
)
_TEMP_TRIGGERS = "SELECT sql FROM sqlite_temp_schema WHERE type = 'trigger' AND sql IS NOT NULL"
_INDEX_KEYS = "SELECT name FROM pragma_index_xinfo(?, 'main') WHERE key = 1 AND name IS NOT NULL"
_DDL_ACTIONS = frozenset(
    {"CREATE_TRIGGER", "CREATE_TEMP_TRIGGER", "CREATE_INDEX", "CREATE_TEMP_INDEX",
     "CREATE_VTABLE", "ALTER_TABLE"}
)  # fmt: skip


def inserted_hidden(sql: str, table: str, hidden: frozenset[str]) -> str | None:
    """The hidden column (of `hidden`, folded) an INSERT into `table` writes or reads as
    `excluded.<column>`, "*" when it leaves the column list out; None when it names none.
    Text it cannot read names "*": refused, the safe way."""
    tokens = sqlite_tokens(sql)
    if tokens is None:
        return "*"
    for at, token in enumerate(tokens[:-2]):
        excluded = fold_name(token.text) == "excluded" and tokens[at + 1].text == "."
        if excluded and fold_name(tokens[at + 2].text) in hidden:
            return tokens[at + 2].text
    into = [i for i, t in enumerate(tokens) if word(t) == "INTO"]
    if not into:
        return "*"
    at = into[0] + 1
    if at + 2 < len(tokens) and tokens[at + 1].text == ".":
        at += 2  # schema.table
    at += 1
    if at + 1 < len(tokens) and word(tokens[at]) == "AS":
        at += 2
    if at >= len(tokens) or word(tokens[at]) == "DEFAULT":
        return None
    if tokens[at].text != "(":
        return "*"
    for token in tokens[at + 1 :]:
        if token.text == ")":
            return None
        if fold_name(token.text) in hidden:
            return token.text
    return "*"


_aggregate_names: weakref.WeakKeyDictionary[apsw.Connection, frozenset[str]] = (
    weakref.WeakKeyDictionary()
)


def _aggregates(conn: apsw.Connection) -> frozenset[str]:
    """SQLite's aggregate and window functions on `conn` (read once per connection)."""
    names = _aggregate_names.get(conn)
    if names is None:
        names = frozenset(fold_name(str(n)) for (n,) in conn.execute(_AGGREGATES))
        _aggregate_names[conn] = names
    return names


@functools.lru_cache(maxsize=256)
def _judged_order_free(
    sql: str,
    views: tuple[tuple[str, str], ...],
    functions: tuple[str, ...],
    aggregates: frozenset[str],
) -> bool:
    """`order_free`, kept for the statements, views and functions it was asked about: an
    agent sends the same statement again, and sqlglot takes a few hundred µs to read one."""
    return order_free(sql, dict(views), functions, aggregates)


def trigger_literals(conn: apsw.Connection) -> frozenset[str]:
    """Every string literal in the text of the schema's triggers (RAISE messages among them)."""
    found: set[str] = set()
    for query in (_TRIGGERS, _TEMP_TRIGGERS):
        for (sql,) in conn.execute(query):
            tokens = sqlite_tokens(str(sql)) or []
            found.update(t.text for t in tokens if t.token_type == TokenType.STRING)
    return frozenset(found)


def veiled_error(
    conn: apsw.Connection, recorder: PolicyRecorder, exc: apsw.Error, message: str
) -> str | None:
    """The value-free answer instead of SQLite's `message` for the statement `recorder`
    watched (`engine.rules.hidden_errors`), or None when the message may be shown as it is."""
    if not recorder.running:  # failed while it was prepared: words of its SQL and schema
        return None
    rules = recorder.rules
    if recorder.hidden_order is not None:
        return order_veiled_message(*recorder.hidden_order, rules)
    tables = evaluated_tables(recorder.operations, rules)
    extended = int(getattr(exc, "extendedresult", 0) or 0)
    if not tables or shown_as_is(extended, message, trigger_literals(conn)):
        return None
    return veiled_message(extended, tables, rules)


def _sql_of(conn: apsw.Connection, name: str) -> str:
    for query in (_SQL_OF, _TEMP_SQL_OF):
        for (sql,) in conn.execute(query, (name,)):
            if sql is not None:
                return str(sql)
    return ""


@dataclass
class HiddenWatch:
    """The statement checks above for one statement on one connection."""

    conn: apsw.Connection
    rules: LiveRules
    # each altered table's hidden columns and how often stored SQL named them, before
    before: dict[str, tuple[frozenset[str], Counter[str]]] = field(default_factory=dict)

    def _refuse(self, recorder: PolicyRecorder, reason: str) -> bool:
        if recorder.refusal is None:
            recorder.refusal = Decision(False, reason)
        return False

    def prepared(self, recorder: PolicyRecorder, sql: str) -> bool:
        """Whether the prepared statement may run; else the recorder holds the refusal."""
        rules = self.rules
        if recorder.hidden_reads and changes_anything(recorder.operations):
            table, column = sorted(recorder.hidden_reads)[0]
            return self._refuse(recorder, read_in_change_message(table, column, rules))
        for op in recorder.operations:
            if op.nested or op.inside is not None or not op.target:
                continue
            if op.action == "INSERT":
                hidden = rules.hidden_in(op.target)
                sealed = fold_name(op.target) in rules.sealed
                named = inserted_hidden(sql, op.target, hidden) if hidden else None
                if sealed or named is not None:
                    column = "*" if sealed or named is None else named
                    return self._refuse(recorder, self._insert_message(op.target, column))
            elif op.action == "ALTER_TABLE" and op.detail:
                table = op.detail
                hidden = self.rules.hidden_in(table)
                if hidden:
                    self.before[table] = (hidden, names_in(_sql_of(self.conn, table)))
        return True

    def _insert_message(self, table: str, column: str) -> str:
        what = "every column, a hidden one too" if column == "*" else column
        return (
            f"{self.rules.name_of(table)} has a column hidden by {self.rules.origin}, and the "
            f"INSERT writes {what}: the agent never writes a hidden column, and no tool will. "
            "Name the columns you fill and leave the hidden one out (it takes its default)"
        )

    def check_plan(self, recorder: PolicyRecorder, sql: str, bindings: Any) -> None:
        """Refuse (PolicyDenied) a statement whose plan walks an index over a hidden column,
        unless its answer cannot depend on the order of the rows (`engine.rules.hidden_order`):
        then `recorder.hidden_order` says which index, so its errors say nothing either."""
        if not self.rules.hidden_indexes:
            return
        planner = PolicyRecorder(recorder.tier, recorder.protected, self.rules)
        try:
            with recording(self.conn, planner):
                rows: Sequence[Any] = list(
                    self.conn.execute(f"EXPLAIN QUERY PLAN {sql}", bindings, can_cache=False)
                )
        except (apsw.Error, KeyError):
            return  # the statement itself will fail, and say why
        walked = [
            name
            for row in rows
            for name in _USING_INDEX.findall(str(row[-1]))
            if fold_name(name) in self.rules.hidden_indexes
        ]
        if not walked:
            return
        index = walked[0]
        table = self._table_of(index)
        if self._order_free(sql, planner):
            recorder.hidden_order = (index, table)
            return
        raise PolicyDenied(
            f"refused: the plan reads {table} through index {index}, which is over a column "
            f"hidden by {self.rules.origin}, and the answer could show the rows in that order "
            "(or which came first): write NOT INDEXED after the table's name and alias "
            f"(FROM {table} NOT INDEXED) and send it again; a view cannot take NOT INDEXED, "
            "so read its table. A SELECT of counts alone (count(*) FROM ...) runs as it is"
        )

    def _table_of(self, index: str) -> str:
        for query in (_TABLE_OF_INDEX, _TEMP_TABLE_OF_INDEX):
            for (table,) in self.conn.execute(query, (index,)):
                return str(table)
        return index

    def _order_free(self, sql: str, planner: PolicyRecorder) -> bool:
        functions = tuple(
            str(op.detail) for op in planner.operations if op.action == "FUNCTION" and op.detail
        )
        views = tuple((fold_name(str(name)), str(text)) for name, text in self.conn.execute(_VIEWS))
        return _judged_order_free(sql, views, functions, _aggregates(self.conn))

    def finished(self, recorder: PolicyRecorder) -> None:
        """Refuse (PolicyDenied) a schema change that put a hidden value within reach."""
        rules = self.rules
        facts = [op for op in recorder.operations if op.action in _DDL_ACTIONS and not op.nested]
        if not facts:  # a query, or a row write: nothing new in the schema
            return
        # SQLite's and sqlgate's tables of row values are named by their table and column
        # (a column of the agent's called `data` is no hidden one); the user's by column alone
        columns = {c for t, cols in rules.hidden.items() if t not in VALUE_TABLES for c in cols}
        tables = {t for t, cols in rules.hidden.items() if cols} | rules.sealed
        values = {t: cols for t, cols in rules.hidden.items() if t in VALUE_TABLES}
        for op in facts:
            name = op.detail if op.action == "ALTER_TABLE" else op.target
            if not name:
                continue
            words = names_in(_sql_of(self.conn, name))
            named = set(words)
            if op.action == "ALTER_TABLE":
                self._altered(name)
                continue
            if "TRIGGER" in op.action:
                seen = named | self._through_views(named)  # what it reads, through views
                writes_hidden = bool(named & tables) and bool(named & {"insert", "replace"})
                reads_values = any(t in seen and cols & seen for t, cols in values.items())
                if seen & (columns | rules.unreadable) or writes_hidden or reads_values:
                    self._deny(f"the trigger {name} names a hidden column or its table")
            elif "INDEX" in op.action:
                table = op.detail or ""
                keys = {fold_name(str(c)) for (c,) in self.conn.execute(_INDEX_KEYS, (name,))}
                if rules.hidden_in(table) & (named | keys):
                    self._deny(f"the index {name} is over a hidden column")
            else:  # a virtual table, whose content may be a view
                seen = named | self._through_views(named)
                if seen & rules.unreadable or any(
                    t in seen and cols & seen for t, cols in rules.hidden.items()
                ):
                    self._deny(f"the virtual table {name} indexes a hidden column")

    def _through_views(self, words: set[str]) -> set[str]:
        """The words of every view among `words`, and of the views those name, and so on:
        another program's connection reads a hidden column through a view as it is."""
        views = {fold_name(str(name)): str(sql) for name, sql in self.conn.execute(_VIEWS)}
        found: set[str] = set()
        pending = [word for word in words if word in views]
        while pending:
            view = pending.pop()
            if view in found:
                continue
            found.add(view)
            more = set(names_in(views[view]))
            words = words | more
            pending.extend(word for word in more if word in views)
        return words

    def _altered(self, table: str) -> None:
        if table not in self.before:
            return
        hidden, counts = self.before[table]
        now = {fold_name(str(c)) for (c,) in self.conn.execute(_COLUMNS, (table,))}
        if not now:
            return  # renamed: the rule follows the table (engine.rules.live_rules)
        after = names_in(_sql_of(self.conn, table))
        if hidden - now:
            self._deny(f"the ALTER renames or drops a hidden column of {table}")
        if any(after[c] > counts[c] for c in hidden):
            self._deny(f"the ALTER adds a column or constraint over a hidden column of {table}")

    def _deny(self, what: str) -> None:
        raise PolicyDenied(
            f"refused: {what} (hidden by {self.rules.origin}): another program's connection, "
            f"where sqlgate does not check, could read the value through it; no tool will "
            f"make it; {ASK}"
        )
