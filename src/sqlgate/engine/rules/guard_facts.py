"""What the schema says about the user's protected and append-only tables, beyond their
names: facts the authorizer is never told.

    parents     tables a guarded table's foreign keys reference: `ALTER TABLE parent RENAME`
                rewrites the guarded table's REFERENCES clause, and SQLite names only the
                parent to the authorizer
    key_actions a table's foreign keys that change its rows when their parent's change
                (`ON DELETE CASCADE`, `ON UPDATE SET NULL`, ...), read as SQLite stored them
    shadows     the shadow tables of guarded virtual tables (fts5, rtree): a module's
                command empties them (FTS5 'delete-all'), and the statement tracer names
                the shadow table, never the virtual table it belongs to

`replaces(sql)` reads a definition: whether it says REPLACE on conflict anywhere. REPLACE
is found among the statement's keyword tokens (sqlglot's tokenizer, as `engine.sqltext`
uses it), so a `replace()` function call or a 'REPLACE' string is not one.
"""

from __future__ import annotations

from collections.abc import Iterable

import apsw

from sqlgate.engine.names import fold_name
from sqlgate.engine.sqltext import sqlite_tokens, word

__all__ = ["guarded_parents", "guarded_shadows", "key_actions", "replaces"]

# what a foreign key does to its child's rows when the parent's change: nothing for these
_NO_ACTION = frozenset({"NO ACTION", "RESTRICT"})


def replaces(sql: str) -> bool:
    """Whether the text holds an INSERT OR REPLACE, a REPLACE INTO or an ON CONFLICT REPLACE
    anywhere (a trigger body holds several statements; a table definition its keys)."""
    tokens = sqlite_tokens(sql)
    if tokens is None:
        return True
    words = [word(token) for token in tokens]
    pairs = zip(["", *words[:-1]], words, [*words[1:], ""], strict=True)
    return any(
        current == "REPLACE" and (before == "CONFLICT" or following == "INTO")
        for before, current, following in pairs
    )


def key_actions(conn: apsw.Connection, table: str) -> tuple[tuple[str, str], ...]:
    """`table`'s foreign keys that act on its rows: (parent as stored, "ON DELETE CASCADE"),
    once per key and event, in SQLite's order."""
    found: dict[tuple[str, str], None] = {}
    for parent, on_update, on_delete in conn.execute(
        "SELECT \"table\", on_update, on_delete FROM pragma_foreign_key_list(?, 'main')", (table,)
    ):
        for event, action in (("DELETE", str(on_delete)), ("UPDATE", str(on_update))):
            if action.upper() not in _NO_ACTION:
                found[(str(parent), f"ON {event} {action.upper()}")] = None
    return tuple(found)


def guarded_parents(conn: apsw.Connection, guarded: Iterable[str]) -> frozenset[str]:
    """Folded names of the tables that the `guarded` tables' (folded names) foreign keys
    reference, a table's reference to itself aside."""
    parents: set[str] = set()
    for table in sorted(set(guarded)):
        for (parent,) in conn.execute(
            "SELECT DISTINCT \"table\" FROM pragma_foreign_key_list(?, 'main')", (table,)
        ):
            if fold_name(str(parent)) != table:
                parents.add(fold_name(str(parent)))
    return frozenset(parents)


def guarded_shadows(conn: apsw.Connection, guarded: Iterable[str]) -> dict[str, str]:
    """Folded shadow table -> folded virtual table, for the `guarded` virtual tables. A
    shadow table is named `<virtual table>_<suffix>`; the longest such name owns it."""
    tables = set(guarded)
    virtual: list[str] = []
    shadows: list[str] = []
    for name, kind in conn.execute(
        "SELECT name, type FROM pragma_table_list WHERE schema = 'main' "
        "AND type IN ('virtual', 'shadow')"
    ):
        (virtual if kind == "virtual" else shadows).append(fold_name(str(name)))
    owners: dict[str, str] = {}
    for shadow in shadows:
        owner = max((v for v in virtual if shadow.startswith(f"{v}_")), key=len, default=None)
        if owner in tables:
            owners[shadow] = owner
    return owners
