"""Whether an UPDATE's WHERE can filter, from the schema: the columns of every table it
names (`pragma_table_xinfo`, the name bound) judged by `engine.statements.where`. Shared by
write_query's check (`engine.running.where_check`) and the rewrites offered to it
(`engine.running.other_dialects`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import apsw

from sqlgate.engine.names import fold_name

if TYPE_CHECKING:  # `where` parses with sqlglot: imported when an UPDATE is judged
    from sqlgate.engine.statements import Change

__all__ = ["judged", "table_columns", "update_filters"]

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


def update_filters(conn: apsw.Connection, sql: str) -> bool:
    """Whether the UPDATE `sql` has a WHERE that names a column of its table, read by
    sqlglot (False when it cannot be read): a rewrite offered to write_query must pass."""
    from sqlgate.engine.statements import read_change

    change = read_change(sql)
    return change is not None and judged(conn, change)


def judged(conn: apsw.Connection, change: Change) -> bool:
    """Whether the WHERE filters; True for a target SQLite does not know (it says so when
    the statement runs)."""
    from sqlgate.engine.statements import where_filters

    columns = table_columns(conn, change.tables)
    return change.target not in columns or where_filters(change, columns)
