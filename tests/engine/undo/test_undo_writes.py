"""Row-level undo of write_query (issue 19): every row change keeps its changeset, and its
answer names the call and the database, so the undo is exact, or refused with nothing
changed, and never reaches another database."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from sqlgate.config import Settings
from sqlgate.engine.framing import counted
from sqlgate.engine.running.writes import undo_budget
from sqlgate.engine.undo.writes import PRUNE_EVERY, prune_writes
from sqlgate.errors import (
    MassRewrite,
    NotFound,
    NotUndoable,
    UndoConflict,
    UndoRefused,
    WrongDatabase,
)
from sqlgate.service import Service
from tests.engine.undo.test_undo import direct, dump

HINT = re.compile(
    r"; undo: sqlgate undo (?P<id>\d+)@(?P<db>[0-9a-f]{8}) --db (?P<path>\S+)$", re.MULTILINE
)

SCHEMA = """
CREATE TABLE tasks (id INTEGER PRIMARY KEY, title TEXT UNIQUE, priority INT, done INT);
INSERT INTO tasks VALUES (1, 'write', 1, 0), (2, 'test', 2, 0), (3, 'ship', 3, 0),
    (4, 'rest', 4, 1);
CREATE TABLE parent (id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE child (id INTEGER PRIMARY KEY,
    parent_id INTEGER REFERENCES parent (id) ON UPDATE CASCADE, note TEXT);
INSERT INTO parent VALUES (1, 'p1'), (2, 'p2');
INSERT INTO child VALUES (10, 1, 'c10'), (11, 1, 'c11'), (12, 2, 'c12');
CREATE TABLE log (id INTEGER PRIMARY KEY, what TEXT);
CREATE TRIGGER tasks_added AFTER INSERT ON tasks
    BEGIN INSERT INTO log (what) VALUES ('added ' || NEW.title); END;
CREATE TABLE keyed (k TEXT PRIMARY KEY, v);
"""


@pytest.fixture
def world(make_service: Callable[..., Service], db_path: Path) -> Service:
    service = make_service()
    with direct(db_path) as conn:
        conn.execute(SCHEMA)
    return service


def hint(text: str) -> re.Match[str]:
    found = HINT.search(text)
    assert found, text
    return found


def newest_call(service: Service) -> int:
    """The audit id of the service's newest call, read in its records."""
    with service.db.reading_records() as conn:
        (newest,) = conn.execute("SELECT max(id) FROM query_log").fetchone()
    return int(newest)


def ref(text: str) -> str:
    found = hint(text)
    return f"{found['id']}@{found['db']}"


WRITES = [
    pytest.param("INSERT INTO tasks (title, priority) VALUES ('plan', 5)", 1, id="insert"),
    pytest.param("UPDATE tasks SET priority = 0 WHERE id IN (1, 2)", 2, id="update"),
    pytest.param(
        "INSERT INTO tasks (id, title, priority) VALUES (1, 'write', 9), (7, 'new', 7) "
        "ON CONFLICT (id) DO UPDATE SET priority = excluded.priority",
        2,
        id="upsert",
    ),
    pytest.param(
        "REPLACE INTO tasks (id, title, priority) VALUES (2, 'retest', 8)", 1, id="replace"
    ),
    pytest.param(
        "INSERT OR REPLACE INTO tasks (id, title, priority) VALUES (9, 'ship', 1)",
        1,
        id="replace-deletes-the-unique-conflict",
    ),
    pytest.param("UPDATE parent SET id = 5 WHERE id = 1", 1, id="foreign-key-cascade"),
    pytest.param("INSERT INTO keyed VALUES ('a', 1), ('b', x'00ff')", 2, id="text-key"),
]


@pytest.mark.parametrize(("sql", "rows"), WRITES)
def test_every_kind_of_write_is_undone_exactly(
    world: Service, db_path: Path, sql: str, rows: int
) -> None:
    before = dump(db_path)
    out = world.write_query(sql)
    assert out.startswith(f"ok: {counted(rows, 'row')} affected")
    assert dump(db_path) != before
    answer = world.undo(ref(out))
    assert answer.startswith(f"undone: call {hint(out)['id']} (")
    assert answer.endswith(f" in {db_path.absolute()}")
    assert dump(db_path) == before


def test_rows_a_trigger_wrote_on_the_call_s_behalf_are_undone_too(
    world: Service, db_path: Path
) -> None:
    before = dump(db_path)
    out = world.write_query("INSERT INTO tasks (title) VALUES ('logged')")
    with direct(db_path) as conn:
        assert conn.execute("SELECT what FROM log").fetchall() == [("added logged",)]
    assert "2 rows in tasks, log" in world.undo(ref(out))
    assert dump(db_path) == before


def test_the_hint_names_the_database_so_it_works_from_any_folder(
    world: Service, db_path: Path
) -> None:
    out = world.write_query("UPDATE tasks SET done = 1 WHERE id = 3")
    found = hint(out)
    assert found["db"] == world.db.database_id
    words = shlex.split(out.split("; undo: ", 1)[1])
    assert words[:2] == ["sqlgate", "undo"]
    assert words[3:] == ["--db", str(db_path.absolute())]
    assert Path(words[4]).is_absolute()


def test_a_path_with_spaces_is_quoted_for_the_shell(
    make_service: Callable[..., Service], tmp_path: Path
) -> None:
    folder = tmp_path / "my project"
    folder.mkdir()
    service = make_service(db=folder / "agent db.sqlite")
    service.write_query("CREATE TABLE t (v)")
    out = service.write_query("INSERT INTO t VALUES (1)")
    assert shlex.split(out.split("; undo: ", 1)[1])[-1] == str(folder / "agent db.sqlite")


def test_an_id_of_another_database_is_refused_and_changes_nothing(
    world: Service, db_path: Path, make_service: Callable[..., Service], tmp_path: Path
) -> None:
    other = make_service(db=tmp_path / "other.db")
    other.write_query("CREATE TABLE tasks (id INTEGER PRIMARY KEY, title TEXT)")
    foreign = ref(other.write_query("INSERT INTO tasks (title) VALUES ('theirs')"))
    world.write_query("INSERT INTO tasks (title) VALUES ('mine')")  # a call with that number
    before = dump(db_path)
    with pytest.raises(WrongDatabase, match="belongs to another database") as caught:
        world.undo(foreign)
    assert caught.value.exit_code == 7
    assert str(db_path.absolute()) in str(caught.value)
    assert dump(db_path) == before


def test_a_plain_number_names_a_call_of_this_database(world: Service, db_path: Path) -> None:
    before = dump(db_path)
    out = world.write_query("UPDATE tasks SET title = 'written' WHERE id = 1")
    world.undo(int(hint(out)["id"]))
    assert dump(db_path) == before


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE tasks SET priority = 0 WHERE id = 99",
        "INSERT INTO tasks (id, title) VALUES (1, 'x') ON CONFLICT DO NOTHING",
    ],
)
def test_a_call_that_changed_no_row_offers_no_undo(world: Service, sql: str) -> None:
    out = world.write_query(sql)
    assert out == "ok: 0 rows affected"
    call = newest_call(world)
    with pytest.raises(UndoRefused, match="changed no rows: there is nothing to undo"):
        world.undo(call)


def test_an_update_that_sets_what_was_there_says_nothing_needs_undoing(world: Service) -> None:
    out = world.write_query("UPDATE tasks SET priority = priority WHERE id = 1")
    assert out == "ok: 1 row affected; no value changed, so there is nothing to undo"


def test_an_undo_refuses_rows_changed_since_and_changes_nothing(
    world: Service, db_path: Path
) -> None:
    call = ref(world.write_query("UPDATE tasks SET priority = 0 WHERE id = 1"))
    world.write_query("UPDATE tasks SET done = 1 WHERE id = 1")  # a column it did not change
    before = dump(db_path)
    with pytest.raises(UndoConflict) as refused:
        world.undo(call)
    assert "tasks row (1): changed again" in refused.value.for_cli()
    assert dump(db_path) == before


def test_an_inserted_row_changed_since_is_a_conflict(world: Service, db_path: Path) -> None:
    call = ref(world.write_query("INSERT INTO tasks (id, title) VALUES (20, 'new')"))
    world.write_query("UPDATE tasks SET priority = 1 WHERE id = 20")
    before = dump(db_path)
    with pytest.raises(UndoConflict, match="conflict"):
        world.undo(call)
    assert dump(db_path) == before


def test_an_undo_cannot_be_undone_nor_run_twice(world: Service, db_path: Path) -> None:
    call = ref(world.write_query("INSERT INTO tasks (title) VALUES ('once')"))
    world.undo(call)
    undo_row = newest_call(world)
    with pytest.raises(UndoRefused, match="is itself an undo"):
        world.undo(undo_row)
    with pytest.raises(UndoRefused, match="already undone"):
        world.undo(call)


def test_write_undo_can_be_turned_off(make_service: Callable[..., Service], db_path: Path) -> None:
    service = make_service(write_undo_keep=0)
    service.write_query("CREATE TABLE t (v)")
    out = service.write_query("INSERT INTO t VALUES (1)")
    assert (
        out == "ok: 1 row affected (last_insert_rowid=1); undo: none kept (--write-undo-keep is 0)"
    )
    with direct(db_path) as conn:
        assert conn.execute("SELECT count(*) FROM undo_changesets").fetchone() == (0,)
    call = newest_call(service)
    with pytest.raises(UndoRefused, match=r"kept no undo data \(--write-undo-keep is 0\)"):
        service.undo(call)


def refused(service: Service, db_path: Path, sql: str, *words: str) -> str:
    """Assert that write_query refuses `sql` (NotUndoable, audited as refused) with `words`
    in its message, and that nothing changed; returns the message."""
    before = dump(db_path)
    with pytest.raises(NotUndoable) as caught:
        service.write_query(sql)
    message = str(caught.value)
    assert message.startswith("refused and rolled back, nothing was changed: write_query keeps")
    for word in words:
        assert word in message
    assert dump(db_path) == before
    with direct(db_path) as conn:
        (error, detail) = conn.execute(
            "SELECT error, detail FROM query_log ORDER BY id DESC LIMIT 1"
        ).fetchone()
    assert (error, json.loads(detail)["refused"]) == (message, True)
    return message


SNAPSHOT_FIRST = (
    "Run it with destructive_query, which takes a whole-file snapshot first (the person may be "
    "asked to approve it)"
)


@pytest.mark.parametrize(
    "sql",
    [
        pytest.param("INSERT INTO docs (body) VALUES ('hello')", id="fts5"),
        pytest.param("INSERT INTO docs (docs) VALUES ('optimize')", id="fts5-command"),
        pytest.param("INSERT INTO indexed (body) VALUES ('hello')", id="fts5-by-trigger"),
        pytest.param("INSERT INTO boxes VALUES (2, 0, 1)", id="rtree"),
    ],
)
def test_a_virtual_table_write_is_refused_and_destructive_query_snapshots_it(
    world: Service, db_path: Path, sql: str
) -> None:
    world.write_query("CREATE VIRTUAL TABLE docs USING fts5 (body)")
    world.write_query("CREATE VIRTUAL TABLE boxes USING rtree (id, x0, x1)")
    world.write_query("CREATE TABLE indexed (id INTEGER PRIMARY KEY, body TEXT)")
    world.destructive_query(
        "CREATE TRIGGER indexed_added AFTER INSERT ON indexed "
        "BEGIN INSERT INTO docs (rowid, body) VALUES (NEW.id, NEW.body); END",
        reason="r",
    )
    message = refused(world, db_path, sql, SNAPSHOT_FIRST)
    assert re.search(
        r"cannot for this one: it writes (docs|boxes)\w*, a virtual table or its shadow table "
        r"\(fts5, rtree\), which a changeset cannot restore\. Run it",
        message,
    ), message
    assert "; snapshot: " in world.destructive_query(sql, reason="r")


SPLIT = (
    "Split it into smaller calls, or run it with destructive_query, which takes a whole-file "
    "snapshot first when the change is too large to keep row by row"
)


def test_a_change_over_the_byte_budget_is_refused(
    make_service: Callable[..., Service], db_path: Path
) -> None:
    service = make_service(write_undo_mb=1, max_value_bytes=1_000_000)
    service.write_query("CREATE TABLE big (b BLOB)")
    sql = (
        "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 30) "
        "INSERT INTO big SELECT randomblob(100000) FROM c"
    )
    refused(service, db_path, sql, "larger than the 1 MiB undo budget (--write-undo-mb)", SPLIT)
    assert service.read_query("SELECT count(*) FROM big") == "count(*)\n0\n# 1 row"
    assert "; undo: sqlgate undo " in service.destructive_query(sql, reason="r")


def test_a_null_primary_key_is_refused(world: Service, db_path: Path) -> None:
    refused(world, db_path, "INSERT INTO keyed VALUES (NULL, 1)", "keyed whose PRIMARY KEY (k)")
    assert world.read_query("SELECT count(*) FROM keyed") == "count(*)\n0\n# 1 row"


def test_the_oldest_write_undo_data_is_pruned_first(
    make_service: Callable[..., Service], db_path: Path
) -> None:
    service = make_service(write_undo_keep=3)
    service.write_query("CREATE TABLE t (v)")
    calls = [ref(service.write_query("INSERT INTO t VALUES (?)", [n])) for n in range(PRUNE_EVERY)]
    with direct(db_path) as conn:
        kept = [
            row[0]
            for row in conn.execute(
                "SELECT id FROM undo_changesets WHERE tool = 'write_query' ORDER BY id"
            )
        ]
    assert len(kept) <= 3 + PRUNE_EVERY - 1
    assert kept[-3:] == sorted(kept)[-3:]
    with pytest.raises(UndoRefused, match="pruned, oldest first"):
        service.undo(calls[0])
    service.undo(calls[-1])  # the newest is kept


def test_destructive_undo_data_is_pruned_apart_from_writes(
    make_service: Callable[..., Service], db_path: Path
) -> None:
    service = make_service(write_undo_keep=1, snapshots_keep=5)
    service.write_query("CREATE TABLE t (v)")
    for n in range(3):
        service.write_query("INSERT INTO t VALUES (?)", [n])
    deleted = service.destructive_query("DELETE FROM t WHERE v = 0", reason="r")
    for n in range(PRUNE_EVERY):
        service.write_query("INSERT INTO t VALUES (?)", [n])
    service.undo(ref(deleted))  # writes pruned down to one never evict a destructive call


def test_the_guard_still_rolls_back_a_mass_rewrite_with_undo_on(
    make_service: Callable[..., Service], db_path: Path
) -> None:
    service = make_service(max_update_rows=3)
    service.write_query("CREATE TABLE t (id INTEGER PRIMARY KEY, v)")
    service.write_query("INSERT INTO t (v) VALUES (1), (2), (3), (4)")
    before = dump(db_path)
    with pytest.raises(MassRewrite, match="more than 3 existing rows"):
        service.write_query("UPDATE t SET v = v + 10 WHERE id > 0")
    assert dump(db_path) == before
    assert service.write_query("UPDATE t SET v = v + 10 WHERE id > 1").startswith(
        "ok: 3 rows affected; undo: "
    )


def test_rows_a_replace_deletes_count_as_rewritten(
    make_service: Callable[..., Service], db_path: Path
) -> None:
    service = make_service(max_update_rows=1)
    service.write_query("CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT UNIQUE, j TEXT UNIQUE)")
    service.write_query("INSERT INTO t VALUES (1, 'a', 'x'), (2, 'b', 'y')")
    before = dump(db_path)
    with pytest.raises(MassRewrite):  # deletes the rows holding 'a' and 'y'
        service.write_query("REPLACE INTO t VALUES (3, 'a', 'y')")
    assert dump(db_path) == before


def test_the_audit_row_names_the_undo_data(world: Service, db_path: Path) -> None:
    out = world.write_query("INSERT INTO tasks (title) VALUES ('audited')")
    with direct(db_path) as conn:
        (detail,) = conn.execute(
            "SELECT detail FROM query_log WHERE id = ?", (int(hint(out)["id"]),)
        ).fetchone()
        record = conn.execute(
            "SELECT tool, kind, changes FROM undo_changesets WHERE id = ?",
            (json.loads(detail)["undo"],),
        ).fetchone()
    assert record == ("write_query", "INSERT", 2)


def test_the_listing_shows_write_calls_with_their_database(world: Service) -> None:
    out = world.write_query("INSERT INTO tasks (title) VALUES ('listed')")
    (item,) = world.undoable()
    assert item["audit_id"] == ref(out)
    assert item["tool"] == "write_query"


def test_an_unknown_call_is_not_found(world: Service) -> None:
    with pytest.raises(NotFound):
        world.undo(f"9999@{world.db.database_id}")


# -- a CREATE through write_query, and create_view, are undone by what they made ---------


def schema_of(db: Path) -> list[tuple[str, str]]:
    with direct(db) as conn:
        return [
            (str(kind), str(name))
            for kind, name in conn.execute(
                "SELECT type, name FROM sqlite_schema WHERE name NOT LIKE 'sqlite%' ORDER BY 1, 2"
            )
        ]


@pytest.mark.parametrize(
    "sql",
    [
        "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT UNIQUE)",
        "CREATE INDEX tasks_by_priority ON tasks (priority)",
        "CREATE VIRTUAL TABLE docs USING fts5 (body)",
        "CREATE TABLE copy AS SELECT * FROM tasks",
    ],
)
def test_a_create_is_undone_by_removing_what_it_made(
    world: Service, db_path: Path, sql: str
) -> None:
    before = schema_of(db_path)
    out = world.write_query(sql)
    assert schema_of(db_path) != before
    answer = world.undo(ref(out))
    assert answer.startswith(f"undone: call {hint(out)['id']} (CREATE ")
    assert ": removed) in " in answer
    assert schema_of(db_path) == before


def test_a_create_that_made_nothing_offers_no_undo(world: Service) -> None:
    answer = world.write_query("CREATE TABLE IF NOT EXISTS tasks (x)")
    assert answer.startswith("ok: nothing created: table `tasks` already exists")
    assert "undo" not in answer


def test_a_table_written_into_since_is_not_dropped(world: Service, db_path: Path) -> None:
    call = ref(world.write_query("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)"))
    world.write_query("INSERT INTO notes (body) VALUES ('keep me')")
    before = (schema_of(db_path), dump(db_path))
    with pytest.raises(UndoConflict, match="written into it") as refused:
        world.undo(call)
    assert "remove what stands in the way with destructive_query" in str(refused.value)
    assert (schema_of(db_path), dump(db_path)) == before


def test_create_view_names_its_undo_and_a_replace_gets_the_old_view_back(
    world: Service,
) -> None:
    first = world.create_view("open_tasks", "SELECT * FROM tasks WHERE done = 0")
    assert hint(first)
    replaced = world.create_view("open_tasks", "SELECT id FROM tasks WHERE done = 0", replace=True)
    assert "(CREATE VIEW open_tasks: the view it replaced is back)" in world.undo(ref(replaced))
    assert world.read_query("SELECT count(*) FROM pragma_table_info('open_tasks')") == (
        "count(*)\n4\n# 1 row"
    )


# -- pruning in batches (engine.undo.writes.prune_writes) ---------------------------------


def _kept_calls(make_service: Callable[..., Service], db_path: Path, tools: list[str]) -> None:
    """A database holding one undo record per entry of `tools`, ids 1, 2, ... in order."""
    make_service().close()
    with direct(db_path) as conn:
        conn.executemany(
            "INSERT INTO undo_changesets (ts, session, kind, tables, changes, bytes, tool) "
            "VALUES ('2026-01-01T00:00:00.000Z', 's', 'INSERT', '[]', 1, 10, ?)",
            [(tool,) for tool in tools],
        )


def _ids(db_path: Path) -> list[int]:
    with direct(db_path) as conn:
        return [int(r[0]) for r in conn.execute("SELECT id FROM undo_changesets ORDER BY id")]


@pytest.mark.parametrize(
    ("changeset_id", "size", "pruned"),
    [
        pytest.param(PRUNE_EVERY, 10, 6, id="its-turn"),
        pytest.param(PRUNE_EVERY + 1, 10, 0, id="not-its-turn"),
        pytest.param(PRUNE_EVERY - 1, 10, 0, id="just-before-its-turn"),
        pytest.param(7, 79, 6, id="a-call-over-1/128-of-the-budget"),
        pytest.param(7, 78, 0, id="a-call-of-exactly-1/128-of-the-budget"),
    ],
)
def test_write_undo_data_is_pruned_on_its_turn_or_after_a_big_call(
    make_service: Callable[..., Service],
    db_path: Path,
    changeset_id: int,
    size: int,
    pruned: int,
) -> None:
    _kept_calls(make_service, db_path, ["write_query"] * 5 + ["create_view"] * 3)
    with direct(db_path) as conn:
        budget = 78 * PRUNE_EVERY
        assert prune_writes(conn, changeset_id, size, keep=2, max_bytes=budget) == pruned
    assert _ids(db_path) == ([7, 8] if pruned else list(range(1, 9)))


def test_pruning_counts_bytes_and_spares_destructive_calls(
    make_service: Callable[..., Service], db_path: Path
) -> None:
    _kept_calls(make_service, db_path, ["destructive_query", "write_query", "create_view"] * 3)
    with direct(db_path) as conn:  # 10 bytes each: 25 bytes keep the newest two
        assert prune_writes(conn, PRUNE_EVERY, 10, keep=100, max_bytes=25) == 4
    assert _ids(db_path) == [1, 4, 7, 8, 9]


# -- what the write path decides, pinned (mutation testing of engine/running/writes.py) -----------


@pytest.mark.parametrize(("mb", "expected"), [(1, 1_048_576), (3, 3 * 1_048_576)])
def test_one_call_s_undo_budget_is_write_undo_mb_in_bytes(
    make_service: Callable[..., Service], mb: int, expected: int
) -> None:
    service = make_service(write_undo_mb=mb, undo_max_mb=64, heap_limit_mb=256)
    assert service.sql.writes.budget() == expected


@pytest.mark.parametrize(
    ("undo_mb", "heap_mb", "expected_mb"),
    [
        pytest.param(64, 256, 64, id="both-the-same"),
        pytest.param(64, 1024, 64, id="undo-max-mb-the-smaller"),
        pytest.param(64, 100, 25, id="a-quarter-of-the-heap-the-smaller"),
        pytest.param(8, 7, 1, id="a-quarter-rounded-down"),
        pytest.param(8, 3, 1, id="at-least-one-mib"),
        pytest.param(1, 256, 1, id="one-mib-asked"),
    ],
)
def test_a_call_s_session_budget_is_undo_max_mb_and_at_most_a_quarter_of_the_heap(
    settings: Settings, undo_mb: int, heap_mb: int, expected_mb: int
) -> None:
    """What one call's session may hold, write_query's and destructive_query's alike."""
    chosen = replace(settings, undo_max_mb=undo_mb, heap_limit_mb=heap_mb)
    assert undo_budget(chosen) == expected_mb * 1_048_576


def test_an_update_whose_old_rows_outgrow_the_budget_is_refused(
    make_service: Callable[..., Service], db_path: Path
) -> None:
    service = make_service(write_undo_mb=1, max_value_bytes=1_000_000)
    service.write_query("CREATE TABLE big (id INTEGER PRIMARY KEY, b BLOB)")
    for _ in range(3):
        service.write_query(
            "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 10) "
            "INSERT INTO big (b) SELECT randomblob(100000) FROM c"
        )
    message = refused(service, db_path, "UPDATE big SET b = zeroblob(10) WHERE id > 0")
    assert message == (
        "refused and rolled back, nothing was changed: write_query keeps what undoes every "
        "change it makes, and cannot for this one: the change is larger than the 1 MiB undo "
        f"budget (--write-undo-mb). {SPLIT} (the person may be asked to approve it)"
    )


def test_a_changeset_of_exactly_the_budget_is_kept(
    make_service: Callable[..., Service], db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = make_service()
    service.write_query("CREATE TABLE t (v)")
    service.write_query("INSERT INTO t VALUES ('sized')")
    with direct(db_path) as conn:
        (size,) = conn.execute(
            "SELECT max(bytes) FROM undo_changesets WHERE kind = 'INSERT'"
        ).fetchone()
    monkeypatch.setattr(service.sql.writes, "budget", lambda: int(size))
    assert "; undo: sqlgate undo " in service.write_query("INSERT INTO t VALUES ('sized')")
    monkeypatch.setattr(service.sql.writes, "budget", lambda: int(size) - 1)
    refused(service, db_path, "INSERT INTO t VALUES ('sized')", "--write-undo-mb")


def test_write_undo_data_is_bounded_by_write_undo_mb_in_all(
    make_service: Callable[..., Service], db_path: Path
) -> None:
    service = make_service(write_undo_mb=2, max_value_bytes=1_000_000)
    service.write_query("CREATE TABLE big (b BLOB)")
    calls = [
        ref(service.write_query("INSERT INTO big VALUES (randomblob(100000))")) for _ in range(12)
    ]  # 1.2 MB in all: under 2 MiB, over 1 MiB
    service.undo(calls[0])  # still kept


def test_the_answer_and_audit_row_of_a_write(world: Service, db_path: Path) -> None:
    out = world.write_query("INSERT INTO tasks (title) VALUES ('x')")
    with direct(db_path) as conn:
        (rows, detail) = conn.execute(
            "SELECT rows, detail FROM query_log WHERE id = ?", (int(hint(out)["id"]),)
        ).fetchone()
    assert rows == 1  # the statement's own row (SQLite does not count the trigger's)
    assert {k: v for k, v in json.loads(detail).items() if k in ("kind", "changes")} == {
        "kind": "INSERT",
        "changes": 1,
    }


def test_a_create_s_record_is_write_query_s_and_its_audit_row_counts_no_rows(
    world: Service, db_path: Path
) -> None:
    out = world.write_query("CREATE TABLE notes (id INTEGER PRIMARY KEY)")
    with direct(db_path) as conn:
        (rows, detail) = conn.execute(
            "SELECT rows, detail FROM query_log WHERE id = ?", (int(hint(out)["id"]),)
        ).fetchone()
        parsed = json.loads(detail)
        (tool, changes) = conn.execute(
            "SELECT tool, changes FROM undo_changesets WHERE id = ?", (parsed["undo"],)
        ).fetchone()
    assert (rows, parsed["kind"], parsed["changes"]) == (0, "CREATE TABLE", 0)
    assert (tool, changes) == ("write_query", 0)


@pytest.mark.parametrize(
    ("overrides", "sql", "expected"),
    [
        pytest.param({}, "ANALYZE", "ok: ANALYZE done", id="not-a-row-change"),
        pytest.param(
            {"audit": False},
            "INSERT INTO t VALUES (1)",
            "ok: 1 row affected (last_insert_rowid=1); undo: none kept (the audit log is off "
            "(--no-audit); undo is keyed by its rows)",
            id="no-audit",
        ),
    ],
)
def test_writes_that_keep_no_undo_data_say_so_or_need_none(
    make_service: Callable[..., Service], overrides: dict[str, object], sql: str, expected: str
) -> None:
    service = make_service(**overrides)
    service.write_query("CREATE TABLE t (v)")
    service.write_query("CREATE INDEX t_v ON t (v)")
    assert service.write_query(sql) == expected


def test_a_table_whose_columns_take_every_rowid_name_is_refused(
    world: Service, db_path: Path
) -> None:
    """The session extension records an UPDATE of such a table as a DELETE, whose inverse
    would add a row: sqlgate keeps no changeset of it, and refuses the write."""
    with direct(db_path) as conn:
        conn.execute("CREATE TABLE odd (rowid, _rowid_, oid); INSERT INTO odd VALUES (1, 2, 3)")
    refused(
        world,
        db_path,
        "UPDATE odd SET oid = 4 WHERE oid = 3",
        "cannot for this one: a changed table has no rowid the undo can name (columns rowid, "
        f"_rowid_ and oid). {SNAPSHOT_FIRST}",
    )
    deleted = world.destructive_query("UPDATE odd SET oid = 5", reason="r")
    assert "; snapshot: " in deleted
    assert world.read_query("SELECT * FROM odd") == "rowid,_rowid_,oid\n1,2,5\n# 1 row"


def test_an_undo_call_is_itself_never_undone(world: Service) -> None:
    call = ref(world.write_query("INSERT INTO tasks (title) VALUES ('oops')"))
    world.undo_call(call, reason="a typo")
    taken_back = newest_call(world)
    with pytest.raises(UndoRefused, match=f"call {taken_back} is itself an undo"):
        world.undo(taken_back)


def test_the_person_asked_to_confirm_an_undo_call_is_told_which_call(world: Service) -> None:
    call = ref(world.write_query("UPDATE tasks SET done = 1 WHERE id = 2"))
    assert (
        world.describe_undo(call) == "write_query (1 row): UPDATE tasks SET done = 1 WHERE id = 2"
    )
    with pytest.raises(NotFound, match="no call 999"):
        world.describe_undo(f"999@{world.db.database_id}")
    with pytest.raises(WrongDatabase):
        world.describe_undo("1@00000000")


def test_an_undo_names_one_call_exactly(world: Service) -> None:
    from sqlgate.engine.undo.restore import UndoTarget
    from sqlgate.errors import InvalidArgument

    for target in (UndoTarget(), UndoTarget(audit_id=1, changeset=1)):
        with pytest.raises(InvalidArgument, match="name the call to undo"):
            world.undoing.undo(target)
    assert world.undoing.describe(UndoTarget(changeset=3)) == "changeset 3"


def test_a_write_past_its_deadline_times_out_and_changes_nothing(
    make_service: Callable[..., Service], db_path: Path
) -> None:
    from sqlgate.errors import QueryTimeout
    from tests.conftest import FakeClock

    service = make_service(FakeClock(step=0.01), query_timeout=1.0)
    service.write_query("CREATE TABLE n (x)")
    before = dump(db_path)
    with pytest.raises(QueryTimeout):
        service.write_query(
            "INSERT INTO n WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
            "SELECT x FROM c"
        )
    assert dump(db_path) == before


def test_a_changeset_that_does_not_fit_in_memory_is_refused(
    world: Service, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import apsw

    class NoRoom(apsw.Session):
        def changeset(self) -> bytes:
            raise apsw.NoMemError("out of memory")

    monkeypatch.setattr(apsw, "Session", NoRoom)
    refused(
        world,
        db_path,
        "UPDATE tasks SET done = 1 WHERE id = 1",
        "cannot for this one: the changeset did not fit in memory (--heap-limit-mb). Split it",
    )
    deleted = world.destructive_query("DELETE FROM tasks WHERE id = 1", reason="r")
    assert "; snapshot: " in deleted


def test_create_view_keeps_no_record_when_write_undo_is_off(
    make_service: Callable[..., Service], db_path: Path
) -> None:
    service = make_service(write_undo_keep=0)
    assert service.create_view("v", "SELECT 1") == "ok: view v created"
    with direct(db_path) as conn:
        assert conn.execute("SELECT count(*) FROM undo_changesets").fetchone() == (0,)


def test_create_view_records_are_pruned_like_writes(
    make_service: Callable[..., Service], db_path: Path
) -> None:
    service = make_service(write_undo_keep=2)
    for n in range(PRUNE_EVERY):
        service.create_view(f"v{n}", f"SELECT {n}")
    assert _ids(db_path) == [PRUNE_EVERY - 1, PRUNE_EVERY]
