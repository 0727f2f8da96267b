"""Running agent SQL: bound params, one statement per call, error translation, rewrite guard."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from sqlgate.engine.running.execute import normalize_params
from sqlgate.errors import InvalidArgument, MassRewrite, PolicyDenied, QueryTimeout, SqlError
from sqlgate.service import Service
from tests.conftest import FakeClock
from tests.undo_hint import plain


def rows_of(service: Service, sql: str) -> list[str]:
    """The CSV lines of a read, header and trailer left out."""
    return service.read_query(sql, limit=1000).splitlines()[1:-1]


@pytest.fixture
def people(service: Service) -> Service:
    service.write_query("CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT UNIQUE, age INT)")
    service.write_query("INSERT INTO people (name, age) VALUES ('ann', 31), ('bob', 42)")
    return service


# -- params -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("params", "bindings"),
    [
        pytest.param(None, None, id="none"),
        pytest.param([], [], id="empty-list"),
        pytest.param([1, "a", 1.5, None], [1, "a", 1.5, None], id="list"),
        pytest.param((1, 2), [1, 2], id="tuple"),
        pytest.param([True, False], [1, 0], id="booleans-as-integers"),
        pytest.param({"id": 1}, {"id": 1}, id="plain-key"),
        pytest.param({":id": 1}, {"id": 1}, id="colon-key"),
        pytest.param({"@id": 1, "$n": "x"}, {"id": 1, "n": "x"}, id="at-and-dollar-keys"),
        pytest.param({"flag": True}, {"flag": 1}, id="boolean-value"),
    ],
)
def test_normalize_params_accepts_lists_and_objects(params: object, bindings: object) -> None:
    assert normalize_params(params) == bindings


@pytest.mark.parametrize(
    ("params", "phrase"),
    [
        pytest.param("1", "must be a list", id="string"),
        pytest.param(5, "must be a list", id="number"),
        pytest.param({1, 2}, "must be a list", id="set"),
        pytest.param([[1]], r"params\[0\] is a list", id="nested-list"),
        pytest.param([1, {"a": 1}], r"params\[1\] is a dict", id="nested-object"),
        pytest.param([b"raw"], r"params\[0\] is a bytes", id="bytes"),
        pytest.param({"id": [1]}, r"params\['id'\] is a list", id="object-with-list"),
        pytest.param({"": 1}, "parameter name", id="empty-key"),
        pytest.param({":": 1}, "parameter name", id="prefix-only-key"),
        pytest.param({1: 1}, "parameter name", id="number-key"),
    ],
)
def test_normalize_params_refuses_other_shapes(params: object, phrase: str) -> None:
    with pytest.raises(InvalidArgument, match=phrase):
        normalize_params(params)


@pytest.mark.parametrize(
    ("params", "phrase"),
    [
        pytest.param([2**63], r"params\[0\] = 9223372036854775808", id="one-past-the-top"),
        pytest.param([-(2**63) - 1], r"params\[0\] = -9223372036854775809", id="one-below"),
        pytest.param({"n": 10**30}, r"params\['n'\]", id="named-huge"),
        pytest.param([1, -(10**40)], r"params\[1\]", id="second-value"),
    ],
)
def test_integers_outside_sqlites_64_bit_range_are_refused(params: object, phrase: str) -> None:
    with pytest.raises(InvalidArgument, match=phrase) as caught:
        normalize_params(params)
    assert "64-bit" in str(caught.value)
    assert "as text" in str(caught.value)


def test_the_edges_of_the_64_bit_range_are_bound(people: Service) -> None:
    assert normalize_params([2**63 - 1, -(2**63)]) == [2**63 - 1, -(2**63)]
    answer = people.read_query("SELECT ? AS top, ? AS bottom", params=[2**63 - 1, -(2**63)])
    assert answer == "top,bottom\n9223372036854775807,-9223372036854775808\n# 1 row"


@pytest.mark.parametrize(
    "params",
    [
        pytest.param(["a\ud800b"], id="value"),
        pytest.param({"k": "\udfff"}, id="named-value"),
        pytest.param({"k\ud800": 1}, id="name"),
    ],
)
def test_unpaired_surrogates_in_params_are_refused(params: object) -> None:
    with pytest.raises(InvalidArgument, match="surrogate"):
        normalize_params(params)


def test_a_huge_integer_param_is_an_argument_error_not_an_internal_one(people: Service) -> None:
    with pytest.raises(InvalidArgument, match="64-bit"):
        people.read_query("SELECT ?", params=[2**64])
    with pytest.raises(InvalidArgument, match="64-bit"):
        people.write_query("INSERT INTO people (age) VALUES (?)", params=[-(2**70)])
    assert rows_of(people, "SELECT count(*) FROM people") == ["2"]


@pytest.mark.parametrize(
    ("sql", "params"),
    [
        pytest.param("SELECT name FROM people WHERE id = ?", [2], id="list"),
        pytest.param("SELECT name FROM people WHERE id = ?1", [2], id="numbered"),
        pytest.param("SELECT name FROM people WHERE id = :id", {"id": 2}, id="dict-plain-key"),
        pytest.param("SELECT name FROM people WHERE id = :id", {":id": 2}, id="dict-colon-key"),
        pytest.param("SELECT name FROM people WHERE id = @id", {"id": 2}, id="at-placeholder"),
        pytest.param("SELECT name FROM people WHERE id = $id", {"$id": 2}, id="dollar"),
    ],
)
def test_read_query_binds_params(people: Service, sql: str, params: Any) -> None:
    assert people.read_query(sql, params=params) == "name\nbob\n# 1 row"


@pytest.mark.parametrize(
    ("sql", "params", "phrase"),
    [
        pytest.param("SELECT ?", [], "placeholder", id="too-few"),
        pytest.param("SELECT ?", [1, 2], "placeholder", id="too-many"),
        pytest.param("SELECT ?, ?", [1], "placeholders", id="one-short"),
        pytest.param("SELECT :id", {"other": 1}, ":id", id="missing-name"),
        pytest.param("SELECT :id", {}, ":id", id="empty-object"),
        pytest.param("SELECT :a, :b", {"a": 1}, ":b", id="second-name-missing"),
        pytest.param("SELECT 1", "oops", "must be a list", id="bad-type"),
    ],
)
def test_params_that_do_not_fit_are_invalid_arguments(
    people: Service, sql: str, params: Any, phrase: str
) -> None:
    with pytest.raises(InvalidArgument, match=phrase):
        people.read_query(sql, params=params)


@pytest.mark.parametrize(
    ("sql", "params", "message"),
    [
        pytest.param(
            "SELECT ?, ?",
            [1],
            "the statement has 2 placeholders (?, ?) but params has 1 value; pass a list of 2 "
            "values",
            id="one-short",
        ),
        pytest.param(
            "SELECT ?",
            [1, 2],
            "the statement has 1 placeholder (?) but params has 2 values; pass a list of 1 value",
            id="one-too-many",
        ),
        pytest.param(
            "SELECT ?, ?",
            None,
            "the statement has 2 placeholders (?, ?) but no params were given; pass a list of "
            "2 values",
            id="none-given",
        ),
        pytest.param(
            "SELECT 1",
            [1],
            "the statement has no placeholders but params has 1 value; leave params out",
            id="no-placeholders",
        ),
        pytest.param(
            "SELECT ?",
            {"id": 1},
            "the statement has 1 placeholder (?) but params is an object, which binds only "
            ":name placeholders; pass a list of 1 value",
            id="object-for-question-marks",
        ),
        pytest.param(
            "SELECT :id, :name",
            [1],
            "the statement has 2 placeholders (:id, :name) but params has 1 value; pass an "
            "object with id, name (or a list of 2 values)",
            id="list-for-names-one-short",
        ),
        pytest.param(
            "SELECT :id",
            None,
            "the statement has 1 placeholder (:id) but no params were given; pass an object "
            "with id (or a list of 1 value)",
            id="names-none-given",
        ),
    ],
)
def test_a_params_mismatch_says_what_the_statement_needs(
    people: Service, sql: str, params: Any, message: str
) -> None:
    with pytest.raises(InvalidArgument) as caught:
        people.read_query(sql, params=params)
    assert str(caught.value) == message


def test_a_list_binds_named_placeholders_in_order(people: Service) -> None:
    assert people.read_query("SELECT :a, :b", params=[1, 2]).splitlines()[1] == "1,2"


def test_bound_values_are_never_sql(people: Service) -> None:
    evil = "x'); DROP TABLE people; --"
    people.write_query("INSERT INTO people (name) VALUES (?)", [evil])
    assert people.read_query("SELECT name FROM people WHERE name = :n", params={"n": evil}) == (
        f"name\n{evil}\n# 1 row"
    )


def test_write_and_destructive_bind_params(people: Service) -> None:
    people.write_query("UPDATE people SET age = :age WHERE name = :name", {"age": 7, "name": "ann"})
    people.destructive_query("DELETE FROM people WHERE id = ?", "remove bob", params=[2])
    assert rows_of(people, "SELECT name, age FROM people") == ["ann,7"]


# -- one statement per call -------------------------------------------------------------
@pytest.mark.parametrize(
    "sql",
    [
        pytest.param(
            "INSERT INTO people (name) VALUES ('x'); INSERT INTO people (name) VALUES ('y')",
            id="two-inserts",
        ),
        pytest.param("INSERT INTO people (name) VALUES ('x');DELETE FROM people", id="no-space"),
        pytest.param(
            "INSERT INTO people (name) VALUES ('x'); -- c\nINSERT INTO people (name) VALUES ('y')",
            id="comment-between",
        ),
        pytest.param("INSERT INTO people (name) VALUES ('x');; SELECT 1", id="double-semicolon"),
    ],
)
def test_a_second_statement_is_refused_before_anything_runs(people: Service, sql: str) -> None:
    with pytest.raises(PolicyDenied, match="one statement per call"):
        people.write_query(sql)
    assert rows_of(people, "SELECT count(*) FROM people") == ["2"]


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        pytest.param("SELECT 'a;b' AS s", "a;b", id="semicolon-in-string"),
        pytest.param("SELECT 1 AS s;", "1", id="trailing-semicolon"),
        pytest.param("SELECT 1 AS s; ;\n", "1", id="trailing-semicolons"),
        pytest.param("SELECT 1 AS s; -- done", "1", id="trailing-line-comment"),
        pytest.param("SELECT 1 AS s /* c */ ; /* d */", "1", id="trailing-block-comment"),
        pytest.param("-- why\nSELECT 1 AS s", "1", id="leading-comment"),
        pytest.param("   \n SELECT 1 AS s", "1", id="leading-space"),
        pytest.param("SELECT 'é' AS s; -- ü", "é", id="unicode-before-comment"),
        pytest.param("SELECT '-- no comment' AS s", "-- no comment", id="dashes-in-string"),
    ],
)
def test_one_statement_with_trimmings_runs(service: Service, sql: str, expected: str) -> None:
    assert service.read_query(sql) == f"s\n{expected}\n# 1 row"


@pytest.mark.parametrize(
    "sql",
    [
        pytest.param("", id="empty"),
        pytest.param("   \n", id="space"),
        pytest.param("-- only a comment", id="line-comment"),
        pytest.param("/* only */ ;", id="block-comment"),
        pytest.param(";", id="semicolon"),
    ],
)
def test_a_query_without_a_statement_is_invalid(service: Service, sql: str) -> None:
    with pytest.raises(InvalidArgument, match="query is empty"):
        service.read_query(sql)
    with pytest.raises(InvalidArgument, match="query is empty"):
        service.write_query(sql)


# -- errors -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("sql", "words", "next_step"),
    [
        pytest.param("SELECT * FROM nowhere", "no such table: nowhere", "list_tables", id="table"),
        pytest.param("SELECT nope FROM people", "no such column: nope", "describe_table", id="col"),
        pytest.param("SELECT FROM people", "syntax error", "SQLite's dialect", id="syntax"),
        pytest.param("SELECT json('{')", "malformed JSON", "get_schema", id="runtime-function"),
        pytest.param(
            "SELECT abs(-9223372036854775807 - 1)", "integer overflow", "get_schema", id="ovf"
        ),
    ],
)
def test_read_errors_carry_sqlites_words_and_a_next_step(
    people: Service, sql: str, words: str, next_step: str
) -> None:
    with pytest.raises(SqlError) as caught:
        people.read_query(sql)
    message = str(caught.value)
    assert words in message
    assert next_step in message.partition("Next:")[2]


@pytest.mark.parametrize(
    ("sql", "words", "next_step"),
    [
        pytest.param(
            "INSERT INTO people (id, name) VALUES (1, 'x')",
            "UNIQUE constraint failed: people.id",
            "upsert",
            id="unique",
        ),
        pytest.param(
            "INSERT INTO checked (v) VALUES (NULL)",
            "NOT NULL constraint failed: checked.v",
            "describe_table",
            id="not-null",
        ),
        pytest.param(
            "INSERT INTO checked (v) VALUES (-1)",
            "CHECK constraint failed",
            "describe_table",
            id="check",
        ),
        pytest.param(
            "INSERT INTO child (parent) VALUES (99)",
            "FOREIGN KEY constraint failed",
            "describe_table",
            id="foreign-key",
        ),
        pytest.param(
            "INSERT INTO people (id) VALUES ('text')",
            "datatype mismatch",
            "describe_table",
            id="datatype",
        ),
        pytest.param(
            "INSERT INTO people (nope) VALUES (1)",
            "has no column named nope",
            "describe_table",
            id="no-column-named",
        ),
        pytest.param(
            "INSERT INTO people VALUES (1)", "values were supplied", "one value per column", id="n"
        ),
    ],
)
def test_write_errors_carry_sqlites_words_and_a_next_step(
    people: Service, sql: str, words: str, next_step: str
) -> None:
    people.write_query("CREATE TABLE checked (v INT NOT NULL CHECK (v >= 0))")
    people.write_query("CREATE TABLE child (parent INT REFERENCES people (id))")
    with pytest.raises(SqlError) as caught:
        people.write_query(sql)
    message = str(caught.value)
    assert words in message
    assert next_step in message.partition("Next:")[2]


def test_a_misspelt_verb_gets_sqlites_syntax_error(service: Service) -> None:
    with pytest.raises(SqlError, match="syntax error"):
        service.read_query("SELEC 1")


@pytest.mark.parametrize(
    ("tool", "sql", "phrase"),
    [
        pytest.param("read", "SELECT load_extension('x')", "load_extension", id="function"),
        pytest.param("read", "SELECT * FROM pragma_writable_schema", "writable_schema", id="pr"),
        pytest.param(
            "write", "INSERT INTO query_log (ts) VALUES ('x')", "server object", id="server-table"
        ),
        pytest.param(
            "write",
            "CREATE VIRTUAL TABLE v USING fts4(x)",
            "virtual table module",
            id="vtable-module",
        ),
    ],
)
def test_authorizer_refusals_say_why(service: Service, tool: str, sql: str, phrase: str) -> None:
    run = service.read_query if tool == "read" else service.write_query
    with pytest.raises(PolicyDenied, match="refused") as caught:
        run(sql)
    assert phrase in str(caught.value)


# -- mass-rewrite guard (write_query) ---------------------------------------------------
GUARD = 5


@pytest.fixture
def guarded(make_service: Callable[..., Service]) -> Service:
    service = make_service(max_update_rows=GUARD)
    service.write_query("CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT UNIQUE, v INT)")
    service.write_query(
        "INSERT INTO t (k, v) WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c "
        "WHERE n < ?) SELECT 'k' || n, 0 FROM c",
        [GUARD + 3],
    )
    return service


def upsert(rows: int) -> str:
    values = ", ".join(f"('k{n}', 9)" for n in range(1, rows + 1))
    return f"INSERT INTO t (k, v) VALUES {values} ON CONFLICT (k) DO UPDATE SET v = excluded.v"


def replace(rows: int) -> str:
    values = ", ".join(f"({n}, 'k{n}', 9)" for n in range(1, rows + 1))
    return f"REPLACE INTO t (id, k, v) VALUES {values}"


def update(rows: int) -> str:
    return f"UPDATE t SET v = 9 WHERE id <= {rows}"


STATEMENTS = [
    pytest.param(update, id="update"),
    pytest.param(upsert, id="upsert"),
    pytest.param(replace, id="replace"),
]


@pytest.mark.parametrize("statement", STATEMENTS)
def test_rewrite_of_max_update_rows_is_allowed(
    guarded: Service, statement: Callable[[int], str]
) -> None:
    assert guarded.write_query(statement(GUARD)).startswith(f"ok: {GUARD} rows affected")
    assert rows_of(guarded, "SELECT count(*) FROM t WHERE v = 9") == [str(GUARD)]


@pytest.mark.parametrize("statement", STATEMENTS)
def test_rewrite_of_one_more_row_is_rolled_back(
    guarded: Service, statement: Callable[[int], str]
) -> None:
    before = rows_of(guarded, "SELECT * FROM t ORDER BY id")
    with pytest.raises(MassRewrite, match="destructive_query") as caught:
        guarded.write_query(statement(GUARD + 1))
    assert f"more than {GUARD} existing rows" in str(caught.value)
    assert rows_of(guarded, "SELECT * FROM t ORDER BY id") == before
    assert plain(guarded.write_query("UPDATE t SET v = 1 WHERE id = 1")) == "ok: 1 row affected"


def test_mass_rewrite_is_a_policy_refusal(guarded: Service) -> None:
    with pytest.raises(PolicyDenied):
        guarded.write_query(update(GUARD + 3))


def test_inserting_many_new_rows_is_not_a_rewrite(guarded: Service) -> None:
    result = guarded.write_query(
        "INSERT INTO t (k, v) WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c "
        "WHERE n < ?) SELECT 'new' || n, 1 FROM c",
        [GUARD * 4],
    )
    assert result.startswith(f"ok: {GUARD * 4} rows affected")


def test_rows_changed_by_a_trigger_count_too(guarded: Service) -> None:
    guarded.write_query("CREATE TABLE knock (id INTEGER PRIMARY KEY)")
    guarded.write_query("INSERT INTO knock VALUES (1)")
    guarded.destructive_query(
        "CREATE TRIGGER fan AFTER UPDATE ON knock BEGIN UPDATE t SET v = v + 1; END",
        "test fan-out",
    )
    before = rows_of(guarded, "SELECT * FROM t ORDER BY id")
    with pytest.raises(MassRewrite):
        guarded.write_query("UPDATE knock SET id = 2 WHERE id = 1")
    assert rows_of(guarded, "SELECT * FROM t ORDER BY id") == before


def test_zero_max_update_rows_refuses_any_rewrite(make_service: Callable[..., Service]) -> None:
    service = make_service(max_update_rows=0)
    service.write_query("CREATE TABLE t (id INTEGER PRIMARY KEY, v INT)")
    service.write_query("INSERT INTO t VALUES (1, 0)")
    with pytest.raises(MassRewrite):
        service.write_query("UPDATE t SET v = 1 WHERE id = 1")


def test_destructive_query_is_not_guarded(guarded: Service) -> None:
    result = guarded.destructive_query("UPDATE t SET v = 7", "reset every value")
    assert result.startswith(f"ok: {GUARD + 3} rows affected; undo: sqlgate undo ")


def test_a_timed_out_write_changes_nothing(make_service: Callable[..., Service]) -> None:
    service = make_service(FakeClock(step=0.01), query_timeout=1.0)
    service.write_query("CREATE TABLE n (x)")
    with pytest.raises(QueryTimeout):
        service.write_query(
            "INSERT INTO n WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
            "SELECT x FROM c"
        )
    assert rows_of(service, "SELECT count(*) FROM n") == ["0"]
