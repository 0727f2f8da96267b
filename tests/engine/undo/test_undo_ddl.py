"""Undo of additive DDL: a CREATE keeps the catalog rows it made; the undo drops exactly those,
or refuses (and changes nothing) when they are gone, changed, written into or depended on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import apsw
import pytest

from sqlgate.engine.connect import immediate_transaction
from sqlgate.engine.statements.preflight import inspect_statement
from sqlgate.engine.undo.checks import Conflict
from sqlgate.engine.undo.ddl import (
    capturing_schema,
    created_since,
    parse_created,
    schema_rows,
    store_created,
    table_digest,
    undo_created,
)
from sqlgate.engine.undo.ddl_checks import SchemaRow, references, row_mark
from sqlgate.service import Service
from tests.engine.undo.test_undo import direct  # another program's connection: "someone else"

TS = "2026-01-01T00:00:00.000Z"
SOURCE = """
CREATE TABLE src (id INTEGER PRIMARY KEY, body TEXT, n REAL);
INSERT INTO src VALUES (1, 'alpha', 1.5), (2, 'beta', NULL), (3, 'gamma', -2.0);
CREATE TABLE other (id INTEGER PRIMARY KEY, v TEXT);
"""


def dump(db: Path) -> tuple[list[tuple[Any, ...]], dict[str, list[tuple[Any, ...]]]]:
    """The whole catalog, and every row of every table with a b-tree (shadow tables too)."""
    with direct(db) as conn:
        schema = [
            tuple(row)
            for row in conn.execute(
                "SELECT rowid, type, name, tbl_name, sql FROM sqlite_schema ORDER BY rowid"
            )
        ]
        tables = [
            str(name)
            for (name,) in conn.execute(
                "SELECT name FROM sqlite_schema WHERE type = 'table' AND rootpage > 0"
            )
        ]
        rows = {
            name: sorted((tuple(row) for row in conn.execute(f'SELECT * FROM "{name}"')), key=repr)
            for name in tables
        }
    return schema, rows


def call(service: Service, sql: str, tool: str = "write_query") -> int | None:
    """Run one CREATE the way the write tier will: captured, its record committed to the
    records inside the user's transaction, before the user's COMMIT."""
    keeper = service.db.keeper
    assert keeper is not None
    with service.db.writing() as conn, immediate_transaction(conn):
        with capturing_schema(conn) as created:
            conn.execute(sql)
        if not created.objects:
            return None
        kind = inspect_statement(sql).kind
        with immediate_transaction(keeper):
            return store_created(
                keeper, created.objects, ts=TS, session="s-test", tool=tool, kind=kind
            )


def record_of(service: Service, record_id: int) -> str:
    with service.db.writing() as conn:
        (created,) = conn.execute(
            "SELECT created FROM undo_changesets WHERE id = ?", (record_id,)
        ).fetchone()
    return str(created)


def undo(service: Service, record_id: int, created: str | None = None) -> list[Conflict]:
    """What the restore side will do: one IMMEDIATE transaction, rolled back on conflicts."""
    text = record_of(service, record_id) if created is None else created
    with service.db.writing() as conn:
        conn.execute("BEGIN IMMEDIATE")
        try:
            conflicts = undo_created(conn, text, service.db.protected)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("ROLLBACK" if conflicts else "COMMIT")
    return conflicts


def texts(conflicts: list[Conflict]) -> str:
    return "; ".join(conflict.describe() for conflict in conflicts)


@pytest.fixture
def ready(service: Service, db_path: Path) -> Service:
    with direct(db_path) as conn:
        conn.execute(SOURCE)
    return service


# -- capture ---------------------------------------------------------------------------------

CREATES = {
    "table": (
        "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)",
        [("table", "notes", None)],
    ),
    "unique-autoindexes": (
        "CREATE TABLE u (a UNIQUE, b TEXT, c, PRIMARY KEY (b), UNIQUE (c))",
        [
            ("table", "u", None),
            ("index", "sqlite_autoindex_u_1", "u"),
            ("index", "sqlite_autoindex_u_2", "u"),
            ("index", "sqlite_autoindex_u_3", "u"),
        ],
    ),
    "without-rowid": (
        "CREATE TABLE w (k TEXT PRIMARY KEY, v) WITHOUT ROWID",
        [("table", "w", None)],
    ),
    "as-select": (
        "CREATE TABLE copy AS SELECT id, body FROM src WHERE id > 1",
        [("table", "copy", None)],
    ),
    "index": ("CREATE INDEX src_body ON src (body)", [("index", "src_body", None)]),
    "unique-index": (
        "CREATE UNIQUE INDEX src_n ON src (n, body)",
        [("index", "src_n", None)],
    ),
    "fts5": (
        "CREATE VIRTUAL TABLE docs USING fts5(title, body)",
        [
            ("virtual table", "docs", None),
            ("shadow table", "docs_data", "docs"),
            ("shadow table", "docs_idx", "docs"),
            ("shadow table", "docs_content", "docs"),
            ("shadow table", "docs_docsize", "docs"),
            ("shadow table", "docs_config", "docs"),
        ],
    ),
    "rtree": (
        "CREATE VIRTUAL TABLE box USING rtree(id, x0, x1, y0, y1)",
        [
            ("virtual table", "box", None),
            ("shadow table", "box_rowid", "box"),
            ("shadow table", "box_node", "box"),
            ("shadow table", "box_parent", "box"),
        ],
    ),
    "trigger": (  # no tool's CREATE yet (triggers are destructive_query's), but undoable
        "CREATE TRIGGER src_log AFTER INSERT ON src BEGIN SELECT 1; END",
        [("trigger", "src_log", None)],
    ),
    "autoincrement": (
        # SQLite's own sqlite_sequence comes with the first AUTOINCREMENT table; it is not the
        # call's, and SQLite never lets it be dropped: only the table is recorded
        "CREATE TABLE counted (id INTEGER PRIMARY KEY AUTOINCREMENT, v)",
        [("table", "counted", None)],
    ),
}


@pytest.mark.parametrize(("sql", "expected"), CREATES.values(), ids=CREATES.keys())
def test_capture_records_every_catalog_row_the_create_made(
    ready: Service, sql: str, expected: list[tuple[str, str, str | None]]
) -> None:
    with ready.db.writing() as conn, immediate_transaction(conn):
        before = schema_rows(conn)
        conn.execute(sql)
        objects = created_since(conn, before)
        made = {
            int(rowid): (str(name), sql_text)
            for rowid, name, sql_text in conn.execute(
                "SELECT rowid, name, sql FROM sqlite_schema WHERE name <> 'sqlite_sequence'"
            )
        }
    assert sorted((o.kind, o.name, o.part_of) for o in objects) == sorted(expected)
    for obj in objects:  # each is the very catalog row SQLite wrote
        assert made[obj.rowid] == (obj.name, obj.sql)


def test_create_if_not_exists_of_an_existing_table_records_nothing(ready: Service) -> None:
    assert call(ready, "CREATE TABLE IF NOT EXISTS src (x)") is None
    assert call(ready, "CREATE INDEX IF NOT EXISTS src_body ON src (body)") is not None
    assert call(ready, "CREATE INDEX IF NOT EXISTS src_body ON src (n)") is None


def test_a_table_made_with_rows_records_their_count_and_digest(ready: Service) -> None:
    with ready.db.writing() as conn, immediate_transaction(conn):
        before = schema_rows(conn)
        conn.execute("CREATE TABLE copy AS SELECT id, body FROM src")
        (obj,) = created_since(conn, before)
        assert (obj.rows, obj.digest) == table_digest(conn, "copy")
    assert obj.rows == 3
    plain = CREATES["table"][0]
    with ready.db.writing() as conn, immediate_transaction(conn):
        before = schema_rows(conn)
        conn.execute(plain)
        (empty,) = created_since(conn, before)
    assert empty.rows == 0
    assert empty.digest != obj.digest


def test_virtual_tables_are_checked_through_their_shadow_tables(ready: Service) -> None:
    with ready.db.writing() as conn, immediate_transaction(conn):
        before = schema_rows(conn)
        conn.execute(CREATES["fts5"][0])
        objects = {o.name: o for o in created_since(conn, before)}
    assert objects["docs"].rows is None  # no b-tree of its own
    assert objects["docs_config"].rows == 1  # fts5 writes its version there at once
    assert all(o.rows is not None for name, o in objects.items() if name != "docs")


@pytest.mark.parametrize(
    "sql",
    [
        pytest.param("DROP TABLE other; CREATE TABLE notes (x)", id="a-table"),
        pytest.param("DROP VIEW old_v; CREATE VIEW new_v AS SELECT 1", id="a-view-not-replaced"),
        pytest.param("DROP TABLE other; CREATE VIEW other AS SELECT 1", id="a-table-by-a-view"),
    ],
)
def test_a_statement_that_removed_a_catalog_row_offers_no_undo(
    ready: Service, db_path: Path, sql: str
) -> None:
    """Never from a CREATE; but an undo that only drops could not give a removed row back."""
    with direct(db_path) as conn:
        conn.execute("CREATE VIEW old_v AS SELECT 0")
    with ready.db.writing() as conn, immediate_transaction(conn):
        with capturing_schema(conn) as created:
            conn.execute(sql)
        conn.execute("ROLLBACK")
        conn.execute("BEGIN")
    assert created.objects == ()


def test_store_created_keeps_the_record_with_values_bound(ready: Service) -> None:
    sql = 'CREATE TABLE "it\'s ""odd""" (id INTEGER PRIMARY KEY, a UNIQUE)'
    record_id = call(ready, sql)
    assert record_id is not None
    with ready.db.writing() as conn:
        row = conn.execute(
            "SELECT ts, session, tool, kind, tables, changes, bytes, created, undone_at "
            "FROM undo_changesets WHERE id = ?",
            (record_id,),
        ).fetchone()
    ts, session, tool, kind, tables, changes, size, created, undone_at = row
    assert (ts, session, tool, kind) == (TS, "s-test", "write_query", "CREATE TABLE")
    assert json.loads(tables) == ['it\'s "odd"']  # what was made; its autoindex goes with it
    assert (changes, size, undone_at) == (0, len(created.encode()), None)
    names = sorted(obj.name for obj in parse_created(created))
    assert names == ['it\'s "odd"', 'sqlite_autoindex_it\'s "odd"_1']
    assert not ready.db.writer.in_transaction
    with ready.db.writing() as conn:
        chunks = conn.execute(
            "SELECT count(*) FROM undo_chunks WHERE changeset_id = ?", (record_id,)
        ).fetchone()
    assert chunks == (0,)


def test_store_created_of_nothing_is_a_mistake(ready: Service) -> None:
    with ready.db.writing() as conn, pytest.raises(ValueError, match="nothing was created"):
        store_created(conn, (), ts=TS, session="s", tool="write_query", kind="CREATE TABLE")


# -- undo that succeeds ----------------------------------------------------------------------


@pytest.mark.parametrize("sql", [sql for sql, _ in CREATES.values()], ids=CREATES.keys())
def test_undo_removes_exactly_what_the_call_created(
    ready: Service, db_path: Path, sql: str
) -> None:
    before = dump(db_path)
    record_id = call(ready, sql)
    assert record_id is not None
    assert dump(db_path) != before
    assert undo(ready, record_id) == []
    schema, rows = dump(db_path)
    if "AUTOINCREMENT" in sql:  # SQLite's sqlite_sequence stays, empty
        assert rows.pop("sqlite_sequence") == []
        schema = [row for row in schema if row[2] != "sqlite_sequence"]
    # the undo record lives in the records file: the user's file is exactly as before
    assert (schema, rows) == before


def test_undo_after_unrelated_changes_keeps_them(ready: Service, db_path: Path) -> None:
    record_id = call(ready, "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT UNIQUE)")
    assert record_id is not None
    with direct(db_path) as conn:
        conn.execute("CREATE TABLE later (x); INSERT INTO other VALUES (7, 'kept');")
        conn.execute("CREATE VIEW other_v AS SELECT v FROM other")
    assert undo(ready, record_id) == []
    schema, rows = dump(db_path)
    names = [row[2] for row in schema]
    assert "notes" not in names
    assert "sqlite_autoindex_notes_1" not in names
    assert {"later", "other_v", "src", "other"} <= set(names)
    assert rows["other"] == [(7, "kept")]


def test_a_dependant_that_stood_before_the_call_does_not_block(
    ready: Service, db_path: Path
) -> None:
    """A view over a name that did not exist yet: dropping the table puts it back as it was."""
    with direct(db_path) as conn:
        conn.execute("CREATE VIEW early AS SELECT * FROM notes")
    record_id = call(ready, "CREATE TABLE notes (x)")
    assert record_id is not None
    assert undo(ready, record_id) == []
    assert "early" in [row[2] for row in dump(db_path)[0]]


# -- refusals --------------------------------------------------------------------------------

PLAIN = "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)"
CTAS = "CREATE TABLE notes AS SELECT id, body FROM src"
FTS = "CREATE VIRTUAL TABLE notes USING fts5(body)"
INDEX = "CREATE INDEX src_body ON src (body)"
REFUSALS = {
    "rows-written": (
        PLAIN,
        ["INSERT INTO notes (body) VALUES ('a'), ('b'), ('c')"],
        "table notes: 3 rows were written into it after the call",
    ),
    "one-row-written": (
        PLAIN,
        ["INSERT INTO notes (body) VALUES ('a')"],
        "table notes: 1 row was written into it after the call",
    ),
    "row-added-to-ctas": (
        CTAS,
        ["INSERT INTO notes VALUES (9, 'new')"],
        "table notes: it holds 4 rows, the call left 3",
    ),
    "row-deleted-from-ctas": (
        CTAS,
        ["DELETE FROM notes WHERE id = 1"],
        "table notes: it holds 2 rows, the call left 3",
    ),
    "row-changed-in-ctas": (
        CTAS,
        ["UPDATE notes SET body = 'changed' WHERE id = 2"],
        "table notes: its rows changed after the call",
    ),
    "same-value-other-type-in-ctas": (
        CTAS,
        ["UPDATE notes SET body = CAST(body AS BLOB) WHERE id = 2"],  # the same bytes
        "table notes: its rows changed after the call",
    ),
    "rows-written-into-fts5": (
        FTS,
        ["INSERT INTO notes (body) VALUES ('hello')"],
        "virtual table notes: rows were written into it after the call",
    ),
    "dependent-view": (
        PLAIN,
        ["CREATE VIEW v_open AS SELECT body FROM notes"],
        "table notes: view v_open depends on it: drop it first with destructive_query "
        "or leave the table",
    ),
    "dependent-view-quoted-name": (
        PLAIN,
        ["CREATE VIEW v_q AS SELECT * FROM main.[NOTES]"],
        "view v_q depends on it",
    ),
    "dependent-trigger-elsewhere": (
        PLAIN,
        [
            "CREATE TRIGGER copy_other AFTER INSERT ON other "
            "BEGIN INSERT INTO notes (body) VALUES (NEW.v); END"
        ],
        "trigger copy_other depends on it",
    ),
    "trigger-on-it": (
        PLAIN,
        ["CREATE TRIGGER notes_log AFTER INSERT ON notes BEGIN SELECT 1; END"],
        "trigger notes_log is on it",
    ),
    "index-on-it": (
        PLAIN,
        ["CREATE INDEX notes_body ON notes (body)"],
        "index notes_body is on it",
    ),
    "foreign-key": (
        PLAIN,
        ["CREATE TABLE child (id INTEGER PRIMARY KEY, note_id REFERENCES notes (id))"],
        "table child has a foreign key to it",
    ),
    "external-content-fts": (
        PLAIN,
        ["CREATE VIRTUAL TABLE notes_fts USING fts5(body, content='notes')"],
        "virtual table notes_fts depends on it",
    ),
    "view-using-the-index": (
        INDEX,
        ["CREATE VIEW by_body AS SELECT * FROM src INDEXED BY src_body"],
        "index src_body: view by_body depends on it",
    ),
    "column-added": (
        PLAIN,
        ["ALTER TABLE notes ADD COLUMN extra"],
        "table notes: its definition changed after the call",
    ),
    "renamed": (
        PLAIN,
        ["ALTER TABLE notes RENAME TO kept"],
        "table notes: it was renamed or dropped after the call (its catalog row now holds "
        "table kept)",
    ),
    "dropped": (
        PLAIN,
        ["DROP TABLE notes"],
        "table notes: it was renamed or dropped after the call; the undo cannot tell",
    ),
    "dropped-and-another-in-its-place": (
        PLAIN,
        ["DROP TABLE notes", "CREATE VIEW filler AS SELECT 1"],
        "table notes: it was renamed or dropped after the call (its catalog row now holds "
        "view filler)",
    ),
    "dropped-and-re-created": (
        PLAIN,
        ["DROP TABLE notes", "CREATE TABLE filler (x)", PLAIN],
        "table notes: another object has its name now",
    ),
    "index-dropped-and-re-created-otherwise": (
        INDEX,
        ["DROP INDEX src_body", "CREATE INDEX src_body ON src (n)"],
        "index src_body: its definition changed after the call",
    ),
    "fts5-renamed": (
        FTS,
        ["ALTER TABLE notes RENAME TO kept"],
        "virtual table notes: it was renamed or dropped after the call (its catalog row now "
        "holds table kept)",
    ),
}


@pytest.mark.parametrize(("create", "later", "expected"), REFUSALS.values(), ids=REFUSALS.keys())
def test_undo_refuses_and_changes_nothing(
    ready: Service, db_path: Path, create: str, later: list[str], expected: str
) -> None:
    record_id = call(ready, create)
    assert record_id is not None
    with direct(db_path) as conn:
        for sql in later:
            conn.execute(sql)
    before = dump(db_path)
    conflicts = undo(ready, record_id)
    assert expected in texts(conflicts)
    assert all(conflict.type == "SCHEMA" for conflict in conflicts)
    assert dump(db_path) == before


def test_a_renamed_table_is_one_conflict_not_one_per_autoindex(
    ready: Service, db_path: Path
) -> None:
    record_id = call(ready, "CREATE TABLE notes (a UNIQUE, b UNIQUE)")
    assert record_id is not None
    with direct(db_path) as conn:
        conn.execute("ALTER TABLE notes RENAME TO kept")
    assert texts(undo(ready, record_id)) == (
        "table notes: it was renamed or dropped after the call (its catalog row now holds "
        "table kept); the undo cannot tell it is what the call made: drop it with "
        "destructive_query if it is not wanted, or leave it (SCHEMA)"
    )


def test_undo_after_undo_is_refused(ready: Service) -> None:
    record_id = call(ready, PLAIN)
    assert record_id is not None
    assert undo(ready, record_id) == []
    assert "it was renamed or dropped after the call" in texts(undo(ready, record_id))


# -- tampered records ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param({"name": "query_log", "tbl_name": "query_log"}, id="server-table"),
        pytest.param({"name": "QUERY_LOG", "tbl_name": "notes"}, id="name-other-case"),
        pytest.param({"name": "notes_i", "tbl_name": "query_log"}, id="an-index-on-one"),
        pytest.param(
            {"name": "notes_x", "tbl_name": "notes_x", "part_of": "memory_events_fts"},
            id="a-part-of-one",
        ),
        pytest.param(
            {"name": "memory_events_fts_data", "tbl_name": "memory_events_fts_data"},
            id="a-shadow-table",
        ),
    ],
)
def test_a_record_naming_a_server_object_is_refused(
    ready: Service, db_path: Path, fields: dict[str, Any]
) -> None:
    record_id = call(ready, PLAIN)
    assert record_id is not None
    objects = json.loads(record_of(ready, record_id))
    objects.append({**objects[0], **fields})
    before = dump(db_path)
    conflicts = undo(ready, record_id, json.dumps(objects))
    # server objects live in the records file now (issue 33): in the user's file such a name
    # is nobody's or the user's own, and a record naming what the call did not make is refused
    assert len(conflicts) == 1
    assert "the undo cannot tell it is what the call made" in texts(conflicts)
    assert dump(db_path) == before


def test_a_record_naming_sqlite_s_own_table_is_refused(ready: Service, db_path: Path) -> None:
    record_id = call(ready, "CREATE TABLE counted (id INTEGER PRIMARY KEY AUTOINCREMENT)")
    assert record_id is not None
    objects = json.loads(record_of(ready, record_id))
    with ready.db.writing() as conn:
        rowid, sql = conn.execute(
            "SELECT rowid, sql FROM sqlite_schema WHERE name = 'sqlite_sequence'"
        ).fetchone()
    objects.append({**objects[0], "rowid": rowid, "name": "sqlite_sequence", "sql": sql})
    objects[-1]["tbl_name"] = "sqlite_sequence"
    before = dump(db_path)
    assert "SQLite's own" in texts(undo(ready, record_id, json.dumps(objects)))
    assert dump(db_path) == before


@pytest.mark.parametrize(
    "created",
    [
        pytest.param("not json", id="not-json"),
        pytest.param("{}", id="not-a-list"),
        pytest.param("[]", id="empty"),
        pytest.param('[{"rowid": 1}]', id="fields-missing"),
        pytest.param(
            '[{"rowid": "1", "type": "table", "name": "n", "tbl_name": "n", "sql": null, '
            '"kind": "table", "part_of": null, "rows": 0, "digest": "", "known": [], '
            '"replaces": null}]',
            id="rowid-not-a-number",
        ),
        pytest.param("5", id="a-number"),
        pytest.param(
            json.dumps(
                [
                    [
                        "rowid",
                        "type",
                        "name",
                        "tbl_name",
                        "sql",
                        "kind",
                        "part_of",
                        "rows",
                        "digest",
                        "known",
                        "replaces",
                    ]
                ]
            ),
            id="entry-not-an-object",
        ),
        pytest.param(
            '[{"rowid": 1, "type": "table", "name": "n", "tbl_name": "n", "sql": null, '
            '"kind": "table", "part_of": null, "rows": true, "digest": "", "known": [], '
            '"replaces": null}]',
            id="rows-a-boolean",
        ),
        pytest.param(
            '[{"rowid": 1, "type": "table", "name": "n", "tbl_name": "n", "sql": null, '
            '"kind": "table", "part_of": null, "rows": 0, "digest": "", "known": [1], '
            '"replaces": null}]',
            id="known-not-text",
        ),
    ],
)
def test_a_damaged_record_is_refused(ready: Service, db_path: Path, created: str) -> None:
    record_id = call(ready, PLAIN)
    assert record_id is not None
    before = dump(db_path)
    assert "undo record: it is damaged" in texts(undo(ready, record_id, created))
    assert dump(db_path) == before


def test_a_record_whose_part_is_really_a_table_of_its_own_is_refused(
    ready: Service, db_path: Path
) -> None:
    """Parts go with their owner; one that would be left behind means the record lies."""
    record_id = call(ready, PLAIN)
    other = call(ready, "CREATE TABLE extra (x)")
    assert record_id is not None
    assert other is not None
    objects = json.loads(record_of(ready, record_id))
    (extra,) = json.loads(record_of(ready, other))
    objects.append({**extra, "kind": "shadow table", "part_of": "notes"})
    before = dump(db_path)
    assert "was still there after the drop" in texts(undo(ready, record_id, json.dumps(objects)))
    assert dump(db_path) == before


def test_a_record_of_two_objects_drops_both(ready: Service, db_path: Path) -> None:
    """One statement makes one object and its parts; a record can hold more, dropped in
    order (the index before its table, which would take it along)."""
    before = dump(db_path)
    first = call(ready, "CREATE TABLE one (a UNIQUE)")
    second = call(ready, "CREATE INDEX one_a ON one (a)")
    assert first is not None
    assert second is not None
    both = json.loads(record_of(ready, first)) + json.loads(record_of(ready, second))
    assert undo(ready, first, json.dumps(both)) == []
    assert dump(db_path)[0] == before[0]


def test_a_shadow_table_not_marked_as_a_part_is_refused(ready: Service, db_path: Path) -> None:
    record_id = call(ready, FTS)
    assert record_id is not None
    objects = [{**obj, "part_of": None} for obj in json.loads(record_of(ready, record_id))]
    before = dump(db_path)
    found = texts(undo(ready, record_id, json.dumps(objects)))
    assert found.startswith("shadow table notes_data: SQLite refused to drop it (")
    assert dump(db_path) == before


def test_a_record_cannot_excuse_a_dependant_it_would_take_along(
    ready: Service, db_path: Path
) -> None:
    record_id = call(ready, PLAIN)
    assert record_id is not None
    with direct(db_path) as conn:
        conn.execute("CREATE INDEX notes_body ON notes (body)")
        row = conn.execute(
            "SELECT rowid, type, name, tbl_name, rootpage, sql FROM sqlite_schema "
            "WHERE name = 'notes_body'"
        ).fetchone()
    (table,) = json.loads(record_of(ready, record_id))
    forged = json.dumps([{**table, "known": [row_mark(SchemaRow(*row))]}])
    before = dump(db_path)
    assert texts(undo(ready, record_id, forged)) == (
        "undo: dropping the call's objects also removed index notes_body; nothing was "
        "changed (SCHEMA)"
    )
    assert dump(db_path) == before


def test_a_part_that_is_not_as_recorded_is_refused(ready: Service, db_path: Path) -> None:
    record_id = call(ready, "CREATE TABLE notes (a UNIQUE)")
    assert record_id is not None
    table, index = json.loads(record_of(ready, record_id))
    tampered = json.dumps([table, {**index, "name": "sqlite_autoindex_notes_9"}])
    before = dump(db_path)
    assert texts(undo(ready, record_id, tampered)).startswith(
        "index sqlite_autoindex_notes_9: it was renamed or dropped after the call (its "
        "catalog row now holds index sqlite_autoindex_notes_1)"
    )
    assert dump(db_path) == before


def test_each_dependant_is_told_once(ready: Service, db_path: Path) -> None:
    record_id = call(ready, PLAIN)
    assert record_id is not None
    with direct(db_path) as conn:  # triggers have names of their own: one may be "child"
        conn.execute("CREATE TABLE child (id INTEGER PRIMARY KEY, note_id REFERENCES notes)")
        conn.execute("CREATE TRIGGER child AFTER INSERT ON other BEGIN SELECT 1; END")
    assert texts(undo(ready, record_id)) == (
        "table notes: table child has a foreign key to it: drop it first with "
        "destructive_query or leave the table (SCHEMA)"
    )


def test_a_column_named_like_it_elsewhere_does_not_block(ready: Service, db_path: Path) -> None:
    record_id = call(ready, PLAIN)
    assert record_id is not None
    with direct(db_path) as conn:
        conn.execute("CREATE TABLE later (notes TEXT, CHECK (notes <> 'notes'))")
    assert undo(ready, record_id) == []


def test_a_view_over_a_shadow_table_blocks(ready: Service, db_path: Path) -> None:
    record_id = call(ready, FTS)
    assert record_id is not None
    with direct(db_path) as conn:
        conn.execute("CREATE VIEW raw AS SELECT * FROM notes_config")
    assert "virtual table notes: view raw depends on it" in texts(undo(ready, record_id))


@pytest.mark.parametrize(
    ("sql", "name", "expected"),
    [
        pytest.param("SELECT * FROM notes", "notes", True, id="bare"),
        pytest.param('SELECT * FROM main."NOTES"', "notes", True, id="quoted-other-case"),
        pytest.param("SELECT * FROM 'notes'", "notes", True, id="string"),
        pytest.param("SELECT notes_id FROM other", "notes", False, id="longer-word"),
        pytest.param("SELECT 'unterminated", "notes", True, id="unreadable"),
        pytest.param("SELECT * FROM a\u00a0b", "a\u00a0b", True, id="non-ascii-split"),
        pytest.param("SELECT * FROM ab", "a\u00a0b", False, id="non-ascii-absent"),
        pytest.param("SELECT * FROM naïve", "naïve", True, id="non-ascii-token"),
    ],
)
def test_references(sql: str, name: str, expected: bool) -> None:
    assert references(sql, frozenset({name})) is expected


# -- digests ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "table",
    [
        pytest.param("CREATE TABLE d (a, b)", id="rowid"),
        pytest.param("CREATE TABLE d (a TEXT PRIMARY KEY, b) WITHOUT ROWID", id="without-rowid"),
        pytest.param(
            "CREATE TABLE d (a TEXT COLLATE NOCASE, b NOT NULL, PRIMARY KEY (b, a)) WITHOUT ROWID",
            id="without-rowid-nocase",
        ),
        pytest.param("CREATE TABLE d (rowid, _rowid_, oid, a, b)", id="rowid-names-taken"),
    ],
)
def test_table_digest_sees_any_change_and_only_a_change(table: str) -> None:
    conn = apsw.Connection(":memory:")
    columns = [str(row[1]) for row in conn.execute(f"{table}; PRAGMA table_info(d)")]
    width = len(columns)
    rows = [("x", 1), ("X", 2.0), ("y", "n"), ("z", b"\x00")]

    def fill(values: list[tuple[Any, ...]]) -> tuple[int, str]:
        conn.execute("DELETE FROM d")
        marks = ", ".join("?" * width)
        for a, b in values:
            conn.execute(f"INSERT INTO d VALUES ({marks})", (*[0] * (width - 2), a, b))
        return table_digest(conn, "d")

    first = fill(rows)
    assert first[0] == 4
    assert fill(rows) == first
    assert fill([*rows[:3], ("z", b"\x01")]) != first
    assert fill([*rows[:3], ("z", "\x00")]) != first
    assert fill([*rows[:3], ("w", b"\x00")]) != first
    assert fill(rows[:3])[0] == 3
    with pytest.raises(ValueError, match="no table nosuch"):
        table_digest(conn, "nosuch")
