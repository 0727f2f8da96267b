"""Which reads answer alike in any row order, a table of cases (engine/rules/hidden_order.py).

True: the read may walk an index over a hidden column. False: refused, as it could show
the rows' order or which of them came first (the reason is beside each case)."""

from __future__ import annotations

import apsw
import pytest

from sqlgate.engine.rules.hidden_order import order_free


def _aggregates() -> frozenset[str]:
    conn = apsw.Connection(":memory:")
    try:
        return frozenset(
            str(name)
            for (name,) in conn.execute(
                "SELECT name FROM pragma_function_list WHERE type IN ('a', 'w')"
            )
        )
    finally:
        conn.close()


AGGREGATES = _aggregates()
VIEWS = {
    "vis": "CREATE VIEW vis AS SELECT id, name FROM users",
    "vis_cols": "CREATE VIEW vis_cols(a, b) AS SELECT id, name FROM users WHERE id > 0",
    "of_view": "CREATE VIEW of_view AS SELECT a FROM vis_cols",
    "distinct_v": "CREATE VIEW distinct_v AS SELECT DISTINCT id FROM users",
    "limited": "CREATE VIEW limited AS SELECT id FROM users LIMIT 1",
    "counted": "CREATE VIEW counted AS SELECT count(*) AS n FROM users",
    "unreadable": "CREATE VIEW unreadable AS SELECT FROM WHERE",
    "loop_a": "CREATE VIEW loop_a AS SELECT * FROM loop_b",
    "loop_b": "CREATE VIEW loop_b AS SELECT * FROM loop_a",
    "union_v": "CREATE VIEW union_v AS SELECT id FROM users UNION ALL SELECT id FROM users",
    "nested": "CREATE VIEW nested AS SELECT * FROM (SELECT * FROM (SELECT id FROM users))",
    # a chain of views: chain_1 reads chain_2 ... chain_17 reads users
    **{f"chain_{n}": f"CREATE VIEW chain_{n} AS SELECT * FROM chain_{n + 1}" for n in range(1, 17)},
    "chain_17": "CREATE VIEW chain_17 AS SELECT id FROM users",
}

CASES = [
    # -- one row of counts over plain sources ----------------------------------------------
    ("SELECT count(*) FROM users", True),
    ("select COUNT(*) from USERS", True),
    ("SELECT count(*) AS n, count(name) FROM users WHERE name IS NOT NULL", True),
    ("SELECT count(DISTINCT name) FROM users", True),
    ("SELECT count(*) + 1 AS more, 'x' AS label, ? AS p FROM users LIMIT 3 OFFSET ?", True),
    ("SELECT count(*) FROM users ORDER BY count(*) DESC", True),
    ("SELECT count(*), upper('a'), abs(count(name)) FROM users", True),
    ("SELECT count(*) FROM vis", True),
    ("SELECT count(*) FROM main.vis", True),
    ("SELECT count(*) FROM vis_cols", True),
    ("SELECT count(*) FROM of_view", True),  # a view of a view
    ("SELECT count(*) FROM union_v", True),
    ("SELECT count(*) FROM nested", True),
    ("SELECT count(*) FROM users AS a JOIN users AS b ON a.id = b.id", True),
    ("SELECT count(*) FROM users u LEFT JOIN vis USING (id)", True),
    ("SELECT count(*) FROM users, vis", True),
    ("SELECT count(*) FROM users NOT INDEXED", True),
    ("SELECT count(*) FROM users INDEXED BY users_by_ssn", True),
    ("WITH c AS (SELECT id FROM users) SELECT count(*) FROM c", True),
    ("WITH c AS (SELECT id FROM users), d AS (SELECT * FROM c) SELECT count(*) FROM d", True),
    ("SELECT count(*) FROM (SELECT id FROM users)", True),
    ("SELECT count(*) FROM (SELECT id FROM users ORDER BY name)", True),  # no LIMIT: a set
    ("SELECT count(*) FROM (SELECT id FROM users UNION ALL SELECT id FROM users)", True),
    ("SELECT count(*) FROM (SELECT 1)", True),
    ("SELECT count(*) FROM (SELECT id FROM users) AS s", True),
    ("SELECT count(*) FROM users WHERE name LIKE 'a%' AND id IN (1, 2)", True),
    ("SELECT count(*) FROM users NATURAL JOIN vis", True),
    ("SELECT count(*) FROM users CROSS JOIN vis", True),
    ("SELECT count(*) FROM users AS u LEFT OUTER JOIN vis AS v ON u.id = v.id", True),
    (  # every clause a SELECT of counts may have
        "WITH c AS (SELECT id FROM users) SELECT count(*) FROM users AS a JOIN c ON a.id = c.id "
        "WHERE a.id > 0 ORDER BY count(*) LIMIT 1 OFFSET 0",
        True,
    ),
    (  # every clause a plain SELECT may have
        "SELECT count(*) FROM (WITH c AS (SELECT id FROM users) SELECT a.id FROM users AS a "
        "JOIN c ON a.id = c.id WHERE a.id > 0 ORDER BY a.id)",
        True,
    ),
    ("SELECT count(*) FROM ((SELECT id FROM users) UNION ALL (SELECT id FROM vis))", True),
    # -- not one row of counts -------------------------------------------------------------
    ("SELECT id FROM users", False),  # a row per row, in order
    ("SELECT 1 FROM users", False),
    ("SELECT * FROM users", False),
    ("SELECT id, count(*) FROM users", False),  # a bare column: the last row's
    ("SELECT count(*) FROM users ORDER BY name", False),
    ("SELECT count(*), name FROM users", False),
    ("SELECT count(*) FROM users GROUP BY name", False),  # a row per group
    ("SELECT count(*) FROM users HAVING count(*) > 1", False),
    ("SELECT DISTINCT count(*) FROM users", False),
    ("SELECT max(id) FROM users", False),  # the first of values that compare equal
    ("SELECT min(name) FROM users", False),
    ("SELECT sum(id) FROM users", False),  # floating-point sums depend on the order
    ("SELECT group_concat(id) FROM users", False),
    ("SELECT count(*), total(id) FROM users", False),
    ("SELECT count(*) FILTER (WHERE name > 'a') FROM users", False),
    ("SELECT count(*) OVER () FROM users", False),
    ("SELECT count(*) FROM users LIMIT id", False),
    ("SELECT count(*) FROM users LIMIT 1 OFFSET id", False),
    ("SELECT count(*) FROM users LIMIT (SELECT 1)", False),
    ("VALUES (1)", False),
    ("SELECT count(*) FROM users UNION ALL SELECT 1", False),
    ("SELECT count(*) FROM users; SELECT 1", False),
    ("SELECT count(*) FROM", False),  # sqlglot cannot read it
    ("UPDATE users SET name = 'x'", False),
    ("DELETE FROM users", False),
    # -- subqueries and sources that keep the first rows, or one of equals ----------------
    ("SELECT (SELECT count(*) FROM users)", False),
    ("SELECT count(*) FROM users WHERE EXISTS (SELECT 1 FROM users)", False),
    ("SELECT count(*) FROM users WHERE id IN (SELECT id FROM users)", False),
    ("SELECT count(*) FROM users WHERE id = (SELECT id FROM users)", False),
    ("SELECT count(*) FROM users AS a JOIN users AS b ON a.id = (SELECT 1)", False),
    ("SELECT count(*) FROM (SELECT id FROM users LIMIT 1)", False),
    ("SELECT count(*) FROM (SELECT id FROM users LIMIT 9 OFFSET 1)", False),
    ("SELECT count(*) FROM (SELECT DISTINCT id FROM users)", False),
    ("SELECT count(*) FROM (SELECT id FROM users GROUP BY id)", False),
    ("SELECT count(*) FROM (SELECT max(id) AS m FROM users)", False),
    ("SELECT count(*) FROM (SELECT row_number() OVER () AS r FROM users)", False),
    ("SELECT count(*) FROM (SELECT id FROM users UNION SELECT id FROM users)", False),
    ("SELECT count(*) FROM (SELECT id FROM users INTERSECT SELECT id FROM users)", False),
    ("SELECT count(*) FROM (SELECT id FROM users EXCEPT SELECT id FROM users)", False),
    (
        "SELECT count(*) FROM (SELECT id FROM users UNION ALL SELECT id FROM users LIMIT 1)",
        False,
    ),
    ("SELECT count(*) FROM (SELECT (SELECT id FROM users) AS f)", False),
    ("SELECT count(*) FROM (SELECT id FROM users ORDER BY (SELECT 1))", False),
    ("SELECT count(*) FROM (SELECT id FROM users ORDER BY max(id))", False),
    ("SELECT count(*) FROM ((SELECT id FROM users) UNION ALL (SELECT DISTINCT id FROM t))", False),
    ("SELECT count(*) FROM ((SELECT DISTINCT id FROM t) UNION ALL (SELECT id FROM users))", False),
    ("SELECT count(*) FROM users ORDER BY (SELECT 1)", False),
    ("SELECT count(*) FROM users WHERE (SELECT 1)", False),
    ("SELECT count(*) + sum(1) FROM users", False),  # an aggregate of no column
    ("SELECT count(*) FROM a.main.users", False),  # a clause no source has in SQLite
    (
        "SELECT count(*) FROM (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c "
        "LIMIT 3) SELECT x FROM c)",
        False,
    ),
    ("SELECT count(*) FROM (SELECT id FROM users WHERE id IN (SELECT 1))", False),
    ("SELECT count(*) FROM json_each('[1]')", False),  # a table-valued function
    ("SELECT count(*) FROM (VALUES (1))", False),
    ("SELECT count(*) FROM distinct_v", False),
    ("SELECT count(*) FROM limited", False),
    ("SELECT count(*) FROM counted", False),
    ("SELECT count(*) FROM unreadable", False),
    ("SELECT count(*) FROM loop_a", False),  # views within views, at most 16 deep
    ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c",
     False),
    ("WITH c AS (SELECT DISTINCT id FROM users) SELECT count(*) FROM c", False),
    ("WITH c AS (SELECT id FROM users LIMIT 1) SELECT count(*) FROM (SELECT * FROM c)", False),
    ("SELECT count(*) FROM (WITH c AS (SELECT id FROM users LIMIT 1) SELECT * FROM c)", False),
    ("SELECT count(*) FROM users JOIN vis NATURAL", False),
]  # fmt: skip


@pytest.mark.parametrize(("sql", "free"), CASES, ids=[c[0] for c in CASES])
def test_which_reads_answer_alike_in_any_row_order(sql: str, free: bool) -> None:
    assert order_free(sql, VIEWS, [], AGGREGATES) is free


@pytest.mark.parametrize(
    ("functions", "free"),
    [
        pytest.param(["count"], True, id="count"),
        pytest.param(["COUNT", "upper", "abs"], True, id="scalars"),
        pytest.param(["count", "median"], False, id="an-aggregate-sqlglot-may-not-know"),
        pytest.param(["Group_Concat"], False, id="names-fold"),
        pytest.param(["max"], False, id="max-scalar-or-aggregate"),
        pytest.param(["row_number"], False, id="window"),
    ],
)
def test_a_function_sqlite_reports_as_an_aggregate_refuses_whatever_the_text_says(
    functions: list[str], free: bool
) -> None:
    assert order_free("SELECT count(*) FROM users", VIEWS, functions, AGGREGATES) is free


def test_a_cte_shadows_a_view_of_its_name_only_when_unqualified() -> None:
    shadowed = "WITH distinct_v AS (SELECT id FROM users) SELECT count(*) FROM distinct_v"
    assert order_free(shadowed, VIEWS, [], AGGREGATES)
    qualified = "WITH distinct_v AS (SELECT id FROM users) SELECT count(*) FROM main.distinct_v"
    assert not order_free(qualified, VIEWS, [], AGGREGATES)
    # the view's own names are not the query's CTEs
    inside = "WITH users AS (SELECT 1 LIMIT 1) SELECT count(*) FROM vis"
    assert order_free(inside, VIEWS, [], AGGREGATES)


def test_views_read_within_views_sixteen_deep_at_most() -> None:
    assert order_free("SELECT count(*) FROM chain_2", VIEWS, [], AGGREGATES)  # 16 views
    assert not order_free("SELECT count(*) FROM chain_1", VIEWS, [], AGGREGATES)  # 17
    # the depth is each source's own: one after another, not added up, nor forgotten
    assert order_free("SELECT count(*) FROM chain_2, chain_2", VIEWS, [], AGGREGATES)
    assert not order_free("SELECT count(*) FROM chain_3, chain_1", VIEWS, [], AGGREGATES)
