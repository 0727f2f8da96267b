"""The server's policy, then the user's rules, for one fact (`decide_with_rules`)."""

from __future__ import annotations

import pytest

from sqlgate.engine.rules.live_rules import NO_RULES, LiveRules
from sqlgate.engine.rules.rule_policy import UNJUDGED, decide_with_rules
from sqlgate.engine.statements import Decision, Operation, Tier, in_main

R, W, D = Tier.READ, Tier.WRITE, Tier.DESTRUCTIVE
RULES = LiveRules(hidden={"users": frozenset({"ssn"})}, protected=frozenset({"ledger"}))
# derived facts without a rule of the user's: never in force (the rules are inactive)
DERIVED_ONLY = LiveRules(unreadable=frozenset({"users_fts"}))


def test_the_facts_no_table_rule_is_about_are_pinned() -> None:
    # written out, not imported: a fact left out would be judged by the table rules
    pinned = frozenset({"SELECT", "FUNCTION", "RECURSIVE", "PRAGMA"})
    for action in sorted(pinned):  # each named like a guarded or hidden table's fact would be
        op = Operation(action, "table_info" if action == "PRAGMA" else "ledger", "ssn")
        assert decide_with_rules(R, op, in_main(()), RULES).allowed
    assert pinned == UNJUDGED


@pytest.mark.parametrize(
    ("tier", "op", "rules", "expected"),
    [
        # no rules in force: the server's verdict, whatever the rules derived
        (R, Operation("READ", "users_fts", "x", "main"), DERIVED_ONLY, Decision(True)),
        (R, Operation("READ", "users_fts", "x", "main"), NO_RULES, Decision(True)),
        (W, Operation("DELETE", "t", None, "main"), NO_RULES,
         Decision(False, "DELETE needs destructive_query; write_query does not allow it")),
        # rules in force: a refusal of the server's stands when the rules allow the fact
        (W, Operation("DELETE", "t", None, "main"), RULES,
         Decision(False, "DELETE needs destructive_query; write_query does not allow it")),
        (R, Operation("PRAGMA", "writable_schema", "1", "main"), RULES,
         Decision(False, "PRAGMA writable_schema is not allowed: no tool will run it; only "
                  "introspection pragmas (table_info, index_list, foreign_key_list, ...) and "
                  "reading settings are, in read_query")),
        (R, Operation("SELECT"), RULES, Decision(True)),
        # ... and the rules' own verdicts
        (R, Operation("READ", "users", "ssn", "main"), RULES, Decision(True, ignore=True)),
        (R, Operation("READ", "users", "name", "main"), RULES, Decision(True)),
    ],
)  # fmt: skip
def test_the_server_first_then_the_rules(
    tier: Tier, op: Operation, rules: LiveRules, expected: Decision
) -> None:
    assert decide_with_rules(tier, op, in_main(()), rules, [op]) == expected
