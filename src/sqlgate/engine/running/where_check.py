"""write_query's check that an UPDATE's WHERE can filter: the facts, then `engine.statements.where`.

Preflight refused an UPDATE whose WHERE names nothing; here the names are judged against
the schema (`engine.running.where_columns`: the columns of every table the statement names
come from `pragma_table_xinfo`, the name bound, and `where.where_filters` decides). A
statement SQLite cannot compile at all (MySQL's `UPDATE ... JOIN`) is not refused here: it
runs into SQLite's error, which answers with its SQLite form. When sqlglot cannot
read the statement, the fallback is SQLite's own reading: the statement is prepared (as
`EXPLAIN`, so nothing runs) under write_query's authorizer, and an UPDATE that reads no
column of its table at all cannot be filtered. That fallback is weaker (a SET that reads a
column hides a WHERE that does not); the mass-rewrite guard still stands behind it.
"""

from __future__ import annotations

import apsw

from sqlgate.engine.names import fold_name
from sqlgate.engine.running.execute import Bindings, RunContext, run_statement
from sqlgate.engine.running.where_columns import judged
from sqlgate.engine.statements import Statement, unfiltered_update_message
from sqlgate.errors import PolicyDenied

__all__ = ["compiles", "refuse_unfiltered_update"]


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
    verdict = None if change is None else judged(ctx.conn, change)
    if verdict is None:
        # a READ always names its table; an UPDATE preflight found no target for is a
        # syntax error, which the prepare raises before any READ is compared
        if not _reads_its_table(ctx, sql, bindings, fold_name(str(statement.target))):
            raise PolicyDenied(unfiltered_update_message(statement.target, undo))
        return
    if not verdict and compiles(ctx.conn, sql, bindings):
        raise PolicyDenied(unfiltered_update_message(statement.target, undo))
    # not SQLite at all (MySQL's UPDATE ... JOIN, SQL Server's UPDATE a ... FROM): running it
    # answers with SQLite's error, and its SQLite form when it reads as another dialect's


def compiles(conn: apsw.Connection, sql: str, bindings: Bindings = None) -> bool:
    """Whether SQLite compiles `sql` (prepared and bound, never stepped: the trace stops it
    first). Bindings that do not fit are the run's to answer: it compiles."""
    cursor = conn.cursor()
    cursor.exec_trace = lambda *_: False
    try:
        cursor.execute(sql, bindings, can_cache=False)
    except (apsw.ExecTraceAbort, apsw.BindingsError, KeyError):
        return True
    except apsw.Error:
        return False
    finally:
        cursor.close(True)
    # not reached: apsw calls the trace even for a text of only a comment
    return True
