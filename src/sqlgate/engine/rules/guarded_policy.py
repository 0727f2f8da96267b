"""Protected and append-only user tables as policy. Pure.

    protected      read only: no INSERT, UPDATE or DELETE; no DROP, ALTER, index or trigger
                   on it, nor a drop of one; in any tier
    append-only    INSERT only: no UPDATE or DELETE (an upsert's DO UPDATE is an UPDATE), no
                   REPLACE that deletes a row, no DROP, ALTER, index or trigger

Indirect changes are facts like any other: SQLite reports a foreign key's CASCADE or SET
NULL, a trigger's writes and an INSTEAD OF trigger's writes as writes to the table they
change, naming the trigger. What SQLite never reports, or reports before it can know, is
judged elsewhere with words from here:

- REPLACE's implicit delete (whatever asked for REPLACE: the statement, a trigger's body,
  the firing statement's clause handed down to a trigger, a key declared `ON CONFLICT
  REPLACE`) is never reported; a foreign key's action that only such a delete can set off
  is reported at prepare whether or not a row conflicts. Both are judged once the statement
  has run, on the rows it changed (`engine.running.guard_rows`, `changed_row_refusal`): only an
  INSERT that did delete or change a guarded row is refused.
- `ALTER TABLE parent RENAME` rewrites a guarded table's REFERENCES clause naming only the
  parent (`engine.rules.guard_facts`: every ALTER of a parent is refused).
- What a statement leaves in the schema for other programs to fire, where no authorizer
  watches (`engine.rules.guard_schema`): a new trigger that would write a guarded table, through
  whatever its writes set off (`left_write_refusal`), a table that takes a guarded name
  with triggers, foreign-key actions or ON CONFLICT REPLACE, or becomes the parent a
  guarded table's foreign key acts from (`new_table_refusal`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlgate.engine.names import fold_name
from sqlgate.engine.rules.hidden_policy import ASK
from sqlgate.engine.rules.live_rules import LiveRules
from sqlgate.engine.statements import (
    ALLOW,
    CATALOG,
    ROW_ACTIONS,
    WRITE_ACTIONS,
    Decision,
    Operation,
    Tier,
)

__all__ = [
    "LeftWrite",
    "NewTable",
    "changed_row_refusal",
    "guarded_statement_refusal",
    "guarded_verdict",
    "left_write_refusal",
    "new_table_refusal",
    "row_change_refused",
    "unchecked_trigger_refusal",
]

# schema changes whose `detail` (second argument) is the table they change
ON_TABLE = frozenset(
    {"ALTER_TABLE", "CREATE_INDEX", "DROP_INDEX", "CREATE_TRIGGER", "DROP_TRIGGER"}
)
# ... and those whose `target` is
DROPS = frozenset({"DROP_TABLE", "DROP_VTABLE"})
# the index SQLite makes for a PRIMARY KEY or UNIQUE constraint of a table being created
AUTOINDEX = "sqlite_autoindex_"
SET_BY = "set by the person who runs sqlgate"
UNWATCHED = "where sqlgate does not watch"


def _by(op: Operation) -> str:
    if op.inside:
        return f" (done by trigger or view {op.inside})"
    return ""


def _rows(op: Operation) -> str:
    if op.inside or op.action == "INSERT":
        return f"{op.action.replace('_', ' ')} of its rows{_by(op)}"
    return f"{op.action.replace('_', ' ')} of its rows (by the statement or a foreign key's action)"


def _protected(table: str, rules: LiveRules, what: str) -> Decision:
    return Decision(
        False,
        f"{rules.name_of(table)} is protected by {rules.origin}: {what}; agents may read it "
        f"(read_query) but no tool will change it; {ASK}",
    )


def _append_only(table: str, rules: LiveRules, what: str) -> Decision:
    return Decision(
        False,
        f"{rules.name_of(table)} is append-only by {rules.origin}: {what}, and no tool will "
        "run it; write_query may only INSERT new rows into it",
    )


def _statement_write(earlier: Sequence[Operation]) -> Operation | None:
    """The statement's own first row write: the first one SQLite reports outside a trigger
    (a DDL statement's catalog rows aside)."""
    for op in earlier:
        if (
            op.action in WRITE_ACTIONS
            and op.inside is None
            and not op.nested
            and fold_name(op.target or "") not in CATALOG
        ):
            return op
    return None


def _after_the_run(op: Operation, earlier: Sequence[Operation]) -> bool:
    """Whether `op` is a foreign key's action that an INSERT only sets off when a row
    conflicts under REPLACE (or a trigger's write reaches the parent): SQLite reports it at
    prepare either way, so it is judged on the rows the statement did change
    (`engine.running.guard_rows`). An INSERT's own upsert (DO UPDATE, the same table) is not one."""
    return (
        op.inside is None
        and not op.nested
        and op.action in ("DELETE", "UPDATE")
        and (own := _statement_write(earlier)) is not None
        and own.action == "INSERT"
        and fold_name(own.target or "") != fold_name(op.target or "")
    )


def _row_verdict(op: Operation, rules: LiveRules) -> Decision:
    target = op.target or ""
    table = fold_name(target)
    if op.action == "EMPTY_TABLE" and table in rules.shadow_of:
        target = table = rules.shadow_of[table]  # a guarded virtual table's command
    if table in rules.protected:
        return _protected(target, rules, _rows(op))
    if table in rules.append_only and op.action != "INSERT":
        return _append_only(target, rules, _rows(op))
    return ALLOW  # an INSERT that REPLACE turns into a delete is judged after the run


def _own_key(op: Operation, earlier: Sequence[Operation]) -> bool:
    """Whether `op` is the index of a key of the table the statement creates."""
    table = fold_name(op.detail or "")
    return fold_name(op.target or "").startswith(AUTOINDEX) and any(
        e.action == "CREATE_TABLE" and fold_name(e.target or "") == table for e in earlier
    )


def guarded_verdict(
    tier: Tier, op: Operation, rules: LiveRules, earlier: Sequence[Operation] = ()
) -> Decision:
    """Allow or refuse one fact that may change a protected or append-only table.

    `earlier`: the statement's facts so far, this one included (which write is its own)."""
    if op.action in ROW_ACTIONS:  # the policy's facts whose rows change
        if _after_the_run(op, earlier):
            return ALLOW
        return _row_verdict(op, rules)
    if op.action in ON_TABLE:
        table = op.detail or ""
    elif op.action in DROPS:
        table = op.target or ""
    else:
        return ALLOW
    if op.action == "CREATE_INDEX" and _own_key(op, earlier):
        return ALLOW  # a table created under a rule's name, with its keys
    folded = fold_name(table)
    what = f"{op.action.replace('_', ' ')}{_by(op)}"
    if folded in rules.protected:
        return _protected(table, rules, what)
    if folded in rules.append_only:
        return _append_only(table, rules, what)
    if op.action == "ALTER_TABLE" and folded in rules.guarded_parents:
        return Decision(
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
    if folded in rules.append_only and kind not in ("INSERT", "REPLACE", "CREATE VIEW"):
        return _append_only(target, rules, kind).reason
    return None


# -- rows a statement changed, judged after it ran (`engine.running.guard_rows`) -----------------


def row_change_refused(table: str, action: str, rules: LiveRules) -> bool:
    """Whether the rules refuse a statement that, as it ran, made `action` (INSERT, UPDATE
    or DELETE, as SQLite's change hooks name it) on a row of `table`: any change of a
    protected table's row, a deletion or change of an append-only table's."""
    folded = fold_name(table)
    return folded in rules.protected or (folded in rules.append_only and action != "INSERT")


def changed_row_refusal(
    table: str, action: str, row: str, conflict: str | None, rules: LiveRules
) -> str:
    """The words of that refusal (`row_change_refused`): `row` names the row ("id = 1");
    `conflict` is the key the new row repeats ("code = 'x'") when a REPLACE deleted the row
    for it, None when the change came another way (a foreign key's action)."""
    name = rules.name_of(table)
    verb = {"DELETE": "delete", "UPDATE": "change"}.get(action, "add")
    why = " (by a foreign key's action, a REPLACE or a virtual table's command)"
    if conflict:
        why = f" (REPLACE deletes it: the new row repeats its {conflict})"
    if fold_name(table) in rules.protected:
        return (
            f"{name} is protected by {rules.origin}: the statement would {verb} its row {row}"
            f"{why}; agents may read it (read_query) but no tool will change it; nothing was "
            f"changed; {ASK}"
        )
    return (
        f"{name} is append-only by {rules.origin}: the statement would {verb} its existing "
        f"row {row}{why}, and no tool will run it; nothing was changed. Give new rows keys "
        "no row holds, or skip the rows that exist with INSERT OR IGNORE (or ON CONFLICT DO "
        "NOTHING) in write_query"
    )


# -- what a statement leaves in the schema (`engine.rules.guard_schema`) -------------------------


@dataclass(frozen=True)
class LeftWrite:
    """A row write a trigger the statement created would make when something fires it:
    `op` the fact SQLite reported; `through` the table or view the trigger itself writes
    that sets `op` off (None: the trigger's own write)."""

    trigger: str
    op: Operation
    through: str | None = None


def _mode(table: str, rules: LiveRules) -> str | None:
    folded = fold_name(table)
    if folded in rules.protected:
        return "protected"
    if folded in rules.append_only:
        return "append-only"
    return None


def _rule(table: str, mode: str, rules: LiveRules) -> str:
    return f"{rules.name_of(table)} is {mode} by {rules.origin}, {SET_BY}"


def left_write_refusal(write: LeftWrite, rules: LiveRules) -> str | None:
    """Why the trigger may not be left in the schema, or None. Any write to a guarded table
    is refused, an append included: the statement that fires a trigger hands its conflict
    clause down to the trigger's statements, so an application's INSERT OR REPLACE would
    make an append delete a row."""
    op = write.op
    target = op.target or ""
    mode = _mode(target, rules)
    if op.action not in ROW_ACTIONS or mode is None:
        return None
    path = ""
    if write.through is not None:
        via = f"trigger {op.inside}" if op.inside else "a foreign key's action"
        path = f" (its write to {write.through} does, through {via})"
    return (
        f"trigger {write.trigger} would {op.action} rows of {rules.name_of(target)} when "
        f"another program's statement fires it{path}, {UNWATCHED}; "
        f"{_rule(target, mode, rules)}, so no tool will create it; nothing was changed"
    )


def unchecked_trigger_refusal(trigger: str, error: str) -> str:
    """The refusal of a trigger whose writes cannot be known while table rules are set."""
    return (
        f"trigger {trigger} could not be checked: SQLite could not prepare a statement that "
        f"fires it ({error}), so what it would write when another program fires it is not "
        f"known; while tables are guarded by rules {SET_BY}, no tool will create it. Nothing "
        "was changed: create the tables and views its body names first"
    )


@dataclass(frozen=True)
class NewTable:
    """A table the statement created or renamed into place, with what may change its rows
    or a guarded table's without a write of the agent's:

    `actions`    its own foreign keys' actions: (parent, "ON DELETE CASCADE")
    `replaces`   its definition says ON CONFLICT REPLACE (an INSERT may delete a row)
    `triggers`   triggers the statement pointed at it (on it, or naming it in their body)
    `children`   guarded tables whose foreign key acts on its rows: (child, "ON DELETE ...")
    """

    name: str
    actions: tuple[tuple[str, str], ...] = ()
    replaces: bool = False
    triggers: tuple[str, ...] = ()
    children: tuple[tuple[str, str], ...] = ()


def _taking_a_guarded_name(table: NewTable, mode: str, rules: LiveRules) -> str | None:
    rule = _rule(table.name, mode, rules)
    if table.triggers:
        return (
            f"{rule}: the statement would leave trigger {table.triggers[0]} firing on it or "
            f"naming it, which another program's statement would run {UNWATCHED}; no tool "
            "will run it; nothing was changed"
        )
    if table.actions:
        parent, action = table.actions[0]
        return (
            f"{rule}: its foreign key to {parent} says {action}, so another program's change "
            f"to {parent} would change its rows; no tool will create it so; nothing was "
            "changed. Declare the key without an action"
        )
    if table.replaces and mode == "append-only":
        return (
            f"{rule}: its definition says ON CONFLICT REPLACE, so another program's INSERT "
            "would delete its rows; no tool will create it so; nothing was changed. Declare "
            "its keys without ON CONFLICT REPLACE"
        )
    return None


def new_table_refusal(table: NewTable, rules: LiveRules) -> str | None:
    """Why the table may not take its place in the schema, or None."""
    mode = _mode(table.name, rules)
    if mode is not None:
        found = _taking_a_guarded_name(table, mode, rules)
        if found is not None:
            return found
    for child, action in table.children:
        child_mode = _mode(child, rules)
        if child_mode is not None:
            return (
                f"{_rule(child, child_mode, rules)}, and its foreign key to {table.name} says "
                f"{action}: another program's change to {table.name} would change "
                f"{rules.name_of(child)}, so no tool will create {table.name}; nothing was "
                f"changed; {ASK}"
            )
    return None
