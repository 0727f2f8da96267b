"""The user's rules are about the user's tables (main): a rule cannot name sqlgate's records,
and a fact about the records is the server policy's, but for the hidden undo data."""

from __future__ import annotations

import pytest

from sqlgate.engine.rules.live_rules import LiveRules
from sqlgate.engine.rules.rule_policy import decide_with_rules
from sqlgate.engine.rules.table_rules import (
    RECORDS_RULE,
    ColumnRule,
    parse_column_name,
    parse_table_name,
)
from sqlgate.engine.statements import Operation, Tier, in_main

R, W, D = Tier.READ, Tier.WRITE, Tier.DESTRUCTIVE


@pytest.mark.parametrize(
    ("parse", "text"),
    [
        (parse_table_name, "sqlgate.query_log"),
        (parse_table_name, "SQLGATE.members"),
        (parse_table_name, '"sqlgate"."claims"'),
        (parse_column_name, "sqlgate.query_log.query"),
        (parse_column_name, "[SqlGate].undo_changesets.data"),
    ],
)
def test_a_rule_naming_the_records_is_refused_in_words(parse: object, text: str) -> None:
    with pytest.raises(ValueError, match="names a table of sqlgate's own records") as caught:
        parse(text)  # type: ignore[operator]
    assert str(caught.value) == RECORDS_RULE
    assert "main" in RECORDS_RULE


@pytest.mark.parametrize(
    ("parse", "text", "expected"),
    [
        # a table of the user's that happens to be called sqlgate is still the user's
        (parse_column_name, "sqlgate.notes", ColumnRule("sqlgate", "notes")),
        (parse_table_name, "sqlgate", "sqlgate"),
        (parse_table_name, "main.sqlgate", "sqlgate"),
        (parse_column_name, "main.sqlgate.notes", ColumnRule("sqlgate", "notes")),
    ],
)
def test_a_user_table_named_sqlgate_is_the_users(
    parse: object, text: str, expected: object
) -> None:
    assert parse(text) == expected  # type: ignore[operator]


@pytest.mark.parametrize(
    ("parse", "text"),
    [(parse_table_name, "sqlgate.a.b"), (parse_column_name, "sqlgate.a.b.c")],
)
def test_too_many_parts_keep_their_own_refusal(parse: object, text: str) -> None:
    with pytest.raises(ValueError, match="must name"):
        parse(text)  # type: ignore[operator]


# the user hid events.secret, protected query_log and made members append-only: names that
# the records use too
RULES = LiveRules(
    hidden={"events": frozenset({"secret"}), "undo_changesets": frozenset({"data"})},
    protected=frozenset({"query_log"}),
    append_only=frozenset({"members"}),
)


def fact(
    action: str, target: str, detail: str | None = None, database: str = "sqlgate"
) -> Operation:
    return Operation(action, target, detail, database)


@pytest.mark.parametrize(
    ("tier", "op", "allowed", "ignore", "reason"),
    [
        # the records: read, hidden undo data as NULL, every change the server policy's refusal
        (R, fact("READ", "undo_changesets", "data"), True, True, ""),
        (R, fact("READ", "undo_changesets", "kind"), True, False, ""),
        (R, fact("READ", "query_log", "query"), True, False, ""),
        (D, fact("DELETE", "query_log"), False, False, "sqlgate.query_log is a sqlgate server"),
        (D, fact("UPDATE", "members", "name"), False, False, "sqlgate.members is a sqlgate server"),
        (W, fact("INSERT", "members"), False, False, "sqlgate.members is a sqlgate server"),
        (D, fact("ALTER_TABLE", "sqlgate", "query_log", database="x"), False, False,
         "sqlgate.query_log is a sqlgate server"),
        # main: the user's rules, as before
        (D, fact("DELETE", "query_log", database="main"), False, False, "query_log is protected"),
        (D, fact("DELETE", "members", database="main"), False, False, "members is append-only"),
        (W, fact("INSERT", "members", database="main"), True, False, ""),
        (R, fact("READ", "events", "secret", database="main"), True, True, ""),
    ],
)  # fmt: skip
def test_the_users_rules_judge_main_and_the_records_are_the_servers(
    tier: Tier, op: Operation, allowed: bool, ignore: bool, reason: str
) -> None:
    verdict = decide_with_rules(tier, op, in_main(()), RULES, [op])
    assert (verdict.allowed, verdict.ignore) == (allowed, ignore)
    assert verdict.reason.startswith(reason)
