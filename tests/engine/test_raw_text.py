"""TEXT that is not UTF-8 (engine/raw_text.py): read again as bytes, exactly; shown as the SQL
that makes it; told apart from every other value."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import apsw
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sqlgate.engine.raw_text import (
    RawText,
    RowReader,
    decode_text,
    plain_rows,
    raw_rows,
    raw_select,
    reread_rows,
    text_codec,
    with_raw_text,
)
from sqlgate.engine.undo.checks import DIGESTS

VALUES = st.one_of(
    st.none(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False),
    st.text(st.characters(codec="utf-8"), max_size=12),
    st.binary(max_size=12),
    st.binary(min_size=1, max_size=12).map(lambda raw: ("raw", raw)),  # stored as TEXT
)


@contextmanager
def memory(encoding: str = "UTF-8") -> Iterator[apsw.Connection]:
    conn = apsw.Connection(":memory:")
    conn.execute(f"PRAGMA encoding = '{encoding}'")
    try:
        yield conn
    finally:
        conn.close()


def expected(value: Any) -> Any:
    if isinstance(value, tuple):
        return decode_text(value[1])
    return value


def bind(value: Any) -> tuple[str, Any]:
    if isinstance(value, tuple):
        return "CAST(? AS TEXT)", value[1]
    return "?", value


@pytest.mark.parametrize(
    ("data", "sql"),
    [
        pytest.param(b"\xff\x61", "CAST(x'ff61' AS TEXT)", id="bad-start-byte"),
        pytest.param(b"\xc3", "CAST(x'c3' AS TEXT)", id="cut-character"),
        pytest.param(b"\xed\xa0\x80", "CAST(x'eda080' AS TEXT)", id="a-surrogate"),
    ],
)
def test_raw_text_spells_the_sql_that_makes_it(data: bytes, sql: str) -> None:
    value = RawText(data)
    assert value.sql() == repr(value) == str(value) == sql
    with memory() as conn:
        made = conn.execute(f"SELECT typeof({sql}), CAST({sql} AS BLOB)").fetchone()
    assert made == ("text", data)


@pytest.mark.parametrize(
    ("chars", "cell"),
    [
        pytest.param(100, "CAST(x'ff61ff' AS TEXT)", id="fits"),
        pytest.param(23, "CAST(x'ff61ff' AS TEXT)", id="just-fits"),
        pytest.param(22, "CAST(x'ff61' AS TEXT)…[+1 byte]", id="one-byte-over"),
        pytest.param(17, "CAST(x'' AS TEXT)…[+3 bytes]", id="room-for-none"),
        pytest.param(1, "CAST(x'' AS TEXT)…[+3 bytes]", id="tiny-cap"),
    ],
)
def test_a_cell_is_cut_like_a_blob(chars: int, cell: str) -> None:
    assert RawText(b"\xff\x61\xff").cell(chars) == cell


def test_raw_text_compares_by_its_bytes_only() -> None:
    assert RawText(b"\xff") == RawText(b"\xff", "utf-16-le")
    assert hash(RawText(b"\xff")) == hash(RawText(b"\xff", "utf-16-le"))
    assert RawText(b"\xff") != RawText(b"\xfe")
    assert RawText(b"\xff") != b"\xff"
    assert RawText(b"\xffa").text() == "\ufffda"
    assert RawText(b"\x00\xd8a\x00", "utf-16-le").text() == "\ufffda"


@pytest.mark.parametrize(
    ("data", "codec", "value"),
    [
        pytest.param(b"abc", "utf-8", "abc", id="ascii"),
        pytest.param("é".encode(), "utf-8", "é", id="utf8"),
        pytest.param(b"\xff", "utf-8", RawText(b"\xff"), id="not-utf8"),
        pytest.param("é".encode("utf-16-le"), "utf-16-le", "é", id="utf16le"),
        pytest.param(b"\x00\xd8", "utf-16-le", RawText(b"\x00\xd8"), id="lone-surrogate-le"),
        pytest.param(b"\xd8\x00", "utf-16-be", RawText(b"\xd8\x00"), id="lone-surrogate-be"),
    ],
)
def test_decode_text(data: bytes, codec: str, value: object) -> None:
    assert decode_text(data, codec) == value
    assert type(decode_text(data, codec)) is type(value)
    if isinstance(value, RawText):
        decoded = decode_text(data, codec)
        assert isinstance(decoded, RawText)
        assert decoded.codec == codec


@pytest.mark.parametrize(
    ("encoding", "codec"),
    [("UTF-8", "utf-8"), ("UTF-16le", "utf-16-le"), ("UTF-16be", "utf-16-be")],
)
def test_text_codec_follows_the_database(encoding: str, codec: str, tmp_path: Path) -> None:
    conn = apsw.Connection(str(tmp_path / "x.db"))
    conn.execute(f"PRAGMA encoding = '{encoding}'")
    conn.execute("CREATE TABLE t (v)")
    assert text_codec(conn) == codec
    conn.close()


def test_a_utf16_database_reads_its_lone_surrogates_as_raw_text() -> None:
    with memory("UTF-16le") as conn:
        conn.execute("CREATE TABLE t (v)")
        conn.execute("INSERT INTO t VALUES (CAST(x'00d8' AS TEXT)), ('é')")
        rows = list(reread_rows(conn, "SELECT v FROM t ORDER BY rowid", 1, [()]))
    assert rows == [(RawText(b"\x00\xd8"),), ("é",)]


@settings(max_examples=200, deadline=None)
@given(rows=st.lists(st.lists(VALUES, min_size=3, max_size=3), min_size=1, max_size=5))
def test_a_select_read_again_gives_each_value_as_it_was_stored(rows: list[list[Any]]) -> None:
    with memory() as conn:
        conn.execute("CREATE TABLE t (a, b, c)")
        for row in rows:
            marks, values = zip(*map(bind, row), strict=True)
            conn.execute(f"INSERT INTO t VALUES ({', '.join(marks)})", values)
        sql = "SELECT a, b, c FROM t ORDER BY rowid"
        again = list(raw_rows(conn.execute(raw_select(sql, 3))))
        assert again == [tuple(map(expected, row)) for row in rows]
        assert [tuple(map(type, row)) for row in again] == [
            tuple(type(expected(value)) for value in row) for row in rows
        ]
        if not any(isinstance(value, tuple) for row in rows for value in row):
            assert again == list(conn.execute(sql))  # valid text: just what apsw reads


@pytest.mark.parametrize(
    "sql",
    [
        pytest.param("SELECT v FROM t;", id="semicolon"),
        pytest.param("SELECT v FROM t ;  \n", id="semicolon-and-space"),
        pytest.param("SELECT v FROM t -- the end", id="line-comment"),
        pytest.param("SELECT v FROM t /* open", id="open-comment"),
        pytest.param("SELECT v FROM t /* closed */", id="closed-comment"),
        pytest.param("WITH w AS (SELECT v FROM t) SELECT v FROM w", id="with"),
        pytest.param("VALUES (CAST(x'ff61' AS TEXT))", id="values"),
        pytest.param("SELECT v FROM t UNION ALL SELECT v FROM t LIMIT 1", id="compound"),
        pytest.param("SELECT v AS c0 FROM t", id="our-own-column-name"),
    ],
)
def test_the_statement_is_wrapped_whatever_ends_it(sql: str) -> None:
    with memory() as conn:
        conn.execute("CREATE TABLE t (v)")
        conn.execute("INSERT INTO t VALUES (CAST(x'ff61' AS TEXT))")
        assert list(raw_rows(conn.execute(raw_select(sql, 1)))) == [(RawText(b"\xffa"),)]


def test_placeholders_keep_their_values() -> None:
    with memory() as conn:
        sql = "SELECT ?2, :name, ?1"
        again = conn.execute(raw_select(sql, 3), {"1": 1, "2": "two", "name": b"\xff"})
        assert list(raw_rows(again)) == [("two", b"\xff", 1)]


def test_each_value_is_computed_once_per_row() -> None:
    sql = (
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300) "
        "SELECT iif(random() % 2, CAST(x'ff' AS TEXT), x'fe') FROM n"
    )
    with memory() as conn:
        values = {row[0] for row in raw_rows(conn.execute(raw_select(sql, 1)))}
    assert values == {RawText(b"\xff"), b"\xfe"}


def test_the_wrapper_names_its_own_table_apart_each_time() -> None:
    assert raw_select("SELECT 1", 1) != raw_select("SELECT 1", 1)


def test_with_raw_text_reads_plainly_until_a_value_is_not_utf8() -> None:
    with memory() as conn:
        conn.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v)")
        conn.execute("INSERT INTO t VALUES (1, 'a'), (2, CAST(x'ff' AS TEXT)), (3, x'ff')")
        used: list[RowReader] = []

        def read(rows: RowReader) -> list[tuple[Any, ...]]:
            used.append(rows)
            return list(rows(conn, "SELECT v FROM t WHERE k = ?", 1, [(1,), (3,)]))

        assert with_raw_text(read) == [("a",), (b"\xff",)]
        assert used == [plain_rows]

        def read_all(rows: RowReader) -> list[tuple[Any, ...]]:
            used.append(rows)
            return list(rows(conn, "SELECT v FROM t WHERE k = ?", 1, [(1,), (2,), (3,)]))

        assert with_raw_text(read_all) == [("a",), (RawText(b"\xff"),), (b"\xff",)]
        assert used[1:] == [plain_rows, reread_rows]
        # a cursor given up halfway is closed: the table can be dropped at once
        conn.execute("DROP TABLE t")


@settings(max_examples=200, deadline=None)
@given(value=st.binary(min_size=1, max_size=10), other=VALUES)
def test_a_digest_tells_raw_text_apart_from_any_other_value(value: bytes, other: Any) -> None:
    raw = RawText(value)  # as if it were not UTF-8: the digest does not look
    other = expected(other)
    for digest in DIGESTS.values():
        if other != raw:
            assert digest((raw,)) != digest((other,))
        assert digest((raw,)) != digest((value,))  # the blob of the same bytes
        assert digest((raw,)) != digest((value.decode("latin-1"),))
        assert digest((raw,)) != digest((raw.sql(),))  # the text of its spelling
        assert digest((raw, None)) != digest((None, raw))
        assert digest((RawText(value + b"s1:a"),)) != digest((raw, "a"))  # lengths part them


@pytest.mark.parametrize("reader", [plain_rows, reread_rows])
def test_a_read_given_up_halfway_closes_its_cursor_quietly(reader: RowReader) -> None:
    with memory() as conn:
        conn.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v)")
        conn.execute("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
        rows = reader(conn, "SELECT v FROM t WHERE k = ?", 1, [(1,), (2,)])
        assert next(rows) == ("a",)
        rows.close()  # GeneratorExit: the statements left are dropped without an error
        conn.execute("DROP TABLE t")
