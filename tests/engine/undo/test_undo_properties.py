"""Properties of row-level undo.

Any DELETE or UPDATE through destructive_query, then undo, leaves every row byte-identical
(value, type and rowid), whatever the table holds. With other programs' changes in between
(rows changed, columns added, dropped or renamed, the table dropped, re-created, renamed or
swapped, the file vacuumed), the undo either puts back exactly the rows the call changed
and leaves every other row as it found it, or refuses and changes nothing."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlgate.errors import UndoConflict
from sqlgate.service import Service
from tests.engine.undo.test_undo import direct, dump, undo_id, user_tables

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
    if dump(db) == before:  # no row changed: the answer offers no undo
        assert "undo:" not in out
        return
    service.undo(undo_id(out))
    assert dump(db) == before


@pytest.mark.parametrize("kind", sorted(TABLES))
def test_an_update_that_changes_nothing_needs_no_undo(service: Service, kind: str) -> None:
    db = service.settings.db
    with direct(db) as conn:
        conn.execute(TABLES[kind])
        conn.execute("INSERT INTO t VALUES (1, 1, 'x', NULL)")
    before = dump(db)
    out = service.destructive_query("UPDATE t SET a = a", reason="no-op")
    assert out == "ok: 1 row affected; no value changed, so there is nothing to undo"
    assert dump(db) == before


# -- later changes, then undo: byte-identical rows back, or refused with nothing changed ----

Keyed = dict[str, tuple[tuple[str, ...], dict[Any, tuple[Any, ...]]]]
SAME_SHAPE = {
    kind: sql.replace("CREATE TABLE t ", "CREATE TABLE {name} ") for kind, sql in TABLES.items()
}
COLUMNS = ("id", "a", "b", "c")


def keyed_dump(db: Path) -> Keyed:
    """Every user table: its column names, and each row (typeof and quote of every column)
    under its key: the rowid, or `id` in a table WITHOUT ROWID."""
    out: Keyed = {}
    with direct(db) as conn:
        for table, without_rowid in user_tables(conn):
            cols = tuple(
                str(r[0]) for r in conn.execute("SELECT name FROM pragma_table_info(?)", (table,))
            )
            cells = ", ".join(f'typeof("{c}"), quote("{c}")' for c in cols)
            key = '"id"' if without_rowid else "rowid"
            rows = conn.execute(f'SELECT {key}, {cells} FROM "{table}"')
            out[table] = (cols, {row[0]: tuple(row[1:]) for row in rows})
    return out


def restored(later: Keyed, before: Keyed, after: Keyed) -> Keyed:
    """`later` with every row the call changed in table t put back as it was before it.

    The call must have found table t as it is in `later` (same columns), unless it changed
    no row, when there is nothing to put back."""
    old, new = before["t"][1], after["t"][1]
    changed = [key for key in old.keys() | new.keys() if old.get(key) != new.get(key)]
    if not changed:
        return later
    assert "t" in later, "an undo wrote into a table that is gone"
    cols, rows = later["t"]
    assert cols == before["t"][0], "an undo wrote into a table with other columns"
    merged = dict(rows)
    for key in changed:
        if key in old:
            merged[key] = old[key]
        else:
            merged.pop(key, None)
    return {**later, "t": (cols, merged)}


LATER_VALUES = ("NULL", "1", "1.0", "'1'", "x'31'")  # equal to SQLite's `=`, not byte-equal


@st.composite
def later_changes(draw: st.DrawFn, kind: str) -> list[str]:
    """One to three changes made after the call by another program: DML or DDL."""
    same = SAME_SHAPE[kind]
    column = st.sampled_from(COLUMNS[1:])
    key = st.integers(0, 13)
    choices: list[Callable[[], str]] = [
        lambda: (
            f"UPDATE t SET {draw(column)} = {draw(st.sampled_from(LATER_VALUES))} "
            f"WHERE id = {draw(key)}"
        ),
        lambda: f"DELETE FROM t WHERE id = {draw(key)}",
        lambda: f"INSERT INTO t (id, a) VALUES ({draw(key)}, 'later')",
        lambda: "ALTER TABLE t ADD COLUMN z",
        lambda: f"ALTER TABLE t DROP COLUMN {draw(column)}",
        lambda: f"ALTER TABLE t RENAME COLUMN {draw(column)} TO renamed",
        lambda: "DROP TABLE t; " + same.format(name="t"),
        lambda: "DROP TABLE t; CREATE TABLE t (id INTEGER PRIMARY KEY, d, e, f)",
        lambda: "DROP TABLE t; CREATE TABLE t (id INTEGER PRIMARY KEY, c, b, a)",
        lambda: "ALTER TABLE t RENAME TO t_old",
        lambda: (
            f"ALTER TABLE t RENAME TO t_old; {same.format(name='t')}; "
            "INSERT INTO t SELECT * FROM t_old"
        ),
        lambda: "ALTER TABLE t RENAME TO t_away; ALTER TABLE t_away RENAME TO t",
        lambda: "VACUUM",
    ]
    picks = draw(st.lists(st.integers(0, len(choices) - 1), min_size=1, max_size=3))
    return [choices[pick]() for pick in picks]


@st.composite
def statements_with_inserts(draw: st.DrawFn) -> tuple[str, list[Any]]:
    if draw(st.integers(0, 4)) == 0:
        values = [draw(st.integers(12, 14)), draw(PARAMS), draw(PARAMS)]
        return "INSERT INTO t (id, a, b) VALUES (?, ?, ?)", values
    return draw(statements())


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_an_undo_after_later_changes_restores_exactly_or_refuses_and_changes_nothing(
    service: Service, data: st.DataObject
) -> None:
    db = service.settings.db
    kind = data.draw(st.sampled_from(sorted(TABLES)), label="kind")
    rows = data.draw(st.lists(st.tuples(VALUES, VALUES, VALUES), max_size=12), label="rows")
    with direct(db) as conn:
        for table, _ in user_tables(conn):
            conn.execute(f'DROP TABLE "{table}"')
        conn.execute(TABLES[kind])
        conn.executemany(
            "INSERT INTO t VALUES (?, ?, ?, ?)", [(n, *row) for n, row in enumerate(rows)]
        )
    sql, params = data.draw(statements_with_inserts(), label="statement")
    before = keyed_dump(db)
    out = service.destructive_query(sql, reason="property test", params=params)
    after = keyed_dump(db)
    if after == before:  # no row changed: the answer offers no undo
        assert "undo:" not in out
        return
    call = undo_id(out)
    with direct(db) as conn:
        for change in data.draw(later_changes(kind), label="later"):
            # e.g. a column SQLite will not drop, a key taken: that change is not made
            with contextlib.suppress(apsw.Error):
                conn.execute(change)
    later = keyed_dump(db)
    try:
        service.undo(call)
    except UndoConflict:
        assert keyed_dump(db) == later
        return
    assert keyed_dump(db) == restored(later, before, after)
