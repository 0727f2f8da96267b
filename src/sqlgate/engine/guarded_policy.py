"""Protected and append-only user tables as policy. Pure.

protected      the agent reads it, and never writes, deletes, alters, drops, indexes it
               or attaches a trigger to it, in any tier
append-only    INSERT only: no UPDATE, DELETE (REPLACE and upsert-update included)
"""

from __future__ import annotations

from sqlgate.engine.live_rules import LiveRules
from sqlgate.engine.names import fold_name
from sqlgate.engine.policy import ALLOW, Operation, Tier, Verdict

__all__ = ["guarded_verdict"]


def _protected_message(table: str, rules: LiveRules) -> str:
    return (
        f"{rules.name_of(table)} is protected by {rules.origin}: agents may read it "
        "(read_query) but no tool will change it; ask the person who runs sqlgate"
    )


def _append_only_message(table: str, rules: LiveRules) -> str:
    return (
        f"{rules.name_of(table)} is append-only by {rules.origin}: write_query may INSERT new "
        "rows, but no tool will update or delete its rows; ask the person who runs sqlgate"
    )


def guarded_verdict(tier: Tier, op: Operation, rules: LiveRules) -> Verdict:
    """Allow or refuse one fact that may change a protected or append-only table."""
    table = fold_name(op.target or "")
    if op.action in ("INSERT", "UPDATE", "DELETE", "EMPTY_TABLE") and table in rules.protected:
        return Verdict(False, _protected_message(op.target or "", rules))
    if op.action in ("UPDATE", "DELETE", "EMPTY_TABLE") and table in rules.append_only:
        return Verdict(False, _append_only_message(op.target or "", rules))
    return ALLOW
