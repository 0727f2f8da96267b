"""Whether a WHERE can filter: it must name a column of the table being changed (issue 19).

The decision is pure: the parsed statement and the columns of the tables it names (folded,
as `pragma_table_xinfo` lists them) in, a yes or no out. Each case says what SQLite does with
the names; the SQL is also run against a real SQLite with the same schema, so a case whose
premise about SQLite's reading is wrong fails here too.
"""

from __future__ import annotations

import apsw
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sqlgate.engine.statements.where import Change, read_change, where_filters

Params = tuple[object, ...] | dict[str, object]

SCHEMA_SQL = """
CREATE TABLE tasks(id INTEGER PRIMARY KEY, title TEXT, priority INTEGER, x, date, key, "order");
CREATE TABLE o(id INTEGER PRIMARY KEY, k, tid, v);
CREATE TABLE other(k, n);
CREATE TABLE flags(f);
INSERT INTO flags VALUES (1);
CREATE TABLE x(v);
INSERT INTO x VALUES (1);
INSERT INTO tasks(id, title, priority, x) VALUES (1, 'a', 1, 1), (2, 'b', 2, NULL), (3, 'c', 3, 3);
INSERT INTO o(id, k, tid, v) VALUES (1, 1, 1, 10), (2, 2, 2, 20);
INSERT INTO other VALUES (1, 1);
"""


def _columns() -> dict[str, frozenset[str]]:
    conn = apsw.Connection(":memory:")
    conn.execute(SCHEMA_SQL)
    names = ["tasks", "o", "other", "flags", "x", "json_each"]
    return {
        name: frozenset(
            str(c).lower()
            for (c,) in conn.execute("SELECT name FROM pragma_table_xinfo(?)", (name,))
        )
        for name in names
    }


COLUMNS = _columns()


def _filters(sql: str) -> bool:
    change = read_change(sql)
    assert change is not None, f"sqlglot should read {sql!r}"
    return where_filters(change, COLUMNS)


def _rows_sqlite_changes(sql: str, params: Params = ()) -> int:
    """How many rows SQLite really changes (each case's premise, checked)."""
    conn = apsw.Connection(":memory:")
    conn.execute(SCHEMA_SQL)
    conn.execute(sql, params)
    return conn.changes()


U = "UPDATE tasks SET priority = 0"
# (sql, params) whose WHERE names no column of tasks: every row is rewritten
CANNOT_FILTER = [
    pytest.param(f"{U} WHERE 1=1", (), id="1-eq-1"),
    pytest.param(f"{U} WHERE TRUE", (), id="true"),
    pytest.param(f"{U} WHERE 1", (), id="1"),
    pytest.param(f"{U} WHERE 'a'='a'", (), id="strings"),
    pytest.param(f"{U} WHERE ?", (1,), id="param"),
    pytest.param(f"{U} WHERE ?1", (1,), id="numbered-param"),
    pytest.param(f"{U} WHERE :flag", {"flag": 1}, id="named-param"),
    pytest.param(f"{U} WHERE $flag OR @other", {"flag": 1, "other": 0}, id="dollar-at"),
    pytest.param(f"{U} WHERE 1 OR 1", (), id="1-or-1"),
    pytest.param(f"{U} WHERE NULL IS NULL", (), id="null-is-null"),
    pytest.param(f"{U} WHERE abs(-1)", (), id="function-of-literal"),
    pytest.param(f"{U} WHERE coalesce(?, 1) AND length('x')", (None,), id="functions-of-params"),
    pytest.param(f"{U} WHERE EXISTS (SELECT 1 FROM other)", (), id="uncorrelated-exists"),
    pytest.param(f"{U} WHERE (SELECT count(*) FROM other) > 0", (), id="uncorrelated-count"),
    pytest.param(f"{U} WHERE EXISTS (SELECT 1 FROM o WHERE o.k = 1)", (), id="exists-inner-only"),
    pytest.param(f"{U} WHERE EXISTS (SELECT 1 FROM o WHERE id = 1)", (), id="exists-inner-id"),
    pytest.param(f"{U} WHERE EXISTS (SELECT 1 FROM o WHERE rowid = 1)", (), id="inner-rowid"),
    pytest.param(
        f"{U} WHERE EXISTS (SELECT 1 FROM o AS tasks WHERE tasks.k = 1)", (), id="alias-shadows"
    ),
    pytest.param(
        f"{U} WHERE EXISTS (SELECT o.k AS zz FROM o WHERE zz = 1)", (), id="inner-result-alias"
    ),
    pytest.param(f"{U} FROM o WHERE o.k = 1", (), id="update-from-other-qualified"),
    pytest.param(f"{U} FROM o WHERE k = 1", (), id="update-from-other-unqualified"),
    pytest.param(f"{U} FROM o WHERE o.rowid = 1", (), id="update-from-other-rowid"),
    pytest.param(f"{U} FROM (SELECT 1 AS n) AS s WHERE s.n = 1", (), id="update-from-subquery"),
    pytest.param(f"{U} FROM json_each('[1]') AS j WHERE j.value = 1", (), id="from-json-each"),
    pytest.param(
        f"{U} WHERE EXISTS (SELECT 1 FROM json_each('[1]') WHERE value = 1)",
        (),
        id="exists-json-each-column",
    ),
    pytest.param(f"{U} WHERE 1 IN flags", (), id="in-table"),
    pytest.param(f"{U} WHERE 1 IN x", (), id="in-table-named-like-a-column"),
    pytest.param(
        f"{U} WHERE EXISTS (SELECT 1 FROM tasks WHERE tasks.id = 1)", (), id="self-subquery"
    ),
    pytest.param(
        f"{U} WHERE EXISTS (SELECT 1 FROM o AS tasks WHERE tasks.id = 1)",
        (),
        id="alias-shadows-with-its-column",
    ),
    pytest.param(
        f"{U} WHERE EXISTS (SELECT o.k AS priority FROM o WHERE priority = 1)",
        (),
        id="inner-alias-before-outer-column",
    ),
    pytest.param(
        f"WITH o AS (SELECT 1 AS z) {U} WHERE EXISTS (SELECT 1 FROM main.o WHERE id = 1)",
        (),
        id="schema-name-is-no-cte",
    ),
    pytest.param(
        f"{U} WHERE EXISTS (SELECT 1 FROM x JOIN o ON 1 WHERE id = 1)", (), id="joined-inner"
    ),
    pytest.param(f"{U} WHERE EXISTS (SELECT 1 FROM (x JOIN o) WHERE id = 1)", (), id="nested-join"),
    pytest.param(f"WITH c AS (SELECT 1 AS k) {U} WHERE 1 IN c", (), id="in-cte"),
    pytest.param(
        f"{U} WHERE EXISTS (WITH o AS (SELECT 1 AS z) SELECT 1 FROM o) "
        "AND EXISTS (SELECT 1 FROM o WHERE id = 1)",
        (),
        id="cte-scoped-to-its-subquery",
    ),
    pytest.param(f"{U} WHERE id = 1 OR 1", (), id="or-tautology"),
    pytest.param(f"{U} WHERE id = ? OR ? IS NULL", (5, None), id="or-optional-filter"),
    pytest.param(f"{U} WHERE NOT (id <> 1 AND 0)", (), id="not-and-constant"),
    pytest.param(f"{U} WHERE x IN (SELECT k FROM o) OR 1 = 1", (), id="or-constant-after-in"),
    pytest.param(
        f"{U} FROM o WHERE $v(id) AND o.k = 1", {"v(id)": 1}, id="tcl-variable-is-no-column"
    ),
    pytest.param("UPDATE OR IGNORE tasks SET priority = 0 WHERE 1", (), id="update-or-ignore"),
    pytest.param("DELETE FROM tasks WHERE 1 = 1", (), id="delete-1-eq-1"),
    pytest.param("DELETE FROM tasks WHERE EXISTS (SELECT 1 FROM other)", (), id="delete-exists"),
]

# (sql, params, rows SQLite changes) whose WHERE names a column of tasks
FILTERS = [
    pytest.param(f"{U} WHERE id = ?", (1,), 1, id="id-param"),
    pytest.param(f"{U} WHERE id = ?3", (0, 0, 2), 1, id="numbered-param"),
    pytest.param(f"{U} WHERE x IS NULL", (), 1, id="is-null"),
    pytest.param(f"{U} WHERE x NOTNULL", (), 2, id="notnull"),
    pytest.param(f"{U} WHERE rowid = 1", (), 1, id="rowid"),
    pytest.param(f"{U} WHERE oid = 1 OR _rowid_ = 2", (), 2, id="oid-and-rowid-alias"),
    pytest.param(f"{U} WHERE tasks.rowid = 1", (), 1, id="qualified-rowid"),
    pytest.param(f"{U} WHERE id IN (SELECT tid FROM o)", (), 2, id="in-subquery"),
    pytest.param(
        "UPDATE tasks AS t SET priority = 0 WHERE t.id IN (SELECT tid FROM o)",
        (),
        2,
        id="alias-in-subquery",
    ),
    pytest.param(
        "UPDATE tasks AS t SET priority = 0 WHERE EXISTS (SELECT 1 FROM o WHERE o.tid = t.id)",
        (),
        2,
        id="correlated-exists-alias",
    ),
    pytest.param(
        f"{U} WHERE EXISTS (SELECT 1 FROM o WHERE o.tid = tasks.id)",
        (),
        2,
        id="correlated-exists-name",
    ),
    pytest.param(
        f"{U} WHERE EXISTS (SELECT 1 FROM o WHERE o.tid = priority)",
        (),
        2,
        id="correlated-unqualified",
    ),
    pytest.param(
        f"{U} WHERE EXISTS (WITH c AS (SELECT 1 AS z) SELECT 1 FROM c WHERE z = id)",
        (),
        1,
        id="correlated-through-cte",
    ),
    pytest.param(f"{U} WHERE (SELECT id) = 1", (), 1, id="correlated-scalar"),
    pytest.param(f"{U} WHERE (SELECT id AS id) = 1", (), 1, id="alias-of-correlated"),
    pytest.param(f"{U} WHERE (SELECT rowid) = 1", (), 1, id="correlated-rowid"),
    pytest.param(
        f"{U} WHERE EXISTS (WITH c(z) AS (SELECT 1) SELECT 1 FROM c WHERE z = id)",
        (),
        1,
        id="correlated-through-cte-columns",
    ),
    pytest.param(
        f"{U} WHERE EXISTS (SELECT 1 FROM (SELECT k FROM o) AS s WHERE k = priority)",
        (),
        2,
        id="correlated-past-a-derived-table",
    ),
    pytest.param(
        f"{U} WHERE EXISTS (SELECT 1 FROM json_each('[1, 3]') AS j WHERE j.value = tasks.id)",
        (),
        2,
        id="correlated-json-each",
    ),
    pytest.param(
        f"{U} WHERE EXISTS (SELECT 1 FROM json_each(tasks.x))", (), 2, id="correlated-tvf-arg"
    ),
    pytest.param(f'{U} WHERE "Tasks"."ID" = 1', (), 1, id="quoted-mixed-case"),
    pytest.param(f"{U} WHERE TASKS.Id = 1", (), 1, id="mixed-case"),
    pytest.param(f"{U} WHERE [id] = 1 OR `x` = 3", (), 2, id="brackets-backticks"),
    pytest.param(f"{U} WHERE key IS NULL", (), 3, id="keyword-key"),
    pytest.param(f"{U} WHERE date IS NULL", (), 3, id="keyword-date"),
    pytest.param(f'{U} WHERE "order" IS NULL', (), 3, id="keyword-order-quoted"),
    pytest.param("UPDATE main.tasks SET priority = 0 WHERE id = 1", (), 1, id="main-qualified"),
    pytest.param(f"{U} WHERE main.tasks.id = 1", (), 1, id="three-part-name"),
    pytest.param(f"{U} WHERE id = 1 OR id = 2", (), 2, id="or-of-filters"),
    pytest.param(f"{U} WHERE id = 1 AND 1", (), 1, id="and-with-constant"),
    pytest.param(f"{U} WHERE NOT (id = 1)", (), 2, id="not"),
    pytest.param(f"{U} WHERE NOT (id <> 1 OR 0)", (), 1, id="not-or-constant"),
    pytest.param(f"{U} WHERE (id, x) = (1, 1)", (), 1, id="row-value"),
    pytest.param(f"{U} WHERE title LIKE 'a%'", (), 1, id="like"),
    pytest.param(f"{U} WHERE coalesce(x, 0) > 1", (), 1, id="function-of-column"),
    pytest.param(f"{U} WHERE title = 'A' COLLATE nocase", (), 1, id="collate"),
    pytest.param(f"{U} FROM o WHERE o.tid = tasks.id", (), 2, id="update-from-joined"),
    pytest.param(f"{U} FROM other WHERE n = id", (), 1, id="update-from-unqualified-target"),
    pytest.param(f"WITH c AS (SELECT 1 AS k) {U} WHERE id IN c", (), 1, id="in-cte-with-column"),
    pytest.param("UPDATE OR IGNORE tasks SET priority = 0 WHERE id = 1", (), 1, id="or-ignore"),
    pytest.param(f"{U} WHERE id = 1 RETURNING id", (), 1, id="returning"),
    pytest.param("DELETE FROM tasks WHERE id = 1", (), 1, id="delete-id"),
]


@pytest.mark.parametrize(("sql", "params"), CANNOT_FILTER)
def test_a_where_that_names_no_column_of_the_target_cannot_filter(sql: str, params: Params) -> None:
    assert _filters(sql) is False
    assert _rows_sqlite_changes(sql, params) == 3


@pytest.mark.parametrize(("sql", "params", "rows"), FILTERS)
def test_a_where_that_names_a_column_of_the_target_filters(
    sql: str, params: Params, rows: int
) -> None:
    assert _filters(sql) is True
    assert _rows_sqlite_changes(sql, params) == rows


def test_a_statement_without_where_does_not_filter() -> None:
    assert _filters(U) is False
    assert _filters("DELETE FROM tasks RETURNING (SELECT 1 FROM o WHERE o.tid = tasks.id)") is False


@pytest.mark.parametrize(
    "sql",
    [
        pytest.param(f"{U} WHERE tasks.nope = 1", id="no-such-column"),
        pytest.param(
            "UPDATE tasks AS t SET priority = 0 WHERE tasks.id = 1", id="name-after-alias"
        ),
        pytest.param(f"{U} WHERE nope.id = 1", id="no-such-table"),
        pytest.param(f"{U} WHERE aux.tasks.id = 1", id="another-schema"),
        pytest.param(f"{U} FROM o AS tasks WHERE tasks.id = 1", id="two-tables-named-tasks"),
        pytest.param(
            f"{U} FROM other JOIN o AS tasks ON 1 WHERE tasks.id = 1", id="joined-named-tasks"
        ),
        pytest.param(f"{U} WHERE 1 AND id\u00a0= 1", id="non-ascii-glued-to-a-name"),
    ],
)
def test_a_name_sqlite_cannot_resolve_does_not_count(sql: str) -> None:
    # SQLite refuses these; counted as no filter, the refusal errs safe
    assert _filters(sql) is False
    with pytest.raises(apsw.SQLError, match=r"no such column|ambiguous column"):
        _rows_sqlite_changes(sql)


def test_a_where_over_values_or_a_star_is_judged_with_unknown_columns() -> None:
    # SQLite reads `id` as tasks.id here (1 row), but VALUES and `*` are not listed:
    # the name may be theirs, so it does not count (refused, the safe way)
    for source in ["(VALUES (1))", "(SELECT * FROM other)", "(SELECT o.* FROM o) AS s"]:
        sql = f"{U} WHERE EXISTS (SELECT 1 FROM {source} WHERE priority = 1)"
        assert _filters(sql) is False
        assert _rows_sqlite_changes(sql) == 1


def test_a_parameter_is_no_column_even_where_a_column_has_its_spelling() -> None:
    change = read_change('UPDATE tasks SET x = 1 WHERE $p OR "$p" = 1')
    assert change is not None
    columns = {"tasks": frozenset({"$p", "x"})}
    assert where_filters(change, columns) is False
    quoted = read_change('UPDATE tasks SET x = 1 WHERE "$p" = 1')
    assert quoted is not None
    assert where_filters(quoted, columns) is True


def test_a_long_chain_of_or_is_read_flat() -> None:
    chain = " OR ".join(f"id = {n}" for n in range(3000))
    assert _filters(f"{U} WHERE {chain}") is True
    assert _filters(f"{U} WHERE {chain} OR 1") is False


def test_a_schema_qualified_target_is_matched_by_its_schema() -> None:
    change = read_change("UPDATE aux.tasks SET x = 1 WHERE aux.tasks.id = 1")
    assert change is not None
    assert where_filters(change, COLUMNS) is True


def test_unknown_columns_never_make_a_name_the_targets() -> None:
    change = read_change(f"{U} FROM mystery AS m WHERE id = 1")
    assert change is not None
    # beside a table of unknown columns, a column of the target is still the target's
    # (were it mystery's too, SQLite would refuse it as ambiguous) ...
    assert where_filters(change, {"tasks": COLUMNS["tasks"]}) is True
    only_mystery = read_change(f"{U} WHERE EXISTS (SELECT 1 FROM mystery WHERE title = 1)")
    assert only_mystery is not None
    # ... and inside a subquery over a table of unknown columns a bare name stays inner
    assert where_filters(only_mystery, {"tasks": COLUMNS["tasks"]}) is False
    # with the target's own columns unknown, nothing counts
    qualified = read_change(f"{U} WHERE tasks.id = 1")
    assert qualified is not None
    assert where_filters(qualified, {}) is False


def test_read_change_names_the_tables_to_look_up() -> None:
    change = read_change(
        f"WITH c AS (SELECT 1) {U} FROM o WHERE EXISTS (SELECT 1 FROM json_each(?), Other)"
    )
    assert isinstance(change, Change)
    assert change.target == "tasks"
    assert change.tables == frozenset({"tasks", "o", "json_each", "other"})


@pytest.mark.parametrize(
    "sql",
    [
        pytest.param(
            "INSERT INTO tasks(id) VALUES (1) ON CONFLICT DO UPDATE SET x = 1 WHERE 1", id="upsert"
        ),
        pytest.param("SELECT 1", id="select"),
        pytest.param("INSERT INTO tasks VALUES (1) ON CONFLICT DO UPDATE SET x = 2", id="insert"),
        pytest.param(f"{U} WHERE CAST(1 AS UNSIGNED BIG INT)", id="sqlglot-cannot-parse"),
        pytest.param(f"{U}; {U}", id="two-statements"),
        pytest.param(f"{U} WHERE (" * 3, id="garbage"),
    ],
)
def test_read_change_is_none_for_anything_but_one_readable_update_or_delete(sql: str) -> None:
    assert read_change(sql) is None


# -- properties ----------------------------------------------------------------------------
literals = st.sampled_from(
    ["1", "0", "-1", "2.5", "'a'", "'x''y'", "NULL", "TRUE", "FALSE", "x'00'", "?", "?2",
     ":p", "@q", "$r", "CURRENT_DATE"]
)  # fmt: skip


@st.composite
def constant_conditions(draw: st.DrawFn, depth: int = 0) -> str:
    """A condition built only from literals, parameters and functions or operators of them."""
    if depth >= 3 or draw(st.booleans()):
        return draw(literals)
    shape = draw(st.sampled_from(["({a}) = ({b})", "({a}) OR ({b})", "({a}) AND ({b})",
                                  "NOT ({a})", "abs({a})", "coalesce({a}, {b})", "({a}) IS NULL",
                                  "({a}) IN ({b}, {a})", "({a}) BETWEEN ({a}) AND ({b})",
                                  "EXISTS (SELECT {a})", "(SELECT count(*) FROM other) > ({a})",
                                  "({a}) || ({b}) LIKE 'a%'"]))  # fmt: skip
    return shape.format(
        a=draw(constant_conditions(depth + 1)), b=draw(constant_conditions(depth + 1))
    )


def _spellings(column: str) -> list[str]:
    if column == "order":  # a reserved word: a name only when quoted
        return ['"order"', 'tasks."order"', "[order]"]
    return [column, column.upper(), f'"{column}"', f"tasks.{column}", f'"TASKS"."{column}"',
            f"main.tasks.{column}", f"[{column}]"]  # fmt: skip


columns = st.sampled_from(sorted(COLUMNS["tasks"] | {"rowid", "oid", "_rowid_"})).flatmap(
    lambda c: st.sampled_from(_spellings(c))
)


@given(constant_conditions())
def test_a_where_of_constants_never_filters(condition: str) -> None:
    assert _filters(f"{U} WHERE {condition}") is False


@given(columns, literals, constant_conditions())
def test_a_column_compared_with_a_value_filters_and_an_or_of_a_constant_does_not(
    column: str, value: str, constant: str
) -> None:
    assert _filters(f"{U} WHERE {column} = {value}") is True
    assert _filters(f"{U} WHERE {column} = {value} AND ({constant})") is True
    assert _filters(f"{U} WHERE {column} = {value} OR ({constant})") is False
