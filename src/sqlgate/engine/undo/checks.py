"""What an undo checks before it writes a row, and what the call records for it.

SQLite applies a changeset by table name and column position, and an UPDATE's changeset
holds only the columns the UPDATE changed (and the key). So with each changeset the call
records, in its own transaction:

    table shapes  for each table it changed: which table it was (its catalog row and root
                  page) and its columns (names, declared types, primary key, generated)
    row states    a 16-byte digest of every row an UPDATE left, in changeset order

and the undo refuses (`Conflict`s, nothing written) when a table is gone, is another table
now (dropped and re-created, renamed and another renamed into its place), or has other
columns; or when a row an UPDATE changed differs in any column from what the call left.
A VACUUM (or auto_vacuum) may move root pages: such an undo is refused, never misapplied.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import groupby
from typing import Any

import apsw

from sqlgate.engine.names import fold_name
from sqlgate.engine.raw_text import RawText, RowReader, with_raw_text
from sqlgate.engine.sqltext import quote_identifier
from sqlgate.engine.undo.changesets import outline

__all__ = [
    "DIGESTS",
    "DIGEST_BYTES",
    "Conflict",
    "TableShape",
    "Updates",
    "changed_rows",
    "row_digest",
    "row_digests",
    "shape_conflict",
    "table_shape",
]

DIGEST_BYTES = 16
_ROWID_NAMES = ("rowid", "_rowid_", "oid")
_MEANING = {
    "DATA": "changed again after the call",
    "NOTFOUND": "deleted after the call",
    "CONFLICT": "a row with this key was added after the call",
    "CONSTRAINT": "restoring it would break a constraint",
    "FOREIGN_KEY": "the restore would leave unmatched",
}


@dataclass(frozen=True)
class Conflict:
    """One thing standing in the way of an undo."""

    type: str  # DATA, NOTFOUND, CONFLICT, CONSTRAINT, FOREIGN_KEY or SCHEMA
    table: str
    key: tuple[Any, ...]
    reason: str = ""  # SCHEMA: what changed about the table

    def describe(self) -> str:
        if self.type == "SCHEMA":
            return f"{self.table}: {self.reason} (SCHEMA)"
        meaning = _MEANING.get(self.type, "conflicts with a later change")
        if self.type == "FOREIGN_KEY":
            return f"{self.key[0]} row(s) whose foreign keys {meaning} (FOREIGN_KEY)"
        key = ", ".join(repr(value) for value in self.key)
        return f"{self.table} row ({key}): {meaning} ({self.type})"


Column = tuple[str, str, int, int]  # name, declared type, position in the primary key, hidden


@dataclass(frozen=True)
class TableShape:
    """A table as the call found it: which one it is, and its columns."""

    name: str
    schema_rowid: int  # its row in sqlite_schema: ALTER TABLE keeps it, DROP + CREATE does not
    rootpage: int  # its b-tree: kept by ALTER TABLE; may move on VACUUM
    without_rowid: bool
    columns: tuple[Column, ...]

    def to_json(self) -> str:
        return json.dumps(
            {"without_rowid": self.without_rowid, "columns": [list(c) for c in self.columns]},
            ensure_ascii=False,
        )

    @classmethod
    def from_row(cls, name: str, schema_rowid: int, rootpage: int, shape: str) -> TableShape:
        parsed = json.loads(shape)
        columns = tuple((str(n), str(t), int(p), int(h)) for n, t, p, h in parsed["columns"])
        return cls(name, schema_rowid, rootpage, bool(parsed["without_rowid"]), columns)

    def key(self) -> tuple[tuple[str, str, int, int], ...]:
        """The columns as SQLite tells them apart: names and types fold ASCII case."""
        return tuple((fold_name(n), fold_name(t), p, h) for n, t, p, h in self.columns)

    def describe(self) -> str:
        keys = sum(1 for column in self.columns if column[2])
        parts = []
        for name, kind, pk, hidden in self.columns:
            text = f"{name} {kind}".strip()
            if pk:
                text += " PRIMARY KEY" if keys == 1 else f" PRIMARY KEY #{pk}"
            if hidden:
                text += " GENERATED"
            parts.append(text)
        return f"({', '.join(parts)})" + (" WITHOUT ROWID" if self.without_rowid else "")

    def keyed_by_rowid(self) -> bool:
        """A changeset keys this table's rows by rowid (its first column), since it has no
        declared primary key; otherwise by the key columns, generated columns left out."""
        return not self.without_rowid and not any(column[2] for column in self.columns)

    def rowid_name(self) -> str | None:
        """A name that reaches the rowid (a column may take any of its three names)."""
        taken = {fold_name(name) for name, _, _, _ in self.columns}
        return next((name for name in _ROWID_NAMES if name not in taken), None)


def table_shape(conn: apsw.Connection, name: str) -> TableShape | None:
    """The table of "main" that SQLite resolves `name` to, or None when there is none."""
    wanted = fold_name(name)
    found = [
        (str(stored), int(rowid), int(rootpage))
        for stored, rowid, rootpage in conn.execute(
            "SELECT name, rowid, rootpage FROM main.sqlite_schema WHERE type = 'table'"
        )
        if fold_name(str(stored)) == wanted
    ]
    if not found:
        return None
    stored, rowid, rootpage = found[0]
    listed = conn.execute(
        "SELECT wr FROM pragma_table_list(?) WHERE schema = 'main'", (stored,)
    ).fetchone()
    columns = tuple(
        (str(col), str(kind or ""), int(pk), int(hidden))
        for col, kind, pk, hidden in conn.execute(
            "SELECT name, type, pk, hidden FROM pragma_table_xinfo(?, 'main') ORDER BY cid",
            (stored,),
        )
    )
    return TableShape(stored, rowid, rootpage, bool(listed and listed[0]), columns)


def shape_conflict(recorded: TableShape, current: TableShape | None) -> str | None:
    """Why an undo may not write into `current` what the call changed in `recorded`."""
    if current is None:
        return (
            "the table was dropped or renamed after the call; give it back its name (or "
            "re-create it as it was) and run the undo again"
        )
    if current.key() != recorded.key() or current.without_rowid != recorded.without_rowid:
        return (
            f"its columns changed after the call: then {recorded.describe()}, now "
            f"{current.describe()}; SQLite would write by position into other columns. Put "
            "the columns back as they were and run the undo again, or restore the rows by hand"
        )
    if (current.schema_rowid, current.rootpage) != (recorded.schema_rowid, recorded.rootpage):
        return (
            "another table has its name now (it was dropped and re-created, or another table "
            "was renamed into its place; a VACUUM also moves tables): the undo cannot tell it "
            "is the same table, so restore the rows by hand"
        )
    return None


@dataclass(frozen=True)
class _Lookup:
    """One table's rows by changeset key: each result row is the key, then every column
    (`SELECT *`); a key whose row is gone returns nothing."""

    sql: str  # SELECT key columns, then *
    rows_sql: str  # SELECT *
    positions: tuple[int, ...]  # the key's columns in the changeset's order
    width: int  # how many columns `SELECT *` gives
    names: tuple[str, ...]  # the key columns as the SQL names them
    table: str  # main."name"

    def key(self, values: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(values[at] for at in self.positions)

    def keys(self, olds: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
        if len(self.positions) == 1:
            (at,) = self.positions
            return [(old[at],) for old in olds]
        return [self.key(old) for old in olds]

    def read(
        self, conn: apsw.Connection, rows: RowReader, keys: list[tuple[Any, ...]], *, keyed: bool
    ) -> Iterator[tuple[Any, ...]]:
        """The rows of `keys`, in their order, the key first when `keyed`. A key value that
        is TEXT but not UTF-8 (`RawText`) is bound as its bytes, cast to TEXT."""
        width = self.width + (len(self.positions) if keyed else 0)
        if not any(isinstance(value, RawText) for key in keys for value in key):
            return rows(conn, self.sql if keyed else self.rows_sql, width, keys)
        return self._read_raw(conn, rows, keys, keyed, width)

    def _read_raw(
        self,
        conn: apsw.Connection,
        rows: RowReader,
        keys: list[tuple[Any, ...]],
        keyed: bool,
        width: int,
    ) -> Iterator[tuple[Any, ...]]:
        head = f"{', '.join(self.names)}, " if keyed else ""
        for casts, run in groupby(keys, key=lambda key: tuple(isinstance(v, RawText) for v in key)):
            test = " AND ".join(
                f"{name} = CAST(? AS TEXT)" if casts[at] else f"{name} = ?"
                for at, name in enumerate(self.names)
            )
            bound = [tuple(v.data if isinstance(v, RawText) else v for v in key) for key in run]
            yield from rows(conn, f"SELECT {head}* FROM {self.table} WHERE {test}", width, bound)


def _lookup(shape: TableShape) -> _Lookup | None:
    """How to read one of `shape`'s rows by its changeset key; None when it has no way."""
    positions: tuple[int, ...]
    if shape.keyed_by_rowid():
        rowid = shape.rowid_name()
        if rowid is None:
            return None
        keys, positions = [rowid], (0,)  # bare: a quoted "rowid" could be read as a string
    else:
        plain = [column for column in shape.columns if not column[3]]
        positions = tuple(at for at, column in enumerate(plain) if column[2])
        keys = [quote_identifier(plain[at][0]) for at in positions]
    table = f"main.{quote_identifier(shape.name)}"
    rows = f"* FROM {table} WHERE " + " AND ".join(f"{key} = ?" for key in keys)
    width = sum(1 for column in shape.columns if column[3] != 1)  # 1: a virtual table's hidden
    return _Lookup(
        f"SELECT {', '.join(keys)}, {rows}", f"SELECT {rows}", positions, width, tuple(keys), table
    )


def _digest(row: tuple[Any, ...]) -> bytes:
    """Format 1: 16 bytes naming a row's values and their types: text and blobs by length
    and bytes, numbers and NULL by their Python spelling (the same on every Python version);
    TEXT that is not UTF-8 (`RawText`) by length and bytes under a tag of its own."""
    digest = hashlib.blake2b(digest_size=DIGEST_BYTES)
    for value in row:
        if isinstance(value, bytes):
            digest.update(b"b%d:" % len(value))
            digest.update(value)
        elif isinstance(value, str):
            data = value.encode("utf-8", "surrogatepass")
            digest.update(b"s%d:" % len(data))
            digest.update(data)
        elif isinstance(value, RawText):  # TEXT that is not UTF-8: its own tag
            digest.update(b"t%d:" % len(value.data))
            digest.update(value.data)
        else:  # int, float, None: "5", "5.0", "None", never holding ";"
            digest.update(repr(value).encode("ascii") + b";")
    return digest.digest()


def _digest_ascii(row: tuple[Any, ...]) -> bytes:
    """Format 2: 16 bytes of the row's `ascii()` text, one C call where format 1 makes a few
    per value. A tuple of text, bytes, int, float and None spells each value with its type
    (`'5'`, `b'5'`, `5`, `5.0`, `None`), floats exactly (shortest round-trip repr) and every
    non-ASCII character as an escape, so no Unicode table of the running Python enters it.
    TEXT that is not UTF-8 spells itself `CAST(x'ff61' AS TEXT)` (`RawText`'s repr), like no
    other value."""
    return hashlib.blake2b(ascii(row).encode("ascii"), digest_size=DIGEST_BYTES).digest()


DIGESTS = {1: _digest, 2: _digest_ascii}
Updates = dict[str, list[tuple[Any, ...]]]


def row_digest(row: tuple[Any, ...]) -> bytes:
    """`_digest` for the other undo checks (`engine.undo.ddl` digests whole tables with it)."""
    return _digest(row)


def _updates(changeset: bytes) -> dict[str, list[tuple[Any, ...]]]:
    """The old values of each UPDATE in the changeset, by table, in changeset order."""
    return outline(changeset).updates


def row_digests(
    conn: apsw.Connection,
    changeset: bytes,
    shapes: dict[str, TableShape],
    *,
    updates: Updates | None = None,
    format: int,
) -> bytes | None:
    """The digest of every row an UPDATE in `changeset` left (call it right after the
    statement, in its transaction); None when a table's rows cannot be looked up.
    `updates`: the changeset's UPDATEs as `_updates` reads them, when already read."""
    found = _updates(changeset) if updates is None else updates
    return with_raw_text(lambda rows: _row_digests(conn, found, shapes, DIGESTS[format], rows))


def _row_digests(
    conn: apsw.Connection,
    updates: Updates,
    shapes: dict[str, TableShape],
    digest: Callable[[tuple[Any, ...]], bytes],
    rows: RowReader,
) -> bytes | None:
    out = bytearray()
    for table, olds in updates.items():
        lookup = _lookup(shapes[fold_name(table)])
        if lookup is None:
            return None
        before = len(out)
        for row in lookup.read(conn, rows, lookup.keys(olds), keyed=False):
            out += digest(row)
        if len(out) - before != len(olds) * DIGEST_BYTES:
            return None  # never: an UPDATE's row exists at the end of the statement
    return bytes(out)


def changed_rows(
    conn: apsw.Connection,
    changeset: bytes,
    shapes: dict[str, TableShape],
    digests: bytes,
    format: int,
) -> list[Conflict]:
    """Each row an UPDATE in `changeset` changed that is gone or differs, in any column,
    from the state the call left it in (`digests`, from `row_digests`, in the same order)."""
    updates = _updates(changeset)
    digest_of = DIGESTS[format]
    return with_raw_text(
        lambda rows: _changed_rows(conn, updates, shapes, digests, digest_of, rows)
    )


def _changed_rows(
    conn: apsw.Connection,
    updates: Updates,
    shapes: dict[str, TableShape],
    digests: bytes,
    digest_of: Callable[[tuple[Any, ...]], bytes],
    rows: RowReader,
) -> list[Conflict]:
    conflicts: list[Conflict] = []
    at = 0
    for table, olds in updates.items():
        lookup = _lookup(shapes[fold_name(table)])
        if lookup is None:
            return [Conflict("SCHEMA", table, (), "its rows have no key the undo can read")]
        width = len(lookup.positions)
        keys = lookup.keys(olds)
        now = {
            tuple(row[:width]): digest_of(tuple(row[width:]))
            for row in lookup.read(conn, rows, keys, keyed=True)
        }
        for key in keys:
            # a key that reads back otherwise (another case under NOCASE, say) counts as gone
            digest = now.get(key)
            if digest is None:
                conflicts.append(Conflict("NOTFOUND", table, key))
            elif digest != digests[at : at + DIGEST_BYTES]:
                conflicts.append(Conflict("DATA", table, key))
            at += DIGEST_BYTES
    return conflicts
