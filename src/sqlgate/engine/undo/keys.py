"""Rows a changeset cannot record: those whose declared PRIMARY KEY holds NULL (issue 30).

The session extension (`engine.undo.capture.capturing`) names a row of a table with a declared
PRIMARY KEY by that key, and silently skips every change to a row whose key holds a NULL,
which SQLite allows in a rowid table whose key is not the rowid itself; an UPDATE that sets
such a key from NULL is recorded as an INSERT only, whose inverse would delete the row. So a
call that changes such a row cannot keep what undoes it. Which calls do is decided by the
rows they change, exactly, whatever other rows and tables hold:

    nullable_keys   per schema version: the rowid tables whose declared key is not the rowid
                    (they have a key index, origin 'pk': `INTEGER PRIMARY KEY DESC` is one)
                    and has a column without NOT NULL
    NullKeyWatch    made just before the statement, it reads each such table's rows whose
                    key holds a NULL (a seek of the key's index for a one-column key), whole:
                    rowid, and each stored column's type and value (text as its bytes);
                    `check()` reads them again after it. The statement changed such a row
                    when the two differ: a key set to or from NULL, a row with one inserted,
                    updated or deleted (by a trigger, a foreign-key action or REPLACE too).

Rows are compared as stored, so a statement that wrote back what a row held changed nothing.
A table whose columns take all of rowid, _rowid_ and oid cannot have its rows named: its
NULL-key rows are compared as a multiset of values (their rowids, which no key names, are
SQLite's choice, as VACUUM may renumber them too).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import apsw

from sqlgate.engine.names import fold_name
from sqlgate.engine.sqltext import quote_identifier
from sqlgate.engine.undo.capture import SNAPSHOT_ADVICE, UndoFallback

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
# the stored columns (generated ones follow from them), and the key's, in key order
_COLUMNS = "SELECT name, pk FROM pragma_table_info(?, 'main')"
_NAMES = "SELECT name FROM pragma_table_xinfo(?, 'main')"

Rows = Counter[tuple[Any, ...]]


def _image(column: str) -> str:
    """A column as stored: its type, and its value (text as bytes: never decoded)."""
    name = quote_identifier(column)
    value = f"CASE WHEN typeof({name}) = 'text' THEN CAST({name} AS BLOB) ELSE {name} END"
    return f"typeof({name}), {value}"


@dataclass(frozen=True)
class NullableKey:
    """A table whose declared PRIMARY KEY may hold NULL, and how to read such rows."""

    table: str  # as the schema spells it
    keys: tuple[str, ...]
    probe: str  # each row whose key holds NULL: its rowid (NULL when unnamed), then its image

    def rows(self, conn: apsw.Connection) -> Rows:
        return Counter(tuple(row) for row in conn.execute(self.probe))

    def fallback(self, made: bool) -> UndoFallback:
        """Why the call cannot keep its undo; `made`: it left a row with a NULL key that
        was not there before (its own statement can give the key a value instead)."""
        keys = ", ".join(self.keys)
        test = " OR ".join(f"{quote_identifier(key)} IS NULL" for key in self.keys)
        first = (
            f"Give {keys} a value in the statement itself (every row it writes needs one), "
            "and write_query keeps its undo; or r"
            if made
            else "R"
        )
        return UndoFallback(
            f"it changes a row of {self.table} whose PRIMARY KEY ({keys}) holds NULL, which a "
            "changeset skips (SQLite lets a key other than an INTEGER PRIMARY KEY hold NULL)",
            f"{first}{SNAPSHOT_ADVICE[1:]}. To make such rows undoable, give each a key "
            f"(UPDATE {quote_identifier(self.table)} SET ... WHERE {test}: itself such a "
            "change, so through destructive_query)",
        )


def nullable_keys(conn: apsw.Connection) -> tuple[NullableKey, ...]:
    """The tables of "main" whose declared PRIMARY KEY may hold NULL (read the catalog once
    per schema version: `engine.undo.writes.WriteFacts`)."""
    found = []
    for (table,) in conn.execute(_TABLES):
        name = str(table)
        columns = [(str(column), int(pk)) for column, pk in conn.execute(_COLUMNS, (name,))]
        keys = tuple(column for column, pk in sorted(columns, key=lambda c: c[1]) if pk)
        taken = {fold_name(str(column)) for (column,) in conn.execute(_NAMES, (name,))}
        rowid = next((n for n in ROWID_NAMES if n not in taken), "NULL")
        images = ", ".join(_image(column) for column, _ in columns)
        test = " OR ".join(f"{quote_identifier(key)} IS NULL" for key in keys)
        probe = f"SELECT {rowid}, {images} FROM main.{quote_identifier(name)} WHERE {test}"
        found.append(NullableKey(name, keys, probe))
    return tuple(found)


class NullKeyWatch:
    """One statement's watch over the rows whose key holds NULL: made just before it runs
    (those rows as they are), `check()` once it has run, in the same transaction."""

    def __init__(self, conn: apsw.Connection, tables: tuple[NullableKey, ...]) -> None:
        self._conn = conn
        self._before = {key: key.rows(conn) for key in tables}

    def check(self) -> None:
        """`UndoFallback` when the statement changed a row whose key holds NULL, before or
        after it ran."""
        for key, rows in self._before.items():
            after = key.rows(self._conn)
            if after != rows:
                raise key.fallback(made=_made(rows, after))


def _made(before: Rows, after: Rows) -> bool:
    """Whether `after` holds a row with a NULL key that `before` did not: a rowid new to
    the set (inserted, or its key set to NULL), or more rows where rowids are not named."""
    known = {row[0] for row in before}
    return any(row[0] not in known for row in after) or after.total() > before.total()
