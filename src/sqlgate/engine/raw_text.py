"""Text that is not valid in the database's encoding: read as bytes, shown as the SQL that
makes it.

SQLite stores whatever bytes a program gives it as TEXT (`CAST(x'ff61' AS TEXT)`); apsw
decodes every TEXT value strictly, and a value that is not UTF-8 raises UnicodeDecodeError
(and the cursor drops that row). Such a value is a `RawText` here: its bytes, as the
database stores them, never mistaken for a blob or a string.

    read again   `raw_select` wraps one SELECT (the agent's or the server's) so that SQLite
                 hands every TEXT value over as its bytes, flagged as text; `raw_rows` turns
                 them back into `str` (valid) or `RawText` (not). The wrapped statement runs
                 once per row (a co-routine: `LIMIT -1 OFFSET 0` keeps SQLite's query
                 flattener from copying a column's expression, so `random()` is read once)
    bound        `RawText` cannot be bound as TEXT: SQL that takes one writes
                 `CAST(? AS TEXT)` and binds `.data`
    shown        `CAST(x'ff61' AS TEXT)`: exact, pasteable, distinct from a blob's `x'..'`;
                 it is also its `repr`, so a row's `ascii()` (the undo checks' digest) spells
                 its type apart from any text, blob, number or NULL

A read tries the plain statement first and reads it again this way only when a value was
not UTF-8 (`with_raw_text`): rows of valid text cost nothing more.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import apsw

from sqlgate.engine.framing import counted
from sqlgate.engine.sqltext import quote_identifier
from sqlgate.errors import SqlError

__all__ = [
    "CODECS",
    "RawText",
    "RowReader",
    "UnreadableText",
    "decode_text",
    "plain_rows",
    "raw_rows",
    "raw_select",
    "reread_rows",
    "text_codec",
    "with_raw_text",
]

T = TypeVar("T")
# PRAGMA encoding -> the Python codec of the bytes `CAST(text AS BLOB)` gives
CODECS = {"UTF-8": "utf-8", "UTF-16le": "utf-16-le", "UTF-16be": "utf-16-be"}
_SHOWN_FIXED = len("CAST(x'' AS TEXT)")


@dataclass(frozen=True)
class RawText:
    """A TEXT value whose bytes (as the database stores them) are not valid text."""

    data: bytes
    codec: str = field(default="utf-8", compare=False)  # of the database that stores it

    def text(self) -> str:
        """The text with each byte (or pair) that is not valid as U+FFFD: for reading only."""
        return self.data.decode(self.codec, "replace")

    def sql(self) -> str:
        """The SQL expression that makes this very value."""
        return f"CAST(x'{self.data.hex()}' AS TEXT)"

    def cell(self, chars: int) -> str:
        """`sql()` in at most about `chars` characters: the bytes that fit, then how many
        were left out (as a blob's cell says it)."""
        shown = max(0, (chars - _SHOWN_FIXED) // 2)
        rest = len(self.data) - min(len(self.data), shown)
        head = RawText(self.data[:shown]).sql()
        return head + (f"…[+{counted(rest, 'byte')}]" if rest else "")

    def __repr__(self) -> str:
        return self.sql()

    __str__ = __repr__


class UnreadableText(SqlError):
    """A value of the result is TEXT that is not UTF-8, and this statement cannot be read
    again as bytes (a write's RETURNING rows, an EXPLAIN or a PRAGMA); nothing was changed."""


def decode_text(data: bytes, codec: str = "utf-8") -> str | RawText:
    """`data`, a TEXT value's stored bytes, as `str` when they are valid, else `RawText`."""
    try:
        return data.decode(codec)
    except UnicodeDecodeError:
        return RawText(data, codec)


def text_codec(conn: apsw.Connection) -> str:
    """The codec of the database's stored text (`PRAGMA encoding`)."""
    row = conn.execute("PRAGMA main.encoding").fetchone()
    return CODECS.get(str(row[0]) if row else "", "utf-8")


def raw_select(sql: str, width: int) -> str:
    """One SELECT (WITH, VALUES) statement of `width` result columns, wrapped so that each
    column comes back as two: the value, with TEXT as its stored bytes, and 1 when it was
    TEXT. The statement keeps its text and its placeholders; a `;` ending it is dropped."""
    body = sql.rstrip()
    if body.endswith(";"):
        body = body[:-1]
    # each column is read once per row from the co-routine; its name is ours alone
    name = quote_identifier(f"sqlgate_raw_{secrets.token_hex(6)}")
    columns = [f"c{at}" for at in range(width)]
    text = "typeof({c}) = 'text'"
    cell = f"CASE WHEN {text} THEN CAST({{c}} AS BLOB) ELSE {{c}} END, {text}"
    cells = ", ".join(cell.format(c=c) for c in columns)
    # `/**/` after a new line ends a `--` comment and closes a `/*` one the statement left open
    return (
        f"WITH {name}({', '.join(columns)}) AS (SELECT * FROM (\n{body}\n/**/\n) "
        f"LIMIT -1 OFFSET 0) SELECT {cells} FROM {name}"
    )


def raw_rows(rows: Iterable[Sequence[Any]], codec: str = "utf-8") -> Iterator[tuple[Any, ...]]:
    """The rows of a `raw_select`, each as the statement's own row: TEXT as `str` when its
    bytes are valid in `codec`, else as `RawText`."""
    for row in rows:
        yield tuple(
            decode_text(row[at], codec) if row[at + 1] else row[at] for at in range(0, len(row), 2)
        )


# reads rows of one SELECT: (connection, SQL, its width, one set of bindings per run)
RowReader = Callable[[apsw.Connection, str, int, Iterable[Any]], Iterator[tuple[Any, ...]]]


def plain_rows(
    conn: apsw.Connection, sql: str, width: int, bindings: Iterable[Any]
) -> Iterator[tuple[Any, ...]]:
    """The rows of `sql` run once per set of `bindings`, as apsw reads them."""
    del width  # the plain read needs no width
    cursor = conn.cursor()
    try:
        # not `yield from`: closing this generator would close the cursor unforced, which
        # raises when bindings are left
        for row in cursor.executemany(sql, bindings):  # noqa: UP028
            yield row
    finally:
        cursor.close(True)  # also when a value was not UTF-8 and the read starts over


def reread_rows(
    conn: apsw.Connection, sql: str, width: int, bindings: Iterable[Any]
) -> Iterator[tuple[Any, ...]]:
    """The rows of `sql` run once per set of `bindings`, TEXT that is not valid as `RawText`."""
    codec = text_codec(conn)
    cursor = conn.cursor()
    try:
        yield from raw_rows(cursor.executemany(raw_select(sql, width), bindings), codec)
    finally:
        cursor.close(True)


def with_raw_text(read: Callable[[RowReader], T]) -> T:
    """`read(plain_rows)`; when a TEXT value was not valid, all of it again with
    `reread_rows` (the rows read so far are dropped: `read` starts over)."""
    try:
        return read(plain_rows)
    except UnicodeDecodeError:
        return read(reread_rows)
