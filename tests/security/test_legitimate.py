"""Legitimate SQL is never refused: each case's calls succeed with the expected output.

A case is a short list of steps (set-up, the call under test, a read that checks its
effect). Afterwards the server's objects are as they were, the audit log grew by one row
per step, and the connections' hardening is intact: legitimate work never touches them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from sqlgate.engine.names import fold_name
from sqlgate.engine.schema import protected_names
from sqlgate.errors import PolicyDenied
from tests.security.cases import Expected, call, case, check_refused_and_unchanged
from tests.security.conftest import World
from tests.security.fingerprint import DatabaseState


@dataclass(frozen=True)
class Step:
    tool: str
    args: dict[str, Any]
    expect: str  # must appear in the tool's output


def r(query: str, expect: str, **args: Any) -> Step:
    return Step("read_query", {"query": query, **args}, expect)


def w(query: str, expect: str = "ok", **args: Any) -> Step:
    return Step("write_query", {"query": query, **args}, expect)


def d(query: str, expect: str = "snapshot:", **args: Any) -> Step:
    return Step(
        "destructive_query", {"query": query, "reason": "legitimate change", **args}, expect
    )


def legit(id: str, *steps: Step) -> Any:
    return pytest.param(list(steps), id=id)


READS = [
    legit("trailing-line-comment", r("SELECT name FROM items WHERE id = 1 -- the first", "apple")),
    legit("trailing-block-comment", r("SELECT name FROM items WHERE id = 1 /* why */", "apple")),
    legit("trailing-semicolon-comment", r("SELECT name FROM items WHERE id = 1; -- done", "apple")),
    legit(
        "unterminated-trailing-comment", r("SELECT name FROM items WHERE id = 1 /* why", "apple")
    ),
    legit("leading-comment", r("-- the first\nSELECT name FROM items WHERE id = 1", "apple")),
    legit(
        "cte-select",
        r("WITH cheap AS (SELECT name FROM items WHERE qty < 2) SELECT name FROM cheap", "plum"),
    ),
    legit(
        "recursive-cte-bounded",
        r(
            "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 5) "
            "SELECT sum(x) FROM n",
            "\n15\n",
        ),
    ),
    legit("cte-named-like-a-verb", r("WITH replace AS (SELECT 7 AS x) SELECT x FROM replace", "7")),
    legit(
        "pragma-table-info-function",
        r("SELECT name FROM pragma_table_info('items') ORDER BY cid", "id\nname\nqty"),
    ),
    legit("pragma-table-info", r("PRAGMA table_info(items)", "qty")),
    legit("pragma-foreign-key-list", r("PRAGMA foreign_key_list(children)", "parents")),
    legit(
        "pragma-index-list-function", r("SELECT name FROM pragma_index_list('items')", "items_name")
    ),
    legit("pragma-user-version", r("PRAGMA user_version", "user_version")),
    legit("pragma-integrity-check", r("PRAGMA integrity_check", "ok")),
    legit(
        "explain-query-plan",
        r("EXPLAIN QUERY PLAN SELECT * FROM items WHERE name = 'fig'", "items_name"),
    ),
    legit("explain", r("EXPLAIN SELECT 1", "Init")),
    legit("values", r("VALUES (1, 'a'), (2, 'b')", "2,b")),
    legit(
        "window-function",
        r("SELECT name, rank() OVER (ORDER BY qty DESC) AS place FROM items LIMIT 1", "fig,1"),
    ),
    legit("json-extract", r("""SELECT json_extract('{"a": [1, 2]}', '$.a[1]') AS v""", "v\n2")),
    legit("json-each", r("SELECT sum(value) AS s FROM json_each('[1, 2, 3]')", "s\n6")),
    legit("json-arrow", r("""SELECT '{"k": "v"}' ->> '$.k' AS v""", "v\nv")),
    legit("json-group-array", r("SELECT json_group_array(id) AS a FROM parents", "[1,2,3]")),
    legit("date-functions", r("SELECT date('2026-01-01', '+1 day') AS d", "2026-01-02")),
    legit("bound-parameter", r("SELECT name FROM items WHERE id = ?", "pear", params=[2])),
    legit("named-parameter", r("SELECT name FROM items WHERE id = :id", "plum", params={"id": 3})),
    legit("read-server-table", r("SELECT tool FROM query_log ORDER BY id LIMIT 1", "read_query")),
    legit("read-server-view", r("SELECT tool FROM query_errors LIMIT 1", "read_query")),
    legit("read-sqlite-sequence", r("SELECT seq FROM sqlite_sequence WHERE name = 'items'", "12")),
    legit("read-temp-catalog", r("SELECT count(*) AS n FROM temp.sqlite_master", "n\n0")),
    legit(
        "fts5-match-rank",
        r("SELECT title FROM docs WHERE docs MATCH 'quick' ORDER BY rank", "alpha"),
    ),
    legit(
        "fts5-bm25",
        r("SELECT title, bm25(docs) < 0 AS scored FROM docs WHERE docs MATCH 'fox'", "alpha,1"),
    ),
    legit(
        "fts5-highlight",
        r("SELECT highlight(docs, 1, '[', ']') AS h FROM docs WHERE docs MATCH 'fox'", "[fox]"),
    ),
    legit("fts5-contentless-match", r("SELECT rowid FROM tokens WHERE tokens MATCH 'vow'", "4")),
    legit("rtree-range", r("SELECT id FROM boxes WHERE minx >= 6 ORDER BY id", "id\n7\n8")),
]

WRITES = [
    # a WHERE that names a column of the table it updates (issue 19)
    legit(
        "update-correlated-exists",
        w(
            "UPDATE parents SET name = 'ada2' WHERE EXISTS (SELECT 1 FROM children "
            "WHERE children.parent_id = parents.id AND label = 'a1')",
            "1 row affected",
        ),
        r("SELECT name FROM parents WHERE id = 1", "ada2"),
    ),
    legit(
        "update-from-joined-to-the-target",
        w(
            "UPDATE parents SET name = c.label FROM children AS c "
            "WHERE c.parent_id = parents.id AND c.label = 'b1'",
            "1 row affected",
        ),
        r("SELECT name FROM parents WHERE id = 2", "b1"),
    ),
    legit(
        "update-alias-in-subquery",
        w(
            "UPDATE parents AS p SET name = upper(p.name) "
            "WHERE p.id IN (SELECT parent_id FROM children WHERE label = 'c1')",
            "1 row affected",
        ),
        r("SELECT name FROM parents WHERE id = 3", "CY"),
    ),
    legit("update-where-rowid", w("UPDATE notes SET body = 'x' WHERE rowid = 1", "1 row")),
    legit(
        "update-fts-match",
        d("UPDATE docs SET title = 'ALPHA' WHERE docs MATCH 'fox'", "1 row affected; snapshot:"),
    ),
    legit(
        "insert-returning",
        w("INSERT INTO notes(body) VALUES ('second') RETURNING id, body", "2,second"),
    ),
    legit(
        "upsert-a-few-rows",
        w(
            "INSERT INTO items(id, name, qty) VALUES (1, 'apple', 30), (2, 'pear', 70) "
            "ON CONFLICT(id) DO UPDATE SET qty = excluded.qty",
            "2 rows affected",
        ),
        r("SELECT qty FROM items WHERE id IN (1, 2) ORDER BY id", "qty\n30\n70"),
    ),
    legit(
        "upsert-do-nothing-on-every-row",
        w(
            "INSERT INTO items(id, name) SELECT id, name FROM items WHERE true "
            "ON CONFLICT DO NOTHING",
            "0 rows affected",
        ),
    ),
    legit(
        "replace-a-row",
        w("REPLACE INTO items(id, name, qty) VALUES (3, 'plum', 10)"),
        r("SELECT qty FROM items WHERE id = 3", "qty\n10"),
    ),
    legit("update-up-to-the-limit", w("UPDATE items SET qty = qty + 1 WHERE id <= 5", "5 rows")),
    legit(
        "update-cascades-within-the-limit",
        w("UPDATE parents SET id = 10 WHERE id = 1", "1 row affected"),
        r("SELECT count(*) AS n FROM children WHERE parent_id = 10", "n\n3"),
    ),
    legit(
        "cte-insert",
        w(
            "WITH n(x) AS (VALUES (1), (2), (3)) "
            "INSERT INTO notes(body) SELECT 'note ' || x FROM n",
            "3 rows affected",
        ),
    ),
    legit(
        "named-parameters",
        w("INSERT INTO notes(body) VALUES (:body)", "1 row affected", params={"body": "named"}),
    ),
    legit(
        "fts5-table",
        w("CREATE VIRTUAL TABLE papers USING fts5(title, abstract)"),
        d("INSERT INTO papers VALUES ('on safety', 'servers enforce it')"),
        r("SELECT title FROM papers WHERE papers MATCH 'enforce'", "on safety"),
    ),
    legit(
        "fts5-update-a-row",
        d("UPDATE docs SET body = 'entirely new words' WHERE rowid = 1", "1 row affected; snap"),
        r("SELECT title FROM docs WHERE docs MATCH 'entirely'", "alpha"),
    ),
    legit("fts5-optimize", d("INSERT INTO docs(docs) VALUES ('optimize')")),
    legit(
        "fts5-rank-setting", d("INSERT INTO docs(docs, rank) VALUES ('rank', 'bm25(10.0, 1.0)')")
    ),
    legit(
        "fts5-external-content-kept-in-sync-by-triggers",
        w("CREATE VIRTUAL TABLE items_fts USING fts5(name, content='items', content_rowid='id')"),
        d(
            "CREATE TRIGGER items_ai AFTER INSERT ON items BEGIN "
            "INSERT INTO items_fts(rowid, name) VALUES (new.id, new.name); END"
        ),
        d(
            "CREATE TRIGGER items_au AFTER UPDATE ON items BEGIN "
            "INSERT INTO items_fts(items_fts, rowid, name) VALUES ('delete', old.id, old.name); "
            "INSERT INTO items_fts(rowid, name) VALUES (new.id, new.name); END"
        ),
        d("INSERT INTO items(name) VALUES ('mango')"),
        d("UPDATE items SET name = 'papaya' WHERE name = 'mango'", "1 row affected; snapshot:"),
        r("SELECT rowid FROM items_fts WHERE items_fts MATCH 'papaya'", "rowid\n13"),
    ),
    legit(
        "rtree-insert",
        d(
            "INSERT INTO boxes VALUES (9, 8, 9, 8, 9)",
            "1 row affected (last_insert_rowid=9); snap",
        ),
    ),
    legit("rtree-update", d("UPDATE boxes SET maxx = 2 WHERE id = 1", "1 row affected; snap")),
    legit(
        "create-index",
        w("CREATE INDEX items_qty ON items(qty)"),
        r("PRAGMA index_list(items)", "items_qty"),
    ),
    legit("analyze", w("ANALYZE")),
    legit(
        "analyze-again",
        w("ANALYZE"),
        w("ANALYZE items"),
        r("SELECT count(*) FROM sqlite_stat1", "\n"),
    ),
    legit(
        "strict-without-rowid-table",
        w("CREATE TABLE kv(k TEXT PRIMARY KEY, v INTEGER) WITHOUT ROWID, STRICT"),
        w("INSERT INTO kv VALUES ('a', 1)"),
        r("SELECT v FROM kv WHERE k = 'a'", "v\n1"),
    ),
    legit(
        "generated-column",
        w("CREATE TABLE squares(x INTEGER, y INTEGER GENERATED ALWAYS AS (x * x) STORED)"),
        w("INSERT INTO squares(x) VALUES (7)"),
        r("SELECT y FROM squares", "y\n49"),
    ),
    legit("create-table-as-copy-of-log", w("CREATE TABLE log_copy AS SELECT * FROM query_log")),
]

DESTRUCTIVE = [
    legit(
        "foreign-key-cascade-delete",
        d("DELETE FROM parents WHERE id = 1", "1 row affected"),
        r("SELECT count(*) AS n FROM children", "n\n6"),
    ),
    legit(
        "alter-table-add-column",
        d("ALTER TABLE items ADD COLUMN note TEXT"),
        r("SELECT name FROM pragma_table_info('items') WHERE name = 'note'", "note"),
    ),
    legit(
        "alter-table-rename",
        d("ALTER TABLE notes RENAME TO memos"),
        r("SELECT body FROM memos", "first note"),
    ),
    legit(
        "alter-table-rename-column",
        d("ALTER TABLE notes RENAME COLUMN body TO text"),
        r("SELECT text FROM notes", "first note"),
    ),
    legit(
        "alter-table-drop-column",
        d("ALTER TABLE parents DROP COLUMN name"),
        r("SELECT count(*) AS n FROM pragma_table_info('parents')", "n\n1"),
    ),
    legit(
        "drop-user-view",
        d("DROP VIEW cheap_items"),
        r("SELECT count(*) AS n FROM sqlite_schema WHERE name = 'cheap_items'", "n\n0"),
    ),
    legit("drop-user-table", d("DROP TABLE notes")),
    legit("drop-index", d("DROP INDEX items_name")),
    legit("reindex", d("REINDEX items")),
    legit("reindex-in-write", w("REINDEX items", "ok: REINDEX done")),
    legit("reindex-an-index-in-write", w("REINDEX items_name", "ok: REINDEX done")),
    legit(
        "drop-if-exists-of-nothing",
        d("DROP TABLE IF EXISTS never_made", "ok: nothing to drop: no table `never_made`"),
    ),
    legit(
        "trigger-writing-user-tables-fires-on-write-query",
        d(
            "CREATE TRIGGER note_items AFTER INSERT ON items BEGIN "
            "INSERT INTO notes(body) VALUES ('added ' || new.name); END"
        ),
        w("INSERT INTO items(name) VALUES ('mango')"),
        r("SELECT body FROM notes ORDER BY id DESC LIMIT 1", "added mango"),
    ),
    legit(
        "update-without-where",
        d("UPDATE items SET qty = 0", "12 rows affected"),
    ),
    legit("mass-update-with-where", d("UPDATE items SET qty = qty + 1 WHERE id > 0", "12 rows")),
    legit("delete-with-where", d("DELETE FROM items WHERE qty > 8", "2 rows affected")),
    legit(
        "fts5-rebuild",
        d("INSERT INTO docs(docs) VALUES ('rebuild')"),
        r("SELECT title FROM docs WHERE docs MATCH 'vow'", "delta"),
    ),
    legit(
        "fts5-delete-all-contentless",
        d("INSERT INTO tokens(tokens) VALUES ('delete-all')"),
        r("SELECT count(*) AS n FROM tokens WHERE tokens MATCH 'vow'", "n\n0"),
    ),
    legit(
        "reset-a-user-sequence",
        d("UPDATE sqlite_sequence SET seq = 100 WHERE name = 'items'", "1 row affected"),
        w("INSERT INTO items(name) VALUES ('mango')", "last_insert_rowid=101"),
    ),
]

VIEWS_AND_INTROSPECTION = [
    legit(
        "create-view-with-description",
        Step(
            "create_view",
            {
                "name": "heavy_items",
                "select_sql": "SELECT name, qty FROM items WHERE qty >= 8;",
                "description": "Items worth restocking.\nUsed by the weekly report.",
            },
            "ok: view heavy_items created",
        ),
        r("SELECT name FROM heavy_items ORDER BY qty DESC LIMIT 1", "fig"),
        Step("get_schema", {}, "-- Items worth restocking."),
    ),
    legit(
        "replace-user-view",
        Step(
            "create_view",
            {"name": "cheap_items", "select_sql": "SELECT id FROM items", "replace": True},
            "replaced",
        ),
        r("SELECT count(*) AS n FROM cheap_items", "n\n12"),
    ),
    legit(
        "view-over-rtree",
        Step("create_view", {"name": "bv", "select_sql": "SELECT * FROM boxes"}, "created"),
    ),
    legit(
        "search-text",
        Step("search_text", {"pattern": "^p", "table": "items", "columns": ["name"]}, "pear"),
    ),
    legit(
        "search-text-with-where",
        Step(
            "search_text",
            {"pattern": "a", "table": "docs", "where": "title = ?", "params": ["beta"]},
            "lazy",
        ),
    ),
    # SQLite folds only ASCII letters: these names are the agent's, not the server's
    legit(
        "kelvin-sign-name-by-rename",
        w("CREATE TABLE kelvin(a)"),
        d('ALTER TABLE kelvin RENAME TO "memory_chec\u212apoints"'),
        Step("list_tables", {}, "memory_chec\u212apoints,table,0,0"),
        Step(
            "describe_table",
            {"table": "memory_chec\u212apoints"},
            "# table memory_chec\u212apoints\n",
        ),
        Step("get_schema", {}, 'CREATE TABLE "memory_chec\u212apoints"'),
        d('DROP TABLE "memory_chec\u212apoints"'),
    ),
    legit(
        "kelvin-sign-name-created",
        w('CREATE TABLE "undo_chun\u212as"(a)'),
        w('INSERT INTO "undo_chun\u212as" VALUES (1)'),
        d('DELETE FROM "undo_chun\u212as" WHERE a = 1', "undo: sqlgate undo"),
        d('DROP TABLE "undo_chun\u212as"'),
    ),
    legit(
        "accented-name-near-a-server-name",
        w('CREATE TABLE "memory_events_fts_id\u00e9"(a)'),
        w("CREATE TABLE memory_events_fts_id\u00e9s(a)"),
        d('ALTER TABLE "memory_events_fts_id\u00e9" RENAME TO query_l\u00f6g'),
        Step("create_view", {"name": "v", "select_sql": "SELECT a FROM query_l\u00f6g"}, "created"),
    ),
    legit("describe-table", Step("describe_table", {"table": "children"}, "parents")),
    legit("list-tables", Step("list_tables", {}, "query_log,table,1")),
    legit(
        "get-schema-with-system",
        Step("get_schema", {"include_system": True}, "CREATE TABLE query_log"),
    ),
]

OWN_INDEX_OVER_MEMORY = (
    "CREATE VIRTUAL TABLE mine USING fts5(content, content='memory_events', content_rowid='id')"
)

MEMORY = [
    legit("read-events", r("SELECT id, kind FROM memory_events ORDER BY id", "3,decision")),
    legit(
        "read-checkpoints",
        r("SELECT last_event_id FROM memory_checkpoints", "last_event_id\n3"),
    ),
    legit(
        "read-the-chain-links",
        r(
            "SELECT count(*) AS linked FROM memory_events AS e "
            "JOIN memory_events AS p ON p.id = e.id - 1 WHERE e.prev_hash = p.hash",
            "linked\n2",
        ),
    ),
    legit(
        "match-the-memory-index",
        r(
            "SELECT rowid FROM memory_events_fts WHERE memory_events_fts MATCH 'region' "
            "ORDER BY rank",
            "rowid\n3",
        ),
    ),
    legit(
        "memory-bm25-and-snippet",
        r(
            "SELECT snippet(memory_events_fts, 0, '[', ']', '…', 4) AS s "
            "FROM memory_events_fts('cache')",
            "[cache]",
        ),
    ),
    legit("read-memory-fts-shadow", r("SELECT k, v FROM memory_events_fts_config", "version")),
    legit("pragma-memory-events", r("PRAGMA index_list(memory_events)", "memory_events_by_ts")),
    legit(
        "copy-events-into-a-user-table",
        w("CREATE TABLE kept AS SELECT id, content FROM memory_events"),
        w("INSERT INTO notes(body) SELECT content FROM memory_events WHERE kind = 'decision'"),
        r("SELECT count(*) AS n FROM kept", "n\n3"),
    ),
    legit(
        "search-text-in-the-memory",
        Step("search_text", {"pattern": "reg[io]+n", "table": "memory_events"}, "region"),
    ),
    legit("list-memory-tables", Step("list_tables", {}, "memory_events,table,1,3")),
    legit(
        "describe-memory-events",
        Step("describe_table", {"table": "memory_events"}, "(server object, read-only)"),
    ),
    legit(
        "append-then-find-it-by-sql",
        Step("append_event", {"content": "rotated the staging keys", "tags": ["ops"]}, '"id": 4'),
        r("SELECT rowid FROM memory_events_fts WHERE memory_events_fts MATCH 'staging'", "4"),
        r(
            "SELECT prev_hash = (SELECT hash FROM memory_events WHERE id = 3) AS ok "
            "FROM memory_events WHERE id = 4",
            "ok\n1",
        ),
    ),
    legit(
        "checkpoint-then-read-it",
        Step("checkpoint", {"summary": "keys rotated"}, '"last_event_id": 3'),
        r("SELECT summary FROM memory_checkpoints ORDER BY id DESC LIMIT 1", "keys rotated"),
    ),
    legit(
        "memory-search-timeline-details",
        Step("memory_search", {"query": "region"}, "3,"),
        Step("memory_timeline", {"ids": [3], "window": 1}, "2,"),
        Step("memory_details", {"ids": [3]}, "the cache key now includes the region"),
        Step("verify_chain", {}, '"ok": true'),
    ),
]

LEGIT = READS + WRITES + DESTRUCTIVE + VIEWS_AND_INTROSPECTION + MEMORY


def _server_rows(state: DatabaseState) -> list[tuple[Any, ...]]:
    """sqlgate's records' schema (every object there is the server's), with any row of main
    named like a server object (none of the legitimate cases makes one)."""
    protected = protected_names()
    return [
        row for row in state.schema if row[0] == "sqlgate" or fold_name(str(row[2])) in protected
    ]


@pytest.mark.parametrize("steps", LEGIT)
def test_legitimate_sql_succeeds(world: World, steps: list[Step]) -> None:
    before = world.state()
    for step in steps:
        output = call(world.service, step.tool, step.args)
        assert step.expect in output, output
    after = world.state()
    assert _server_rows(after) == _server_rows(before)
    assert after.query_log[: len(before.query_log)] == before.query_log
    assert len(after.query_log) == len(before.query_log) + len(steps)
    assert after.connections == before.connections


# issue 33: sqlgate's records live in a file of their own, and SQLite keeps a view in one
# file reading only that file: create_view refuses, naming read_query (nothing is saved)
OVER_THE_RECORDS = [
    case("create_view", {"name": "calls", "select_sql": "SELECT tool, count(*) AS n FROM "
         "query_log GROUP BY 1"}, PolicyDenied, "over-the-audit-log",
         phrase="query sqlgate.query_log with read_query"),
    case("create_view", {"name": "decisions", "select_sql": "SELECT id, content FROM "
         "memory_events WHERE kind = 'decision'", "description": "Every decision."},
         PolicyDenied, "over-the-memory", phrase="query sqlgate.memory_events with read_query"),
    case("create_view", {"name": "calls", "select_sql": "SELECT * FROM sqlgate.claims"},
         PolicyDenied, "over-the-claims-qualified", phrase="with read_query"),
]  # fmt: skip


@pytest.mark.parametrize(("tool", "args", "expected", "phrase"), OVER_THE_RECORDS)
def test_a_view_over_sqlgates_records_is_refused_naming_read_query(
    world: World, tool: str, args: dict[str, Any], expected: Expected, phrase: str
) -> None:
    check_refused_and_unchanged(world, tool, args, expected, phrase)


def test_the_agents_own_index_over_the_memory_never_changes_the_memory(world: World) -> None:
    """An external-content fts5 table in main names its content table; SQLite looks it up in
    main only, so over sqlgate's memory it can never be filled: the commands that read the
    content are refused (naming sqlgate.memory_events, read-only), the others touch only the
    agent's own index, and the memory stays as it was (on the one-file layout 'rebuild'
    filled the agent's index from the memory)."""
    assert "ok" in world.service.write_query(OWN_INDEX_OVER_MEMORY)  # fts5 reads it lazily
    before = world.state()
    with pytest.raises(PolicyDenied) as refused:
        world.service.destructive_query("INSERT INTO mine(mine) VALUES ('rebuild')", reason="r")
    assert "sqlgate.memory_events is one of sqlgate's records" in str(refused.value)
    for command in (  # commands that never read the content: the agent's own index only
        "INSERT INTO mine(rowid, content) VALUES (1, 'forged words')",
        "INSERT INTO mine(mine, rowid, content) VALUES ('delete', 2, 'rebuild')",
        "INSERT INTO mine(mine) VALUES ('optimize')",
        "INSERT INTO mine(mine) VALUES ('delete-all')",
    ):
        assert "snapshot:" in world.service.destructive_query(command, reason="own index")
    after = world.state()
    memory = [name for name in before.tables if name.startswith("sqlgate.memory_")]
    assert {"sqlgate.memory_events", "sqlgate.memory_checkpoints"} <= set(memory)
    assert "sqlgate.memory_events_fts_data" in memory
    for name in memory:
        assert after.tables[name] == before.tables[name], name
    records_schema = [row for row in before.schema if row[0] == "sqlgate"]
    assert [row for row in after.schema if row[0] == "sqlgate"] == records_schema
    assert '"ok": true' in world.service.verify_chain()
