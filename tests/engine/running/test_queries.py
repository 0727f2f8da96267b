"""The SQL tiers end to end: what read, write and destructive calls return and leave behind."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw
import pytest

from sqlgate.config import Settings
from sqlgate.engine.framing import counted
from sqlgate.errors import InvalidArgument, PolicyDenied, SqlError, SqlgateError
from sqlgate.service import Service
from tests.records import connect_both
from tests.undo_hint import plain

SNAPSHOT = re.compile(r"; snapshot: (?P<path>.+?); restore: sqlgate snapshots restore ", re.M)


def rows_of(service: Service, sql: str) -> list[str]:
    return service.read_query(sql, limit=1000).splitlines()[1:-1]


def snapshots(settings: Settings) -> list[Path]:
    folder = settings.snapshot_dir
    return sorted(folder.iterdir()) if folder.exists() else []


def snapshot_path(result: str) -> Path:
    found = SNAPSHOT.search(result)
    assert found, result
    return Path(found["path"])


@pytest.fixture
def numbers(make_service: Callable[..., Service]) -> Callable[..., Service]:
    """A service (settings overridable) with table n holding 1..count."""

    def make(count: int = 150, **overrides: object) -> Service:
        service = make_service(**overrides)
        service.write_query("CREATE TABLE n (x INTEGER PRIMARY KEY)")
        service.write_query(
            "INSERT INTO n WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c "
            "WHERE x < ?) SELECT x FROM c",
            [count],
        )
        return service

    return make


# -- write_query ------------------------------------------------------------------------
def test_insert_reports_rows_and_last_rowid(service: Service) -> None:
    service.write_query("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT)")
    assert plain(service.write_query("INSERT INTO t (name) VALUES ('a')")) == (
        "ok: 1 row affected (last_insert_rowid=1)"
    )
    assert plain(service.write_query("INSERT INTO t (id, name) VALUES (40, 'b'), (41, 'c')")) == (
        "ok: 2 rows affected (last_insert_rowid=41)"
    )


ROWID_SCHEMA = (
    "CREATE TABLE a(id INTEGER PRIMARY KEY, v TEXT UNIQUE)",
    'CREATE TABLE "odd ""name"""(k INTEGER PRIMARY KEY, n INT)',
    "CREATE TABLE w(code TEXT NOT NULL PRIMARY KEY, n INT) WITHOUT ROWID",
    "CREATE TABLE log(id INTEGER PRIMARY KEY, what TEXT)",
    "CREATE TABLE plain(v TEXT)",
    "CREATE TABLE far(id INTEGER PRIMARY KEY)",
    "INSERT INTO a(id, v) VALUES (1, 'one'), (2, 'two'), (3, 'three')",
)
ROWID_TRIGGERS = (
    "CREATE TRIGGER a_logged AFTER UPDATE ON a BEGIN INSERT INTO log(what) VALUES ('u'); END",
    "CREATE TRIGGER w_logged AFTER INSERT ON w BEGIN INSERT INTO log(what) VALUES ('w'); END",
)
STALE = 5000  # the rowid the connection's last insert (another table's) left behind
ROWID_CASES = [
    pytest.param(
        "INSERT INTO a(id, v) VALUES (3, 'x') ON CONFLICT(id) DO UPDATE SET v = 'y'",
        1,
        None,
        id="upsert-updated",
    ),
    pytest.param(
        "INSERT INTO a(id, v) VALUES (2, 'x') ON CONFLICT DO NOTHING", 0, None, id="upsert-nothing"
    ),
    pytest.param(
        "INSERT INTO a(v) VALUES ('one') ON CONFLICT(v) DO UPDATE SET v = 'uno'",
        1,
        None,
        id="upsert-on-unique-updated",
    ),
    pytest.param(
        "INSERT INTO a(id, v) VALUES (10, 'x') ON CONFLICT(id) DO UPDATE SET v = 'y'",
        1,
        10,
        id="upsert-inserted",
    ),
    pytest.param(
        "INSERT INTO a(id, v) VALUES (11, 'p'), (1, 'q') ON CONFLICT(id) DO UPDATE SET v = 'r'",
        2,
        11,
        id="upsert-inserted-then-updated",
    ),
    pytest.param("INSERT OR IGNORE INTO a(id, v) VALUES (1, 'dup')", 0, None, id="ignored"),
    pytest.param("REPLACE INTO a(id, v) VALUES (2, 'r')", 1, 2, id="replace"),
    pytest.param("INSERT OR REPLACE INTO a(v) VALUES ('two')", 1, 4, id="replace-on-unique"),
    pytest.param("INSERT INTO w(code, n) VALUES ('k', 1)", 1, None, id="without-rowid"),
    pytest.param(
        "INSERT INTO w(code, n) VALUES ('k', 1) RETURNING n", 1, None, id="without-rowid-returning"
    ),
    pytest.param('INSERT INTO "odd ""name"""(n) VALUES (7)', 1, 1, id="quoted-name"),
    pytest.param("INSERT INTO plain(v) VALUES ('x'), ('y')", 2, 2, id="implicit-rowid"),
    pytest.param("INSERT INTO a(id, v) VALUES (0, 'zero')", 1, 0, id="rowid-zero"),
    pytest.param("INSERT INTO a(id, v) VALUES (-7, 'neg')", 1, -7, id="negative-rowid"),
    pytest.param("INSERT INTO a(v) SELECT v FROM a WHERE 0", 0, None, id="insert-select-nothing"),
]


def _rowids(service: Service) -> Service:
    for sql in ROWID_SCHEMA:
        service.write_query(sql)
    for sql in ROWID_TRIGGERS:
        service.destructive_query(sql, "log changes")
    return service


@pytest.mark.parametrize("overrides", [{}, {"write_undo_keep": 0}], ids=["undo", "no-undo"])
@pytest.mark.parametrize("tool", ["write_query", "destructive_query"])
@pytest.mark.parametrize(("sql", "rows", "rowid"), ROWID_CASES)  # fmt: skip
def test_last_insert_rowid_is_named_only_when_the_statement_inserted_that_row(
    make_service: Callable[..., Service],
    overrides: dict[str, object],
    tool: str,
    sql: str,
    rows: int,
    rowid: int | None,
) -> None:
    service = _rowids(make_service(**overrides))
    service.write_query("INSERT INTO far(id) VALUES (?)", [STALE])  # a stale rowid on the conn
    if tool == "write_query":
        answer = service.write_query(sql)
    else:
        answer = service.destructive_query(sql, "test")
    first = plain(answer).splitlines()[0].split("; ", 1)[0]
    expected = f"ok: {counted(rows, 'row')} affected"
    if rowid is not None:
        expected += f" (last_insert_rowid={rowid})"
    assert first == expected


def test_insert_of_nothing_reports_zero_rows(service: Service) -> None:
    service.write_query("CREATE TABLE t (id INTEGER PRIMARY KEY)")
    assert service.write_query("INSERT INTO t SELECT 1 WHERE 0") == "ok: 0 rows affected"


def test_update_reports_rows_without_a_rowid(service: Service) -> None:
    service.write_query("CREATE TABLE t (id INTEGER PRIMARY KEY, v INT)")
    service.write_query("INSERT INTO t VALUES (1, 0), (2, 0), (3, 0)")
    assert plain(service.write_query("UPDATE t SET v = 1 WHERE id >= 2")) == "ok: 2 rows affected"


def test_returning_rows_come_back_as_csv(service: Service) -> None:
    service.write_query("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT)")
    result = plain(
        service.write_query("INSERT INTO t (name) VALUES ('a'), ('b, c') RETURNING id, name")
    )
    assert result == 'ok: 2 rows affected (last_insert_rowid=2)\nid,name\n1,a\n2,"b, c"\n# 2 rows'


def test_returning_rows_are_capped_at_max_rows(make_service: Callable[..., Service]) -> None:
    service = make_service(max_rows=2)
    service.write_query("CREATE TABLE t (id INTEGER PRIMARY KEY)")
    result = service.write_query("INSERT INTO t VALUES (1), (2), (3) RETURNING id")
    assert result.endswith("id\n1\n2\n# 2 rows (truncated: row limit 2)")
    assert result.startswith("ok: 3 rows affected")


@pytest.mark.parametrize(
    ("sql", "summary"),
    [
        pytest.param("CREATE TABLE u (x)", "ok: CREATE TABLE done", id="create-table"),
        pytest.param(
            "CREATE TABLE IF NOT EXISTS new (x)", "ok: CREATE TABLE done", id="create-if-not-exists"
        ),
        pytest.param(
            "CREATE VIRTUAL TABLE docs USING fts5(body)",
            "ok: CREATE VIRTUAL TABLE done",
            id="create-fts5",
        ),
        pytest.param(
            "CREATE VIRTUAL TABLE boxes USING rtree(id, x0, x1)",
            "ok: CREATE VIRTUAL TABLE done",
            id="create-rtree",
        ),
        pytest.param("ANALYZE", "ok: ANALYZE done", id="analyze"),
    ],
)
def test_ddl_reports_what_was_done(service: Service, sql: str, summary: str) -> None:
    service.write_query("CREATE TABLE t (id INTEGER PRIMARY KEY, v)")
    assert plain(service.write_query(sql)) == summary


@pytest.mark.parametrize(
    ("sql", "summary"),
    [
        pytest.param("CREATE INDEX t_v ON t (v)", "ok: CREATE INDEX done", id="create-index"),
        pytest.param("CREATE UNIQUE INDEX t_u ON t (v)", "ok: CREATE INDEX done", id="unique"),
    ],
)
def test_create_index_in_write_query(service: Service, sql: str, summary: str) -> None:
    service.write_query("CREATE TABLE t (id INTEGER PRIMARY KEY, v)")
    assert plain(service.write_query(sql)) == summary


def test_analyze_can_run_again(service: Service) -> None:
    service.write_query("CREATE TABLE t (id INTEGER PRIMARY KEY, v UNIQUE)")
    service.write_query("INSERT INTO t VALUES (1, 1), (2, 2)")
    service.write_query("ANALYZE")
    assert service.write_query("ANALYZE t") == "ok: ANALYZE done"


def test_write_query_changes_are_visible_to_reads(service: Service) -> None:
    service.write_query("CREATE TABLE t (v TEXT)")
    service.write_query("INSERT INTO t VALUES ('kept')")
    assert rows_of(service, "SELECT v FROM t") == ["kept"]


def test_a_failed_write_changes_nothing(service: Service) -> None:
    service.write_query("CREATE TABLE t (id INTEGER PRIMARY KEY)")
    service.write_query("INSERT INTO t VALUES (2)")
    with pytest.raises(SqlError, match="UNIQUE"):
        service.write_query("INSERT INTO t VALUES (1), (2)")  # row 1 went in before row 2 failed
    assert rows_of(service, "SELECT id FROM t") == ["2"]


# -- read_query -------------------------------------------------------------------------
def test_read_default_limit_is_100(numbers: Callable[..., Service]) -> None:
    result = numbers(150).read_query("SELECT x FROM n ORDER BY x")
    assert result.endswith("\n100\n# 100 rows (truncated: row limit 100)")


def test_read_default_limit_follows_the_setting(numbers: Callable[..., Service]) -> None:
    result = numbers(20, default_limit=7).read_query("SELECT x FROM n")
    assert result.endswith("# 7 rows (truncated: row limit 7)")


def test_read_explicit_limit(numbers: Callable[..., Service]) -> None:
    assert numbers(10).read_query("SELECT x FROM n ORDER BY x", limit=3) == (
        "x\n1\n2\n3\n# 3 rows (truncated: row limit 3)"
    )


def test_read_limit_over_max_rows_is_capped(numbers: Callable[..., Service]) -> None:
    result = numbers(60, max_rows=40).read_query("SELECT x FROM n", limit=50)
    assert result.endswith("\n# 40 rows (truncated: row limit 40)")


def test_read_everything_when_under_the_limit(numbers: Callable[..., Service]) -> None:
    assert numbers(3).read_query("SELECT x FROM n ORDER BY x", limit=3) == "x\n1\n2\n3\n# 3 rows"


def test_read_sql_limit_is_left_alone(numbers: Callable[..., Service]) -> None:
    assert numbers(10).read_query("SELECT x FROM n ORDER BY x LIMIT 2") == "x\n1\n2\n# 2 rows"


@pytest.mark.parametrize(
    "limit",
    [
        pytest.param(0, id="zero"),
        pytest.param(-1, id="negative"),
        pytest.param(True, id="boolean"),
        pytest.param(1.5, id="float"),
        pytest.param("10", id="string"),
    ],
)
def test_read_bad_limit_is_invalid(service: Service, limit: object) -> None:
    with pytest.raises(InvalidArgument, match="limit must be a whole number"):
        service.read_query("SELECT 1", limit=limit)  # type: ignore[arg-type]


def test_read_empty_result_still_has_a_header(service: Service) -> None:
    service.write_query("CREATE TABLE t (id INTEGER, name TEXT)")
    assert service.read_query("SELECT id, name FROM t") == "id,name\n# 0 rows"


def test_read_result_is_cut_at_max_result_bytes(numbers: Callable[..., Service]) -> None:
    result = numbers(100, max_result_bytes=64).read_query("SELECT x FROM n ORDER BY x")
    assert result.endswith("(truncated: 64 bytes)")
    assert len(result.rpartition("\n")[0].encode()) < 64


def test_read_cells_are_cut_at_max_cell_chars(make_service: Callable[..., Service]) -> None:
    service = make_service(max_cell_chars=10)
    assert service.read_query("SELECT printf('%.25c', 'z') AS s") == (
        "s\nzzzzzzzzzz…[+15 chars]\n# 1 row"
    )


def test_read_values_of_every_type(service: Service) -> None:
    result = service.read_query("SELECT 1 AS i, 2.5 AS f, 'a' AS t, NULL AS n, x'0a0b' AS b, ''")
    assert result == "i,f,t,n,b,''\n1,2.5,a,,x'0a0b',\"\"\n# 1 row"


@pytest.mark.parametrize(
    "sql",
    [
        pytest.param("INSERT INTO t VALUES (1)", id="insert"),
        pytest.param("CREATE TABLE u (x)", id="create"),
        pytest.param("DELETE FROM t", id="delete"),
    ],
)
def test_read_query_refuses_changes(service: Service, sql: str) -> None:
    service.write_query("CREATE TABLE t (x)")
    with pytest.raises(PolicyDenied):
        service.read_query(sql)
    assert rows_of(service, "SELECT count(*) FROM t") == ["0"]


# -- destructive_query ------------------------------------------------------------------
@pytest.fixture
def shop(make_service: Callable[..., Service]) -> Service:
    """Whole-file snapshots for every destructive call (--undo file): these tests are
    about snapshots; row-level undo has its own tests (test_undo.py)."""
    service = make_service(undo="file")
    service.write_query("CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT)")
    service.write_query("INSERT INTO item (name) VALUES ('pen'), ('ink'), ('pad')")
    return service


def test_destructive_returns_the_snapshot_path(shop: Service, settings: Settings) -> None:
    result = shop.destructive_query("DELETE FROM item WHERE id = 1", "pens are discontinued")
    assert result.startswith("ok: 1 row affected; snapshot: ")
    path = snapshot_path(result)
    assert path.is_file()
    assert path.parent == settings.snapshot_dir
    assert snapshots(settings) == [path]


def test_the_snapshot_holds_the_data_from_before(shop: Service) -> None:
    path = snapshot_path(shop.destructive_query("DELETE FROM item", "start over"))
    copy = connect_both(path, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        assert copy.execute("SELECT count(*) FROM item").fetchall() == [(3,)]
    finally:
        copy.close()
    assert rows_of(shop, "SELECT count(*) FROM item") == ["0"]


@pytest.mark.parametrize(
    ("sql", "summary"),
    [
        pytest.param("DROP TABLE item", "ok: DROP TABLE done", id="drop"),
        pytest.param("ALTER TABLE item ADD COLUMN price INT", "ok: ALTER TABLE done", id="alter"),
        pytest.param("UPDATE item SET name = 'x'", "ok: 3 rows affected", id="update-all"),
        pytest.param("DELETE FROM item", "ok: 3 rows affected", id="delete-all"),
    ],
)
def test_destructive_summaries(shop: Service, sql: str, summary: str) -> None:
    assert shop.destructive_query(sql, "planned cleanup").startswith(f"{summary}; snapshot: ")


def test_destructive_returning_rows_follow_the_summary(shop: Service) -> None:
    result = shop.destructive_query("DELETE FROM item WHERE id = 2 RETURNING name", "ink is gone")
    first, _, rest = result.partition("\n")
    assert first.startswith("ok: 1 row affected; snapshot: ")
    assert rest == "name\nink\n# 1 row"


@pytest.mark.parametrize(
    "reason",
    [
        pytest.param("", id="empty"),
        pytest.param("   ", id="blank"),
        pytest.param(None, id="none"),
        pytest.param(42, id="not-text"),
    ],
)
def test_destructive_needs_a_reason(shop: Service, settings: Settings, reason: object) -> None:
    with pytest.raises(InvalidArgument, match="reason is required"):
        shop.destructive_query("DELETE FROM item", reason)  # type: ignore[arg-type]
    assert snapshots(settings) == []
    assert rows_of(shop, "SELECT count(*) FROM item") == ["3"]


@pytest.mark.parametrize(
    ("sql", "error"),
    [
        pytest.param("DROP TABLE query_log", PolicyDenied, id="server-table"),
        pytest.param("DELETE FROM query_log", PolicyDenied, id="server-rows"),
        pytest.param("ATTACH 'other.db' AS other", PolicyDenied, id="attach"),
        pytest.param("VACUUM", PolicyDenied, id="vacuum"),
        pytest.param("CREATE TEMP TABLE x (y)", PolicyDenied, id="temp"),
        pytest.param("CREATE VIEW v AS SELECT 1", PolicyDenied, id="view"),
        pytest.param("SELECT * FROM item", PolicyDenied, id="read"),
        pytest.param("DELETE FROM missing", SqlError, id="no-such-table"),
        pytest.param("DELETE FROM item; DELETE FROM item", PolicyDenied, id="two-statements"),
        pytest.param("DELETE FROM item WHERE id = ?", InvalidArgument, id="missing-param"),
    ],
)
def test_refused_destructive_statements_take_no_snapshot(
    shop: Service, settings: Settings, sql: str, error: type[SqlgateError]
) -> None:
    with pytest.raises(error):
        shop.destructive_query(sql, "trying")
    assert snapshots(settings) == []
    assert rows_of(shop, "SELECT count(*) FROM item") == ["3"]


def test_a_failing_destructive_statement_leaves_no_snapshot(
    shop: Service, settings: Settings
) -> None:
    shop.write_query("CREATE TABLE sale (item INT REFERENCES item (id))")
    shop.write_query("INSERT INTO sale VALUES (1)")
    with pytest.raises(SqlError, match="FOREIGN KEY constraint failed"):
        shop.destructive_query("DELETE FROM item WHERE id = 1", "pens are discontinued")
    assert snapshots(settings) == []
    assert rows_of(shop, "SELECT count(*) FROM item") == ["3"]


def test_a_failing_destructive_statement_keeps_older_snapshots(
    make_service: Callable[..., Service], settings: Settings
) -> None:
    service = make_service(snapshots_keep=2, undo="file")
    service.write_query("CREATE TABLE item (id INTEGER PRIMARY KEY)")
    service.write_query("CREATE TABLE sale (item INT REFERENCES item (id))")
    service.write_query("INSERT INTO item VALUES (1), (2), (3)")
    service.write_query("INSERT INTO sale VALUES (3)")
    service.destructive_query("DELETE FROM item WHERE id = 1", "first")
    service.destructive_query("DELETE FROM item WHERE id = 2", "second")
    kept = snapshots(settings)
    assert len(kept) == 2
    with pytest.raises(SqlError):
        service.destructive_query("DELETE FROM item WHERE id = 3", "fails on the sale")
    assert snapshots(settings) == kept


@pytest.mark.parametrize(
    ("sql", "what"),
    [
        pytest.param("DROP TABLE IF EXISTS missing", "table `missing`", id="table"),
        pytest.param("DROP VIEW IF EXISTS missing", "view `missing`", id="view"),
        pytest.param("DROP INDEX IF EXISTS missing", "index `missing`", id="index"),
        pytest.param("DROP TRIGGER IF EXISTS missing", "trigger `missing`", id="trigger"),
        pytest.param("drop table if exists main.Missing", "table `Missing`", id="main-qualified"),
        pytest.param('DROP TABLE IF EXISTS "no\nline"', "table `no\\nline`", id="shown-escaped"),
        # an index named like the table, or a table like the trigger, is another namespace
        pytest.param("DROP INDEX IF EXISTS item", "index `item`", id="index-named-as-table"),
        pytest.param("DROP TRIGGER IF EXISTS item", "trigger `item`", id="trigger-as-table"),
    ],
)
def test_drop_if_exists_of_nothing_runs_nothing_and_takes_no_snapshot(
    shop: Service, settings: Settings, sql: str, what: str
) -> None:
    schema = rows_of(shop, "SELECT sql FROM sqlite_schema ORDER BY name")
    assert shop.destructive_query(sql, "clean up if it is there") == (
        f"ok: nothing to drop: no {what}; nothing was run and no snapshot was taken"
    )
    assert snapshots(settings) == []
    assert rows_of(shop, "SELECT sql FROM sqlite_schema ORDER BY name") == schema
    audited = "SELECT ok, rows, error IS NULL FROM query_log WHERE tool = 'destructive_query'"
    assert rows_of(shop, audited) == ["1,0,1"]


@pytest.mark.parametrize(
    ("sql", "summary"),
    [
        pytest.param("DROP TABLE IF EXISTS item", "ok: DROP TABLE done", id="table"),
        pytest.param("DROP TABLE IF EXISTS ITEM", "ok: DROP TABLE done", id="folded-name"),
        pytest.param("DROP VIEW IF EXISTS v", "ok: DROP VIEW done", id="view"),
        pytest.param("DROP INDEX IF EXISTS item_name", "ok: DROP INDEX done", id="index"),
    ],
)
def test_drop_if_exists_of_something_drops_it_after_a_snapshot(
    shop: Service, settings: Settings, sql: str, summary: str
) -> None:
    shop.write_query("CREATE INDEX item_name ON item (name)")
    shop.create_view("v", "SELECT name FROM item", "", False)
    assert shop.destructive_query(sql, "clean up").startswith(f"{summary}; snapshot: ")
    assert len(snapshots(settings)) == 1


def test_drop_table_if_exists_of_a_view_is_sqlites_error_not_a_no_op(shop: Service) -> None:
    shop.create_view("v", "SELECT name FROM item", "", False)
    with pytest.raises(SqlError, match="use DROP VIEW"):
        shop.destructive_query("DROP TABLE IF EXISTS v", "clean up")


def test_drop_if_exists_still_needs_a_reason_and_the_right_tier(shop: Service) -> None:
    with pytest.raises(InvalidArgument, match="reason is required"):
        shop.destructive_query("DROP TABLE IF EXISTS missing", "")
    with pytest.raises(PolicyDenied, match="use destructive_query"):
        shop.write_query("DROP TABLE IF EXISTS missing")


def test_reindex_runs_in_write_query_and_changes_no_row(shop: Service) -> None:
    shop.write_query("CREATE INDEX item_name ON item (name)")
    assert shop.write_query("REINDEX item") == "ok: REINDEX done"
    assert shop.write_query("REINDEX item_name") == "ok: REINDEX done"
    assert rows_of(shop, "SELECT count(*) FROM item") == ["3"]


def test_snapshots_are_rotated_to_snapshots_keep(
    make_service: Callable[..., Service], settings: Settings
) -> None:
    service = make_service(snapshots_keep=2)
    service.write_query("CREATE TABLE t (x)")
    made = [
        snapshot_path(service.destructive_query(f"ALTER TABLE t ADD COLUMN c{n}", "grow"))
        for n in range(4)
    ]
    assert snapshots(settings) == sorted(made[-2:])


def test_a_vetoed_destructive_call_changes_nothing(shop: Service, settings: Settings) -> None:
    def veto() -> None:
        raise PolicyDenied("the user said no")

    with pytest.raises(PolicyDenied, match="the user said no"):
        shop.destructive_query("DELETE FROM item", "cleanup", confirm=veto)
    assert snapshots(settings) == []
    assert rows_of(shop, "SELECT count(*) FROM item") == ["3"]


def test_returning_many_rows_keeps_only_what_fits_the_caps(make_service: Any) -> None:
    service = make_service(max_rows=5)
    service.write_query("CREATE TABLE big (id INTEGER PRIMARY KEY, v TEXT)")
    result = service.write_query(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000) "
        "INSERT INTO big (v) SELECT hex(randomblob(100)) FROM n RETURNING id"
    )
    first, *rest = plain(result).splitlines()
    assert first == "ok: 3000 rows affected (last_insert_rowid=3000)"
    assert rest[-1] == "# 5 rows (truncated: row limit 5)"
    assert service.read_query("SELECT count(*) AS n FROM big") == "n\n3000\n# 1 row"


def test_double_quotes_name_columns_never_strings(service: Service) -> None:
    service.write_query("CREATE TABLE t (name TEXT)")
    with pytest.raises(SqlError, match="single quotes"):
        service.read_query('SELECT "nosuchcol" FROM t')


# -- CREATE ... IF NOT EXISTS of what exists --------------------------------------------
EXISTING = (
    "CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)",
    'CREATE TABLE "my table"(a, b)',
    "CREATE INDEX t_v ON t(v)",
    "CREATE VIRTUAL TABLE docs USING fts5(body)",
)
IF_NOT_EXISTS = [
    pytest.param(
        "CREATE TABLE IF NOT EXISTS t(x, y, z)", "table `t`", "describe_table t", id="table"
    ),
    pytest.param(
        'CREATE TABLE IF NOT EXISTS "my table"(q)',
        "table `my table`",
        "describe_table my table",
        id="quoted-name",
    ),
    pytest.param(
        "create table if not exists T(x) STRICT", "table `t`", "describe_table t", id="other-case"
    ),
    pytest.param(
        "CREATE TABLE IF NOT EXISTS main.t(x)", "table `t`", "describe_table t", id="main-qualified"
    ),
    pytest.param(
        "CREATE TABLE IF NOT EXISTS t AS SELECT 1 AS one",
        "table `t`",
        "describe_table t",
        id="as-select",
    ),
    pytest.param(
        "CREATE TABLE IF NOT EXISTS v(x)", "view `v`", "describe_table v", id="over-a-view"
    ),
    pytest.param(
        "CREATE INDEX IF NOT EXISTS t_v ON t(id, v)", "index `t_v`", "get_schema", id="index"
    ),
    pytest.param(
        "CREATE UNIQUE INDEX IF NOT EXISTS T_V ON t(id)", "index `t_v`", "get_schema", id="unique"
    ),
    pytest.param(
        "CREATE VIRTUAL TABLE IF NOT EXISTS docs USING fts5(title, body)",
        "table `docs`",
        "describe_table docs",
        id="virtual-table",
    ),
    pytest.param(
        "CREATE TRIGGER IF NOT EXISTS t_seen AFTER DELETE ON t BEGIN SELECT 1; END",
        "trigger `t_seen`",
        "get_schema",
        id="trigger",
    ),
]


def _schema_rows(service: Service) -> list[str]:
    return rows_of(service, "SELECT type, name, sql FROM sqlite_schema ORDER BY name")


@pytest.mark.parametrize(
    "undo", [{}, {"write_undo_keep": 0, "undo": "file"}], ids=["undo", "no-undo"]
)
@pytest.mark.parametrize("tool", ["write_query", "destructive_query"])
@pytest.mark.parametrize(("sql", "what", "see"), IF_NOT_EXISTS)
def test_create_if_not_exists_of_an_existing_object_says_nothing_was_created(
    make_service: Callable[..., Service],
    settings: Settings,
    undo: dict[str, object],
    tool: str,
    sql: str,
    what: str,
    see: str,
) -> None:
    service = make_service(**undo)
    for ddl in EXISTING:
        service.write_query(ddl)
    service.create_view("v", "SELECT v FROM t", "", False)
    service.destructive_query("CREATE TRIGGER t_seen AFTER INSERT ON t BEGIN SELECT 0; END", "x")
    schema, kept = _schema_rows(service), snapshots(settings)
    if tool == "write_query":
        if "TRIGGER" in sql:
            return  # write_query takes no CREATE TRIGGER (test_service_refusals)
        answer = service.write_query(sql)
        tail = "nothing was changed"
    else:
        answer = service.destructive_query(sql, "make sure it is there")
        tail = "nothing was run and no snapshot was taken"
    assert answer == (
        f"ok: nothing created: {what} already exists and IF NOT EXISTS left it as it is, "
        f"whatever its definition ({see} shows it); {tail}"
    )
    assert _schema_rows(service) == schema
    assert snapshots(settings) == kept


@pytest.mark.parametrize("tool", ["write_query", "destructive_query"])
def test_create_if_not_exists_of_a_new_name_creates_it(service: Service, tool: str) -> None:
    sql = 'CREATE TABLE IF NOT EXISTS "fresh one"(x)'
    if tool == "write_query":
        answer = plain(service.write_query(sql))
    else:
        answer = service.destructive_query(sql, "make sure it is there")
    assert answer.startswith("ok: CREATE TABLE done")
    assert rows_of(service, "SELECT name FROM sqlite_schema WHERE name = 'fresh one'") == [
        "fresh one"
    ]


def test_create_if_not_exists_still_reports_sqlites_errors(service: Service) -> None:
    service.write_query("CREATE TABLE t(a)")
    service.write_query("CREATE INDEX i ON t(a)")
    with pytest.raises(SqlError, match="there is already an index named i"):
        service.write_query("CREATE TABLE IF NOT EXISTS i(x)")
    with pytest.raises(SqlError, match=r"no such table: main\.nosuch"):
        service.destructive_query("CREATE INDEX IF NOT EXISTS i ON nosuch(a)", "x")
