"""write_query's check that an UPDATE's WHERE can filter: the facts, then `engine.statements.where`.

Preflight refused an UPDATE whose WHERE names nothing; here the names are judged against
the schema: the columns of every table the statement names come from `pragma_table_xinfo`
(server-built SQL, the name bound), and `where.where_filters` decides. When sqlglot cannot
read the statement, the fallback is SQLite's own reading: the statement is prepared (as
`EXPLAIN`, so nothing runs) under write_query's authorizer, and an UPDATE that reads no
column of its table at all cannot be filtered. That fallback is weaker (a SET that reads a
column hides a WHERE that does not); the mass-rewrite guard still stands behind it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import apsw

from sqlgate.engine.names import fold_name
from sqlgate.engine.running.execute import Bindings, RunContext, run_statement
from sqlgate.engine.statements import Statement, unfiltered_update_message
from sqlgate.errors import PolicyDenied

if TYPE_CHECKING:  # `where` parses with sqlglot: imported when an UPDATE is judged
    from sqlgate.engine.statements import Change

__all__ = ["refuse_unfiltered_update", "table_columns"]

_COLUMNS = "SELECT name FROM pragma_table_xinfo(?, 'main')"


def table_columns(conn: apsw.Connection, names: Iterable[str]) -> dict[str, frozenset[str]]:
    """Folded column names (hidden ones too) of each named table, view or table-valued
    function that has any; a name SQLite does not know is left out (unknown columns)."""
    found = {}
    for name in sorted(set(names)):
        columns = frozenset(fold_name(str(column)) for (column,) in conn.execute(_COLUMNS, (name,)))
        if columns:
            found[name] = columns
    return found


def _reads_its_table(ctx: RunContext, sql: str, bindings: Bindings, target: str) -> bool:
    """Whether SQLite, preparing `sql`, reads a column of `target` in the agent's own text
    (not in a trigger's or a view's body). Only prepared: no module runs a nested statement.
    A statement SQLite cannot prepare raises here, in SQLite's words."""
    run_statement(ctx, f"EXPLAIN {sql}", bindings, lambda cursor: None)
    return any(
        op.action == "READ" and fold_name(str(op.target)) == target and op.inside is None
        for op in ctx.recorder.operations
    )


def refuse_unfiltered_update(
    ctx: RunContext, sql: str, statement: Statement, bindings: Bindings, undo: str
) -> None:
    """Raise PolicyDenied, as for an UPDATE without WHERE, when the WHERE of this UPDATE
    names no column of its table. `ctx` is a fresh write-tier context on the write
    connection, used only here; the caller asks only for UPDATEs."""
    from sqlgate.engine.statements import read_change

    change = read_change(sql)
    verdict = None if change is None else _judged(ctx.conn, change)
    if verdict is None:
        # a READ always names its table; an UPDATE preflight found no target for is a
        # syntax error, which the prepare raises before any READ is compared
        if not _reads_its_table(ctx, sql, bindings, fold_name(str(statement.target))):
            raise PolicyDenied(unfiltered_update_message(statement.target, undo))
        return
    if not verdict:
        raise PolicyDenied(unfiltered_update_message(statement.target, undo))


def _judged(conn: apsw.Connection, change: Change) -> bool:
    """Whether the WHERE filters; True for a target SQLite does not know (it says so when
    the statement runs)."""
    from sqlgate.engine.statements import where_filters

    columns = table_columns(conn, change.tables)
    return change.target not in columns or where_filters(change, columns)
