"""create_view: a SELECT saved under a checked name, its description kept as `--` lines."""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlgate.engine.running import views
from sqlgate.engine.running.views import MAX_DESCRIPTION_CHARS, description_comment
from sqlgate.errors import InvalidArgument, PolicyDenied, SqlgateError
from sqlgate.service import Service
from tests.records import connect_both
from tests.undo_hint import plain

SELECT = "SELECT id, body FROM t WHERE id > 0"


@pytest.fixture
def ready(service: Service) -> Service:
    service.write_query("CREATE TABLE t(id INTEGER PRIMARY KEY, body TEXT)")
    service.write_query("INSERT INTO t(body) VALUES ('alpha'), ('beta')")
    return service


def stored_sql(db: Path, name: str) -> str | None:
    conn = connect_both(db, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        rows = conn.execute("SELECT sql FROM sqlite_schema WHERE name = ?", (name,)).fetchall()
    finally:
        conn.close()
    return str(rows[0][0]) if rows else None


def names(db: Path) -> set[str]:
    conn = connect_both(db, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return {str(n) for (n,) in conn.execute("SELECT name FROM sqlite_schema")}
    finally:
        conn.close()


def split_view_sql(sql: str, name: str) -> tuple[list[str], str]:
    """(comment lines without `-- `, the body) of the SQL create_view stored."""
    head = f'CREATE VIEW "{name}" AS\n'
    assert sql.startswith(head)
    lines = sql[len(head) :].split("\n")
    comments = []
    while lines and lines[0].startswith("--"):
        comments.append(lines.pop(0)[3:])
    return comments, "\n".join(lines)


def statements_sqlite_runs(sql: str) -> list[str]:
    """Run `sql` on a scratch database holding `t`; return every statement SQLite executed."""
    conn = apsw.Connection(":memory:")
    seen: list[str] = []

    def trace(_: apsw.Cursor, statement: str, __: object) -> bool:
        seen.append(statement)
        return True

    try:
        conn.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, body TEXT)")
        cursor = conn.cursor()
        cursor.exec_trace = trace
        cursor.execute(sql)
        assert conn.execute("SELECT count(*) FROM sqlite_schema WHERE name = 't'").fetchall() == [
            (1,)
        ]
    finally:
        conn.close()
    return seen


# -- creating ------------------------------------------------------------------------------


def test_created_view_is_queryable_with_read_query(ready: Service) -> None:
    assert plain(ready.create_view("recent", SELECT)) == "ok: view recent created"
    assert ready.read_query("SELECT body FROM recent ORDER BY id") == "body\nalpha\nbeta\n# 2 rows"


def test_description_is_stored_as_comment_lines_and_shown_by_get_schema(
    ready: Service, db_path: Path
) -> None:
    ready.create_view("recent", SELECT, description="Rows worth a look.\nSecond line.")
    sql = stored_sql(db_path, "recent")
    assert sql == f'CREATE VIEW "recent" AS\n-- Rows worth a look.\n-- Second line.\n{SELECT}'
    assert "-- Rows worth a look.\n-- Second line." in ready.get_schema()


def test_trailing_semicolons_are_not_stored(ready: Service, db_path: Path) -> None:
    ready.create_view("recent", SELECT + " ;; ")
    assert stored_sql(db_path, "recent") == f'CREATE VIEW "recent" AS\n{SELECT}'


@pytest.mark.parametrize(
    "select_sql",
    [
        pytest.param("WITH x AS (SELECT id FROM t) SELECT id FROM x", id="with"),
        pytest.param("VALUES (1, 'a'), (2, 'b')", id="values"),
        pytest.param("SELECT 1 AS one -- a trailing comment", id="trailing-comment"),
    ],
)
def test_other_read_shapes_make_views(ready: Service, select_sql: str) -> None:
    ready.create_view("shape", select_sql)
    assert ready.read_query("SELECT count(*) AS n FROM shape").startswith("n\n")


INJECTIONS = [
    pytest.param("a\nDROP TABLE t; --", id="newline"),
    pytest.param("a\rDROP TABLE t;", id="carriage-return"),
    pytest.param("a\r\nDROP TABLE t;", id="crlf"),
    pytest.param("a\u2028DROP TABLE t;", id="line-separator"),
    pytest.param("a\u2029DROP TABLE t;", id="paragraph-separator"),
    pytest.param("a\x85DROP TABLE t;", id="next-line"),
    pytest.param("a\vb\fc", id="vertical-tab-form-feed"),
    pytest.param("*/ ;DROP TABLE t; /*", id="block-comment-end"),
    pytest.param(";DROP TABLE t", id="semicolon-drop"),
    pytest.param("x\n\n\nSELECT 2; DROP TABLE t", id="blank-lines"),
    pytest.param("  \n padded \n ", id="padded"),
]


@pytest.mark.parametrize("description", INJECTIONS)
def test_description_can_never_escape_its_comment(
    ready: Service, db_path: Path, description: str
) -> None:
    ready.create_view("inj", SELECT, description=description)
    sql = stored_sql(db_path, "inj")
    assert sql is not None
    comments, body = split_view_sql(sql, "inj")
    assert body == SELECT
    assert statements_sqlite_runs(sql) == [sql]
    assert "t" in names(db_path)
    assert ready.read_query("SELECT count(*) AS n FROM inj") == "n\n2\n# 1 row"
    assert all("\n" not in line and "\r" not in line for line in comments)


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.text(max_size=200))
def test_any_accepted_description_leaves_exactly_one_create_view(
    ready: Service, db_path: Path, description: str
) -> None:
    try:
        ready.create_view("prop", SELECT, description=description, replace=True)
    except InvalidArgument:
        return  # refused (control characters): nothing to check
    sql = stored_sql(db_path, "prop")
    assert sql is not None
    _, body = split_view_sql(sql, "prop")
    assert body == SELECT
    assert statements_sqlite_runs(sql) == [sql]


@pytest.mark.parametrize(
    "description",
    [
        pytest.param("nul\x00byte", id="nul"),
        pytest.param("bell\x07", id="bell"),
        pytest.param("escape \x1b[31m red", id="ansi-escape"),
        pytest.param("delete\x7f", id="del"),
        pytest.param("unit\x1fsep", id="unit-separator"),
    ],
)
def test_control_characters_in_the_description_are_refused(
    ready: Service, db_path: Path, description: str
) -> None:
    with pytest.raises(InvalidArgument, match="control characters"):
        ready.create_view("ctl", SELECT, description=description)
    assert stored_sql(db_path, "ctl") is None


def test_an_over_long_description_is_refused(ready: Service, db_path: Path) -> None:
    with pytest.raises(InvalidArgument, match=str(MAX_DESCRIPTION_CHARS)):
        ready.create_view("long", SELECT, description="x" * (MAX_DESCRIPTION_CHARS + 1))
    assert stored_sql(db_path, "long") is None
    ready.create_view("long", SELECT, description="x" * MAX_DESCRIPTION_CHARS)


def test_description_comment_of_nothing_is_empty() -> None:
    assert description_comment("") == ""
    assert description_comment(" \n\t ") == ""
    assert description_comment("a\n\nb") == "-- a\n--\n-- b\n"


# -- names -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "error"),
    [
        pytest.param("has space", InvalidArgument, id="space"),
        pytest.param('quo"te', InvalidArgument, id="double-quote"),
        pytest.param("it's", InvalidArgument, id="single-quote"),
        pytest.param("1st", InvalidArgument, id="digit-first"),
        pytest.param("", InvalidArgument, id="empty"),
        pytest.param("a" * 129, InvalidArgument, id="too-long"),
        pytest.param("sqlite_stat1", InvalidArgument, id="sqlite-prefix"),
        pytest.param("SQLITE_mine", InvalidArgument, id="sqlite-prefix-upper"),
        pytest.param("v;DROP", InvalidArgument, id="semicolon"),
        pytest.param("vü", InvalidArgument, id="non-ascii"),
        # SQLite's own refusal: the name is a shadow table's of the records' fts5 table
        pytest.param("memory_events_fts_data", SqlgateError, id="reserved-shadow"),
    ],
)
def test_invalid_view_names_are_refused(
    ready: Service, db_path: Path, name: str, error: type[SqlgateError]
) -> None:
    before = names(db_path)
    with pytest.raises(error):
        ready.create_view(name, SELECT, replace=True)
    assert names(db_path) == before


@pytest.mark.parametrize("name", ["query_errors", "Query_Patterns", "QUERY_LOG", "members"])
def test_a_view_may_take_a_server_tables_name(ready: Service, db_path: Path, name: str) -> None:
    """sqlgate's tables live in the records file (issue 33): their names are free in the
    user's file, and the records' own stay where they are."""
    ready.create_view(name, SELECT)
    assert name in names(db_path)
    with connect_both(db_path) as conn:
        assert conn.execute(
            "SELECT count(*) FROM sqlgate.sqlite_schema WHERE name = lower(?)", (name,)
        ).fetchone() == (1,)


@pytest.mark.parametrize(
    "select_sql",
    [
        "SELECT count(*) AS n FROM query_log",
        "SELECT tool FROM sqlgate.query_log",
        "SELECT 1 AS one FROM notes_mirror WHERE EXISTS (SELECT 1 FROM sqlgate.members)",
    ],
)
def test_a_view_over_the_records_is_refused_with_what_to_do(
    ready: Service, db_path: Path, select_sql: str
) -> None:
    before = names(db_path)
    # the policy (issue-33-policy) says it for a qualified name, the view tool for a plain one
    with pytest.raises(PolicyDenied, match=r"query sqlgate\.\w+ (directly )?with read_query"):
        ready.create_view("over_records", select_sql.replace("notes_mirror", "t"))
    assert names(db_path) == before


def test_a_name_of_128_characters_is_accepted(ready: Service) -> None:
    ready.create_view("v" * 128, SELECT)


# -- replacing --------------------------------------------------------------------------------


def test_an_existing_view_is_not_replaced_without_replace(ready: Service, db_path: Path) -> None:
    ready.create_view("recent", SELECT)
    with pytest.raises(InvalidArgument, match="replace=true"):
        ready.create_view("recent", "SELECT 1 AS other")
    assert stored_sql(db_path, "recent") == f'CREATE VIEW "recent" AS\n{SELECT}'


def test_replace_swaps_the_view(ready: Service, db_path: Path) -> None:
    ready.create_view("recent", SELECT)
    assert plain(ready.create_view("RECENT", "SELECT 1 AS other", replace=True)) == (
        "ok: view RECENT replaced"
    )
    assert ready.read_query("SELECT other FROM recent") == "other\n1\n# 1 row"


def test_replace_is_atomic_when_the_new_view_fails(
    ready: Service, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ready.create_view("recent", SELECT, description="the old one")
    old_sql = stored_sql(db_path, "recent")
    real_run = views.run_statement

    def failing_create(ctx: object, sql: str, *args: object) -> object:
        if sql.startswith("CREATE VIEW"):
            raise PolicyDenied("simulated failure after the DROP")
        return real_run(ctx, sql, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(views, "run_statement", failing_create)
    with pytest.raises(PolicyDenied, match="simulated"):
        ready.create_view("recent", "SELECT 1 AS other", replace=True)
    assert stored_sql(db_path, "recent") == old_sql


def test_a_table_is_never_replaced_by_a_view(ready: Service, db_path: Path) -> None:
    with pytest.raises(PolicyDenied, match="is a table"):
        ready.create_view("t", "SELECT 1 AS x", replace=True)
    assert ready.read_query("SELECT count(*) AS n FROM t") == "n\n2\n# 1 row"


# -- what select_sql may be ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "select_sql",
    [
        pytest.param("INSERT INTO t(body) VALUES ('x')", id="insert"),
        pytest.param("DELETE FROM t WHERE id = 1", id="delete"),
        pytest.param("DROP TABLE t", id="drop"),
        pytest.param("UPDATE t SET body = 'x' WHERE id = 1", id="update"),
        pytest.param("SELECT 1; DROP TABLE t", id="select-then-drop"),
        pytest.param("SELECT 1; SELECT 2", id="two-selects"),
        pytest.param("SELECT 1 -- x\n; DROP TABLE t", id="comment-then-drop"),
        pytest.param("WITH x AS (SELECT 1) DELETE FROM t", id="with-delete"),
        pytest.param("CREATE VIEW w AS SELECT 1", id="create-view"),
        pytest.param("PRAGMA table_info(t)", id="pragma"),
        pytest.param("EXPLAIN SELECT 1", id="explain"),
        pytest.param("ATTACH 'x.db' AS x", id="attach"),
        pytest.param("SELECT load_extension('x')", id="load-extension"),
        pytest.param("", id="empty"),
        pytest.param("   ", id="blank"),
    ],
)
def test_select_sql_that_is_not_one_select_is_refused_and_nothing_is_created(
    ready: Service, db_path: Path, select_sql: str
) -> None:
    before = names(db_path)
    with pytest.raises(SqlgateError):
        ready.create_view("bad", select_sql)
    assert names(db_path) == before
    assert ready.read_query("SELECT count(*) AS n FROM t") == "n\n2\n# 1 row"


def test_a_select_that_sqlite_rejects_creates_nothing(ready: Service, db_path: Path) -> None:
    before = names(db_path)
    with pytest.raises(SqlgateError, match="no such table"):
        ready.create_view("bad", "SELECT * FROM missing")
    assert names(db_path) == before
