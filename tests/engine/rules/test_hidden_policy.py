"""Hidden columns as policy, a table of cases: (fact, rules) -> allow, NULL or refused."""

from __future__ import annotations

import pytest

from sqlgate.engine.rules.hidden_policy import (
    IGNORED,
    changes_anything,
    hidden_trailer,
    hidden_verdict,
    read_in_change_message,
    written_hidden_message,
)
from sqlgate.engine.rules.live_rules import LiveRules
from sqlgate.engine.statements.policy import ALLOW, Operation, Tier

RULES = LiveRules(
    hidden={"users": frozenset({"ssn"})},
    sealed=frozenset({"undo_chunks"}),
    unreadable=frozenset({"f_users"}),
    oracle_tables=frozenset({"pairs"}),
    triggers=frozenset({"audit_copy"}),
    shown={"users": "Users"},
)
R = Tier.READ
UNREADABLE = (
    "f_users indexes a column hidden by the server's policy: a search of it would tell "
    "whether a guess is there, so no tool reads it; ask the person who runs sqlgate"
)
ORACLE = (
    "pairs has a constraint, key, index or foreign key over a column hidden by the server's "
    "policy: whether a write succeeds would tell a guess of the hidden value right or wrong, "
    "so no tool writes it; ask the person who runs sqlgate"
)

CASES = [
    (Operation("READ", "users", "ssn"), IGNORED),
    (Operation("READ", "USERS", "SSN", inside="v_users"), IGNORED),  # a view: NULL
    (Operation("READ", "users", "ssn", inside="audit_copy"), ALLOW),  # the user's trigger
    (Operation("READ", "users", "name"), ALLOW),
    (Operation("READ", "undo_chunks", "data"), IGNORED),
    (Operation("READ", "undo_chunks", ""), IGNORED),
    (Operation("READ", "f_users", "ssn"), UNREADABLE),
    (Operation("READ", "F_Users", "rowid"), UNREADABLE.replace("f_users", "F_Users", 1)),
    (Operation("READ", "f_users", "ssn", inside="audit_copy"), ALLOW),
    (Operation("READ", "f_users", "ssn", nested=True), ALLOW),  # fts5's own statements
    (Operation("READ", "f_users", "ssn", inside="some_view"), UNREADABLE),
    (Operation("READ", None, None), ALLOW),
    (Operation("UPDATE", "users", "ssn"),
     written_hidden_message("users", "ssn", RULES)),
    (Operation("UPDATE", "users", "name"), ALLOW),
    (Operation("DELETE", "users", "ssn"), ALLOW),  # only an UPDATE names a column it writes
    (Operation("UPDATE", "f_users", "ssn"), ALLOW),  # not a read: the module's own
    (Operation("INSERT", "users"), ALLOW),
    (Operation("INSERT", "pairs"), ORACLE),
    (Operation("UPDATE", "Pairs", "a"), ORACLE.replace("pairs", "Pairs", 1)),
    (Operation("DELETE", "pairs"), ORACLE),
    (Operation("DELETE", "pairs", nested=True), ALLOW),
    (Operation("READ", "pairs", "a"), ALLOW),
    (Operation("CREATE_INDEX", "i", "pairs"), ALLOW),
    (Operation("DROP_TABLE", "pairs"), ALLOW),  # a schema fact: no row is tried
    (Operation("INSERT", None), ALLOW),
    (Operation("UPDATE", None, None), ALLOW),
]  # fmt: skip


@pytest.mark.parametrize(("op", "expected"), CASES, ids=[repr(c[0]) for c in CASES])
def test_hidden_verdicts(op: Operation, expected: object) -> None:
    verdict = hidden_verdict(R, op, RULES)
    if isinstance(expected, str):
        assert not verdict.allowed
        assert verdict.reason == expected
    else:
        assert verdict == expected


def test_the_written_and_read_messages_name_the_column_as_the_rule_does() -> None:
    written = written_hidden_message("USERS", "ssn", RULES)
    assert written == (
        "Users.ssn is hidden by the server's policy: the agent never writes it, and no tool "
        "will; leave it out of the statement (an INSERT that leaves it to its default is "
        "allowed), or ask the person who runs sqlgate"
    )
    read = read_in_change_message("users", "SSN", RULES)
    assert read.startswith("Users.SSN is hidden by the server's policy: a statement that changes")
    assert read.endswith("leave it out of the statement. read_query reads it as NULL")


@pytest.mark.parametrize(
    ("actions", "changes"),
    [
        ([Operation("SELECT"), Operation("READ", "t", "a")], False),
        ([Operation("RECURSIVE"), Operation("FUNCTION", None, "hex")], False),
        ([Operation("PRAGMA", "table_info", "t")], False),
        ([Operation("TRANSACTION", "BEGIN")], False),
        ([Operation("SAVEPOINT", "BEGIN", "s")], False),
        ([Operation("CREATE_VIEW", "v"), Operation("INSERT", "sqlite_master")], False),
        ([Operation("CREATE_TEMP_VIEW", "v"), Operation("INSERT", "sqlite_temp_master")], False),
        ([Operation("SELECT"), Operation("UPDATE", "t", "a")], True),
        ([Operation("CREATE_INDEX", "i", "t")], True),
        ([Operation("SELECT"), Operation("INSERT", "t", inside="trg")], False),
        ([Operation("SELECT"), Operation("INSERT", "t_data", nested=True)], False),
        ([Operation("DELETE", "t", inside="trg", nested=True)], False),
        ([], False),
    ],
)
def test_what_changes_anything(actions: list[Operation], changes: bool) -> None:
    assert changes_anything(actions) is changes


def test_the_trailer_names_each_hidden_read_once_sorted_and_a_tables_read_by_its_name() -> None:
    reads = [("users", "ssn"), ("USERS", "ssn"), ("undo_chunks", ""), ("a", "b")]
    assert hidden_trailer(reads, RULES) == "# hidden by policy: Users.ssn, a.b, undo_chunks"
    assert hidden_trailer([], RULES) == ""
