"""What an undo checks, at the edges mutation testing found unpinned: table shapes as data,
row digests that tell apart values which concatenate alike, composite keys, several tables."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import apsw
import pytest

from sqlgate.engine.undo.checks import DIGESTS, TableShape, row_digests, table_shape
from sqlgate.errors import UndoConflict
from sqlgate.service import Service
from tests.records import connect_both

# row states of destructive calls, kept in the changeset's row (format 2) or in chunks
KEPT_DIGESTS = (
    "SELECT coalesce(sum(length(digests)), 0) + (SELECT coalesce(sum(length(digests)), 0) "
    "FROM undo_row_states) FROM undo_changesets WHERE tool = 'destructive_query'"
)
UNDO = re.compile(r"; undo: sqlgate undo (?P<id>\d+)@[0-9a-f]{8} --db \S+$", re.MULTILINE)

SCHEMA = """
CREATE TABLE d (id INTEGER PRIMARY KEY, a, b, c);
INSERT INTO d VALUES (1, 0, 1, 23), (2, 0, 'x', 's%d:y'), (3, 0, x'00', x'6225643a01');
CREATE TABLE pair (b TEXT, a INTEGER, v TEXT, PRIMARY KEY (a, b)) WITHOUT ROWID;
INSERT INTO pair VALUES ('x', 1, 'one'), ('y', 2, 'two');
CREATE TABLE src (id INTEGER PRIMARY KEY, v);
CREATE TABLE mirror (id INTEGER PRIMARY KEY, v);
INSERT INTO src VALUES (1, 'a'), (2, 'b');
INSERT INTO mirror VALUES (1, 'a'), (2, 'b');
CREATE TRIGGER src_mirrored AFTER UPDATE ON src
    BEGIN UPDATE mirror SET v = NEW.v WHERE id = NEW.id; END;
"""


@contextmanager
def direct(db: Path) -> Iterator[apsw.Connection]:
    conn = connect_both(db)
    try:
        yield conn
    finally:
        conn.close()


@pytest.fixture
def world(service: Service, db_path: Path) -> Service:
    with direct(db_path) as conn:
        conn.execute(SCHEMA)
    return service


def undo_id(text: str) -> int:
    found = UNDO.search(text)
    assert found, text
    return int(found["id"])


def shape(*columns: tuple[str, str, int, int], without_rowid: bool = False) -> TableShape:
    return TableShape("t", 1, 2, without_rowid, columns)


# -- table shapes -------------------------------------------------------------------------


def test_a_shape_is_stored_as_readable_json() -> None:
    stored = shape(("é", "TEXT", 1, 0), ("n", "", 0, 0)).to_json()
    assert stored == '{"without_rowid": false, "columns": [["é", "TEXT", 1, 0], ["n", "", 0, 0]]}'
    assert TableShape.from_row("t", 1, 2, stored) == shape(("é", "TEXT", 1, 0), ("n", "", 0, 0))


@pytest.mark.parametrize(
    ("table", "described"),
    [
        pytest.param(
            shape(("k", "TEXT", 1, 0), ("v", "", 0, 0), without_rowid=True),
            "(k TEXT PRIMARY KEY, v) WITHOUT ROWID",
            id="without-rowid",
        ),
        pytest.param(
            shape(("a", "INT", 1, 0), ("b", "TEXT", 2, 0), ("g", "", 0, 2)),
            "(a INT PRIMARY KEY #1, b TEXT PRIMARY KEY #2, g GENERATED)",
            id="composite-and-generated",
        ),
    ],
)
def test_a_shape_describes_itself(table: TableShape, described: str) -> None:
    assert table.describe() == described


@pytest.mark.parametrize(
    ("table", "by_rowid"),
    [
        pytest.param(shape(("a", "", 0, 0)), True, id="no-key"),
        pytest.param(shape(("a", "", 0, 0), ("g", "", 0, 2)), True, id="no-key-generated"),
        pytest.param(shape(("a", "", 1, 0)), False, id="primary-key"),
        pytest.param(shape(("a", "", 1, 0), without_rowid=True), False, id="without-rowid"),
    ],
)
def test_which_tables_a_changeset_keys_by_rowid(table: TableShape, by_rowid: bool) -> None:
    assert table.keyed_by_rowid() is by_rowid


@pytest.mark.parametrize(
    ("names", "free"),
    [
        pytest.param(("a",), "rowid", id="all-free"),
        pytest.param(("ROWID",), "_rowid_", id="rowid-taken"),
        pytest.param(("rowid", "_ROWID_"), "oid", id="two-taken"),
        pytest.param(("rowid", "_rowid_", "Oid"), None, id="all-taken"),
    ],
)
def test_the_rowid_is_reached_by_a_name_no_column_took(
    names: tuple[str, ...], free: str | None
) -> None:
    assert shape(*((n, "", 0, 0) for n in names)).rowid_name() == free


def test_table_shape_reads_the_catalog(db_path: Path) -> None:
    with direct(db_path) as conn:
        conn.execute("CREATE TABLE w (k TEXT PRIMARY KEY, v) WITHOUT ROWID; CREATE TABLE r (x)")
        found = table_shape(conn, "W")
        assert found is not None
        assert (found.name, found.without_rowid, found.columns) == (
            "w",
            True,
            (("k", "TEXT", 1, 0), ("v", "", 0, 0)),
        )
        plain = table_shape(conn, "r")
        assert plain is not None
        assert not plain.without_rowid
        assert table_shape(conn, "missing") is None


# -- row digests --------------------------------------------------------------------------


def test_a_row_digest_is_16_bytes(world: Service, db_path: Path) -> None:
    world.destructive_query("UPDATE d SET a = 'q'", reason="r")
    with direct(db_path) as conn:
        (size,) = conn.execute(KEPT_DIGESTS).fetchone()
    assert size == 16 * 3


@pytest.mark.parametrize(
    ("row", "later"),
    [
        pytest.param(1, "b = 12, c = 3", id="numbers"),
        pytest.param(2, "b = 'xs%d:', c = 'y'", id="text"),
        pytest.param(3, "b = x'006225643a', c = x'01'", id="blobs"),
    ],
)
def test_digests_tell_apart_rows_whose_values_run_together_alike(
    world: Service, row: int, later: str
) -> None:
    """Columns the UPDATE did not change are not in its changeset: only the row digest sees
    them change, even into values that read the same run together."""
    call = undo_id(world.destructive_query(f"UPDATE d SET a = 5 WHERE id = {row}", "r"))
    world.destructive_query(f"UPDATE d SET {later} WHERE id = {row}", reason="later")
    with pytest.raises(UndoConflict) as refused:
        world.undo(call)
    assert f"d row ({row}): changed again" in refused.value.for_cli()  # the person's words


def test_an_update_of_a_composite_key_table_is_undone_and_checked(
    world: Service, db_path: Path
) -> None:
    call = undo_id(world.destructive_query("UPDATE pair SET v = v || '!'", reason="r"))
    world.write_query("UPDATE pair SET v = 'changed' WHERE a = 2")
    with pytest.raises(UndoConflict) as refused:
        world.undo(call)
    assert "pair row ('y', 2): changed again" in refused.value.for_cli()
    world.write_query("UPDATE pair SET v = 'two!' WHERE a = 2")
    world.undo(call)
    with direct(db_path) as conn:
        assert conn.execute("SELECT b, a, v FROM pair ORDER BY a").fetchall() == [
            ("x", 1, "one"),
            ("y", 2, "two"),
        ]


def test_an_update_that_changes_two_tables_keeps_row_level_undo(
    world: Service, db_path: Path
) -> None:
    call = undo_id(world.destructive_query("UPDATE src SET v = v || '!'", reason="r"))
    with direct(db_path) as conn:
        (detail,) = conn.execute("SELECT detail FROM query_log WHERE id = ?", (call,)).fetchone()
        (size,) = conn.execute(KEPT_DIGESTS).fetchone()
    assert "undo" in json.loads(detail)
    assert size == 16 * 4
    world.undo(call)
    with direct(db_path) as conn:
        assert conn.execute("SELECT v FROM mirror ORDER BY id").fetchall() == [("a",), ("b",)]


def test_row_digests_follow_the_changeset_order(world: Service, db_path: Path) -> None:
    with direct(db_path) as conn:
        shapes = {name: table_shape(conn, name) for name in ("src", "mirror")}
        session = apsw.Session(conn, "main")
        session.attach()
        conn.execute("UPDATE src SET v = 'z'")
        known = {k: v for k, v in shapes.items() if v}
        digests = row_digests(conn, session.changeset(), known, format=1)
    assert digests is not None
    assert len(digests) == 16 * 4
    assert digests[:16] != digests[16:32]


@pytest.mark.parametrize("format", sorted(DIGESTS))
@pytest.mark.parametrize(
    ("one", "other"),
    [
        pytest.param(("ab", "c"), ("a", "bc"), id="text-runs-together"),
        pytest.param((b"ab", b"c"), (b"a", b"bc"), id="blobs-run-together"),
        pytest.param((1, 23), (12, 3), id="numbers-run-together"),
        pytest.param(("5",), (5,), id="text-or-integer"),
        pytest.param((b"5",), ("5",), id="blob-or-text"),
        pytest.param((5,), (5.0,), id="integer-or-real"),
        pytest.param((None,), ("None",), id="null-or-text"),
        pytest.param(("é",), ("e\u0301",), id="composed-or-not"),
        pytest.param(("as%d:b",), ("a", "b"), id="text-holding-the-marker"),
        pytest.param((b"ab%d:c",), (b"a", b"c"), id="blob-holding-the-marker"),
    ],
)
def test_each_digest_format_tells_rows_apart_by_value_and_type(
    format: int, one: tuple[object, ...], other: tuple[object, ...]
) -> None:
    digest = DIGESTS[format]
    assert digest(one) != digest(other)
    assert digest(one) == digest(tuple(one))
    assert len(digest(one)) == 16
