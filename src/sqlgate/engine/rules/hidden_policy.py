"""Hidden columns as policy: what the agent may do with a column the user hid. Pure.

    READ of a hidden column      IGNORE (it reads as NULL), except inside a trigger body:
                                 a trigger the user wrote sees the real value, and the
                                 agent may not create one that reads a hidden column
    READ of an unreadable table  refused (an fts5 index of a hidden column: MATCH would
                                 answer whether a guess is in it), but for a trigger body
                                 and a module's own nested statements
    UPDATE of a hidden column    refused: the agent never writes one (an upsert's SET too)
    a write to an oracle table   refused: its constraints mix a hidden column with others,
                                 so success or failure would tell a guess right or wrong

The rest of hiding judges a whole statement (`engine.rules.hidden_checks`): the messages and the
judgements that need no database are here, so they can be tested and mutated alone.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlgate.engine.names import fold_name
from sqlgate.engine.rules.live_rules import LiveRules
from sqlgate.engine.statements import ALLOW, WRITE_ACTIONS, Decision, Operation, Tier

__all__ = [
    "ASK",
    "IGNORED",
    "changes_anything",
    "hidden_trailer",
    "hidden_verdict",
    "read_in_change_message",
    "written_hidden_message",
]

IGNORED = Decision(True, ignore=True)
# the next step of a refusal only the person who runs sqlgate can lift (the rules are theirs)
ASK = "ask the person who runs sqlgate"
# facts of a statement that changes nothing: a query, or CREATE VIEW (a view's reads are
# judged again whenever it is read)
_QUERY_ACTIONS = frozenset(
    {"SELECT", "READ", "FUNCTION", "RECURSIVE", "PRAGMA", "TRANSACTION", "SAVEPOINT"}
)
_VIEW_ACTIONS = frozenset({"CREATE_VIEW", "CREATE_TEMP_VIEW"})


def written_hidden_message(table: str, column: str, rules: LiveRules) -> str:
    """The refusal of a write to a hidden column, in every tool."""
    return (
        f"{rules.name_of(table)}.{column} is hidden by {rules.origin}: the agent never writes "
        "it, and no tool will; leave it out of the statement (an INSERT that leaves it to its "
        f"default is allowed), or {ASK}"
    )


def read_in_change_message(table: str, column: str, rules: LiveRules) -> str:
    """The refusal of a statement that changes something and reads a hidden column."""
    return (
        f"{rules.name_of(table)}.{column} is hidden by {rules.origin}: a statement that "
        "changes anything may not read it (RETURNING, a copy or an index would hold the real "
        "value, or NULL in its place); leave it out of the statement. read_query reads it as "
        "NULL"
    )


def _unreadable_message(table: str, rules: LiveRules) -> str:
    return (
        f"{table} indexes a column hidden by {rules.origin}: a search of it would tell "
        f"whether a guess is there, so no tool reads it; {ASK}"
    )


def _oracle_message(table: str, rules: LiveRules) -> str:
    return (
        f"{rules.name_of(table)} has a constraint, key, index or foreign key over a column "
        f"hidden by {rules.origin}: whether a write succeeds would tell a guess of the hidden "
        f"value right or wrong, so no tool writes it; {ASK}"
    )


def hidden_verdict(tier: Tier, op: Operation, rules: LiveRules) -> Decision:
    """Allow, ignore or refuse one fact about a hidden column."""
    target = op.target or ""
    in_trigger = op.inside is not None and fold_name(op.inside) in rules.triggers
    if op.action == "READ":
        if rules.is_hidden(target, op.detail):
            return ALLOW if in_trigger else IGNORED
        if fold_name(target) in rules.unreadable and not (in_trigger or op.nested):
            return Decision(False, _unreadable_message(target, rules))
        return ALLOW
    if op.action == "UPDATE" and rules.is_hidden(target, op.detail):
        return Decision(False, written_hidden_message(target, str(op.detail), rules))
    if op.action in WRITE_ACTIONS and fold_name(target) in rules.oracle_tables and not op.nested:
        return Decision(False, _oracle_message(target, rules))
    return ALLOW


def changes_anything(operations: Iterable[Operation]) -> bool:
    """Whether a statement with these authorizer facts changes anything (CREATE VIEW does
    not: what its view reads is judged each time it is read)."""
    actions = {op.action for op in operations if not op.nested and op.inside is None}
    if actions & _VIEW_ACTIONS:
        return False
    return bool(actions - _QUERY_ACTIONS)


def hidden_trailer(hidden_reads: Iterable[tuple[str, str]], rules: LiveRules) -> str:
    """The line after a result that read hidden columns as NULL; empty when none was."""
    if not hidden_reads:
        return ""
    # a read of no column (count(*) of a table whose every column is hidden) names the table
    names = sorted(
        {f"{rules.name_of(table)}.{column}" if column else rules.name_of(table)
         for table, column in hidden_reads}
    )  # fmt: skip
    return f"# hidden by policy: {', '.join(names)}" if names else ""
