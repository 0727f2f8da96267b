"""What a failed foreign key was about, read from the schema, for the agent's next step.

SQLite says only "FOREIGN KEY constraint failed". The statement's own table says which side
failed: rows of other tables that still reference a deleted or re-keyed row (DELETE,
UPDATE, REPLACE), or a parent row that does not exist for an inserted or changed one
(INSERT, UPDATE, REPLACE). Table names are bound values of `pragma_foreign_key_list`.

A DEFERRABLE INITIALLY DEFERRED key (Django declares every key so) is checked only at
COMMIT. `deferred_key_advice` answers it in the same words, before COMMIT and while the
transaction still holds the broken rows: `pragma_foreign_key_check` of the tables the
statement wrote (and of the tables whose keys point at them) names the very keys broken.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import apsw

from sqlgate.engine.names import fold_name
from sqlgate.engine.statements.policy import Operation
from sqlgate.engine.statements.preflight import inspect_statement

__all__ = ["deferred_key_advice", "foreign_key_advice"]

_SHOWN = 5  # tables named in one answer; the rest are counted
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# every foreign key of the main database: (child table, key id, child column, parent table)
_KEYS = (
    'SELECT m.name, f.id, f."from", f."table" FROM main.sqlite_schema AS m, '
    "pragma_foreign_key_list(m.name, 'main') AS f WHERE m.type = 'table' "
    "ORDER BY m.name, f.id, f.seq"
)
_PARENT_SIDE = frozenset({"DELETE", "UPDATE", "REPLACE"})
_CHILD_SIDE = frozenset({"INSERT", "UPDATE", "REPLACE"})
# the rows of one table whose keys match no parent row (a bounded look: it names keys)
_BROKEN = (
    "SELECT DISTINCT fkid FROM (SELECT fkid FROM pragma_foreign_key_check(?, 'main') LIMIT 1000)"
)


@dataclass(frozen=True)
class _Key:
    child: str
    columns: tuple[str, ...]
    parent: str
    id: int = 0


def _name(name: str) -> str:
    return name if _PLAIN.fullmatch(name) else '"' + name.replace('"', '""') + '"'


def _keys(conn: apsw.Connection) -> list[_Key]:
    grouped: dict[tuple[str, int], tuple[list[str], str]] = {}
    for child, key_id, column, parent in conn.execute(_KEYS):
        columns, _ = grouped.setdefault((str(child), int(key_id)), ([], str(parent)))
        columns.append(str(column))
    return [
        _Key(child, tuple(cols), parent, key_id)
        for (child, key_id), (cols, parent) in grouped.items()
    ]


def _listed(items: list[str]) -> str:
    shown = ", ".join(items[:_SHOWN])
    more = len(items) - _SHOWN
    return f"{shown} and {more} more" if more > 0 else shown


def _columns(key: _Key) -> str:
    return ", ".join(f"{_name(key.child)}.{_name(column)}" for column in key.columns)


def foreign_key_advice(conn: apsw.Connection, sql: str) -> tuple[str, str] | None:
    """(what failed, the next step) for a statement SQLite refused on a foreign key, or None
    when the schema does not show which keys (a trigger's write, say)."""
    statement = inspect_statement(sql)
    target = statement.target
    if target is None or statement.kind not in _PARENT_SIDE | _CHILD_SIDE:
        return None
    folded = fold_name(target)
    try:
        keys = _keys(conn)
    except apsw.Error:  # the schema cannot be read: SQLite's words alone
        return None
    facts: list[str] = []
    steps: list[str] = []
    referencing = [key for key in keys if fold_name(key.parent) == folded]
    if statement.kind in _PARENT_SIDE and referencing:
        tables = [f"{_name(key.child)} ({_columns(key)})" for key in referencing]
        facts.append(f"rows of {_listed(tables)} reference {_name(target)}")
        steps.append(f"delete or update those rows first, or describe_table {referencing[0].child}")
    parents = [key for key in keys if fold_name(key.child) == folded]
    if statement.kind in _CHILD_SIDE and parents:
        links = [f"{_columns(key)} REFERENCES {_name(key.parent)}" for key in parents]
        facts.append(f"{_listed(links)}, and the row it names must exist there")
        steps.append(
            f"insert the {parents[0].parent} row first, or describe_table {parents[0].parent}"
        )
    if not facts:
        return None
    return "; ".join(facts), "; or ".join(steps)


def _broken(conn: apsw.Connection, keys: list[_Key], tables: set[str]) -> list[_Key]:
    """The keys of `keys` whose child is one of `tables` (folded) and has a row that
    matches no parent row now."""
    found: list[_Key] = []
    for child in sorted({key.child for key in keys if fold_name(key.child) in tables}):
        ids = {int(key_id) for (key_id,) in conn.execute(_BROKEN, (child,))}
        found += [key for key in keys if key.child == child and key.id in ids]
    return found


def deferred_key_advice(conn: apsw.Connection, operations: Iterable[Operation]) -> tuple[str, str]:
    """(what failed, the next step) for deferred keys a statement, whose authorizer facts
    are `operations`, left broken; call it before COMMIT, inside the transaction."""
    facts = [op for op in operations if op.target]
    changed = {fold_name(str(op.target)) for op in facts if op.action in ("INSERT", "UPDATE")}
    written = changed | {fold_name(str(op.target)) for op in facts if op.action == "DELETE"}
    try:
        keys = _keys(conn)
        near = {fold_name(key.child) for key in keys if fold_name(key.parent) in written}
        broken = _broken(conn, keys, written | near) or _broken(
            conn, keys, {fold_name(key.child) for key in keys}
        )
    except apsw.Error:  # the schema cannot be read: say what is known
        broken = []
    children = [key for key in broken if fold_name(key.child) in changed]
    parents = [key for key in broken if fold_name(key.child) not in changed]
    found: list[str] = []
    steps: list[str] = []
    if children:
        links = [f"{_columns(key)} REFERENCES {_name(key.parent)}" for key in children]
        found.append(f"{_listed(links)}, and the row it names must exist there")
        steps.append(
            f"insert the {children[0].parent} row first, in a call of its own (each call "
            f"commits on its own), or describe_table {children[0].parent}"
        )
    if parents:
        tables = [f"{_name(key.child)} ({_columns(key)})" for key in parents]
        named = ", ".join(dict.fromkeys(_name(key.parent) for key in parents))
        found.append(f"rows of {_listed(tables)} reference {named}")
        steps.append(f"delete or update those rows first, or describe_table {parents[0].child}")
    if not found:
        found.append("a row it wrote matches no row of the table its key references")
        steps.append("describe_table each table it wrote to see its foreign keys")
    return "; ".join(found), "; or ".join(steps)
