"""Property: any DELETE or UPDATE through destructive_query, then undo, leaves every row
byte-identical (value, type and rowid), whatever the table holds."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlgate.service import Service
from tests.engine.test_undo import direct, dump, undo_id

VALUES = st.one_of(
    st.none(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False),
    st.text(max_size=20),
    st.binary(max_size=20),
)
PARAMS = st.one_of(  # bound values are JSON scalars: no blobs
    st.none(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False),
    st.text(max_size=20),
)
TABLES = {
    "rowid": "CREATE TABLE t (id INTEGER PRIMARY KEY, a, b, c)",
    "no-primary-key": "CREATE TABLE t (id, a, b, c)",
    "without-rowid": "CREATE TABLE t (id INTEGER NOT NULL PRIMARY KEY, a, b, c) WITHOUT ROWID",
}
OPERATORS = ("=", "<", ">", "<=", ">=", "<>", "IS", "IS NOT")


@st.composite
def statements(draw: st.DrawFn) -> tuple[str, list[Any]]:
    column = draw(st.sampled_from(("id", "a", "b", "c")))
    operator = draw(st.sampled_from(OPERATORS))
    where = f"{column} {operator} ?"
    probe = draw(PARAMS)
    if draw(st.booleans()):
        return f"DELETE FROM t WHERE {where}", [probe]
    target = draw(st.sampled_from(("a", "b", "c")))
    if draw(st.booleans()):
        return f"UPDATE t SET {target} = randomblob(3) WHERE {where}", [probe]
    return f"UPDATE t SET {target} = ? WHERE {where}", [draw(PARAMS), probe]


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    kind=st.sampled_from(sorted(TABLES)),
    rows=st.lists(st.tuples(VALUES, VALUES, VALUES), max_size=12),
    statement=statements(),
)
def test_destructive_then_undo_restores_byte_identical_rows(
    service: Service,
    kind: str,
    rows: list[tuple[Any, Any, Any]],
    statement: tuple[str, list[Any]],
) -> None:
    db = service.settings.db
    with direct(db) as conn:
        conn.execute("DROP TABLE IF EXISTS t")
        conn.execute(TABLES[kind])
        conn.executemany(
            "INSERT INTO t VALUES (?, ?, ?, ?)", [(n, *row) for n, row in enumerate(rows)]
        )
    before = dump(db)
    sql, params = statement
    out = service.destructive_query(sql, reason="property test", params=params)
    service.undo(undo_id(out))
    assert dump(db) == before


@pytest.mark.parametrize("kind", sorted(TABLES))
def test_an_update_that_changes_nothing_still_undoes_cleanly(service: Service, kind: str) -> None:
    db = service.settings.db
    with direct(db) as conn:
        conn.execute(TABLES[kind])
        conn.execute("INSERT INTO t VALUES (1, 1, 'x', NULL)")
    before = dump(db)
    service.undo(undo_id(service.destructive_query("UPDATE t SET a = a", reason="no-op")))
    assert dump(db) == before
