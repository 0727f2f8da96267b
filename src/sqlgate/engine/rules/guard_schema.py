"""What a statement leaves in the schema for other programs to fire, while tables are guarded.

The owner's application writes the database through its own connection, where no
authorizer watches: a trigger the agent created would run there with nothing to stop it
writing a protected or append-only table. So, after a statement changed the schema and
before its transaction commits, what it left is read here and judged by
`engine.rules.guarded_policy` (a refusal rolls the whole call back):

    new triggers    what each would write when fired, found as SQLite finds it: the
                    statements that fire it (INSERT ... DEFAULT VALUES, UPDATE of every
                    column, DELETE, on its table or view) are prepared (EXPLAIN: nothing
                    runs) under a recording authorizer; the writes SQLite names with the
                    trigger's name are its own. What each of those sets off (other triggers,
                    INSTEAD OF triggers, foreign keys' actions, with REPLACE and recursive
                    triggers assumed, as an application's statement may ask) is found by
                    preparing the same write on its own: every row write to a guarded table
                    there comes from the trigger's write. A trigger whose firing statements
                    SQLite cannot prepare (its body names a table that does not exist) is
                    refused: what it would write cannot be known.
    new tables      one created or renamed into place under a name a rule gives, with a
                    foreign key's action, ON CONFLICT REPLACE (append-only), or triggers the
                    statement pointed at it; one that a guarded table's foreign key acts
                    from (its parent, by name).

Triggers an ALTER TABLE rewrote keep what they write, under new names: a rename only brings
a new name into a trigger's body, and a new name a rule gives is judged as a new table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import apsw

from sqlgate.engine.names import fold_name
from sqlgate.engine.rules.guard_facts import key_actions, replaces
from sqlgate.engine.rules.guarded_policy import (
    LeftWrite,
    NewTable,
    left_write_refusal,
    new_table_refusal,
    unchecked_trigger_refusal,
)
from sqlgate.engine.rules.live_rules import LiveRules
from sqlgate.engine.sqltext import quote_identifier
from sqlgate.engine.statements import ROW_ACTIONS, Operation
from sqlgate.errors import PolicyDenied

__all__ = ["SchemaGuard", "UncheckedTrigger", "trigger_writes"]

_SCHEMA = (
    "SELECT type, name, tbl_name, sql FROM main.sqlite_schema "
    "WHERE type IN ('table', 'trigger') AND sql IS NOT NULL"
)
_PREFIX = "SQLITE_"


@dataclass(frozen=True)
class _Object:
    kind: str  # table or trigger
    name: str
    table: str  # a trigger's table or view
    sql: str


def _objects(rows: list[tuple[Any, ...]]) -> dict[tuple[str, str], _Object]:
    return {
        (str(kind), fold_name(str(name))): _Object(str(kind), str(name), str(table), str(sql))
        for kind, name, table, sql in rows
    }


def _action(code: int) -> str:
    name = str(apsw.mapping_authorizer_function.get(code, code))
    return name[len(_PREFIX) :] if name.startswith(_PREFIX) else name


def _facts(conn: apsw.Connection, sql: str) -> tuple[list[Operation], str | None]:
    """The facts SQLite reports while it prepares `sql` (EXPLAIN: nothing runs), and the
    error that stopped it, if one did."""
    facts: list[Operation] = []

    def record(code: int, first: str | None, second: str | None, db: str | None,
               inside: str | None) -> int:  # fmt: skip
        facts.append(Operation(_action(code), first, second, db, inside))
        return int(apsw.SQLITE_OK)

    conn.authorizer = record
    try:
        conn.cursor().execute(f"EXPLAIN {sql}", can_cache=False).close()
    except apsw.Error as exc:
        return facts, str(exc)
    finally:
        conn.authorizer = None
    return facts, None


def _columns(conn: apsw.Connection, table: str) -> list[str]:
    """The columns an UPDATE may set: the stored ones a statement names (no generated)."""
    return [
        str(name)
        for name, hidden in conn.execute(
            "SELECT name, hidden FROM pragma_table_xinfo(?, 'main')", (table,)
        )
        if not hidden
    ]


def _set(columns: list[str]) -> str:
    return ", ".join(f"{quote_identifier(c)} = {quote_identifier(c)}" for c in columns)


def _firing(conn: apsw.Connection, table: str) -> list[str]:
    """Statements that fire every trigger on `table` (a table or a view)."""
    quoted = f"main.{quote_identifier(table)}"
    return [
        f"INSERT INTO {quoted} DEFAULT VALUES",
        f"UPDATE {quoted} SET {_set(_columns(conn, table))}",
        f"DELETE FROM {quoted}",
    ]


def _setting_off(op: Operation) -> str:
    """The statement that makes the write `op` (a trigger's own) on its own, with the
    REPLACE an application's firing statement may hand down to it."""
    quoted = f"main.{quote_identifier(str(op.target))}"
    if op.action == "INSERT":
        return f"INSERT OR REPLACE INTO {quoted} DEFAULT VALUES"
    if op.action == "UPDATE":
        return f"UPDATE OR REPLACE {quoted} SET {_set([str(op.detail)])}"
    return f"DELETE FROM {quoted}"


class UncheckedTrigger(Exception):
    """SQLite could not prepare a statement the check needs: `error` says why."""

    def __init__(self, error: str) -> None:
        super().__init__(error)
        self.error = error


def _own_writes(conn: apsw.Connection, trigger: str, table: str) -> list[Operation]:
    """The row writes of the trigger's own body, as SQLite reports them when it fires."""
    own: list[Operation] = []
    errors: list[str] = []
    seen = False
    for sql in _firing(conn, table):
        facts, error = _facts(conn, sql)
        if error is not None:
            errors.append(error)
        mine = [op for op in facts if fold_name(op.inside or "") == fold_name(trigger)]
        seen = seen or bool(mine)
        own.extend(op for op in mine if op.action in ROW_ACTIONS)
    if not seen:
        raise UncheckedTrigger(errors[0] if errors else "no statement fires it")
    return own


def trigger_writes(conn: apsw.Connection, trigger: str, table: str) -> list[LeftWrite]:
    """Every row write `trigger` (on `table`) would make when fired, its own and what each
    sets off, as `LeftWrite`s; raises `UncheckedTrigger` when SQLite cannot prepare what is
    needed. Call it with the trigger in the schema and no authorizer installed."""
    own = _own_writes(conn, trigger, table)
    writes = [LeftWrite(trigger, op) for op in own]
    for op in own:
        facts, error = _facts(conn, _setting_off(op))
        if error is not None:
            raise UncheckedTrigger(error)
        target = str(op.target)
        writes.extend(
            LeftWrite(trigger, fact, target) for fact in facts if fact.action in ROW_ACTIONS
        )
    return writes


class SchemaGuard:
    """The schema before one statement, then what the statement left in it."""

    def __init__(self, conn: apsw.Connection, rules: LiveRules) -> None:
        self.conn = conn
        self.rules = rules
        # the catalog as it is (read as is: most statements change nothing in it)
        self.rows = list(conn.execute(_SCHEMA))
        self.before: dict[tuple[str, str], _Object] = {}

    def _new_table(self, table: _Object, after: dict[tuple[str, str], _Object]) -> NewTable:
        folded = fold_name(table.name)
        # a rename rewrites every trigger that names the table, those on it among them
        pointed = tuple(
            found.name
            for key, found in after.items()
            if found.kind == "trigger" and self.before.get(key, found) != found
        )
        children = tuple(
            (child, action)
            for child in sorted(self.rules.protected | self.rules.append_only)
            for parent, action in key_actions(self.conn, child)
            if fold_name(parent) == folded
        )
        actions = key_actions(self.conn, table.name)
        return NewTable(table.name, actions, replaces(table.sql), pointed, children)

    def _refusal(self, after: dict[tuple[str, str], _Object]) -> str | None:
        for key, found in after.items():
            if key in self.before:
                continue
            if found.kind == "table":
                refusal = new_table_refusal(self._new_table(found, after), self.rules)
            else:
                refusal = self._trigger_refusal(found)
            if refusal is not None:
                return refusal
        return None

    def _trigger_refusal(self, trigger: _Object) -> str | None:
        try:
            writes = trigger_writes(self.conn, trigger.name, trigger.table)
        except UncheckedTrigger as unchecked:
            return unchecked_trigger_refusal(trigger.name, unchecked.error)
        for write in writes:
            refusal = left_write_refusal(write, self.rules)
            if refusal is not None:
                return refusal
        return None

    def refuse(self) -> None:
        """PolicyDenied when the statement left what the rules refuse (call it after the
        statement ran, inside its transaction, with no authorizer installed)."""
        rows = list(self.conn.execute(_SCHEMA))
        if rows == self.rows:
            return
        self.before, after = _objects(self.rows), _objects(rows)
        recursive = self.conn.pragma("recursive_triggers")
        self.conn.pragma("recursive_triggers", True)  # what an application may turn on
        try:
            refusal = self._refusal(after)
        finally:
            self.conn.pragma("recursive_triggers", recursive)
        if refusal is not None:
            raise PolicyDenied(f"refused: {refusal}")
