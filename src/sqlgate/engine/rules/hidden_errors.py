"""Error texts that could carry a hidden value, and the value-free words that replace them.

The agent's own reads of a hidden column are NULL, so SQLite can put a hidden value into an
error message only where its program evaluated the stored value without asking the
authorizer (`evaluated_tables`): a row write to a table with a hidden column (its CHECK
constraints, generated columns, index expressions and triggers see the row as stored), and
a trigger body, which reads hidden columns as they are (the owner wrote it). When a statement
did either and SQLite failed it while it ran, the message is kept only when it cannot hold a
value (`shown_as_is`):

    a constraint SQLite words itself   UNIQUE, PRIMARY KEY, NOT NULL, CHECK, FOREIGN KEY, a
                                       STRICT column's type, a rowid (told apart by SQLite's
                                       extended result code): names and schema text only
    a trigger's RAISE                  when its message is a string literal of a trigger's
                                       text, as the owner wrote it
    a fixed text                       SQLite's words for a failure, never a value (below)

Any other message is replaced (`veiled_message`): what kind of failure it was, the tables,
and the next step. A statement whose plan walks an index over a hidden column (allowed when
its result cannot depend on row order, `engine.rules.hidden_order`) gets one fixed message for
every failure while it runs (`order_veiled_message`): which row failed first would tell the
rows' hidden order. Whether a message is replaced depends on the statement, the schema and
the kind of failure (an owner's RAISE that picks one of its literals by a hidden value tells
which, as its failing tells that it failed: the owner's own logic). Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sqlgate.engine.names import fold_name
from sqlgate.engine.rules.hidden_policy import ASK, hidden_verdict
from sqlgate.engine.rules.live_rules import LiveRules
from sqlgate.engine.statements import ALLOW, Operation, Tier

__all__ = [
    "evaluated_tables",
    "order_veiled_message",
    "shown_as_is",
    "veiled_message",
]

_ROW_WRITES = frozenset({"INSERT", "UPDATE", "DELETE"})
SQLITE_ERROR = 1
SQLITE_CONSTRAINT = 19
CONSTRAINT_TRIGGER = 1811  # SQLITE_CONSTRAINT_TRIGGER: RAISE(ABORT|FAIL|ROLLBACK, ...)
# SQLITE_CONSTRAINT_ CHECK, FOREIGNKEY, NOTNULL, PRIMARYKEY, UNIQUE, ROWID, DATATYPE: SQLite
# words these from table, column, index and constraint names and the CHECK's own text
_WORDED_BY_SQLITE = frozenset({275, 787, 1299, 1555, 2067, 2579, 3091})
# messages SQLite gives for failures while a statement runs that never quote a value
FIXED_TEXTS = frozenset(
    {
        "integer overflow",
        "too many levels of trigger recursion",
        "datatype mismatch",
        "constraint failed",
        "interrupted",
        "query aborted",
        "abort due to ROLLBACK",
        "string or blob too big",
        "out of memory",
        "database or disk is full",
        "database disk image is malformed",
        "database is locked",
        "database table is locked",
        "disk I/O error",
        "attempt to write a readonly database",
        "authorization denied",
        "not authorized",
    }
)


def evaluated_tables(operations: Iterable[Operation], rules: LiveRules) -> tuple[str, ...]:
    """Folded names, sorted, of the tables whose hidden values a statement with these
    authorizer facts evaluated as stored: written rows, and reads in a trigger body."""
    found: set[str] = set()
    for op in operations:
        table = op.target or ""
        if op.action in _ROW_WRITES:
            hides = bool(rules.hidden_in(table)) or fold_name(table) in rules.sealed
        else:
            hides = (
                op.action == "READ"
                and rules.is_hidden(table, op.detail)
                and hidden_verdict(Tier.READ, op, rules) == ALLOW
            )
        if hides:
            found.add(fold_name(table))
    return tuple(sorted(found))


def shown_as_is(extended: int, message: str, literals: frozenset[str]) -> bool:
    """Whether SQLite's `message` (with its extended result code) holds no value: see above.
    `literals`: the string literals of the schema's triggers."""
    if extended in _WORDED_BY_SQLITE:
        return True
    if extended == CONSTRAINT_TRIGGER:
        return message in literals
    return message in FIXED_TEXTS


def _kind(extended: int) -> str:
    if extended == CONSTRAINT_TRIGGER:
        return "a trigger's RAISE stopped the statement"
    if extended & 0xFF == SQLITE_CONSTRAINT:
        return "a constraint failed"
    if extended == SQLITE_ERROR:
        return "a function failed"
    return "SQLite failed the statement"


def veiled_message(extended: int, tables: Sequence[str], rules: LiveRules) -> str:
    """The answer instead of SQLite's message, for a failure of kind `extended` in a statement
    that evaluated the hidden values of `tables` (folded)."""
    names = ", ".join(rules.name_of(table) for table in tables)
    return (
        f"SQLite error: {_kind(extended)} while it ran on {names}, whose triggers, constraints "
        f"and indexes see columns hidden by {rules.origin}; its message is not shown, since "
        "it could hold a hidden value. Nothing was changed. Next: get_schema shows the "
        f"triggers, constraints and indexes of {names}; change the statement so that they do "
        f"not fail, or {ASK}"
    )


def order_veiled_message(index: str, table: str, rules: LiveRules) -> str:
    """The answer to any failure of a statement that walked `index`, over a hidden column."""
    return (
        f"SQLite error: the statement failed while it read {table} through index {index}, "
        f"which is over a column hidden by {rules.origin}; which row failed first would tell "
        "their hidden order, so the message is not shown. Nothing was changed. Next: write "
        f"NOT INDEXED after the table's name (FROM {table} NOT INDEXED) to see SQLite's message"
    )
