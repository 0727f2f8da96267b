"""Error texts and hidden values, tables of cases: which statements evaluated hidden values
as stored, which SQLite messages hold no value, and the words that replace the others."""

from __future__ import annotations

import apsw
import pytest

from sqlgate.engine.rules.hidden_checks import trigger_literals
from sqlgate.engine.rules.hidden_errors import (
    FIXED_TEXTS,
    evaluated_tables,
    order_veiled_message,
    shown_as_is,
    veiled_message,
)
from sqlgate.engine.rules.live_rules import LiveRules
from sqlgate.engine.statements.policy import Operation

RULES = LiveRules(
    hidden={"users": frozenset({"ssn"}), "pairs": frozenset({"b"})},
    sealed=frozenset({"gone"}),
    triggers=frozenset({"audit_copy"}),
    shown={"users": "Users"},
)

EVALUATED = [
    ([Operation("INSERT", "users")], ("users",)),
    ([Operation("UPDATE", "USERS", "name")], ("users",)),
    ([Operation("DELETE", "users")], ("users",)),
    ([Operation("DELETE", "gone")], ("gone",)),  # every column of it is hidden
    ([Operation("INSERT", "other")], ()),
    ([Operation("DELETE", None)], ()),
    ([Operation("READ", "users", "ssn")], ()),  # the agent's read: NULL
    ([Operation("READ", "users", "ssn", inside="v_users")], ()),  # a view's: NULL
    ([Operation("READ", "users", "ssn", inside="audit_copy")], ("users",)),  # a trigger's
    ([Operation("READ", "users", "name", inside="audit_copy")], ()),
    ([Operation("READ", "gone", "x", inside="Audit_Copy")], ("gone",)),
    ([Operation("SELECT"), Operation("FUNCTION", None, "json_extract")], ()),
    ([Operation("CREATE_INDEX", "i", "users")], ()),
    ([Operation("DROP_TABLE", "gone")], ()),  # a schema fact evaluates no value
    (
        [Operation("UPDATE", "pairs", "a"), Operation("INSERT", "users"), Operation("READ", "t")],
        ("pairs", "users"),
    ),
]


@pytest.mark.parametrize(("operations", "tables"), EVALUATED, ids=[repr(c[0]) for c in EVALUATED])
def test_the_tables_whose_hidden_values_a_statement_evaluated(
    operations: list[Operation], tables: tuple[str, ...]
) -> None:
    assert evaluated_tables(operations, RULES) == tables


LITERALS = frozenset({"rows are kept", "it's kept"})
SHOWN = [
    (2067, "UNIQUE constraint failed: users.name", True),
    (1555, "UNIQUE constraint failed: users.id", True),
    (1299, "NOT NULL constraint failed: users.name", True),
    (275, "CHECK constraint failed: n > 0", True),
    (787, "FOREIGN KEY constraint failed", True),
    (2579, "UNIQUE constraint failed: users.rowid", True),
    (3091, "cannot store TEXT value in INTEGER column st.a", True),
    (1811, "rows are kept", True),  # a RAISE of a literal the owner wrote
    (1811, "it's kept", True),
    (1811, "rows are kept!", False),  # more than the literal: a value may be in it
    (1811, "S3CR3T", False),
    (1811, "integer overflow", False),  # a RAISE may say anything
    (1, "bad JSON path: 'S3CR3T'", False),
    (1, "integer overflow", True),
    (1, "too many levels of trigger recursion", True),
    (20, "datatype mismatch", True),
    (1043, "rows are kept", False),  # a function's constraint error: its own words
    (2323, "rtree constraint failed: t.(a<=b)", False),
    (0, "", False),
]


@pytest.mark.parametrize(("extended", "message", "shown"), SHOWN)
def test_which_sqlite_messages_are_shown_as_they_are(
    extended: int, message: str, shown: bool
) -> None:
    assert shown_as_is(extended, message, LITERALS) is shown


FIXED = [
    "integer overflow",
    "too many levels of trigger recursion",
    "datatype mismatch",
    "constraint failed",
    "interrupted",
    "query aborted",
    "abort due to ROLLBACK",
    "string or blob too big",
    "out of memory",
    "database or disk is full",
    "database disk image is malformed",
    "database is locked",
    "database table is locked",
    "disk I/O error",
    "attempt to write a readonly database",
    "authorization denied",
    "not authorized",
]


@pytest.mark.parametrize("text", FIXED)
def test_sqlites_fixed_texts_are_shown_whatever_the_code_but_a_raises(text: str) -> None:
    assert shown_as_is(1, text, frozenset())
    assert shown_as_is(20, text, frozenset())
    assert not shown_as_is(1811, text, frozenset())


def test_no_other_text_is_fixed() -> None:
    assert sorted(FIXED_TEXTS) == sorted(FIXED)


KINDS = [
    (1811, "a trigger's RAISE stopped the statement"),
    (275, "a constraint failed"),  # not veiled in practice; the kind all the same
    (1043, "a constraint failed"),
    (2323, "a constraint failed"),
    (19, "a constraint failed"),
    (1, "a function failed"),
    (20, "SQLite failed the statement"),
    (261, "SQLite failed the statement"),  # an extended code of another primary (BUSY)
    (275 + 256 * 100, "a constraint failed"),
]


@pytest.mark.parametrize(("extended", "kind"), KINDS)
def test_the_replacement_names_the_kind_the_tables_and_a_next_step(
    extended: int, kind: str
) -> None:
    text = veiled_message(extended, ("pairs", "users"), RULES)
    assert text == (
        f"SQLite error: {kind} while it ran on pairs, Users, whose triggers, constraints and "
        "indexes see columns hidden by the server's policy; its message is not shown, since "
        "it could hold a hidden value. Nothing was changed. Next: get_schema shows the "
        "triggers, constraints and indexes of pairs, Users; change the statement so that "
        "they do not fail, or ask the person who runs sqlgate"
    )


def test_a_failure_while_walking_a_hidden_index_has_one_answer() -> None:
    assert order_veiled_message("u_ssn", "users", RULES) == (
        "SQLite error: the statement failed while it read users through index u_ssn, which "
        "is over a column hidden by the server's policy; which row failed first would tell "
        "their hidden order, so the message is not shown. Nothing was changed. Next: write "
        "NOT INDEXED after the table's name (FROM users NOT INDEXED) to see SQLite's message"
    )


def test_the_literals_of_every_trigger_are_read_from_the_schema() -> None:
    conn = apsw.Connection(":memory:")
    conn.execute(
        "CREATE TABLE t(a); CREATE VIEW v AS SELECT 'not a trigger''s' AS x;"
        "CREATE TRIGGER k BEFORE DELETE ON t BEGIN SELECT RAISE(ABORT, 'it''s kept'); END;"
        "CREATE TEMP TRIGGER j BEFORE UPDATE ON t BEGIN SELECT RAISE(FAIL, 'temp' || 'x'); END"
    )
    assert trigger_literals(conn) == frozenset({"it's kept", "temp", "x"})
