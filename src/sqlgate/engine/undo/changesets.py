"""A reader of the session extension's changesets that survives text that is not UTF-8.

`apsw.Changeset.iter` decodes every TEXT value strictly and raises UnicodeDecodeError on one
that another program stored as bytes (`CAST(x'ff61' AS TEXT)`); inverting and applying a
changeset never decode, and restore such values byte for byte. So the undo reads its
changesets here, in the format SQLite documents (sqlite3session.h, "Changeset Format"):

    table header  'T', the number of columns (varint), one byte per column (1: part of the
                  primary key), the table's name (UTF-8, NUL-terminated)
    change        the operation (18 INSERT, 23 UPDATE, 9 DELETE), the indirect flag, then
                  the record(s): DELETE old, INSERT new, UPDATE old then new
    record        one value per column: 0 not there (an UPDATE's unchanged column), 1 an
                  integer (8 bytes, big-endian), 2 a real (IEEE 754, 8 bytes, big-endian),
                  3 text and 4 a blob (a varint length, then the bytes), 5 NULL

Values read as apsw reads them (`int`, `float`, `str`, `bytes`, None, `apsw.no_change` for
a column that is not there), except TEXT that is not UTF-8: `RawText`.

`outline` is what the undo needs of a changeset (its tables, how many rows of each, the old
values of its UPDATEs): read by apsw's C iterator, which is ten times faster, and by this
reader only when a value is not UTF-8; both give the same outline of the same bytes.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import apsw

from sqlgate.engine.raw_text import RawText, decode_text

__all__ = [
    "Change",
    "DamagedChangeset",
    "Outline",
    "holds_raw_text",
    "outline",
    "parsed_rows",
    "read_changeset",
]

_OPS = {18: "INSERT", 23: "UPDATE", 9: "DELETE"}
_TABLE = 0x54  # 'T'; a patchset's tables start with 'P', and are not read here
_NUMBER = struct.Struct(">q")
_REAL = struct.Struct(">d")


class DamagedChangeset(ValueError):
    """The bytes are not a changeset this reader understands (cut short, or not one)."""


@dataclass(frozen=True)
class Change:
    """One changed row, as `apsw.TableChange` tells it."""

    name: str
    op: str  # INSERT, UPDATE or DELETE
    indirect: bool
    pk_columns: frozenset[int]  # positions of the primary key's columns
    old: tuple[Any, ...] | None  # UPDATE and DELETE
    new: tuple[Any, ...] | None  # INSERT and UPDATE
    column_count: int


def _varint(data: bytes, at: int) -> tuple[int, int]:
    """SQLite's varint at `at`: (value, the offset after it); seven bits a byte, the high
    bit set on all but the last. Its nine-byte form holds 57 bits and more: no length SQLite
    stores (at most 2**31) or count of columns takes it, so it is refused as damage."""
    value = 0
    for used in range(8):
        byte = data[at + used]
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value, at + used + 1
    raise DamagedChangeset("a length of nine bytes or more: the changeset is damaged")


def _record(data: bytes, at: int, width: int) -> tuple[tuple[Any, ...], int]:
    values: list[Any] = []
    for _ in range(width):
        kind = data[at]
        at += 1
        if kind in (3, 4):
            size, at = _varint(data, at)
            if at + size > len(data):
                raise DamagedChangeset("a value runs past the end of the changeset")
            raw = data[at : at + size]
            values.append(decode_text(raw) if kind == 3 else raw)
            at += size
        elif kind in (1, 2):
            values.append((_NUMBER if kind == 1 else _REAL).unpack_from(data, at)[0])
            at += 8
        elif kind == 5:
            values.append(None)
        elif kind == 0:
            values.append(apsw.no_change)
        else:
            raise DamagedChangeset(f"unknown value type {kind} in the changeset")
    return tuple(values), at


def read_changeset(data: bytes) -> Iterator[Change]:
    """Every change in `data` (a changeset, not a patchset), in order.

    Raises DamagedChangeset when the bytes end early or hold what a changeset cannot."""
    try:
        yield from _changes(data)
    except DamagedChangeset:
        raise
    except (IndexError, ValueError, struct.error) as exc:  # a name that is not UTF-8 too
        raise DamagedChangeset(f"the changeset ends early or is damaged ({exc})") from None


def _changes(data: bytes) -> Iterator[Change]:
    at, end = 0, len(data)
    table: tuple[str, int, frozenset[int]] | None = None
    while at < end:
        marker = data[at]
        if marker == _TABLE:
            width, at = _varint(data, at + 1)
            flags = data[at : at + width]
            nul = data.index(0, at + width)
            name = data[at + width : nul].decode("utf-8")
            table = (name, width, frozenset(i for i, flag in enumerate(flags) if flag))
            at = nul + 1
            continue
        op = _OPS.get(marker)
        if op is None or table is None:
            raise DamagedChangeset(f"byte {at} of the changeset starts no change ({marker})")
        name, width, keys = table
        indirect = bool(data[at + 1])
        at += 2
        old = new = None
        if op != "INSERT":
            old, at = _record(data, at, width)
        if op != "DELETE":
            new, at = _record(data, at, width)
        yield Change(name, op, indirect, keys, old, new, width)


Row = tuple[str, str, "tuple[Any, ...] | None"]  # table, operation, an UPDATE's old values


@dataclass(frozen=True)
class Outline:
    """A changeset read once: its tables in order of first change with how many rows of
    each it changes, how many of them are existing rows (UPDATEs and DELETEs), and the old
    values of its UPDATEs by table, in order (what the row digests are looked up by)."""

    rows: dict[str, int]
    rewrites: int
    updates: dict[str, list[tuple[Any, ...]]]

    @classmethod
    def of(cls, changes: Iterable[Row]) -> Outline:
        rows: dict[str, int] = {}
        updates: dict[str, list[tuple[Any, ...]]] = {}
        rewrites = 0
        for name, op, old in changes:
            rows[name] = rows.get(name, 0) + 1
            if op != "INSERT":
                rewrites += 1
                if old is not None:
                    updates.setdefault(name, []).append(old)
        return cls(rows, rewrites, updates)

    @property
    def tables(self) -> tuple[str, ...]:
        return tuple(self.rows)

    @property
    def changes(self) -> int:
        return sum(self.rows.values())

    @property
    def update_count(self) -> int:
        return sum(map(len, self.updates.values()))


def _apsw_rows(data: bytes) -> Iterator[Row]:
    for change in apsw.Changeset.iter(data):
        op = change.op
        yield change.name, op, change.old if op == "UPDATE" else None


def parsed_rows(data: bytes) -> Iterator[Row]:
    """`outline`'s rows as this module's reader reads them (any TEXT, any bytes)."""
    for change in read_changeset(data):
        yield change.name, change.op, change.old if change.op == "UPDATE" else None


def holds_raw_text(data: bytes) -> bool:
    """Whether a TEXT value of changeset `data` is not UTF-8 (this reader reads them all)."""
    return any(
        isinstance(value, RawText)
        for change in read_changeset(data)
        for row in (change.old, change.new)
        if row is not None
        for value in row
    )


def outline(data: bytes) -> Outline:
    """The outline of changeset `data`: apsw reads it, or, when a TEXT value in it is not
    UTF-8, this module's reader."""
    try:
        return Outline.of(_apsw_rows(data))
    except UnicodeDecodeError:
        return Outline.of(parsed_rows(data))
