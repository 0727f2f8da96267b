"""Commands of other database tools (MySQL's SHOW and DESCRIBE, psql's backslash commands,
SQL Server's sp_help), which are not SQL: the tool that does the same, and the SQLite query.

Read from the raw text with patterns, not a parser: these are one line each, and neither
SQLite nor sqlglot reads `\\dt`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from sqlgate.engine.sqltext import quote_literal

__all__ = ["ToolCommand", "other_tool_command"]

_TABLES = (
    "SELECT name, type FROM sqlite_schema WHERE type IN ({types}) "
    "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name"
)
_NAME = r"[`\"\[]?(?P<name>[A-Za-z_][\w$]*)[`\"\]]?"
_QUALIFIED = rf"(?:[`\"\[]?\w+[`\"\]]?\.)?{_NAME}"


@dataclass(frozen=True)
class ToolCommand:
    """What another tool's command is (`what`), the sqlgate tool that does it (`tool`, with
    its argument), and the SQLite query that does the same (None when there is none)."""

    what: str
    tool: str
    query: str | None
    table: str | None = None  # the table it names, which the caller checks exists


def _tables(match: re.Match[str]) -> ToolCommand:
    return ToolCommand(
        match[0].strip(), "call list_tables", _TABLES.format(types="'table', 'view'")
    )


def _only(kind: str) -> Callable[[re.Match[str]], ToolCommand]:
    """psql's \\dt (tables) and \\dv (views)."""

    def answer(match: re.Match[str]) -> ToolCommand:
        return ToolCommand(match[0].strip(), "call list_tables", _TABLES.format(types=kind))

    return answer


def _columns(match: re.Match[str]) -> ToolCommand:
    name = match["name"]
    query = (
        'SELECT name, type, "notnull", dflt_value, pk FROM pragma_table_info('
        f"{quote_literal(name)}) ORDER BY cid"
    )
    return ToolCommand(match[0].strip(), f"call describe_table with table {name!r}", query, name)


def _create(match: re.Match[str]) -> ToolCommand:
    name = match["name"]
    query = f"SELECT sql FROM sqlite_schema WHERE name = {quote_literal(name)}"
    return ToolCommand(match[0].strip(), "call get_schema", query, name)


def _indexes(match: re.Match[str]) -> ToolCommand:
    name = match["name"]
    query = f'SELECT name, "unique", origin FROM pragma_index_list({quote_literal(name)})'
    return ToolCommand(match[0].strip(), f"call describe_table with table {name!r}", query, name)


def _databases(match: re.Match[str]) -> ToolCommand:
    query = "SELECT name, file FROM pragma_database_list"
    return ToolCommand(
        match[0].strip(),
        "sqlgate serves one database, main (sqlgate's own records are beside it as sqlgate, "
        "read-only): call list_tables",
        query,
    )


def _use(match: re.Match[str]) -> ToolCommand:
    return ToolCommand(
        match[0].strip(),
        "sqlgate serves one database and needs no USE: send the statement itself",
        None,
    )


_END = r"\s*;?\s*"
# (pattern over the whole text, what it is): the first that matches wins
COMMANDS: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], ToolCommand]], ...] = (
    (
        re.compile(
            rf"SHOW\s+(?:FULL\s+)?TABLES(?:\s+(?:FROM|IN)\s+\w+)?\s+WHERE\s+"
            rf"Table_type\s*=\s*'BASE TABLE'{_END}",
            re.I,
        ),
        _only("'table'"),
    ),
    (re.compile(rf"SHOW\s+(?:FULL\s+)?TABLES(?:\s+(?:FROM|IN)\s+\w+)?{_END}", re.I), _tables),
    (re.compile(rf"\\dt\+?{_END}", re.I), _only("'table'")),
    (re.compile(rf"\\dv\+?{_END}", re.I), _only("'view'")),
    (re.compile(rf"\\d\+?{_END}", re.I), _tables),
    (
        re.compile(
            rf"SHOW\s+(?:FULL\s+)?(?:COLUMNS|FIELDS)\s+(?:FROM|IN)\s+{_QUALIFIED}{_END}", re.I
        ),
        _columns,
    ),
    (re.compile(rf"(?:DESCRIBE|DESC|EXPLAIN)\s+{_QUALIFIED}{_END}", re.I), _columns),
    (re.compile(rf"\\d\+?\s+{_QUALIFIED}{_END}", re.I), _columns),
    (
        re.compile(rf"(?:EXEC(?:UTE)?\s+)?sp_(?:help|columns)\s+'?{_QUALIFIED}'?{_END}", re.I),
        _columns,
    ),
    (re.compile(rf"SHOW\s+CREATE\s+(?:TABLE|VIEW)\s+{_QUALIFIED}{_END}", re.I), _create),
    (
        re.compile(rf"SHOW\s+(?:INDEX|INDEXES|KEYS)\s+(?:FROM|IN)\s+{_QUALIFIED}{_END}", re.I),
        _indexes,
    ),
    (re.compile(rf"\\di\+?\s+{_QUALIFIED}{_END}", re.I), _indexes),
    (re.compile(rf"SHOW\s+(?:DATABASES|SCHEMAS){_END}|\\l\+?{_END}", re.I), _databases),
    (re.compile(rf"USE\s+{_NAME}{_END}|\\c(?:onnect)?\s+\w+{_END}", re.I), _use),
)


def other_tool_command(sql: str) -> ToolCommand | None:
    """What `sql` is when it is a command of another database tool; None otherwise."""
    text = sql.strip()
    if len(text) > 200:
        return None
    for pattern, answer in COMMANDS:
        match = pattern.fullmatch(text)
        if match is not None:
            return answer(match)
    return None
