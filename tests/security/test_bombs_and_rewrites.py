"""Memory and CPU bombs, and mass rewrites whatever the verb.

CPU bombs run against a clock that moves one second per reading and a 500 s budget, so they
time out (QueryTimeout) after a bounded number of VM steps, with no waiting. Size bombs hit
SQLite's length limit (--max-value-bytes) and fail with LimitExceeded; SQLite's other limits
(expression depth, compound terms, columns, arguments) fail as SqlError. Either way nothing
changes. In write_query an UPDATE, upsert or REPLACE that changes more than --max-update-rows
(5 here) existing rows is rolled back with MassRewrite, which names destructive_query.
"""

from __future__ import annotations

from typing import Any

import pytest

from sqlgate.errors import (
    LimitExceeded,
    MassRewrite,
    NotUndoable,
    PolicyDenied,
    QueryTimeout,
    SqlError,
)
from sqlgate.service import Service
from tests.security.cases import Expected, case, check_refused_and_unchanged
from tests.security.cases import destructive as d
from tests.security.cases import read as r
from tests.security.cases import write as w
from tests.security.conftest import MAX_UPDATE_ROWS, World
from tests.security.fingerprint import appended_log_rows, assert_unchanged

SLOW, BIG, SQL, MASS = QueryTimeout, LimitExceeded, SqlError, MassRewrite
DENIED = PolicyDenied
NOT_UNDOABLE = NotUndoable
FOREVER = "WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r)"
TWENTY = "WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r LIMIT 20)"
HUGE = "printf('%.*c', 2000000, 'x')"  # twice --max-value-bytes
TENFOLD = "replace({}, 'x', 'xxxxxxxxxx')"


def _grown(times: int) -> str:
    text = "printf('%.*c', 1000, 'x')"
    for _ in range(times):
        text = TENFOLD.format(text)
    return text


CPU_BOMBS = [
    r(f"{FOREVER} SELECT count(*) FROM r", SLOW, "recursive-count"),
    r(f"{FOREVER} SELECT max(x) FROM r", SLOW, "recursive-max"),
    r(f"{FOREVER} SELECT x FROM r ORDER BY x DESC LIMIT 1", SLOW, "recursive-sort"),
    r(f"{FOREVER} SELECT x FROM r WHERE x = 0", SLOW, "recursive-filter-never-true"),
    r(
        "WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r WHERE x < 10000000) "
        "SELECT sum(x) FROM r",
        SLOW,
        "ten-million-rows",
    ),
    r(f"SELECT * FROM items WHERE id = ({FOREVER} SELECT max(x) FROM r)", SLOW, "in-subquery"),
    r(
        "SELECT count(*) FROM items a, items b, items c, items d, items e, items f, items g",
        SLOW,
        "cross-join-items",
    ),
    r(
        "SELECT count(*) FROM children a, children b, children c, children d, children e, "
        "children f",
        SLOW,
        "cross-join-children",
    ),
    r("SELECT count(*) FROM docs a, docs b, docs c, docs d, docs e, docs f", SLOW, "cross-fts"),
    r("SELECT count(*) FROM boxes a, boxes b, boxes c, boxes d, boxes e, boxes f", SLOW, "rtree"),
    r(
        "SELECT count(*) FROM query_log a, items b, items c, items d, items e, items f, items g",
        SLOW,
        "cross-join-log",
    ),
    r(f"{FOREVER} SELECT count(DISTINCT x % 7) FROM r", SLOW, "recursive-distinct"),
    w(f"INSERT INTO items(name) {FOREVER} SELECT 'bomb' FROM r", SLOW, "insert-forever"),
    w(
        "INSERT INTO notes(body) SELECT 'x' FROM items a, items b, items c, items d, items e, "
        "items f",
        SLOW,
        "insert-cross-join",
    ),
    w(f"CREATE TABLE bomb AS {FOREVER} SELECT x FROM r", SLOW, "create-table-as-forever"),
    w(
        f"UPDATE items SET qty = ({FOREVER} SELECT count(*) FROM r) WHERE id = 1",
        SLOW,
        "update-with-forever",
    ),
    w(f"INSERT INTO docs(title, body) {FOREVER} SELECT 't', 'b' FROM r", SLOW, "fts-forever"),
    d(f"DELETE FROM items WHERE id IN ({FOREVER} SELECT x FROM r)", SLOW, "delete-in-forever"),
    case(
        "search_text",
        {"pattern": "a", "table": "items", "where": f"id IN ({FOREVER} SELECT x FROM r)"},
        SLOW,
        "where-forever",
    ),
]

SIZE_BOMBS = [
    r(f"SELECT {HUGE}", BIG, "printf-precision"),
    r("SELECT printf('%2000000d', 1)", BIG, "printf-width"),
    r("SELECT format('%*s', 5000000, 'x')", BIG, "format-star-width"),
    r("SELECT zeroblob(2000000)", BIG, "zeroblob"),
    r("SELECT length(zeroblob(1000000000))", BIG, "zeroblob-billion"),
    r("SELECT randomblob(2000000)", BIG, "randomblob"),
    r("SELECT hex(randomblob(600000))", BIG, "hex-doubles"),
    r(f"SELECT length({_grown(4)})", BIG, "replace-growth"),
    r(
        "WITH RECURSIVE r(s) AS (SELECT 'x' UNION ALL SELECT s || s FROM r) "
        "SELECT length(s) FROM r",
        BIG,
        "doubling-concatenation",
    ),
    r(
        f"{TWENTY} SELECT length(group_concat(printf('%.*c', 100000, 'x'))) FROM r",
        BIG,
        "group-concat-growth",
    ),
    r(
        f"{TWENTY} SELECT length(string_agg(printf('%.*c', 100000, 'x'), ',')) FROM r",
        BIG,
        "string-agg-growth",
    ),
    r(
        f"{TWENTY} SELECT length(json_group_array(printf('%.*c', 100000, 'x'))) FROM r",
        BIG,
        "json-group-array-growth",
    ),
    r("SELECT length(zeroblob(999999) || zeroblob(999999))", BIG, "blob-concatenation"),
    r("SELECT concat(printf('%.*c', 600000, 'x'), printf('%.*c', 600000, 'y'))", BIG, "concat"),
    r(
        "SELECT json_array(printf('%.*c', 999000, 'x'), printf('%.*c', 999000, 'x'))",
        BIG,
        "json-array",
    ),
    r("SELECT upper(randomblob(1000001))", BIG, "upper-of-blob"),
    r("SELECT '" + "x" * 1_100_000 + "'", BIG, "statement-longer-than-sql-length"),
    r("SELECT " + "1 + " * 300 + "1", SQL, "expression-depth"),
    r("SELECT 1" + " UNION ALL SELECT 1" * 150, SQL, "compound-select-terms"),
    r("SELECT " + ", ".join(["1"] * 2100), SQL, "too-many-columns"),
    r("SELECT max(" + ", ".join(["1"] * 150) + ")", SQL, "too-many-arguments"),
    r("SELECT 'x' LIKE '" + "%" * 1001 + "'", SQL, "like-pattern-length"),
    r("SELECT json(printf('%.*c', 100000, '['))", SQL, "json-nesting"),
    w(f"INSERT INTO items(name) VALUES ({HUGE})", BIG, "insert-printf"),
    w("INSERT INTO items(name) SELECT randomblob(2000000)", BIG, "insert-randomblob"),
    w("UPDATE items SET name = zeroblob(2000000) WHERE id = 1", BIG, "update-zeroblob"),
    w(f"INSERT INTO docs(title, body) VALUES ('x', {HUGE})", BIG, "fts-insert-printf"),
    w(
        f"INSERT INTO notes(body) {TWENTY} SELECT group_concat(printf('%.*c', 100000, 'x')) FROM r",
        BIG,
        "insert-group-concat",
    ),
    w("CREATE TABLE blobs AS SELECT zeroblob(2000000) AS b", BIG, "create-table-as-zeroblob"),
    w("INSERT INTO notes(body) VALUES (?)", BIG, "bound-value-too-big", params=["x" * 1_100_000]),
    d("UPDATE items SET name = randomblob(2000000)", BIG, "update-randomblob"),
    case(
        "search_text",
        {"pattern": "a", "table": "items", "where": "length(zeroblob(2000000)) > 0"},
        BIG,
        "where-zeroblob",
    ),
]

MASS_REWRITES = [
    w("UPDATE items SET qty = qty + 1 WHERE id > 0", MASS, "update-where-true-ish"),
    # a WHERE that names no column is refused before it runs (issue 19), guard or not
    w("UPDATE items SET qty = 0 WHERE 1", DENIED, "update-where-1"),
    w("UPDATE items SET qty = 0 WHERE true", DENIED, "update-where-true"),
    w("UPDATE items SET qty = 0 WHERE id IN (SELECT id FROM items)", MASS, "update-in-self"),
    w(
        "WITH ids AS (SELECT id FROM items) UPDATE items SET qty = 1 WHERE id IN ids",
        MASS,
        "update-cte",
    ),
    w("UPDATE items SET qty = 2 WHERE id > 0 RETURNING id", MASS, "update-returning"),
    w("UPDATE items SET name = upper(name) WHERE qty >= 0", MASS, "update-upper"),
    w("UPDATE OR IGNORE items SET qty = 0 WHERE id > 0", MASS, "update-or-ignore"),
    w("UPDATE OR REPLACE items SET id = id + 100 WHERE id > 0", MASS, "update-or-replace"),
    w("UPDATE items SET qty = 0 WHERE id > ?", MASS, "update-bound", params=[0]),
    w("REPLACE INTO items(id, name, qty) SELECT id, name, qty + 1 FROM items", MASS, "replace-all"),
    w(
        "INSERT OR REPLACE INTO items(id, name, qty) SELECT id, name, 0 FROM items",
        MASS,
        "insert-or-replace-all",
    ),
    w(
        "REPLACE INTO items(id, name, qty) VALUES (1, 'a', 0), (2, 'b', 0), (3, 'c', 0), "
        "(4, 'd', 0), (5, 'e', 0), (6, 'f', 0)",
        MASS,
        "replace-six-rows",
    ),
    w(
        "INSERT INTO items(id, name, qty) SELECT id, name, qty FROM items WHERE true "
        "ON CONFLICT(id) DO UPDATE SET qty = excluded.qty + 1",
        MASS,
        "upsert-all",
    ),
    w(
        "INSERT INTO items(id, name) SELECT id, 'x' FROM items WHERE 1 "
        "ON CONFLICT DO UPDATE SET name = 'x'",
        MASS,
        "upsert-any-conflict",
    ),
    w(
        "INSERT INTO items(id, name) VALUES (1, 'x'), (2, 'x'), (3, 'x'), (4, 'x'), (5, 'x'), "
        "(6, 'x') ON CONFLICT(id) DO UPDATE SET name = excluded.name",
        MASS,
        "upsert-six-rows",
    ),
    w("UPDATE children SET label = 'x' WHERE id > 0", MASS, "update-children"),
    w("UPDATE parents SET id = id + 100 WHERE id > 0", MASS, "cascade-from-all-parents"),
    w("UPDATE parents SET id = id + 100 WHERE id IN (1, 2)", MASS, "cascade-from-two-parents"),
    # a virtual table's rows cannot be undone from a changeset: write_query refuses any
    # write to one, however few rows it changes, and names destructive_query
    w("UPDATE docs SET body = 'gone' WHERE rowid > 0", NOT_UNDOABLE, "fts-update"),
    w(
        "REPLACE INTO docs(rowid, title, body) SELECT rowid, 'x', 'y' FROM docs",
        NOT_UNDOABLE,
        "fts-replace",
    ),
    w("UPDATE boxes SET minx = 0 WHERE id > 0", NOT_UNDOABLE, "rtree-update"),
]


@pytest.mark.parametrize(("tool", "args", "expected", "phrase"), CPU_BOMBS + SIZE_BOMBS)
def test_bombs_are_stopped_and_change_nothing(
    world: World, tool: str, args: dict[str, Any], expected: Expected, phrase: str
) -> None:
    check_refused_and_unchanged(world, tool, args, expected, phrase)


@pytest.mark.parametrize(("tool", "args", "expected", "phrase"), MASS_REWRITES)
def test_mass_rewrites_are_rolled_back_naming_destructive_query(
    world: World, tool: str, args: dict[str, Any], expected: Expected, phrase: str
) -> None:
    check_refused_and_unchanged(world, tool, args, expected, phrase or "destructive_query")


def _install_trigger(service: Service, body: str) -> None:
    service.destructive_query(
        f"CREATE TRIGGER amplify AFTER INSERT ON notes BEGIN {body}; END", "set up the attack"
    )


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param("UPDATE items SET qty = qty + 1 WHERE id > 0", MASS, id="update-all-rows"),
        pytest.param(
            "INSERT OR REPLACE INTO items(id, name, qty) SELECT id, name, 0 FROM items",
            MASS,
            id="replace-all-rows",
        ),
        pytest.param(f"INSERT INTO notes(body) {FOREVER} SELECT 'x' FROM r", SLOW, id="forever"),
        pytest.param(f"UPDATE items SET name = {HUGE} WHERE id = 1", BIG, id="huge-value"),
        pytest.param("INSERT INTO tokens(tokens) SELECT 'delete-all'", DENIED, id="fts-delete-all"),
        pytest.param("SELECT load_extension('evil')", DENIED, id="load-extension"),
        pytest.param("DELETE FROM items WHERE id = new.id", DENIED, id="delete-in-write-tier"),
    ],
)
def test_a_trigger_cannot_smuggle_a_bomb_or_rewrite_into_write_query(
    world: World, body: str, expected: type[Exception]
) -> None:
    _install_trigger(world.service, body)
    before = world.state()
    with pytest.raises(expected) as caught:
        world.service.write_query("INSERT INTO notes(body) VALUES ('trigger me')")
    assert type(caught.value) is expected
    assert_unchanged(before, world.state())


def test_max_update_rows_is_the_limit_not_below_it(world: World) -> None:
    ids = ", ".join(str(n) for n in range(1, MAX_UPDATE_ROWS + 1))
    world.service.write_query(f"UPDATE items SET qty = 0 WHERE id IN ({ids})")
    assert world.service.read_query("SELECT count(*) FROM items WHERE qty = 0") == (
        f"count(*)\n{MAX_UPDATE_ROWS + 2}\n# 1 row"
    )


def test_a_refused_mass_rewrite_is_audited_as_a_failure(world: World) -> None:
    before = world.state()
    with pytest.raises(MassRewrite):
        world.service.write_query("UPDATE items SET qty = 0 WHERE id > 0")
    (audit,) = appended_log_rows(before, world.state())
    assert audit["ok"] == 0
    assert "destructive_query" in str(audit["error"])
