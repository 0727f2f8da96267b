"""write_query refuses an UPDATE whose WHERE cannot filter, as it refuses one without WHERE
(issue 19); destructive_query, the tool the refusal names, takes it and keeps its undo."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlgate.engine.framing import counted
from sqlgate.engine.statements.tier_check import unfiltered_update_message
from sqlgate.errors import PolicyDenied, SqlError
from sqlgate.service import Service
from tests.undo_hint import plain

ROWS = 4
PRIORITIES = "SELECT group_concat(priority, ',') FROM (SELECT priority FROM tasks ORDER BY id)"


@pytest.fixture
def tasks(service: Service) -> Service:
    service.write_query(
        "CREATE TABLE tasks(id INTEGER PRIMARY KEY, title TEXT, priority INTEGER, key TEXT)"
    )
    service.write_query(
        "INSERT INTO tasks(title, priority) VALUES ('a', 1), ('b', 2), ('c', 3), ('d', 4)"
    )
    service.write_query("CREATE TABLE other(k INTEGER, tid INTEGER)")
    service.write_query("INSERT INTO other VALUES (1, 1), (2, 2)")
    return service


def priorities(service: Service) -> str:
    return service.read_query(PRIORITIES).splitlines()[1].strip('"')


U = "UPDATE tasks SET priority = 0"
CANNOT_FILTER = [
    pytest.param(f"{U} WHERE 1=1", None, id="the-issue"),
    pytest.param(f"{U} WHERE TRUE", None, id="true"),
    pytest.param(f"{U} WHERE 1", None, id="1"),
    pytest.param(f"{U} WHERE 'a'='a'", None, id="strings"),
    pytest.param(f"{U} WHERE ?", [1], id="param"),
    pytest.param(f"{U} WHERE :flag", {"flag": 1}, id="named-param"),
    pytest.param(f"{U} WHERE 1 OR 1", None, id="1-or-1"),
    pytest.param(f"{U} WHERE NULL IS NULL", None, id="null-is-null"),
    pytest.param(f"{U} WHERE abs(-1)", None, id="function"),
    pytest.param(f"{U} WHERE EXISTS (SELECT 1 FROM other)", None, id="uncorrelated-exists"),
    pytest.param(f"{U} WHERE (SELECT count(*) FROM other) > 0", None, id="uncorrelated-count"),
    pytest.param(f"{U} FROM other WHERE other.k = 1", None, id="update-from-other"),
    pytest.param(f"{U} WHERE id = 1 OR 1 = 1", None, id="or-tautology"),
    pytest.param(f"{U} WHERE CAST(1 AS UNSIGNED BIG INT)", None, id="unparsed-reads-no-column"),
    pytest.param(
        f"{U} WHERE (SELECT k FROM other WHERE k = CAST(1 AS UNSIGNED BIG INT))",
        None,
        id="unparsed-reads-another-table",
    ),
]
FILTERS = [
    pytest.param(f"{U} WHERE id = ?", [2], 1, id="id-param"),
    pytest.param("UPDATE tasks SET key = 'k' WHERE key IS NULL", None, ROWS, id="is-null"),
    pytest.param(f"{U} WHERE rowid = 1", None, 1, id="rowid"),
    pytest.param(
        "UPDATE tasks AS t SET priority = 0 WHERE t.id IN (SELECT tid FROM other)",
        None,
        2,
        id="in-subquery",
    ),
    pytest.param(
        f"{U} WHERE EXISTS (SELECT 1 FROM other AS o WHERE o.tid = tasks.id)",
        None,
        2,
        id="correlated",
    ),
    pytest.param(
        f"{U} WHERE EXISTS (SELECT 1 FROM other WHERE tid = priority)",
        None,
        2,
        id="correlated-unqualified",
    ),
    pytest.param(f'{U} WHERE "Tasks"."ID" = 3', None, 1, id="quoted-mixed-case"),
    pytest.param(f"{U} WHERE key IS NOT NULL", None, 0, id="keyword-named-column"),
    pytest.param("UPDATE main.tasks SET priority = 0 WHERE id = 4", None, 1, id="main-qualified"),
    pytest.param(
        f"{U} WHERE id = CAST(1 AS UNSIGNED BIG INT)", None, 1, id="unparsed-reads-a-column"
    ),
]


@pytest.mark.parametrize(("sql", "params"), CANNOT_FILTER)
def test_write_query_refuses_an_update_whose_where_cannot_filter(
    tasks: Service, sql: str, params: Any
) -> None:
    with pytest.raises(PolicyDenied) as caught:
        tasks.write_query(sql, params)
    assert str(caught.value) == unfiltered_update_message("tasks")
    assert priorities(tasks) == "1,2,3,4"


@pytest.mark.parametrize(("sql", "params"), CANNOT_FILTER)
def test_the_refusals_advice_works_destructive_query_takes_it_and_keeps_its_undo(
    tasks: Service, sql: str, params: Any
) -> None:
    answer = tasks.destructive_query(sql, "every task back to priority 0", params)
    assert answer.startswith(f"ok: {ROWS} rows affected; undo: sqlgate undo ")
    assert priorities(tasks) == "0,0,0,0"


def test_the_refusal_is_the_one_for_an_update_without_where(tasks: Service) -> None:
    with pytest.raises(PolicyDenied) as without:
        tasks.write_query(U)
    with pytest.raises(PolicyDenied) as unfiltered:
        tasks.write_query(f"{U} FROM other WHERE other.k = 1")
    assert str(without.value) == str(unfiltered.value)
    message = str(unfiltered.value)
    assert "use destructive_query (it keeps the changed rows for undo)" in message
    assert "snapshot" not in message


@pytest.mark.parametrize(("sql", "params", "rows"), FILTERS)
def test_write_query_runs_an_update_whose_where_names_a_column(
    tasks: Service, sql: str, params: Any, rows: int
) -> None:
    assert plain(tasks.write_query(sql, params)) == f"ok: {counted(rows, 'row')} affected"


def test_a_trigger_reading_the_table_does_not_count_for_an_unparsed_where(
    tasks: Service,
) -> None:
    tasks.write_query("CREATE TABLE audit(n INTEGER)")
    tasks.destructive_query(
        "CREATE TRIGGER count_tasks AFTER UPDATE ON tasks "
        "BEGIN INSERT INTO audit SELECT count(priority) FROM tasks; END",
        "count the tasks after each update",
    )
    with pytest.raises(PolicyDenied, match="use destructive_query"):
        tasks.write_query(f"{U} WHERE CAST(1 AS UNSIGNED BIG INT)")
    assert priorities(tasks) == "1,2,3,4"


def test_read_query_sends_an_update_that_cannot_filter_to_destructive_query(
    tasks: Service,
) -> None:
    with pytest.raises(PolicyDenied, match="use destructive_query"):
        tasks.read_query(f"{U} WHERE 1=1")


def test_an_upserts_constant_where_stays_in_write_query(tasks: Service) -> None:
    # DO UPDATE only ever touches the row that conflicts (docs/decisions.md)
    answer = tasks.write_query(
        "INSERT INTO tasks(id, title, priority) VALUES (2, 'b', 9) "
        "ON CONFLICT(id) DO UPDATE SET priority = excluded.priority WHERE 1"
    )
    assert answer.startswith("ok: 1 row affected")
    assert priorities(tasks) == "1,9,3,4"


def test_a_missing_table_is_left_for_sqlite_to_name(tasks: Service) -> None:
    with pytest.raises(SqlError, match="no such table: nope"):
        tasks.write_query("UPDATE nope SET a = 1 WHERE b = 2")


def test_delete_where_1_eq_1_empties_the_table_in_destructive_query(tasks: Service) -> None:
    answer = tasks.destructive_query("DELETE FROM tasks WHERE 1=1", "start over")
    assert answer.startswith(f"ok: {ROWS} rows affected; undo: ")
    assert tasks.read_query("SELECT count(*) FROM tasks").splitlines()[1] == "0"


constants = st.sampled_from(["1", "0", "NULL", "TRUE", "'a'", "?", "abs(-2)", "(SELECT 1)"])
operators = st.sampled_from(["=", "<>", "OR", "AND", "IS", "IS NOT", "<", "||"])


@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(left=constants, operator=operators, right=constants)
def test_any_where_of_constants_is_refused_and_any_column_test_is_run(
    tasks: Service, left: str, operator: str, right: str
) -> None:
    condition = f"{left} {operator} {right}"
    params = [1] * condition.count("?")
    with pytest.raises(PolicyDenied, match="use destructive_query"):
        tasks.write_query(f"UPDATE tasks SET priority = priority WHERE {condition}", params)
    answer = tasks.write_query(
        f"UPDATE tasks SET priority = priority WHERE id = ({condition})", params
    )
    assert answer.startswith("ok: ")
    assert priorities(tasks) == "1,2,3,4"


def test_an_update_sqlite_cannot_compile_is_left_to_sqlites_error_and_its_sqlite_form(
    tasks: Service,
) -> None:
    """MySQL's UPDATE ... JOIN names no column of tasks in a WHERE SQLite could read: not
    refused as unfiltered, but answered with SQLite's error and the statement to send."""
    with pytest.raises(SqlError) as caught:
        tasks.write_query(
            "UPDATE tasks t JOIN other o ON o.tid = t.id SET t.priority = 9 WHERE o.k = 2"
        )
    assert "Send instead: UPDATE tasks AS t SET priority = 9 FROM other AS o" in str(caught.value)
    assert priorities(tasks) == "1,2,3,4"


def test_compiles_prepares_and_never_runs(tmp_path: Any) -> None:
    import apsw

    from sqlgate.engine.running.where_check import compiles

    conn = apsw.Connection(str(tmp_path / "c.db"))
    conn.execute("CREATE TABLE t(a INTEGER); INSERT INTO t VALUES (1)")
    assert compiles(conn, "UPDATE t SET a = 2 WHERE 1 = 1") is True
    assert compiles(conn, "UPDATE t SET a = ? WHERE a = ?", [3, 1]) is True
    assert compiles(conn, "UPDATE t SET a = ? WHERE a = ?") is True  # bindings: the run's
    assert compiles(conn, "UPDATE t x JOIN t y ON y.a = x.a SET x.a = 4") is False
    assert compiles(conn, "UPDATE nowhere SET a = 5") is False
    assert compiles(conn, "-- only a comment") is True
    assert conn.execute("SELECT a FROM t").fetchall() == [(1,)]
    assert not conn.in_transaction


def test_update_filters_judges_a_rewrite_offered_to_write_query(tmp_path: Any) -> None:
    import apsw

    from sqlgate.engine.running.where_columns import update_filters

    conn = apsw.Connection(str(tmp_path / "f.db"))
    conn.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, a INTEGER); CREATE TABLE u(b INTEGER)")
    assert update_filters(conn, "UPDATE t SET a = 1 WHERE id = 2") is True
    assert update_filters(conn, "UPDATE t SET a = 1 FROM u WHERE u.b = 2") is False
    assert update_filters(conn, "UPDATE t SET a = 1") is False
    assert update_filters(conn, "UPDATE nowhere SET a = 1 WHERE b = 2") is True  # SQLite says
    assert update_filters(conn, "UPDATE t SET a = 1 WHERE CAST(1 AS UNSIGNED BIG INT)") is False
