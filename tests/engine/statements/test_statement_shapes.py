"""Preflight's whole reading of a statement, field by field, over many shapes.

Each row gives every field `inspect_statement` returns (the ones not listed hold the values
of `_NOTHING` below, spelled here rather than taken from `Statement`'s defaults), so a change
in any part of the reading shows. Some shapes are not valid SQL: SQLite refuses them, but
preflight reads them first and must read them the same way every time.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from sqlgate.engine.statements.preflight import inspect_statement

_NOTHING: dict[str, Any] = {
    "has_where": True,
    "fts_delete": False,
    "writes": (),
    "target": None,
    "has_nul": False,
    "pragma": None,
    "explained": None,
    "on_table": None,
    "auto_id": None,
    "server_object": None,
    "object_schema": None,
}


def _case(sql: str, kind: str, case_id: str, **fields: Any) -> Any:
    return pytest.param(sql, {"kind": kind, **_NOTHING, **fields}, id=case_id)


def _read(sql: str) -> dict[str, Any]:
    """The reading, uncached: every row reads its text afresh, whatever other tests read
    before (so scripts/mutate.py sees these rows run each line they reach)."""
    uncached = getattr(inspect_statement, "__wrapped__")  # noqa: B009 (mypy sees a plain Callable)
    return dataclasses.asdict(uncached(sql))


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        _case("SELECT 1\x00", "UNKNOWN", "nul", has_nul=True),
        _case("SELECT 'unterminated", "UNKNOWN", "unterminated-string"),
        _case("REINDEX t", "REINDEX", "reindex-name", target="t"),
        _case("REINDEX 0é", "REINDEX", "non-ascii-bare-name", target="0é"),
        _case('REINDEX "é""x"', "REINDEX", "non-ascii-quoted-name", target='é"x'),
        _case("REINDEX [é]", "REINDEX", "non-ascii-bracketed-name", target="é"),
        _case("REINDEX )", "REINDEX", "reindex-r-paren"),
        _case("REINDEX ,", "REINDEX", "reindex-comma"),
        _case("REINDEX .", "REINDEX", "reindex-dot"),
        _case("REINDEX ;", "REINDEX", "reindex-semicolon"),
        _case("WITH x AS (SELECT 1) REINDEX t", "REINDEX", "with-reindex", target="t"),
        # the records' schema: the first object named after `sqlgate.`, in any spelling
        _case("SELECT * FROM sqlgate.query_log", "SELECT", "records", server_object="query_log"),
        _case('SELECT * FROM "SQLGATE"."q"', "SELECT", "records-quoted", server_object="q"),
        _case("SELECT * FROM sqlgate . a, sqlgate.b", "SELECT", "records-first", server_object="a"),
        _case("SELECT sqlgate", "SELECT", "records-no-dot"),
        _case("SELECT sqlgate FROM t", "SELECT", "a-column-called-sqlgate"),
        _case("SELECT sqlgate, x FROM sqlgate", "SELECT", "a-table-called-sqlgate"),
        _case("SELECT 1 FROM t, sqlgate.", "SELECT", "records-nothing-after"),
        _case("SELECT * FROM main.query_log", "SELECT", "main-is-not-records"),
    ],
)
def test_a_name_is_read_with_its_real_characters_or_not_at_all(
    sql: str, expected: dict[str, Any]
) -> None:
    assert _read(sql) == expected


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        _case("WITH", "WITH", "with"),
        _case("WITH RECURSIVE", "WITH", "with-recursive"),
        _case("WITH x", "WITH", "with-name"),
        _case("WITH x(a)", "WITH", "with-columns"),
        _case("WITH x AS", "WITH", "with-as"),
        _case("WITH x AS NOT", "WITH", "with-as-not"),
        _case("WITH x AS (SELECT 1", "WITH", "with-unclosed-body"),
        _case("WITH x AS (SELECT 1)", "WITH", "with-body"),
        _case("WITH x AS (SELECT 1),", "WITH", "with-comma"),
        _case("WITH x SELECT 1", "SELECT", "with-no-as"),
        _case("WITH x SELECT (1)", "SELECT", "with-no-as-parens-after"),
        _case(
            "WITH x(a) AS (SELECT 1) INSERT INTO t SELECT * FROM x",
            "INSERT",
            "cte-columns",
            target="t",
        ),
        _case(
            "WITH RECURSIVE x(a) AS (SELECT 1) INSERT INTO t SELECT * FROM x",
            "INSERT",
            "recursive-cte-columns",
            target="t",
        ),
        _case(
            "WITH x AS MATERIALIZED (SELECT 1) INSERT INTO t SELECT * FROM x",
            "INSERT",
            "materialized",
            target="t",
        ),
        _case(
            "WITH x AS NOT MATERIALIZED (SELECT 1) DELETE FROM t WHERE a IN x",
            "DELETE",
            "not-materialized",
            target="t",
        ),
        _case(
            "WITH a AS (SELECT 1), b(n) AS (SELECT 2) UPDATE t SET a = 1 WHERE a IN b",
            "UPDATE",
            "second-cte-columns",
            target="t",
        ),
        _case(
            "WITH x AS (SELECT 1) CREATE TABLE t(a)", "CREATE TABLE", "with-create", writes=("t",)
        ),
        _case(
            "WITH x AS (SELECT * FROM a JOIN b ON a.i = b.i) CREATE INDEX i ON t(a)",
            "CREATE INDEX",
            "with-on-before-index",
            writes=("i",),
            on_table="t",
        ),
        _case("WITH x AS (SELECT 1) DROP TABLE t", "DROP TABLE", "with-drop", target="t"),
        _case("WITH x AS (SELECT 1) PRAGMA foo", "PRAGMA", "with-pragma", pragma=("foo", None)),
        _case(
            "WITH x AS (SELECT 1) EXPLAIN SELECT 1", "EXPLAIN", "with-explain", explained="SELECT"
        ),
    ],
)
def test_a_with_clause_is_walked_to_the_verb_after_it(sql: str, expected: dict[str, Any]) -> None:
    assert _read(sql) == expected


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        _case("REPLACE INTO t VALUES (1)", "REPLACE", "replace", target="t"),
        _case(
            "REPLACE INTO t(t) VALUES ('delete-all')",
            "REPLACE",
            "replace-fts-delete",
            target="t",
            fts_delete=True,
        ),
        _case("INSERT OR REPLACE INTO main.t VALUES (1)", "REPLACE", "or-replace", target="t"),
        _case("INSERT OR REPLACE x INTO t VALUES (1)", "REPLACE", "into-too-far"),
        _case("INSERT t VALUES (1)", "INSERT", "no-into"),
        _case("INSERT OR", "INSERT", "insert-or"),
        _case("INSERT OR REPLACE", "REPLACE", "insert-or-replace-only"),
        _case("INSERT INTO replace VALUES (1)", "INSERT", "table-called-replace", target="replace"),
        _case("INSERT INTO t", "INSERT", "insert-into-name-only", target="t"),
        _case("INSERT INTO (t) VALUES ('delete')", "INSERT", "no-table-name"),
        _case(
            "INSERT INTO t SELECT t FROM u WHERE x IN (1) OR y = 'delete'",
            "INSERT",
            "select-no-column-list",
            target="t",
        ),
        _case(
            "INSERT INTO t(t) SELECT [delete] FROM u", "INSERT", "quoted-name-delete", target="t"
        ),
        _case(
            "INSERT INTO t AS a(t) VALUES ('delete')",
            "INSERT",
            "alias-fts-delete",
            target="t",
            fts_delete=True,
        ),
        _case(
            "UPDATE OR REPLACE t SET a = 1 WHERE b = 2", "UPDATE", "update-or-replace", target="t"
        ),
        _case("UPDATE OR IGNORE t SET a = 1 WHERE b = 2", "UPDATE", "update-or-ignore", target="t"),
        _case("UPDATE", "UPDATE", "update-only", has_where=False),
        _case("DELETE", "DELETE", "delete-only", has_where=False),
        _case("UPDATE t (t) SET t = 'delete' WHERE b = 2", "UPDATE", "update-not-fts", target="t"),
    ],
)
def test_a_write_is_read_as_its_kind_and_table(sql: str, expected: dict[str, Any]) -> None:
    assert _read(sql) == expected


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        _case("DELETE FROM t WHERE X'AB'", "DELETE", "hex-literal", target="t", has_where=False),
        _case("DELETE FROM t WHERE 1 IN ?", "DELETE", "in", target="t", has_where=False),
        _case("DELETE FROM t WHERE EXISTS ?", "DELETE", "exists", target="t", has_where=False),
        _case("DELETE FROM t WHERE :né", "DELETE", "non-ascii-param", target="t", has_where=False),
        _case("DELETE FROM t WHERE 'é'", "DELETE", "non-ascii-string", target="t", has_where=False),
        _case("DELETE FROM t WHERE [é]", "DELETE", "non-ascii-name", target="t"),
    ],
)
def test_a_where_naming_nothing_counts_as_none(sql: str, expected: dict[str, Any]) -> None:
    assert _read(sql) == expected


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        _case(
            "CREATE TEMP TEMP TEMP TEMP INDEX i ON t(a)",
            "CREATE TEMP",
            "kind-past-5",
            writes=("i",),
        ),
        _case(
            "CREATE UNIQUE UNIQUE TEMP INDEX i ON t(a)",
            "CREATE INDEX",
            "temp-third",
            writes=("i",),
            on_table="t",
        ),
        _case("CREATE TEMP TABLE t(a)", "CREATE TEMP TABLE", "temp", writes=("t",)),
        _case(
            "CREATE TEMPORARY VIEW v AS SELECT 1", "CREATE TEMP VIEW", "temporary", writes=("v",)
        ),
        _case(
            "CREATE UNIQUE INDEX i ON t(a)", "CREATE INDEX", "unique", writes=("i",), on_table="t"
        ),
        _case(
            "CREATE VIRTUAL TABLE f USING fts5(body)",
            "CREATE VIRTUAL TABLE",
            "virtual",
            writes=("f",),
        ),
        _case(
            "CREATE INDEX IF NOT EXISTS i ON t(a)",
            "CREATE INDEX",
            "index-if-not-exists",
            writes=("i",),
            on_table="t",
        ),
        _case("CREATE VIEW v AS SELECT 1", "CREATE VIEW", "view", writes=("v",)),
        _case("CREATE TABLE IF NOT EXISTS t(a)", "CREATE TABLE", "if-not-exists", writes=("t",)),
        _case("CREATE thing t", "CREATE THING", "no-kind-word", writes=("thing",)),
        _case(
            "CREATE TRIGGER g AFTER INSERT ON t",
            "CREATE TRIGGER",
            "trigger-no-body",
            writes=("g",),
            on_table="t",
        ),
        _case(
            "CREATE TRIGGER g AFTER UPDATE ON t BEGIN SELECT 1; END",
            "CREATE TRIGGER",
            "trigger-update-event",
            writes=("g",),
            on_table="t",
        ),
        _case(
            "CREATE TRIGGER g AFTER INSERT ON t BEGIN INSERT INTO u VALUES (1); "
            "UPDATE v SET a = 1; DELETE FROM w; END",
            "CREATE TRIGGER",
            "trigger-writes",
            writes=("g", "u", "v", "w"),
            on_table="t",
        ),
        _case(
            "CREATE TRIGGER g AFTER INSERT ON t BEGIN UPDATE OR IGNORE u SET a = 1; "
            "INSERT OR REPLACE INTO v VALUES (1); END",
            "CREATE TRIGGER",
            "trigger-or-writes",
            writes=("g", "u", "v"),
            on_table="t",
        ),
        _case(
            "CREATE TRIGGER g AFTER INSERT ON t BEGIN UPDATE",
            "CREATE TRIGGER",
            "trigger-body-cut",
            writes=("g",),
            on_table="t",
        ),
    ],
)
def test_a_create_is_read_as_the_names_it_writes(sql: str, expected: dict[str, Any]) -> None:
    assert _read(sql) == expected


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        _case("DROP TABLE IF EXISTS t", "DROP TABLE", "drop-if-exists", target="t"),
        _case(
            "DROP VIEW IF EXISTS main.v",
            "DROP VIEW",
            "drop-schema",
            target="v",
            object_schema="main",
        ),
        _case(
            'DROP TABLE "sqlgate".t',
            "DROP TABLE",
            "drop-records",
            target="t",
            object_schema="sqlgate",
            server_object="t",
        ),
        _case(
            "ALTER TABLE sqlgate.t RENAME TO u",
            "ALTER TABLE",
            "alter-records",
            target="t",
            writes=("u",),
            object_schema="sqlgate",
            server_object="t",
        ),
        _case(
            "DROP TABLE IF EXISTS sqlgate .", "DROP TABLE", "drop-schema-dot-only", target="sqlgate"
        ),
        _case(
            "CREATE UNIQUE INDEX IF NOT EXISTS s.i ON t(a)",
            "CREATE INDEX",
            "create-index-schema",
            writes=("i",),
            on_table="t",
            object_schema="s",
        ),
        _case(
            "CREATE TABLE c AS SELECT * FROM sqlgate.m",
            "CREATE TABLE",
            "create-as-records",
            writes=("c",),
            server_object="m",
        ),
        _case("EXPLAIN", "EXPLAIN", "explain-only", explained="UNKNOWN"),
        _case("EXPLAIN QUERY PLAN", "EXPLAIN", "explain-query-plan-only", explained="UNKNOWN"),
        _case("ALTER TABLE t RENAME TO", "ALTER TABLE", "rename-to-cut", target="t"),
        _case("ALTER TABLE t RENAME", "ALTER TABLE", "rename-cut", target="t"),
        _case("ALTER TABLE t RENAME COLUMN a TO b", "ALTER TABLE", "rename-column", target="t"),
        _case("ALTER TABLE t RENAME TO u", "ALTER TABLE", "rename", target="t", writes=("u",)),
    ],
)
def test_a_drop_explain_or_alter_is_read_as_what_it_names(
    sql: str, expected: dict[str, Any]
) -> None:
    assert _read(sql) == expected
