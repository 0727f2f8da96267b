"""Undo, restore side, at the edges mutation testing found unpinned: server tables in a
changeset, triggers after an undo, which row a conflict names, and what counts as an id."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import apsw
import pytest

from sqlgate.errors import InvalidArgument, NotFound, SqlgateError, UndoConflict, UndoRefused
from sqlgate.service import Service
from tests.engine.undo.test_undo_writes import newest_call
from tests.records import connect_both, records_path

UNDO = re.compile(r"; undo: sqlgate undo (?P<id>\d+)@[0-9a-f]{8} --db \S+$", re.MULTILINE)

SCHEMA = """
CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);
INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd'), (5, 'e'), (6, 'f'), (7, 'g');
CREATE TABLE pair (b TEXT, a INTEGER, v TEXT, PRIMARY KEY (a, b)) WITHOUT ROWID;
INSERT INTO pair VALUES ('x', 1, 'one'), ('y', 2, 'two');
CREATE TABLE parent (id INTEGER PRIMARY KEY);
CREATE TABLE child (id INTEGER PRIMARY KEY, parent_id INTEGER REFERENCES parent (id));
CREATE TABLE log (what TEXT);
CREATE TABLE u (id INTEGER PRIMARY KEY, email TEXT UNIQUE);
INSERT INTO u VALUES (1, 'a');
CREATE TABLE w (id INTEGER PRIMARY KEY);
CREATE TABLE wlog (gone INTEGER);
CREATE TRIGGER w_gone AFTER DELETE ON w BEGIN INSERT INTO wlog VALUES (OLD.id); END;
INSERT INTO w VALUES (1);
CREATE TRIGGER t_logged AFTER INSERT ON t BEGIN INSERT INTO log VALUES (NEW.v); END;
"""


@contextmanager
def direct(db: Path) -> Iterator[apsw.Connection]:
    conn = connect_both(db)
    try:
        yield conn
    finally:
        conn.close()


def undo_id(text: str) -> int:
    found = UNDO.search(text)
    assert found, text
    return int(found["id"])


def rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    with direct(db) as conn:
        return [tuple(row) for row in conn.execute(sql)]


@pytest.fixture
def world(service: Service, db_path: Path) -> Service:
    with direct(db_path) as conn:
        conn.execute(SCHEMA)
    return service


def test_an_undo_never_writes_a_server_table(world: Service, db_path: Path, tmp_path: Path) -> None:
    """A changeset that (forged, or from a future bug) holds a query_log row: the server's
    table lives in the records file, which an undo never writes; in the user's file no such
    table was recorded, so the undo is refused and changes nothing in either file."""
    call = undo_id(world.destructive_query("DELETE FROM t WHERE id = 1", reason="r"))
    (changeset,) = rows(db_path, "SELECT id FROM undo_changesets")[0]
    scratch = tmp_path / "scratch.db"
    with direct(scratch) as conn:
        conn.execute("ATTACH ? AS real", (str(db_path),))
        conn.execute("ATTACH ? AS kept", (str(records_path(db_path)),))
        for (sql,) in conn.execute(
            "SELECT sql FROM real.sqlite_schema WHERE name = 't' UNION ALL "
            "SELECT sql FROM kept.sqlite_schema WHERE name = 'query_log'"
        ).fetchall():
            conn.execute(str(sql))
        conn.execute("INSERT INTO main.t VALUES (1, 'a')")
        conn.execute("INSERT INTO main.query_log SELECT * FROM kept.query_log LIMIT 1")
        conn.execute("UPDATE main.query_log SET id = 777")
        conn.execute("DETACH real")
        conn.execute("DETACH kept")
        session = apsw.Session(conn, "main")
        session.attach()
        conn.execute("DELETE FROM query_log; DELETE FROM t")
        forged = session.changeset()
    with direct(db_path) as conn:
        conn.execute("UPDATE undo_changesets SET data = ? WHERE id = ?", (forged, changeset))
    logged = rows(db_path, "SELECT count(*) FROM query_log")
    with pytest.raises(UndoConflict, match="query_log"):
        world.undo(call)
    assert rows(db_path, "SELECT * FROM t WHERE id = 1") == []
    assert rows(db_path, "SELECT count(*) FROM query_log WHERE id = 777") == [(0,)]
    assert rows(db_path, "SELECT count(*) FROM main.sqlite_schema WHERE name = 'query_log'") == [
        (0,)
    ]
    assert rows(db_path, "SELECT count(*) FROM query_log") >= logged


def test_triggers_fire_again_after_an_undo(world: Service, db_path: Path) -> None:
    world.undo(undo_id(world.destructive_query("DELETE FROM t WHERE id = 1", reason="r")))
    assert rows(db_path, "SELECT what FROM log") == []  # the undo's own INSERT fired nothing
    world.write_query("INSERT INTO t VALUES (8, 'h')")
    assert rows(db_path, "SELECT what FROM log") == [("h",)]


@pytest.mark.parametrize(
    ("first", "later", "described"),
    [
        pytest.param(
            "DELETE FROM t WHERE id = 3",
            "INSERT INTO t VALUES (3, 'new')",
            "t row (3): a row with this key was added after the call (CONFLICT)",
            id="re-created",
        ),
        pytest.param(
            "INSERT INTO t VALUES (9, 'i')",
            "DELETE FROM t WHERE id = 9",
            "t row (9): deleted after the call (NOTFOUND)",
            id="deleted",
        ),
        pytest.param(
            "DELETE FROM pair WHERE a = 2",
            "INSERT INTO pair VALUES ('y', 2, 'again')",
            "pair row ('y', 2): a row with this key was added after the call (CONFLICT)",
            id="composite-key-in-column-order",
        ),
        pytest.param(
            "INSERT INTO t VALUES (9, 'i')",
            "UPDATE t SET v = 'j' WHERE id = 9",
            "t row (9): changed again after the call (DATA)",
            id="inserted-then-changed",
        ),
        pytest.param(
            "DELETE FROM u WHERE id = 1",
            "INSERT INTO u VALUES (2, 'a')",
            "u row (1): restoring it would break a constraint (CONSTRAINT)",
            id="deleted-row-collides-on-a-unique-column",
        ),
        pytest.param(
            "UPDATE u SET email = 'b' WHERE id = 1",
            "INSERT INTO u VALUES (2, 'a')",
            "u row (1): restoring it would break a constraint (CONSTRAINT)",
            id="updated-row-collides-on-a-unique-column",
        ),
        pytest.param(
            "INSERT INTO parent VALUES (5)",
            "INSERT INTO child VALUES (1, 5)",
            "1 row(s) whose foreign keys the restore would leave unmatched (FOREIGN_KEY)",
            id="foreign-key",
        ),
    ],
)
def test_a_conflict_names_the_row_in_the_way(
    world: Service, first: str, later: str, described: str
) -> None:
    call = undo_id(world.destructive_query(first, reason="r"))
    if later.startswith("DELETE"):
        world.destructive_query(later, reason="later")
    else:
        world.write_query(later)
    with pytest.raises(UndoConflict) as refused:
        world.undo(call)
    # the person is told the key; the audit row (any agent reads it) is not: a count is
    assert f"1 conflict with changes made after it ({described})." in refused.value.for_cli()
    values = re.search(r"row \(([^)]*)\)", described)
    hidden = ", ".join("(hidden)" for _ in values[1].split(", ")) if values else ""
    recorded = described.replace(f"row ({values[1]})", f"row ({hidden})") if values else described
    assert f"1 conflict with changes made after it ({recorded})." in str(refused.value)


@pytest.mark.parametrize(
    ("hide", "agent"),
    [
        pytest.param("keyed.k", "keyed row ((hidden))", id="key"),
        pytest.param("KEYED.K", "keyed row ((hidden))", id="key-folded"),
        pytest.param("keyed.s", "keyed row ('one')", id="not-the-key"),
        pytest.param("t.v", "keyed row ('one')", id="other-table"),
    ],
)
def test_an_agents_undo_hides_a_hidden_key_and_a_persons_records_no_key(
    make_service: Callable[..., Service], db_path: Path, hide: str, agent: str
) -> None:
    with direct(db_path) as conn:
        conn.execute(SCHEMA)
        conn.execute("CREATE TABLE keyed (k TEXT PRIMARY KEY, v TEXT, s TEXT)")
        conn.execute("INSERT INTO keyed VALUES ('one', 'a', 'x')")
    world = make_service(hide_column=(hide,), adopt_db=True)
    call = undo_id(world.write_query("UPDATE keyed SET v = 'changed' WHERE v = 'a'"))
    with direct(db_path) as conn:  # another program changes the row again
        conn.execute("UPDATE keyed SET v = 'again'")
    with pytest.raises(UndoConflict) as by_agent:
        world.undo_call(f"{call}@{world.db.database_id}", reason="back")
    assert f"({agent}: changed again" in str(by_agent.value)
    assert by_agent.value.for_cli() == str(by_agent.value)
    with pytest.raises(UndoConflict) as by_person:
        world.undo(call)
    assert "(keyed row ((hidden)): changed again" in str(by_person.value)
    assert "(keyed row ('one'): changed again" in by_person.value.for_cli()


@pytest.mark.parametrize(
    ("taken", "shown", "more"),
    [
        pytest.param(5, 5, "", id="five-all-shown"),
        pytest.param(6, 5, "; and 1 more", id="six"),
        pytest.param(7, 5, "; and 2 more", id="seven"),
    ],
)
def test_a_refusal_shows_five_conflicts_and_counts_the_rest(
    world: Service, taken: int, shown: int, more: str
) -> None:
    call = undo_id(world.destructive_query("DELETE FROM t", reason="r"))
    for key in range(1, taken + 1):
        world.write_query("INSERT INTO t VALUES (?, 'later')", [key])
    with pytest.raises(UndoConflict) as refused:
        world.undo(call)
    text = str(refused.value)
    assert f"refused: {taken} conflicts with" in text
    assert text.count("(CONFLICT)") == shown
    assert re.search(r"\(CONFLICT\)" + re.escape(more + "). Nothing was undone."), text), text


@pytest.mark.parametrize(
    "arguments",
    [
        pytest.param({"audit_id": True}, id="true-is-not-audit-id-1"),
        pytest.param({"changeset": True}, id="true-is-not-changeset-1"),
        pytest.param({"audit_id": 1.0}, id="float"),
        pytest.param({"audit_id": -1}, id="negative"),
        pytest.param({"changeset": 0}, id="changeset-zero"),
    ],
)
def test_only_whole_numbers_name_a_call(world: Service, arguments: dict[str, Any]) -> None:
    world.read_query("SELECT 1")  # call 1 exists, so a True taken for 1 would find it
    with pytest.raises(InvalidArgument, match="must be a whole number from 1 to "):
        world.undo(**arguments)


@pytest.mark.parametrize(
    "arguments",
    [
        pytest.param({"changeset": 1}, id="one"),
        pytest.param({"changeset": 2**63 - 1}, id="largest"),
        pytest.param({"audit_id": 2**63 - 1}, id="largest-audit-id"),
    ],
)
def test_the_ends_of_the_range_are_ids(world: Service, arguments: dict[str, Any]) -> None:
    with pytest.raises(NotFound):
        world.undo(**arguments)


def test_an_undo_says_which_tables_came_back(world: Service) -> None:
    call = undo_id(world.destructive_query("DELETE FROM pair", reason="r"))
    where = world.db.path.absolute()
    assert world.undo(call) == f"undone: call {call} (DELETE, 2 rows in pair) in {where}"
    assert world.destructive_query("DELETE FROM t WHERE id > 100", reason="r") == (
        "ok: 0 rows affected"
    )
    empty = newest_call(world)
    with pytest.raises(UndoRefused, match="changed no rows: there is nothing to undo"):
        world.undo(empty)


def test_row_states_that_do_not_match_the_updates_are_refused(
    world: Service, db_path: Path
) -> None:
    call = undo_id(world.destructive_query("UPDATE t SET v = 'z' WHERE id < 3", reason="r"))
    with direct(db_path) as conn:
        conn.execute("UPDATE undo_row_states SET digests = substr(digests, 1, 16)")
        conn.execute("UPDATE undo_changesets SET digests = substr(digests, 1, 16)")
    with pytest.raises(UndoConflict, match=r"row states kept with changeset \d+ are incomplete"):
        world.undo(call)
    assert rows(db_path, "SELECT v FROM t WHERE id < 3") == [("z",), ("z",)]


def test_a_snapshot_call_names_its_snapshot_file(world: Service, db_path: Path) -> None:
    world.destructive_query("DROP TABLE log", reason="r")
    (call, detail) = rows(db_path, "SELECT id, detail FROM query_log ORDER BY id DESC LIMIT 1")[0]
    name = Path(json.loads(detail)["snapshot"]).name
    restore = f"sqlgate snapshots restore {name} --db {db_path.absolute()}`"
    with pytest.raises(UndoRefused, match=re.escape(restore)):
        world.undo(call)


def test_an_undo_of_a_call_of_another_tool_names_the_tool(world: Service) -> None:
    world.list_tables()
    call = newest_call(world)
    with pytest.raises(UndoRefused, match=f"call {call} is a call of list_tables, which changed"):
        world.undo(call)


def forged_call(db: Path, detail: str) -> int:
    """A successful destructive_query audit row with `detail` as its detail text."""
    with direct(db) as conn:
        conn.execute(
            "INSERT INTO query_log (ts, session, tool, ok, detail) "
            "VALUES ('2026-01-01T00:00:00.000Z', 's', 'destructive_query', 1, ?)",
            (detail,),
        )
        return int(conn.last_insert_rowid())


@pytest.mark.parametrize("detail", ["not json", "[1]", "{}"])
def test_a_call_without_undo_data_has_nothing_to_undo(
    world: Service, db_path: Path, detail: str
) -> None:
    call = forged_call(db_path, detail)
    with pytest.raises(UndoRefused, match="changed no rows: there is nothing to undo"):
        world.undo(call)
    assert world.undoable() == []


def test_the_undo_audit_row_says_what_was_undone(world: Service, db_path: Path) -> None:
    call = undo_id(world.destructive_query("DELETE FROM t WHERE id = 1", reason="r"))
    (changeset,) = rows(db_path, "SELECT id FROM undo_changesets")[0]
    world.undo(call)
    (detail,) = rows(db_path, "SELECT detail FROM query_log ORDER BY id DESC LIMIT 1")[0]
    assert json.loads(detail) == {"undoes": call, "changeset": changeset}
    world.destructive_query("DELETE FROM t WHERE id = 2", reason="r")
    (second,) = rows(db_path, "SELECT max(id) FROM undo_changesets")[0]
    world.undo(changeset=second)
    (detail,) = rows(db_path, "SELECT detail FROM query_log ORDER BY id DESC LIMIT 1")[0]
    assert json.loads(detail) == {"changeset": second, "undoes": None}


def test_a_table_whose_shape_was_not_kept_is_a_conflict(world: Service, db_path: Path) -> None:
    call = undo_id(world.destructive_query("DELETE FROM w", reason="r"))
    with direct(db_path) as conn:
        conn.execute("DELETE FROM undo_table_shapes WHERE name = 'wlog'")
        conn.execute(
            "UPDATE undo_changesets SET shapes = (SELECT json_group_array(json(value)) "
            "FROM json_each(shapes) WHERE json_extract(value, '$[0]') != 'wlog')"
        )
    with pytest.raises(UndoConflict) as refused:
        world.undo(call)
    assert "(wlog: its shape was not recorded (SCHEMA))" in str(refused.value)


def test_each_undoable_entry_has_exactly_its_fields(world: Service) -> None:
    call = undo_id(world.destructive_query("DELETE FROM t WHERE id = 1", reason="why"))
    (entry,) = world.undoable()
    assert set(entry) == {
        "changeset", "audit_id", "ts", "tool", "kind", "tables", "rows", "reason",
    }  # fmt: skip
    assert (entry["audit_id"], entry["reason"], entry["kind"], entry["rows"]) == (
        f"{call}@{world.db.database_id}",
        "why",
        "DELETE",
        1,
    )
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", entry["ts"])


def test_an_unmatched_changeset_lists_without_a_call(
    world: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(world.audit, "write", lambda entry, ms: None)
    world.destructive_query("DELETE FROM t WHERE id = 1", reason="r")
    (entry,) = world.undoable()
    assert set(entry) == {
        "changeset", "audit_id", "ts", "tool", "kind", "tables", "rows", "reason",
    }  # fmt: skip
    assert (entry["audit_id"], entry["reason"]) == (None, None)


def test_rows_sqlite_skips_are_a_conflict_even_if_the_checks_missed_a_reshape(
    world: Service, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second guard: were the shape checks ever to pass a reshaped table, SQLite would
    skip its rows without a word; the count of offered rows still refuses the undo."""
    call = undo_id(world.destructive_query("DELETE FROM pair WHERE a = 1", reason="r"))
    world.destructive_query("ALTER TABLE pair DROP COLUMN v", reason="r")
    monkeypatch.setattr("sqlgate.engine.undo.restore.shape_conflict", lambda *_: None)
    with pytest.raises(UndoConflict) as refused:
        world.undo(call)
    assert "(pair: SQLite skipped 1 of its rows: its columns no longer match (SCHEMA))" in str(
        refused.value
    )
    assert rows(db_path, "SELECT count(*) FROM pair WHERE a = 1") == [(0,)]


@pytest.mark.parametrize(
    ("rule", "mode"),
    [
        pytest.param({"protect_table": ("T",)}, "T, which is protected", id="protected"),
        pytest.param({"append_only_table": ("t",)}, "t, which is append-only", id="append-only"),
        pytest.param({"protect_table": ("pair",)}, None, id="another-table-protected"),
    ],
)
def test_an_agents_undo_never_changes_a_table_guarded_since_the_call(
    make_service: Callable[..., Service], db_path: Path, rule: dict[str, Any], mode: str | None
) -> None:
    with direct(db_path) as conn:
        conn.execute(SCHEMA)
    call = undo_id(make_service(adopt_db=True).destructive_query("DELETE FROM t WHERE id = 1", "r"))
    guarded = make_service(adopt_db=True, **rule)
    ref = f"{call}@{guarded.db.database_id}"
    if mode is None:
        assert guarded.undo_call(ref, reason="back").startswith("undone")
        return
    with pytest.raises(UndoRefused) as refused:
        guarded.undo_call(ref, reason="back")
    assert f"it would change {mode} by the server's policy" in str(refused.value)
    assert rows(db_path, "SELECT id FROM t WHERE id = 1") == []  # nothing was undone
    assert guarded.undo(call).startswith("undone")  # a person may


def test_an_undo_whose_user_commit_fails_leaves_the_records_untouched_and_can_be_redone(
    world: Service, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The records' lock is taken before the user's COMMIT; when that COMMIT fails, the lock
    is given back (ROLLBACK) and the call stays undoable ("Two files, one order")."""
    import sqlgate.engine.undo.restore as restore

    call = undo_id(world.write_query("UPDATE t SET v = 'z' WHERE id = 1"))

    def failing(name: str) -> None:
        if name == "undo.before_commit":
            raise OSError("the disk is gone")

    monkeypatch.setattr(restore, "fault_point", failing)
    with pytest.raises(SqlgateError, match="internal error"):
        world.undo(call)
    assert world.db.keeper is not None
    assert not world.db.keeper.in_transaction
    assert rows(db_path, "SELECT v FROM t WHERE id = 1") == [("z",)]
    monkeypatch.undo()
    assert world.undo(call).startswith("undone:")
    assert rows(db_path, "SELECT v FROM t WHERE id = 1") == [("a",)]


def test_a_mark_that_fails_is_logged_and_the_undo_stands(
    world: Service, db_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The rows are back when the record's mark fails: the answer says undone, the failure
    goes to sqlgate's log, and the records' connection is left out of any transaction."""
    import sqlgate.engine.undo.restore as restore

    call = undo_id(world.write_query("UPDATE t SET v = 'z' WHERE id = 2"))

    def broken(*args: object) -> None:
        raise apsw.IOError("the records file went away")

    monkeypatch.setattr(restore, "mark_undone", broken)
    with caplog.at_level("ERROR", logger="sqlgate"):
        assert world.undo(call).startswith("undone:")
    assert rows(db_path, "SELECT v FROM t WHERE id = 2") == [("b",)]
    assert [r.name for r in caplog.records if "the mark failed" in r.getMessage()] == ["sqlgate"]
    assert world.db.keeper is not None
    assert not world.db.keeper.in_transaction


def test_a_database_opened_read_only_undoes_nothing(world: Service, settings: Any) -> None:
    call = undo_id(world.write_query("UPDATE t SET v = 'z' WHERE id = 3"))
    reader = Service.open(settings, read_only=True)
    try:
        with pytest.raises(UndoRefused, match="opened read-only; nothing was undone"):
            reader.undo(call)
    finally:
        reader.close()
