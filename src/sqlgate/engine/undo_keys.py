"""Rows a changeset cannot record: those whose declared PRIMARY KEY holds NULL (issue 30).

The session extension (`engine.undo.capturing`) names a row of a table with a declared
PRIMARY KEY by that key, and silently skips every change to a row whose key holds a NULL,
which SQLite allows in a rowid table whose key is not the rowid itself; an UPDATE that sets
such a key from NULL is recorded as an INSERT only, whose inverse would delete the row. So a
call that changes such a row cannot keep what undoes it. Which calls do is decided by the
rows they change, exactly, whatever other rows and tables hold:

    nullable_keys     per schema version: the rowid tables whose declared key is not the rowid
                      (they have a key index, origin 'pk': `INTEGER PRIMARY KEY DESC` is one)
                      and has a column without NOT NULL
    NullKeyWatch      before the statement, the rowids of each such table's rows whose key
                      holds a NULL (a seek of the key's index for a one-column key); while it
                      runs, when there are any, an update hook that notes a change to one of
                      them (by a trigger or a foreign-key action too); after it, the rowids
                      again. A row was changed when the two differ (a key set to or from NULL,
                      a row inserted with one, one deleted by REPLACE, which the update hook
                      does not report) or the hook saw a row of the first set change.

A table whose columns take all of rowid, _rowid_ and oid cannot have its rows named: while
it holds a NULL-key row, any change to one of its rows counts as a change to that row.
The update hook may sit beside an `apsw.Session` (a preupdate hook may not); sqlgate sets no
other update hook.
"""

from __future__ import annotations

from collections.abc import Container, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import apsw

from sqlgate.engine.names import fold_name
from sqlgate.engine.sqltext import quote_identifier
from sqlgate.engine.undo import SNAPSHOT_ADVICE, UndoFallback

__all__ = ["NullKeyWatch", "NullableKey", "nullable_keys"]

ROWID_NAMES = ("rowid", "_rowid_", "oid")
# rowid tables with a declared key that is not the rowid and may hold NULL
_TABLES = """
    SELECT t.name FROM pragma_table_list AS t
    WHERE t.schema = 'main' AND t.type = 'table' AND NOT t.wr
      AND EXISTS (SELECT 1 FROM pragma_index_list(t.name, 'main') AS i WHERE i.origin = 'pk')
      AND EXISTS (
        SELECT 1 FROM pragma_table_info(t.name, 'main') AS c WHERE c.pk AND NOT c."notnull"
      )
    ORDER BY t.name
"""
_KEYS = "SELECT name FROM pragma_table_info(?, 'main') WHERE pk ORDER BY pk"
_COLUMNS = "SELECT name FROM pragma_table_xinfo(?, 'main')"


class _Every:
    """The rows of a table whose rows cannot be named: any row may be a NULL-key one."""

    def __contains__(self, rowid: object) -> bool:
        return True


@dataclass(frozen=True)
class NullableKey:
    """A table whose declared PRIMARY KEY may hold NULL, and how to find such rows."""

    table: str  # as the schema spells it, as the update hook reports it
    keys: tuple[str, ...]
    probe: str  # one row per row whose key holds NULL: its rowid, or NULL when unnamed
    named: bool  # whether a column left one of the rowid's names free

    def rows(self, conn: apsw.Connection) -> frozenset[int | None]:
        return frozenset(rowid for (rowid,) in conn.execute(self.probe))

    def fallback(self) -> UndoFallback:
        keys = ", ".join(self.keys)
        test = " OR ".join(f"{quote_identifier(key)} IS NULL" for key in self.keys)
        return UndoFallback(
            f"it changes a row of {self.table} whose PRIMARY KEY ({keys}) holds NULL, which a "
            "changeset skips (SQLite lets a key other than an INTEGER PRIMARY KEY hold NULL)",
            f"{SNAPSHOT_ADVICE}. To make such rows undoable, give each a key (UPDATE "
            f"{quote_identifier(self.table)} SET ... WHERE {test}: itself such a change, so "
            "through destructive_query)",
        )


def nullable_keys(conn: apsw.Connection) -> tuple[NullableKey, ...]:
    """The tables of "main" whose declared PRIMARY KEY may hold NULL (read the catalog once
    per schema version: `engine.undo_writes.WriteFacts`)."""
    found = []
    for (table,) in conn.execute(_TABLES):
        name = str(table)
        keys = tuple(str(key) for (key,) in conn.execute(_KEYS, (name,)))
        taken = {fold_name(str(column)) for (column,) in conn.execute(_COLUMNS, (name,))}
        rowid = next((n for n in ROWID_NAMES if n not in taken), None)
        test = " OR ".join(f"{quote_identifier(key)} IS NULL" for key in keys)
        probe = f"SELECT {rowid or 'NULL'} FROM main.{quote_identifier(name)} WHERE {test}"
        found.append(NullableKey(name, keys, probe, rowid is not None))
    return tuple(found)


class NullKeyWatch:
    """One statement's watch over the rows whose key holds NULL: made just before it runs
    (those rows as they are), `watching()` while it runs, `check()` once it has run."""

    def __init__(self, conn: apsw.Connection, tables: tuple[NullableKey, ...]) -> None:
        self._conn = conn
        self._before = {key: key.rows(conn) for key in tables}
        self._changed: set[NullableKey] = set()

    @contextmanager
    def watching(self) -> Iterator[None]:
        """Note, by the update hook, a change to one of the rows found before (none when
        there are none: then only the rows found after can tell)."""
        watched: dict[str, tuple[NullableKey, Container[int | None]]] = {
            key.table: (key, rows if key.named else _Every())
            for key, rows in self._before.items()
            if rows
        }

        def touched(_op: int, _db: str, table: str, rowid: int) -> None:
            entry = watched.get(table)
            if entry is not None and rowid in entry[1]:
                self._changed.add(entry[0])

        if watched:
            self._conn.set_update_hook(touched)
        try:
            yield
        finally:
            if watched:
                self._conn.set_update_hook(None)

    def check(self) -> None:
        """`UndoFallback` when the statement changed a row whose key holds NULL, before or
        after it ran."""
        for key, rows in self._before.items():
            if key in self._changed or key.rows(self._conn) != rows:
                raise key.fallback()
