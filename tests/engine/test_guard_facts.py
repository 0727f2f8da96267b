"""REPLACE found as SQLite reads it, and the schema facts of guarded tables."""

from __future__ import annotations

import apsw
import pytest

from sqlgate.engine.guard_facts import conflict_clause, guard_facts, replaces


@pytest.mark.parametrize(
    ("sql", "clause"),
    [
        ("INSERT INTO t VALUES (1)", None),
        ("insert or replace into t values (1)", "REPLACE"),
        ("REPLACE INTO t VALUES (1)", "REPLACE"),
        ("INSERT OR IGNORE INTO t SELECT replace(a, 1, 2) FROM u", "IGNORE"),
        ("INSERT OR ABORT INTO t VALUES (1)", "ABORT"),
        ("INSERT OR FAIL INTO t VALUES (1)", "FAIL"),
        ("INSERT OR ROLLBACK INTO t VALUES (1)", "ROLLBACK"),
        ("WITH x AS (SELECT 1) REPLACE INTO t SELECT * FROM x", "REPLACE"),
        ("WITH x AS (SELECT replace('a', 'b', 'c')) INSERT INTO t SELECT * FROM x", None),
        ("INSERT INTO t VALUES ('REPLACE')", None),
        ('INSERT INTO "replace" VALUES (1)', None),
        ("UPDATE t SET a = replace(a, 'x', 'y')", None),
        ("INSERT INTO t VALUES ('unterminated", "REPLACE"),  # unreadable: the safe reading
        ("WITH x AS (SELECT 1) INSERT OR IGNORE INTO t SELECT * FROM x", "IGNORE"),
        ("INSERT INTO abort VALUES (1)", None),  # a table named like a conflict clause
        ("INSERT OR", None),
        ("INSERT OR INTO t VALUES (1)", None),
        ("SELECT replace('a', 'b', 'c') INTO", None),
    ],
)
def test_the_statements_own_conflict_clause(sql: str, clause: str | None) -> None:
    assert conflict_clause(sql) == clause


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
        ("CREATE TRIGGER x AFTER INSERT ON a BEGIN INSERT OR REPLACE INTO b VALUES (1); END", True),
        ("CREATE TRIGGER x AFTER INSERT ON a BEGIN REPLACE INTO b VALUES (1); END", True),
        ("CREATE TRIGGER x AFTER INSERT ON a BEGIN INSERT INTO b VALUES (replace(1, 2, 3)); END",
         False),
    ],
)  # fmt: skip
def test_replace_anywhere_in_a_definition(sql: str, found: bool) -> None:
    assert replaces(sql) is found


def test_guard_facts_name_parents_replacing_tables_and_triggers() -> None:
    conn = apsw.Connection(":memory:")
    conn.execute(
        "CREATE TABLE accounts(id INTEGER PRIMARY KEY);"
        "CREATE TABLE Ledger(id INTEGER PRIMARY KEY, a REFERENCES Accounts(id), "
        "p REFERENCES ledger(id));"
        "CREATE TABLE stamps(k UNIQUE ON CONFLICT REPLACE);"
        "CREATE TABLE loose(k UNIQUE ON CONFLICT REPLACE);"
        "CREATE TRIGGER r AFTER INSERT ON loose BEGIN "
        "INSERT OR REPLACE INTO stamps VALUES (1); END;"
        "CREATE TRIGGER q AFTER INSERT ON loose BEGIN INSERT INTO stamps VALUES (1); END;"
        "CREATE TABLE plain(k UNIQUE);"
        "CREATE TRIGGER Plain AFTER INSERT ON loose BEGIN REPLACE INTO stamps VALUES (1); END;"
    )
    facts = guard_facts(conn, {"ledger", "stamps", "plain"}, {"stamps", "plain"})
    assert facts.parents == {"accounts"}  # its own self-reference is no parent
    assert facts.replacing == {"stamps"}  # loose is not guarded
    assert facts.replacing_triggers == {"r", "plain"}  # the trigger Plain, not the table
    assert guard_facts(conn, set(), set()).parents == frozenset()
