"""The server's policy and the user's table rules together, for one fact. Pure.

`policy.decide` judges what a tier may do to which kind of object; a fact it allows is then
judged by the user's rules as they apply to the schema now (`engine.rules.live_rules`): a change
to a protected or append-only table first (`engine.rules.guarded_policy`), then hidden columns
(`engine.rules.hidden_policy`), whose verdict may be to read NULL instead of the value.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlgate.engine.rules.guarded_policy import guarded_verdict
from sqlgate.engine.rules.hidden_policy import hidden_verdict
from sqlgate.engine.rules.live_rules import LiveRules
from sqlgate.engine.statements import Decision, Operation, Tier, decide

__all__ = ["UNJUDGED", "decide_with_rules"]

# facts no table rule is about: they name no table (a function, a pragma, the statement)
UNJUDGED = frozenset({"SELECT", "FUNCTION", "RECURSIVE", "PRAGMA"})


def decide_with_rules(
    tier: Tier,
    op: Operation,
    protected: frozenset[str],
    rules: LiveRules,
    earlier: Sequence[Operation] = (),
) -> Decision:
    """Allow, ignore or deny one fact: the server's policy, then the user's rules.
    `earlier`: the statement's facts so far, this one included."""
    verdict = decide(tier, op, protected)
    if op.action in UNJUDGED or not rules.active:
        return verdict
    guarded = guarded_verdict(tier, op, rules, earlier)
    if not guarded.allowed:  # "no tool will": it beats a tier's advice to use another tool
        return guarded
    if not verdict.allowed:
        return verdict
    return hidden_verdict(tier, op, rules)
