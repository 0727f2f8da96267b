"""Other dialects' SQL, answered with SQLite's.

The package's front door: what other rooms may import (`engine.front_door`). Its
modules are private to it.

    rewrite     A statement SQLite refused, read as another dialect and written back in
                SQLite's (sqlglot, loaded only for such a statement).
    shapes      SQLite's own forms of what other dialects write, as changes to a sqlglot tree.
    catalogs    Other databases' catalogs (information_schema, pg_tables, sys.tables) as
                SQLite queries.
    series      PostgreSQL's generate_series in a FROM, as a recursive CTE.
    ddl         CREATE TABLE and ALTER TABLE of other dialects, mended in place.
    commands    Commands of other database tools (SHOW TABLES, DESCRIBE, \\dt), which are not
                SQL: the tool that does the same, and the SQLite query.
    traps       Statements that run in SQLite but mean something else in the dialect they are
                written in.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlgate.engine.front_door import front_door

if TYPE_CHECKING:
    from sqlgate.engine.dialects.commands import ToolCommand, other_tool_command
    from sqlgate.engine.dialects.ddl import AddedColumn, added_column, mended_definition
    from sqlgate.engine.dialects.rewrite import Rewrite, rewrites
    from sqlgate.engine.dialects.traps import Trap, has_sign, trap

__all__ = [
    "AddedColumn",
    "Rewrite",
    "ToolCommand",
    "Trap",
    "added_column",
    "has_sign",
    "mended_definition",
    "other_tool_command",
    "rewrites",
    "trap",
]

BEHIND_THE_DOOR = {
    "commands": ("ToolCommand", "other_tool_command"),
    "ddl": ("AddedColumn", "added_column", "mended_definition"),
    "rewrite": ("Rewrite", "rewrites"),
    "traps": ("Trap", "has_sign", "trap"),
}

if not TYPE_CHECKING:
    __getattr__ = front_door(__name__, BEHIND_THE_DOOR)
