"""The server's policy and the user's table rules together, for one fact. Pure.

`policy.decide` judges what a tier may do to which kind of object; a fact it allows is then
judged by the user's rules as they apply to the schema now (`engine.rules.live_rules`): a change
to a protected or append-only table first (`engine.rules.guarded_policy`), then hidden columns
(`engine.rules.hidden_policy`), whose verdict may be to read NULL instead of the value.

The user's rules are about the user's tables, in main. A fact about sqlgate's records
(`SERVER_SCHEMA`) is the server policy's alone, which reads them and never changes them;
only the hidden columns still apply to what it reads (by name, as the undo data's columns
that read NULL while any column is hidden: `engine.server_columns.ROW_VALUES`).
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlgate.engine.rules.guarded_policy import guarded_verdict
from sqlgate.engine.rules.hidden_policy import hidden_verdict
from sqlgate.engine.rules.live_rules import LiveRules
from sqlgate.engine.statements import (
    SERVER_SCHEMA,
    Decision,
    Operation,
    Protected,
    Tier,
    database_of,
    decide,
)

__all__ = ["UNJUDGED", "decide_with_rules"]

# facts no table rule is about: they name no table (a function, a pragma, the statement)
UNJUDGED = frozenset({"SELECT", "FUNCTION", "RECURSIVE", "PRAGMA"})


def decide_with_rules(
    tier: Tier,
    op: Operation,
    protected: Protected,
    rules: LiveRules,
    earlier: Sequence[Operation] = (),
) -> Decision:
    """Allow, ignore or deny one fact: the server's policy, then the user's rules.
    `earlier`: the statement's facts so far, this one included."""
    verdict = decide(tier, op, protected)
    if op.action in UNJUDGED or not rules.active:
        return verdict
    if database_of(op) == SERVER_SCHEMA:  # the records: only ever read
        return hidden_verdict(tier, op, rules) if verdict.allowed else verdict
    guarded = guarded_verdict(tier, op, rules, earlier)
    if not guarded.allowed:  # "no tool will": it beats a tier's advice to use another tool
        return guarded
    if not verdict.allowed:
        return verdict
    return hidden_verdict(tier, op, rules)
