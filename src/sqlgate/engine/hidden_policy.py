"""Hidden columns as policy: what the agent may do with a column the user hid. Pure.

    READ of a hidden column      IGNORE (it reads as NULL), except inside a trigger body:
                                 a trigger the user wrote sees the real value, and the
                                 agent may not create one that reads a hidden column
    UPDATE of a hidden column    refused: the agent never writes one (an upsert's SET too)

The rest of hiding needs more than one fact at a time and lives with the recorder
(`engine.authorizer`): a statement that changes anything may not read a hidden column at
all (RETURNING would give back the real value), an INSERT may not name one.
"""

from __future__ import annotations

from sqlgate.engine.live_rules import LiveRules
from sqlgate.engine.names import fold_name
from sqlgate.engine.policy import ALLOW, Operation, Tier, Verdict

__all__ = ["IGNORED", "hidden_verdict", "written_hidden_message"]

IGNORED = Verdict(True, ignore=True)


def written_hidden_message(table: str, column: str, rules: LiveRules) -> str:
    """The refusal of a write to a hidden column, in every tool."""
    return (
        f"{rules.name_of(table)}.{column} is hidden by {rules.origin}: the agent never writes "
        "it, and no tool will; leave it out of the statement (an INSERT that leaves it to its "
        "default is allowed), or ask the person who runs sqlgate"
    )


def hidden_verdict(tier: Tier, op: Operation, rules: LiveRules) -> Verdict:
    """Allow, ignore or refuse one fact about a hidden column."""
    if op.action == "READ" and rules.is_hidden(op.target, op.detail):
        if op.inside is not None and fold_name(op.inside) in rules.triggers:
            return ALLOW
        return IGNORED
    if op.action == "UPDATE" and rules.is_hidden(op.target, op.detail):
        return Verdict(False, written_hidden_message(op.target or "", op.detail or "", rules))
    return ALLOW
