"""Reading a copy of the chain on a connection of one's own (memory/chain_copy.py): what the
replication's witness log mirrors and what a restored replica is judged by."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest

from sqlgate.memory.chain import GENESIS
from sqlgate.memory.chain_copy import chain_hash_at, holds_chain, stored_head, stored_links
from sqlgate.service import Service
from tests.memory.conftest import append_many, rows, tampered
from tests.records import connect_both, records_path


def records_copy(db: Path) -> apsw.Connection:
    """The chain's file: the records of `db`, on a read-only connection of its own."""
    return apsw.Connection(str(records_path(db)), flags=apsw.SQLITE_OPEN_READONLY)


@pytest.fixture
def copy(memory: Service, db_path: Path) -> Iterator[apsw.Connection]:
    """A chain of five events, read by a connection of its own."""
    append_many(memory, 5)
    conn = records_copy(db_path)
    yield conn
    conn.close()


@pytest.mark.parametrize(("event_id", "found"), [(0, "genesis"), (1, 1), (3, 3), (5, 5),
                                                 (6, None), (-1, None)])  # fmt: skip
def test_the_stored_hash_of_an_event(
    copy: apsw.Connection, db_path: Path, event_id: int, found: int | str | None
) -> None:
    hashes = {r["id"]: r["hash"] for r in rows(db_path)}
    expected = GENESIS if found == "genesis" else hashes.get(found) if found else None
    assert chain_hash_at(copy, event_id) == expected


def test_the_stored_head(copy: apsw.Connection, db_path: Path) -> None:
    last = rows(db_path)[-1]
    assert stored_head(copy) == (5, last["hash"])


def test_an_empty_chain_has_the_genesis_head(memory: Service, db_path: Path) -> None:
    conn = records_copy(db_path)
    try:
        assert stored_head(conn) == (0, GENESIS)
        assert stored_links(conn, 1, 10, 10) == []
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("first", "last", "limit", "ids"),
    [(1, 5, 10, [1, 2, 3, 4, 5]), (2, 4, 10, [2, 3, 4]), (1, 5, 2, [1, 2]), (4, 9, 10, [4, 5]),
     (6, 9, 10, []), (3, 2, 10, [])],
)  # fmt: skip
def test_stored_links_in_a_range(
    copy: apsw.Connection, db_path: Path, first: int, last: int, limit: int, ids: list[int]
) -> None:
    stored = {r["id"]: (r["id"], r["prev_hash"], r["hash"]) for r in rows(db_path)}
    assert stored_links(copy, first, last, limit) == [stored[i] for i in ids]


def test_stored_links_show_a_gap_as_it_is(memory: Service, db_path: Path) -> None:
    append_many(memory, 4)
    with tampered(db_path) as conn:
        conn.execute("DELETE FROM memory_events WHERE id = 2")
    conn = records_copy(db_path)
    try:
        assert [link[0] for link in stored_links(conn, 1, 4, 10)] == [1, 3, 4]
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("schema", "holds"),
    [
        ("", False),
        ("CREATE TABLE notes (body TEXT)", False),
        ("CREATE VIEW memory_events AS SELECT 1 AS id", False),
        ("CREATE TABLE memory_events (id INTEGER PRIMARY KEY)", True),
    ],
)
def test_a_file_holds_a_chain_when_it_has_the_events_table(
    tmp_path: Path, schema: str, holds: bool
) -> None:
    conn = connect_both(tmp_path / "copy.db")
    try:
        conn.execute(schema)
        assert holds_chain(conn) is holds
    finally:
        conn.close()


def test_a_sqlgate_database_holds_a_chain(copy: apsw.Connection) -> None:
    assert holds_chain(copy) is True
