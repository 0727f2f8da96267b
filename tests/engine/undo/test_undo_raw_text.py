"""Text that is not valid UTF-8 (issue 30): another program can store it (`CAST(x'ff61' AS
TEXT)`), and every write, undo and undo check must keep it byte for byte, with its type.

Each case is a table (column types and affinities, key kinds) holding such text, and a
statement shape; the undo must bring back exactly the bytes that were there, and its checks
must still see a row changed after the call."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import apsw
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlgate.config import Settings
from sqlgate.errors import PolicyDenied, SqlError, UndoConflict
from sqlgate.service import Service

UNDO = re.compile(r"; undo: sqlgate undo (?P<id>\d+)@[0-9a-f]{8} --db \S+$", re.MULTILINE)
BAD = ("ff61", "c3", "80", "eda080", "f4908080", "61fe62")  # none of them is UTF-8
TABLES = [
    pytest.param("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, n INT)", id="text"),
    pytest.param("CREATE TABLE t (id INTEGER PRIMARY KEY, v, n)", id="no-type"),
    pytest.param("CREATE TABLE t (id INTEGER PRIMARY KEY, v BLOB, n INT)", id="blob-declared"),
    pytest.param("CREATE TABLE t (id INTEGER PRIMARY KEY, v NUMERIC, n INT)", id="numeric"),
    pytest.param("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, n INT) STRICT", id="strict-text"),
    pytest.param("CREATE TABLE t (id INT UNIQUE, v TEXT, n INT)", id="keyed-by-rowid"),
    pytest.param("CREATE TABLE t (v TEXT PRIMARY KEY, id INT UNIQUE, n INT)", id="text-key"),
    pytest.param(
        "CREATE TABLE t (v TEXT PRIMARY KEY, id INT UNIQUE, n INT) WITHOUT ROWID",
        id="without-rowid",
    ),
    pytest.param(
        "CREATE TABLE t (id INT, v TEXT COLLATE NOCASE, n INT, PRIMARY KEY (v, id))",
        id="composite-key-nocase",
    ),
    pytest.param(
        "CREATE TABLE t (id INTEGER PRIMARY KEY, g AS (n * 2), v TEXT, n INT, "
        "s TEXT AS (v || 'x') STORED)",
        id="generated-columns",
    ),
]
WRITES = [
    pytest.param("UPDATE t SET n = 5 WHERE id = 1", id="update-another-column"),
    pytest.param("UPDATE t SET n = n + 1 WHERE id > 0", id="update-every-row"),
    pytest.param("UPDATE t SET v = 'fixed' WHERE id = 1", id="update-the-value"),
    pytest.param("UPDATE t SET v = v || CAST(x'fe' AS TEXT) WHERE id = 2", id="update-to-bad"),
    pytest.param(
        "INSERT INTO t (id, v, n) SELECT id + 10, v || CAST(x'ee' AS TEXT), n FROM t",
        id="insert-select-copies-it",
    ),
    pytest.param(
        "INSERT INTO t (id, v, n) SELECT id, v, 7 FROM t WHERE id = 1 "
        "ON CONFLICT DO UPDATE SET n = excluded.n",
        id="upsert",
    ),
    pytest.param("REPLACE INTO t (id, v, n) SELECT id, v, 8 FROM t WHERE id = 3", id="replace"),
]


@contextmanager
def direct(db: Path) -> Iterator[apsw.Connection]:
    """Another program's connection."""
    conn = apsw.Connection(str(db))
    try:
        yield conn
    finally:
        conn.close()


def dump(db: Path) -> list[tuple[Any, ...]]:
    """Every row of t, byte-exact: each value's type and stored bytes (never decoded)."""
    with direct(db) as conn:
        return [
            tuple(row)
            for row in conn.execute(
                "SELECT typeof(id), hex(CAST(id AS BLOB)), typeof(v), hex(CAST(v AS BLOB)), "
                "typeof(n), hex(CAST(n AS BLOB)) FROM t ORDER BY CAST(v AS BLOB), id"
            )
        ]


def undo_ref(answer: str) -> int:
    found = UNDO.search(answer)
    assert found, answer
    return int(found["id"])


@pytest.fixture(params=TABLES)
def world(
    request: pytest.FixtureRequest, make_service: Callable[..., Service], db_path: Path
) -> Service:
    service = make_service()
    with direct(db_path) as conn:
        conn.execute(request.param)
        for at, raw in enumerate(BAD[:4], start=1):
            conn.execute(
                "INSERT INTO t (id, v, n) VALUES (?, CAST(? AS TEXT), 0)", (at, bytes.fromhex(raw))
            )
        conn.execute("INSERT INTO t (id, v, n) VALUES (5, 'plain', 0)")
    return service


@pytest.mark.parametrize("sql", WRITES)
def test_a_write_over_bad_text_is_undone_byte_for_byte(
    world: Service, db_path: Path, sql: str
) -> None:
    before = dump(db_path)
    answer = world.write_query(sql)
    assert answer.startswith("ok: "), answer
    assert dump(db_path) != before
    world.undo(undo_ref(answer))
    assert dump(db_path) == before


def test_a_destructive_delete_of_bad_text_is_undone_byte_for_byte(
    world: Service, db_path: Path
) -> None:
    before = dump(db_path)
    answer = world.destructive_query("DELETE FROM t WHERE id IN (1, 2, 5)", "cleanup")
    assert dump(db_path) != before
    assert world.undo_call(undo_ref(answer), "the cleanup was wrong").startswith("undone: ")
    assert dump(db_path) == before


def test_a_destructive_update_of_bad_text_is_undone_byte_for_byte(
    world: Service, db_path: Path
) -> None:
    before = dump(db_path)
    answer = world.destructive_query("UPDATE t SET v = v || 'x', n = 1", "mark")
    world.undo(undo_ref(answer))
    assert dump(db_path) == before


@pytest.mark.parametrize(
    "later",
    [
        pytest.param("UPDATE t SET n = 99 WHERE id = 1", id="another-column"),
        pytest.param("UPDATE t SET v = CAST(x'ff62' AS TEXT) WHERE id = 1", id="the-bad-text"),
        pytest.param("UPDATE t SET v = CAST(x'ff61' AS BLOB) WHERE id = 1", id="text-to-blob"),
    ],
)
def test_a_row_changed_after_the_call_is_still_a_conflict(
    world: Service, db_path: Path, later: str
) -> None:
    answer = world.write_query("UPDATE t SET n = 5 WHERE id = 1")
    with direct(db_path) as conn:
        try:
            conn.execute(later)
        except apsw.ConstraintError:
            pytest.skip("a STRICT TEXT column takes no blob")
    before = dump(db_path)
    with pytest.raises(UndoConflict, match="conflict"):
        world.undo(undo_ref(answer))
    assert dump(db_path) == before


def test_a_conflict_names_a_bad_key_as_sql_that_makes_it(
    make_service: Callable[..., Service], db_path: Path
) -> None:
    service = make_service()
    with direct(db_path) as conn:
        conn.execute("CREATE TABLE k (name TEXT PRIMARY KEY, n INT)")
        conn.execute("INSERT INTO k VALUES (CAST(x'ff61' AS TEXT), 0), ('b', 0)")
    changed = service.write_query("UPDATE k SET n = 1 WHERE n = 0")
    inserted = service.write_query("INSERT INTO k VALUES (CAST(x'fe' AS TEXT), 0)")
    deleted = service.destructive_query("DELETE FROM k WHERE n = 0", "prune")
    with direct(db_path) as conn:
        conn.execute("UPDATE k SET n = 2 WHERE name = CAST(x'ff61' AS TEXT)")
        conn.execute("INSERT INTO k VALUES (CAST(x'fe' AS TEXT), 5)")
    for call, said in (
        (changed, "k row (CAST(x'ff61' AS TEXT)): changed"),
        (deleted, "k row (CAST(x'fe' AS TEXT)): a row with"),
        (inserted, "k row (CAST(x'fe' AS TEXT)): changed"),
    ):
        with pytest.raises(UndoConflict) as caught:  # the person's terminal: every key
            service.undo(undo_ref(call))
        assert said in caught.value.for_cli()
        with pytest.raises(UndoConflict) as caught:  # the agent: keys of no hidden column
            service.undo_call(undo_ref(call), "take it back")
        assert said in str(caught.value)


def test_returning_bad_text_is_refused_and_rolled_back(world: Service, db_path: Path) -> None:
    before = dump(db_path)
    with pytest.raises(SqlError, match="read_query") as caught:
        world.write_query("UPDATE t SET n = 3 WHERE id = 1 RETURNING v")
    assert "nothing was changed" in str(caught.value)
    assert "CAST(x'" in str(caught.value)
    assert dump(db_path) == before
    with pytest.raises(SqlError, match="read_query"):
        world.destructive_query("DELETE FROM t WHERE id = 1 RETURNING *", "gone")
    assert dump(db_path) == before
    answer = world.write_query("UPDATE t SET n = 3 WHERE id = 1 RETURNING id, n")
    assert answer.splitlines()[1:] == ["id,n", "1,3", "# 1 row"]


def test_a_created_table_holding_bad_text_is_undone_and_its_content_checked(
    make_service: Callable[..., Service], db_path: Path
) -> None:
    service = make_service()
    with direct(db_path) as conn:
        conn.execute("CREATE TABLE src (v TEXT)")
        conn.execute("INSERT INTO src VALUES (CAST(x'ff61' AS TEXT)), ('ok')")
    made = service.write_query("CREATE TABLE copy AS SELECT v FROM src")
    again = service.write_query("CREATE TABLE other AS SELECT v FROM src")
    with direct(db_path) as conn:
        conn.execute("UPDATE other SET v = CAST(x'ff62' AS TEXT) WHERE v = CAST(x'ff61' AS TEXT)")
    with pytest.raises(UndoConflict, match="other"):
        service.undo(undo_ref(again))
    service.undo(undo_ref(made))
    with direct(db_path) as conn:
        names = [row[0] for row in conn.execute("SELECT name FROM sqlite_schema")]
    assert "copy" not in names
    assert "other" in names


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(raw=st.binary(min_size=1, max_size=12), other=st.binary(max_size=6))
def test_any_bytes_stored_as_text_round_trip_through_write_and_undo(
    settings: Settings, tmp_path_factory: pytest.TempPathFactory, raw: bytes, other: bytes
) -> None:
    db = tmp_path_factory.mktemp("bytes") / "agent.db"
    service = Service.open(replace(settings, db=db), clock=lambda: 1000.0, session="s-test")
    try:
        _round_trip(service, db, raw, other)
    finally:
        service.close()


def _round_trip(service: Service, db: Path, raw: bytes, other: bytes) -> None:
    with direct(db) as conn:
        conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, n INT)")
        conn.execute("CREATE TABLE k (v TEXT PRIMARY KEY, n INT) WITHOUT ROWID")
        conn.execute("INSERT INTO t VALUES (1, CAST(? AS TEXT), 0)", (raw,))
        conn.execute("INSERT INTO k VALUES (CAST(? AS TEXT), 0)", (raw,))

    def rows() -> list[tuple[Any, ...]]:
        with direct(db) as conn:
            return [
                tuple(row)
                for row in conn.execute(
                    "SELECT 't', typeof(v), hex(CAST(v AS BLOB)), n FROM t UNION ALL "
                    "SELECT 'k', typeof(v), hex(CAST(v AS BLOB)), n FROM k ORDER BY 1, 3"
                )
            ]

    before = rows()
    for sql, params in (
        ("UPDATE t SET n = 1 WHERE id = 1", None),
        ("UPDATE k SET n = 1 WHERE n = 0", None),
        ("UPDATE t SET v = CAST(unhex(?) AS TEXT) WHERE id = 1", [other.hex()]),
        ("INSERT INTO t (v, n) SELECT v || CAST(unhex(?) AS TEXT), 2 FROM t", [other.hex()]),
    ):
        answer = service.write_query(sql, params)
        if "undo: sqlgate undo" in answer:
            service.undo(undo_ref(answer))
        assert rows() == before, sql
    answer = service.destructive_query("DELETE FROM k WHERE n = 0", "prune")
    service.undo(undo_ref(answer))
    assert rows() == before
    shown = service.read_query("SELECT v FROM t").splitlines()
    assert shown[-1] == "# 1 row"


def test_a_utf16_database_keeps_no_changeset_it_could_not_give_back(
    settings: Settings, tmp_path: Path
) -> None:
    """SQLite hands a UTF-16 database's text to the session as UTF-8, and a lone surrogate
    comes back from the changeset as U+FFFD: such a call keeps no changeset (write_query
    refuses it, destructive_query takes a snapshot); text without one is undone as always."""
    db = tmp_path / "utf16.db"
    with direct(db) as conn:
        conn.execute("PRAGMA encoding = 'UTF-16le'")
        conn.execute("CREATE TABLE k (v TEXT PRIMARY KEY, n INT) WITHOUT ROWID")
        conn.execute("INSERT INTO k VALUES (CAST(x'00d8' AS TEXT), 0), ('a', 0), ('b', 0)")
    service = Service.open(replace(settings, db=db, adopt_db=True), clock=lambda: 1.0)
    try:

        def rows() -> list[tuple[Any, ...]]:
            with direct(db) as conn:
                return list(conn.execute("SELECT hex(v), n FROM k ORDER BY hex(v)"))

        assert service.read_query("SELECT v FROM k ORDER BY n, v LIMIT 1").splitlines()[1] == (
            "CAST(x'00d8' AS TEXT)"
        )
        with pytest.raises(PolicyDenied, match="holds text that is not valid UTF-16") as caught:
            service.write_query("UPDATE k SET n = 1 WHERE n = 0")
        assert "destructive_query" in str(caught.value)
        assert rows() == [("00D8", 0), ("6100", 0), ("6200", 0)]
        answer = service.destructive_query("DELETE FROM k WHERE n = 0", "clear")
        assert "; snapshot: " in answer
        with direct(db) as conn:
            conn.execute("INSERT INTO k VALUES ('c', 2)")
        before = rows()
        answer = service.write_query("UPDATE k SET n = 3 WHERE v = 'c'")
        service.undo(undo_ref(answer))
        assert rows() == before
    finally:
        service.close()


def test_a_constraint_on_a_row_apsw_cannot_read_is_named_without_a_key(
    make_service: Callable[..., Service], db_path: Path
) -> None:
    service = make_service()
    with direct(db_path) as conn:
        conn.execute("CREATE TABLE u (id INTEGER PRIMARY KEY, v TEXT, w TEXT UNIQUE)")
        conn.execute("INSERT INTO u VALUES (1, CAST(x'ff61' AS TEXT), 'x'), (2, 'b', 'y')")
    answer = service.destructive_query("DELETE FROM u", "clear")
    with direct(db_path) as conn:
        conn.execute("INSERT INTO u VALUES (3, 'c', 'x')")  # takes the UNIQUE w of row 1
    with pytest.raises(UndoConflict) as caught:
        service.undo(undo_ref(answer))
    assert "u row (one that holds text that is not UTF-8): restoring it would break" in (
        caught.value.for_cli()
    )
    with direct(db_path) as conn:
        assert conn.execute("SELECT id FROM u").fetchall() == [(3,)]


@pytest.mark.parametrize("taken", ["f1", "f2", "f3"])
def test_each_conflict_names_its_own_bad_key(
    make_service: Callable[..., Service], db_path: Path, taken: str
) -> None:
    service = make_service()
    with direct(db_path) as conn:
        conn.execute("CREATE TABLE k (name TEXT PRIMARY KEY, n INT) WITHOUT ROWID")
        for raw in ("f1", "f2", "f3"):
            conn.execute("INSERT INTO k VALUES (CAST(? AS TEXT), 0)", (bytes.fromhex(raw),))
    answer = service.destructive_query("DELETE FROM k", "clear")
    with direct(db_path) as conn:
        conn.execute("INSERT INTO k VALUES (CAST(? AS TEXT), 9)", (bytes.fromhex(taken),))
    with pytest.raises(UndoConflict) as caught:
        service.undo(undo_ref(answer))
    assert f"1 conflict with changes made after it (k row (CAST(x'{taken}' AS TEXT)): a" in (
        caught.value.for_cli()
    )


def test_a_created_table_with_generated_columns_is_read_as_bytes_too(
    make_service: Callable[..., Service], db_path: Path
) -> None:
    service = make_service()
    made = service.write_query(
        "CREATE TABLE g (id INTEGER PRIMARY KEY, v TEXT, w AS (v || 'x'), s AS (id * 2) STORED)"
    )
    with direct(db_path) as conn:
        conn.execute("INSERT INTO g (v) VALUES (CAST(x'ff61' AS TEXT))")
    with pytest.raises(UndoConflict, match=r"g: .*rows"):
        service.undo(undo_ref(made))
    with direct(db_path) as conn:
        conn.execute("DELETE FROM g")
    assert service.undo(undo_ref(made)).startswith("undone")


def test_returning_rows_past_those_shown_may_hold_bad_text(
    make_service: Callable[..., Service], db_path: Path
) -> None:
    service = make_service(max_rows=1)
    with direct(db_path) as conn:
        conn.execute("CREATE TABLE r (id INTEGER PRIMARY KEY, v TEXT, n INT)")
        conn.execute("INSERT INTO r VALUES (1, 'a', 0), (2, 'b', 0), (3, CAST(x'ff' AS TEXT), 0)")
    answer = service.write_query("UPDATE r SET n = 1 WHERE id > 0 RETURNING id, v")
    assert answer.splitlines()[1:] == ["id,v", "1,a", "# 1 row (truncated: row limit 1)"]
    with direct(db_path) as conn:
        assert conn.execute("SELECT sum(n) FROM r").fetchall() == [(3,)]
    service.undo(undo_ref(answer))
    with direct(db_path) as conn:
        assert conn.execute("SELECT sum(n) FROM r").fetchall() == [(0,)]
