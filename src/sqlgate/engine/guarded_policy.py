"""Protected and append-only user tables as policy. Pure.

    protected      read only: no INSERT, UPDATE or DELETE; no DROP, ALTER, index or trigger
                   on it, nor a drop of one; in any tier
    append-only    INSERT only: no UPDATE or DELETE (an upsert's DO UPDATE is an UPDATE), no
                   REPLACE (it deletes the row it replaces), no DROP, ALTER, index or trigger

Indirect changes are facts like any other: SQLite reports a foreign key's CASCADE or SET
NULL, a trigger's writes and an INSTEAD OF trigger's writes as writes to the table they
change, naming the trigger. Two it never reports are read from the schema
(`engine.guard_facts`): REPLACE's implicit delete (the statement's own conflict clause, a
table definition's ON CONFLICT REPLACE, a trigger body's REPLACE) and the rewrite of a
guarded table's REFERENCES clause by `ALTER TABLE parent RENAME` (every ALTER of a parent is
refused).
"""

from __future__ import annotations

from sqlgate.engine.live_rules import LiveRules
from sqlgate.engine.names import fold_name
from sqlgate.engine.policy import ALLOW, ROW_ACTIONS, Operation, Tier, Verdict

__all__ = ["guarded_statement_refusal", "guarded_verdict"]

# schema changes whose `detail` (second argument) is the table they change
ON_TABLE = frozenset(
    {"ALTER_TABLE", "CREATE_INDEX", "DROP_INDEX", "CREATE_TRIGGER", "DROP_TRIGGER"}
)
# ... and those whose `target` is
DROPS = frozenset({"DROP_TABLE", "DROP_VTABLE"})
# a statement's own conflict clause that overrides a table's ON CONFLICT REPLACE
NOT_REPLACING = frozenset({"ABORT", "FAIL", "IGNORE", "ROLLBACK"})
ASK = "ask the person who runs sqlgate"


def _by(op: Operation) -> str:
    if op.inside:
        return f" (done by trigger or view {op.inside})"
    return ""


def _rows(op: Operation) -> str:
    if op.inside or op.action == "INSERT":
        return f"{op.action.replace('_', ' ')} of its rows{_by(op)}"
    return f"{op.action.replace('_', ' ')} of its rows (by the statement or a foreign key's action)"


def _protected(table: str, rules: LiveRules, what: str) -> Verdict:
    return Verdict(
        False,
        f"{rules.name_of(table)} is protected by {rules.origin}: {what}; agents may read it "
        f"(read_query) but no tool will change it; {ASK}",
    )


def _append_only(table: str, rules: LiveRules, what: str, instead: str = "") -> Verdict:
    instead = instead or "write_query may only INSERT new rows into it"
    return Verdict(
        False,
        f"{rules.name_of(table)} is append-only by {rules.origin}: {what}, and no tool will "
        f"run it; {instead}",
    )


def _replacing(op: Operation, table: str, rules: LiveRules, conflict: str | None) -> str | None:
    """Why an INSERT into append-only `table` (folded) may delete a row, or None."""
    if conflict == "REPLACE":
        return "REPLACE deletes the row it replaces"
    if op.inside is not None and fold_name(op.inside) in rules.replacing_triggers:
        return f"trigger {op.inside} inserts with REPLACE, which deletes the row it replaces"
    if table in rules.replacing and conflict not in NOT_REPLACING:
        return "its definition says ON CONFLICT REPLACE, so a conflicting INSERT deletes a row"
    return None


def _row_verdict(op: Operation, rules: LiveRules, conflict: str | None) -> Verdict:
    target = op.target or ""
    table = fold_name(target)
    if table in rules.protected:
        return _protected(target, rules, _rows(op))
    if table not in rules.append_only:
        return ALLOW
    if op.action != "INSERT":
        return _append_only(target, rules, _rows(op))
    why = _replacing(op, table, rules, conflict)
    if why is None:
        return ALLOW
    return _append_only(
        target,
        rules,
        why + _by(op),
        "insert with INSERT OR ABORT (or OR IGNORE to skip rows that exist) in write_query",
    )


def guarded_verdict(
    tier: Tier, op: Operation, rules: LiveRules, conflict: str | None = None
) -> Verdict:
    """Allow or refuse one fact that may change a protected or append-only table.

    `conflict`: the statement's own conflict clause (`guard_facts.conflict_clause`)."""
    if op.action in ROW_ACTIONS:  # the policy's facts whose rows change
        return _row_verdict(op, rules, conflict)
    if op.action in ON_TABLE:
        table = op.detail or ""
    elif op.action in DROPS:
        table = op.target or ""
    else:
        return ALLOW
    folded = fold_name(table)
    what = f"{op.action.replace('_', ' ')}{_by(op)}"
    if folded in rules.protected:
        return _protected(table, rules, what)
    if folded in rules.append_only:
        return _append_only(table, rules, what)
    if op.action == "ALTER_TABLE" and folded in rules.guarded_parents:
        return Verdict(
            False,
            f"ALTER TABLE {table} is refused: a table guarded by {rules.origin} references "
            f"{table}, and a rename would rewrite that table's definition; no tool will "
            f"run it; {ASK}",
        )
    return ALLOW


def guarded_statement_refusal(kind: str, target: str | None, rules: LiveRules) -> str | None:
    """A refusal for a statement no tool would run on a guarded table, judged before any
    tier's advice ("UPDATE needs write_query") would send the agent to a tool that refuses
    too; None when the rules have nothing against it (an INSERT into an append-only table)."""
    if target is None:
        return None
    folded = fold_name(target)
    if folded in rules.protected:
        return _protected(target, rules, kind).reason
    if folded in rules.append_only and kind not in ("INSERT", "CREATE VIEW"):
        return _append_only(target, rules, kind).reason
    return None
