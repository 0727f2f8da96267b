"""The rules as they apply to the schema now: followed through renames, failing closed."""

from __future__ import annotations

import apsw

from sqlgate.engine.rules.live_rules import NO_RULES, RuleResolver
from sqlgate.engine.rules.table_rules import ColumnRule, TableRules


def resolver() -> RuleResolver:
    return RuleResolver(
        TableRules(hidden=(ColumnRule("Users", "SSN"),), protected=("ledger",),
                   append_only=("later",))
    )  # fmt: skip


def test_no_rules_cost_nothing_and_say_so() -> None:
    conn = apsw.Connection(":memory:")
    assert RuleResolver(TableRules()).live(conn) is NO_RULES
    assert not NO_RULES.active


def test_names_fold_and_a_table_created_later_is_covered() -> None:
    conn = apsw.Connection(":memory:")
    rules = resolver().live(conn)
    assert rules.is_hidden("USERS", "ssn")  # before the table exists
    assert rules.append_only == {"later"}
    conn.execute("CREATE TABLE users(id, ssn); CREATE TABLE ledger(a)")
    rules = resolver().live(conn)
    assert rules.is_hidden("users", "SsN")
    assert not rules.is_hidden("users", "id")
    assert not rules.is_hidden(None, "ssn")
    assert not rules.is_hidden("users", None)
    assert rules.name_of("USERS") == "Users"
    assert rules.name_of("other") == "other"


def test_a_renamed_table_keeps_its_rule_and_so_does_a_new_table_of_the_old_name() -> None:
    conn = apsw.Connection(":memory:")
    conn.execute("CREATE TABLE users(id, ssn); CREATE TABLE ledger(a)")
    watching = resolver()
    watching.live(conn)  # seen once: anchored
    conn.execute("ALTER TABLE users RENAME TO people; ALTER TABLE ledger RENAME TO books")
    rules = watching.live(conn)
    assert rules.is_hidden("people", "ssn")
    assert "books" in rules.protected
    conn.execute("CREATE TABLE users(ssn)")
    rules = watching.live(conn)
    assert rules.is_hidden("people", "ssn")
    assert rules.is_hidden("users", "ssn")


def test_a_hidden_column_its_table_lost_hides_every_column() -> None:
    conn = apsw.Connection(":memory:")
    conn.execute("CREATE TABLE users(id, ssn)")
    watching = resolver()
    watching.live(conn)
    conn.execute("ALTER TABLE users RENAME COLUMN ssn TO tax")
    rules = watching.live(conn)
    assert "users" in rules.sealed
    assert rules.is_hidden("users", "id")
    assert rules.is_hidden("users", "tax")


def test_the_rules_are_read_again_only_when_the_schema_moves() -> None:
    conn = apsw.Connection(":memory:")
    conn.execute("CREATE TABLE users(id, ssn)")
    watching = resolver()
    first = watching.live(conn)
    assert watching.live(conn) is first
    conn.execute("CREATE TABLE other(a)")
    assert watching.live(conn) is not first
