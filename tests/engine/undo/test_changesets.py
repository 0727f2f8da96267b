"""The changeset reader (engine/undo/changesets.py): what apsw reads, it reads the same; TEXT that
is not UTF-8, which apsw cannot read, it reads as `RawText` with the exact bytes; bytes that are
not a changeset are refused, never misread."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import apsw
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sqlgate.engine.raw_text import RawText
from sqlgate.engine.undo.changesets import (
    Change,
    DamagedChangeset,
    Outline,
    outline,
    parsed_rows,
    read_changeset,
)

TABLES = {
    "rowid": "CREATE TABLE t (id INTEGER PRIMARY KEY, a, b)",
    "text-key": "CREATE TABLE t (a, id TEXT PRIMARY KEY, b)",
    "composite": "CREATE TABLE t (a, b, id, PRIMARY KEY (id, a))",
    "without-rowid": "CREATE TABLE t (id PRIMARY KEY, a, b) WITHOUT ROWID",
    "no-key": "CREATE TABLE t (id, a, b)",  # recorded by rowid: a column of its own
}
VALUES = st.one_of(
    st.none(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False),
    st.text(max_size=40),
    st.binary(max_size=300),  # lengths of one and of two varint bytes
)
BAD = st.binary(min_size=1, max_size=20).filter(lambda b: not _utf8(b))


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@contextmanager
def recording(create: str) -> Iterator[tuple[apsw.Connection, apsw.Session]]:
    conn = apsw.Connection(":memory:")
    conn.execute(create)
    conn.execute("CREATE TABLE other (k INTEGER PRIMARY KEY, v)")
    session = apsw.Session(conn, "main")
    session.config(apsw.SQLITE_SESSION_OBJCONFIG_ROWID, 1)
    session.attach(None)
    try:
        yield conn, session
    finally:
        session.close()
        conn.close()


def as_apsw(data: bytes) -> list[tuple[Any, ...]]:
    return [
        (c.name, c.op, c.indirect, set(c.pk_columns or ()), c.old, c.new, c.column_count)
        for c in apsw.Changeset.iter(data)
    ]


def as_read(data: bytes) -> list[tuple[Any, ...]]:
    return [
        (c.name, c.op, c.indirect, set(c.pk_columns), c.old, c.new, c.column_count)
        for c in read_changeset(data)
    ]


def changeset(create: str, rows: list[list[Any]], updates: list[Any], deleted: int) -> bytes:
    """Rows inserted, then the first rows' `a` updated and `deleted` rows deleted, with a
    change to a second table between (a table header each time the table changes)."""
    with recording(create) as (conn, session):
        for at, (a, b) in enumerate(rows):
            conn.execute("INSERT INTO t (id, a, b) VALUES (?, ?, ?)", (at, a, b))
        conn.execute("INSERT INTO other (v) VALUES (1)")
        for at, value in enumerate(updates):
            conn.execute("UPDATE t SET a = ? WHERE id = ?", (value, at))
        conn.execute("DELETE FROM t WHERE id < ?", (deleted,))
        return session.changeset()


def ordered_changeset(create: str, before: list[list[Any]], after: list[Any]) -> bytes:
    """A changeset of existing rows: UPDATEs and DELETEs (old values apsw reads too)."""
    conn = apsw.Connection(":memory:")
    conn.execute(create)
    for at, (a, b) in enumerate(before):
        conn.execute("INSERT INTO t (id, a, b) VALUES (?, ?, ?)", (at, a, b))
    session = apsw.Session(conn, "main")
    session.config(apsw.SQLITE_SESSION_OBJCONFIG_ROWID, 1)
    session.attach(None)
    for at, value in enumerate(after):
        conn.execute("UPDATE t SET b = ? WHERE id = ?", (value, at))
    conn.execute("DELETE FROM t WHERE id >= ?", (len(after),))
    data = session.changeset()
    session.close()
    conn.close()
    return data


@settings(max_examples=150, deadline=None)
@given(
    kind=st.sampled_from(sorted(TABLES)),
    rows=st.lists(st.lists(VALUES, min_size=2, max_size=2), max_size=6),
    data=st.data(),
)
def test_it_reads_what_apsw_reads(kind: str, rows: list[list[Any]], data: st.DataObject) -> None:
    updates = data.draw(st.lists(VALUES, max_size=len(rows)))
    deleted = data.draw(st.integers(min_value=0, max_value=len(rows)))
    for made in (
        changeset(TABLES[kind], rows, updates, deleted),
        ordered_changeset(TABLES[kind], rows, updates),
    ):
        for stored in (made, apsw.Changeset.invert(made)):
            assert as_read(stored) == as_apsw(stored)
            assert Outline.of(parsed_rows(stored)) == outline(stored)


@settings(max_examples=150, deadline=None)
@given(
    kind=st.sampled_from(sorted(TABLES)),
    bad=st.lists(BAD, min_size=1, max_size=4),
    good=st.text(max_size=8),
)
def test_text_that_is_not_utf8_reads_as_its_exact_bytes(
    kind: str, bad: list[bytes], good: str
) -> None:
    conn = apsw.Connection(":memory:")
    conn.execute(TABLES[kind])
    for at, raw in enumerate(bad):
        conn.execute("INSERT INTO t (id, a, b) VALUES (?, ?, CAST(? AS TEXT))", (at, good, raw))
    session = apsw.Session(conn, "main")
    session.config(apsw.SQLITE_SESSION_OBJCONFIG_ROWID, 1)
    session.attach(None)
    conn.execute("UPDATE t SET b = b || CAST(x'fe' AS TEXT)")
    conn.execute("DELETE FROM t WHERE id = 0")
    made = session.changeset()
    session.close()
    with pytest.raises(UnicodeDecodeError):
        as_apsw(made)
    changes = list(read_changeset(made))
    column = {"composite": 1, "no-key": 3}.get(kind, 2)  # a rowid of its own comes first
    assert sorted(c.op for c in changes) == ["DELETE"] + ["UPDATE"] * (len(bad) - 1)
    olds = sorted((c.old[column] for c in changes if c.old is not None), key=repr)
    assert olds == sorted((RawText(raw) for raw in bad), key=repr)
    news = [c.new[column] for c in changes if c.new is not None]
    assert sorted(news, key=repr) == sorted((RawText(raw + b"\xfe") for raw in bad[1:]), key=repr)
    (deleted,) = (c.old for c in changes if c.op == "DELETE")
    assert deleted is not None
    assert good in deleted  # a valid text beside it stays a str
    # the inverse holds the same bytes, and applying it puts them back
    inverse = apsw.Changeset.invert(made)
    assert sorted(c.op for c in read_changeset(inverse)) == ["INSERT"] + ["UPDATE"] * (len(bad) - 1)
    apsw.Changeset.apply(inverse, conn)
    stored = conn.execute("SELECT CAST(b AS BLOB), typeof(b) FROM t ORDER BY id").fetchall()
    assert stored == [(raw, "text") for raw in bad]
    assert outline(made) == Outline.of(parsed_rows(made))
    assert outline(made).rows == {"t": len(bad)}
    assert outline(made).update_count == len(bad) - 1
    conn.close()


def test_the_outline_counts_tables_rows_and_rewrites() -> None:
    data = changeset(TABLES["rowid"], [[1, "a"], [2, "b"], [3, "c"]], ["x", "y"], 1)
    read = outline(data)
    assert read.tables == ("t", "other")
    assert read.rows == {"t": 2, "other": 1}  # row 0 was inserted, then deleted: no change
    assert read.changes == 3
    assert read.rewrites == 0  # inserted in the same session: all INSERTs
    data = ordered_changeset(TABLES["rowid"], [[1, "a"], [2, "b"], [3, "c"]], ["x"])
    read = outline(data)
    assert (read.changes, read.rewrites, read.update_count) == (3, 3, 1)
    assert read.updates == {"t": [(0, apsw.no_change, "a")]}


def header(name: bytes = b"t", flags: bytes = b"\x01\x00") -> bytes:
    return b"T" + bytes([len(flags)]) + flags + name + b"\x00"


INSERT = b"\x12\x00"  # op 18, not indirect
GOOD = header() + INSERT + b"\x01" + (7).to_bytes(8, "big", signed=True) + b"\x05"


def test_a_handmade_changeset_reads_as_written() -> None:
    real = b"\x02" + bytes.fromhex("3ff8000000000000")  # 1.5
    text = b"\x03\x03\xff\x61\x62"
    data = GOOD + b"\x09\x01" + real + text + b"\x17\x00" + b"\x05\x04\x00" + b"\x00\x04\x01\xab"
    assert list(read_changeset(data)) == [
        Change("t", "INSERT", False, frozenset({0}), None, (7, None), 2),
        Change("t", "DELETE", True, frozenset({0}), (1.5, RawText(b"\xffab")), None, 2),
        Change("t", "UPDATE", False, frozenset({0}), (None, b""), (apsw.no_change, b"\xab"), 2),
    ]


def test_long_values_take_longer_lengths() -> None:
    for size in (127, 128, 16383, 16384, 2_097_152):
        length, value = [], size
        while True:
            length.insert(0, value & 0x7F | (0x80 if length else 0))
            value >>= 7
            if not value:
                break
        data = header() + INSERT + b"\x01" + bytes(8) + b"\x04" + bytes(length) + bytes(size)
        (change,) = read_changeset(data)
        assert change.new == (0, bytes(size))


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(GOOD[:-1], id="cut-in-a-record"),
        pytest.param(GOOD[:-5], id="cut-in-a-number"),
        pytest.param(header() + INSERT + b"\x01" + bytes(8) + b"\x03\x05ab", id="text-too-long"),
        pytest.param(header() + INSERT + b"\x06\x05", id="unknown-value-type"),
        pytest.param(GOOD + b"\x13\x00", id="unknown-operation"),
        pytest.param(GOOD + b"\x13\x00\x05\x05\x05\x05", id="unknown-operation-then-values"),
        pytest.param(INSERT + b"\x05\x05", id="a-change-before-any-table"),
        pytest.param(b"T\x02\x01\x00tab", id="a-name-without-its-end"),
        pytest.param(header(b"\xff") + INSERT + b"\x05\x05", id="a-name-that-is-not-utf8"),
        pytest.param(b"P" + GOOD[1:], id="a-patchset"),
        pytest.param(b"T" + b"\x80" * 8 + b"\x01\x01t\x00", id="a-length-of-nine-bytes"),
    ],
)
def test_bytes_that_are_no_changeset_are_refused(data: bytes) -> None:
    with pytest.raises(DamagedChangeset):
        list(read_changeset(data))


def test_an_empty_changeset_reads_as_nothing() -> None:
    assert list(read_changeset(b"")) == []
    assert outline(b"") == Outline({}, 0, {})
