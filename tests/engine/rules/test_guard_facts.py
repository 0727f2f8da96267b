"""REPLACE found as SQLite reads it, and the schema facts of guarded tables."""

from __future__ import annotations

import apsw
import pytest

from sqlgate.engine.rules.guard_facts import guarded_parents, guarded_shadows, key_actions, replaces


@pytest.mark.parametrize(
    ("sql", "found"),
    [
        ("CREATE TABLE t(a UNIQUE ON CONFLICT REPLACE)", True),
        ("CREATE TABLE t(a PRIMARY KEY ON CONFLICT REPLACE)", True),
        ("CREATE TABLE t(a, UNIQUE(a) ON CONFLICT IGNORE)", False),
        ("CREATE TABLE t(a DEFAULT 'ON CONFLICT REPLACE')", False),
        ("CREATE TABLE t(a DEFAULT 'unterminated", True),  # unreadable: the safe reading
        ("REPLACE INTO t VALUES (1)", True),
        ("INSERT OR REPLACE INTO t VALUES (1)", True),
        ("SELECT 1 AS replace", False),
        ("SELECT replace", False),
        ("REPLACE", False),
        ("CREATE TRIGGER x AFTER INSERT ON a BEGIN INSERT OR REPLACE INTO b VALUES (1); END", True),
        ("CREATE TRIGGER x AFTER INSERT ON a BEGIN REPLACE INTO b VALUES (1); END", True),
        ("CREATE TRIGGER x AFTER INSERT ON a BEGIN INSERT INTO b VALUES (replace(1, 2, 3)); END",
         False),
    ],
)  # fmt: skip
def test_replace_anywhere_in_a_definition(sql: str, found: bool) -> None:
    assert replaces(sql) is found


SCHEMA = """
CREATE TABLE accounts(id INTEGER PRIMARY KEY, code TEXT UNIQUE);
CREATE TABLE Ledger(id INTEGER PRIMARY KEY, a REFERENCES Accounts(id) ON DELETE CASCADE,
                    p REFERENCES ledger(id), c REFERENCES accounts(code) ON UPDATE SET NULL
                    ON DELETE RESTRICT);
CREATE TABLE plain(a REFERENCES accounts(id) ON DELETE NO ACTION ON UPDATE RESTRICT);
CREATE TABLE both(a REFERENCES accounts(id) ON DELETE SET DEFAULT ON UPDATE CASCADE,
                  b REFERENCES accounts(id) ON DELETE SET DEFAULT);
"""


def test_the_tables_guarded_tables_reference_are_their_parents() -> None:
    conn = apsw.Connection(":memory:")
    conn.execute(SCHEMA)
    assert guarded_parents(conn, {"ledger"}) == {"accounts"}  # its self-reference is no parent
    assert guarded_parents(conn, {"ledger", "plain", "accounts"}) == {"accounts"}
    assert guarded_parents(conn, set()) == frozenset()


@pytest.mark.parametrize(
    ("table", "actions"),
    [
        ("Ledger", (("Accounts", "ON DELETE CASCADE"), ("accounts", "ON UPDATE SET NULL"))),
        ("plain", ()),
        ("accounts", ()),
        ("both", (("accounts", "ON DELETE SET DEFAULT"), ("accounts", "ON UPDATE CASCADE"))),
        ("missing", ()),
    ],
)
def test_the_foreign_key_actions_that_change_a_tables_rows(
    table: str, actions: tuple[tuple[str, str], ...]
) -> None:
    conn = apsw.Connection(":memory:")
    conn.execute(SCHEMA)
    assert sorted(key_actions(conn, table)) == sorted(actions)


def test_the_shadow_tables_of_guarded_virtual_tables() -> None:
    """Each shadow table goes to the virtual table whose name and an underscore begin its
    own, the longest of them when two do (`a` and `a_b` both begin `a_b_data`)."""
    conn = apsw.Connection(":memory:")
    conn.execute(
        "CREATE VIRTUAL TABLE a USING fts5(x); CREATE VIRTUAL TABLE A_b USING fts5(x);"
        "CREATE VIRTUAL TABLE r USING rtree(id, x0, x1); CREATE TABLE a_plain(x);"
    )
    fts5 = ("data", "idx", "content", "docsize", "config")
    assert guarded_shadows(conn, {"a_b"}) == {f"a_b_{s}": "a_b" for s in fts5}
    assert guarded_shadows(conn, {"a", "r", "a_plain"}) == {f"a_{s}": "a" for s in fts5} | {
        f"r_{s}": "r" for s in ("node", "parent", "rowid")
    }
    assert guarded_shadows(conn, {"a_plain"}) == {}
