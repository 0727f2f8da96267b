"""How engine/undo/capture.py keeps a changeset (format 2: in its own row when each part fits one
chunk, else in the chunk tables) and reads it back, and its small helpers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

import apsw
import pytest

from sqlgate.engine.schema import migrate
from sqlgate.engine.statements.policy import Operation
from sqlgate.engine.undo.capture import (
    MAX_CHUNK,
    ShapeCache,
    UndoFallback,
    capturing,
    chunk_size,
    load_changeset,
    store_changeset,
    summarize,
    unrestorable_write,
    written_tables,
)


@pytest.fixture
def conn() -> Iterator[apsw.Connection]:
    connection = apsw.Connection(":memory:")
    migrate(connection)
    connection.execute(
        "CREATE TABLE tâches (id INTEGER PRIMARY KEY, title TEXT, n INT);"
        "INSERT INTO tâches VALUES (1, 'a', 1), (2, 'b', 2), (3, 'c', 3), (4, 'd', 4);"
    )
    yield connection
    connection.close()


@contextmanager
def captured(conn: apsw.Connection, sql: str) -> Iterator[bytes]:
    conn.execute("BEGIN")
    try:
        with capturing(conn, 10**8) as capture:
            conn.execute(sql)
        yield capture.changeset
    finally:
        conn.execute("COMMIT")


def store(conn: apsw.Connection, changeset: bytes, chunk: int) -> int:
    """Keep `changeset`: here the records and the user's tables share one connection."""
    return store_changeset(
        conn,
        conn,
        changeset,
        ts="2026-01-01T00:00:00.000Z",
        session="s",
        kind="UPDATE",
        chunk=chunk,
        shapes=ShapeCache(),
        summary=summarize(changeset),
        tool="write_query",
    ).id


def sizes(conn: apsw.Connection, changeset_id: int) -> tuple[int, int, int]:
    row = conn.execute(
        "SELECT length(data), length(CAST(shapes AS BLOB)), length(digests) "
        "FROM undo_changesets WHERE id = ?",
        (changeset_id,),
    ).fetchone()
    assert row is not None
    return row


def test_each_part_is_kept_in_the_row_when_it_fits_one_chunk_and_in_chunks_when_not(
    conn: apsw.Connection,
) -> None:
    with captured(conn, "UPDATE tâches SET n = n + 10") as changeset:
        first = store(conn, changeset, 10**6)
        data, shapes, digests = sizes(conn, first)
        assert (data, digests) == (len(changeset), 4 * 16)
        kept = load_changeset(conn, first)
        for chunk, inline in [
            (max(data, shapes, digests), (True, True, True)),  # each fits exactly
            (data, (True, shapes <= data, digests <= data)),
            (shapes, (data <= shapes, True, digests <= shapes)),
            (digests, (data <= digests, shapes <= digests, True)),
            (digests - 1, (data < digests, shapes < digests, False)),
            (min(data, shapes) - 1, (False, False, digests < min(data, shapes))),
        ]:
            stored = store(conn, changeset, chunk)
            row = conn.execute(
                "SELECT data IS NOT NULL, shapes IS NOT NULL, digests IS NOT NULL "
                "FROM undo_changesets WHERE id = ?",
                (stored,),
            ).fetchone()
            assert tuple(bool(v) for v in row) == inline, chunk
            again = load_changeset(conn, stored)
            assert (again.data, again.shapes, again.digests, again.format) == (
                kept.data,
                kept.shapes,
                kept.digests,
                2,
            )


def test_names_are_kept_as_written_for_an_agent_reading_the_table(conn: apsw.Connection) -> None:
    with captured(conn, "UPDATE tâches SET n = 0 WHERE id = 1") as changeset:
        stored = store(conn, changeset, 10**6)
    tables, shapes = conn.execute(
        "SELECT tables, shapes FROM undo_changesets WHERE id = ?", (stored,)
    ).fetchone()
    assert tables == '["tâches"]'
    assert "tâches" in shapes
    assert json.loads(shapes)[0][0] == "tâches"


def test_a_table_whose_rowid_cannot_be_named_falls_back(conn: apsw.Connection) -> None:
    conn.execute("CREATE TABLE odd (rowid, _rowid_, oid); INSERT INTO odd VALUES (1, 2, 3)")
    with (
        captured(conn, "UPDATE odd SET oid = 4") as changeset,
        pytest.raises(UndoFallback, match="no rowid the undo can name"),
    ):
        store(conn, changeset, 10**6)


@pytest.mark.parametrize(
    ("value", "expected"),
    [(1, 1), (2, 1), (3, 1), (4, 2), (2001, 1000), (10**9, MAX_CHUNK)],
)
def test_a_chunk_is_half_the_length_limit_at_most_512_kib(value: int, expected: int) -> None:
    assert MAX_CHUNK == 512 * 1024
    assert chunk_size(value) == expected


@pytest.mark.parametrize(
    ("operation", "written"),
    [
        (Operation("INSERT", "T"), {"t"}),
        (Operation("UPDATE", "t", "c"), {"t"}),
        (Operation("DELETE", "t", database="main"), {"t"}),
        (Operation("READ", "t", "c"), set()),
        (Operation("INSERT", None), set()),
        (Operation("INSERT", "t", database="temp"), set()),
        (Operation("DROP_TABLE", "t"), set()),
    ],
)
def test_written_tables_are_main_s_row_writes(operation: Operation, written: set[str]) -> None:
    assert written_tables([operation, Operation("SELECT")]) == written


def test_a_virtual_table_and_its_shadow_tables_are_told_apart(conn: apsw.Connection) -> None:
    conn.execute("CREATE VIRTUAL TABLE docs USING fts5 (body)")
    assert unrestorable_write(conn, frozenset({"docs"})) == (
        "it writes docs, a virtual table (fts5, rtree), which a changeset cannot restore"
    )
    assert unrestorable_write(conn, frozenset({"docs_data"})) == (
        "it writes docs_data, a virtual table's shadow table (fts5, rtree), which a changeset "
        "cannot restore"
    )
    assert unrestorable_write(conn, frozenset({"tâches"})) is None


def test_a_keyed_table_with_columns_named_like_the_rowid_keeps_its_changeset(
    conn: apsw.Connection,
) -> None:
    conn.execute(
        "CREATE TABLE keyed (rowid TEXT PRIMARY KEY, _rowid_, oid);"
        "INSERT INTO keyed VALUES ('k', 1, 2)"
    )
    with captured(conn, "UPDATE keyed SET oid = 3") as changeset:
        stored = store(conn, changeset, 10**6)
    assert len(load_changeset(conn, stored).digests) == 16
