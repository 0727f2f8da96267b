"""A double-quoted string read as a missing column, and the statement with single quotes.

Double-quoted strings are off (engine.connect): `WHERE Airline = "JetBlue Airways"` is a
column to SQLite, so a mistyped column name is never silently a string. Many agents write
them out of MySQL habit; SQLite's error names the token. The answer then carries the
statement with every double-quoted token that names nothing the schema or the statement
defines rewritten as a 'single-quoted' string, for the agent to check and send: the server
never runs the rewrite.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import apsw

from sqlgate.engine.deferred import deferred
from sqlgate.engine.names import fold_name
from sqlgate.engine.sqltext import quote_literal, sqlite_tokens, word
from sqlgate.engine.statements.preflight import inspect_statement

if TYPE_CHECKING:
    from sqlglot.tokenizer_core import Token, TokenType
else:
    TokenType = deferred("sqlglot.tokenizer_core", "TokenType")

__all__ = ["double_quoted_string", "single_quoted"]

_MISSING = re.compile(
    r'no such column: "(.*)" - should this be a string literal in single-quotes\?', re.S
)
# statements whose double-quoted tokens name only existing objects, aliases or CTEs
_KINDS = frozenset({"SELECT", "VALUES", "WITH", "INSERT", "REPLACE", "UPDATE", "DELETE"})
_SCHEMA_NAMES = (
    "SELECT m.name, p.name FROM main.sqlite_schema AS m, pragma_table_xinfo(m.name, 'main') AS p "
    "WHERE m.type IN ('table', 'view')"
)
_ROWID = frozenset({"rowid", "oid", "_rowid_"})
_TABLE_BEFORE = frozenset({"FROM", "JOIN", "INTO", "UPDATE", "TABLE"})


def double_quoted_string(message: str) -> str | None:
    """The text of the double-quoted token SQLite's `no such column` message names, if any."""
    found = _MISSING.fullmatch(message)
    return found[1] if found else None


def _schema_names(conn: apsw.Connection) -> set[str]:
    names = set(_ROWID)
    for table, column in conn.execute(_SCHEMA_NAMES):
        names.update((fold_name(str(table)), fold_name(str(column))))
    return names


def _dequoted(sql: str, token: Token) -> str | None:
    """The name a "double-quoted" token holds; None for any other token."""
    raw = sql[token.start : token.end + 1]
    if token.token_type != TokenType.IDENTIFIER or len(raw) < 2 or raw[0] != '"':
        return None
    return raw[1:-1].replace('""', '"')


def _defined_here(sql: str, tokens: list[Token]) -> set[str]:
    """Names the statement itself gives: aliases (after AS) and CTEs (`name [(...)] AS (`)."""
    names: set[str] = set()
    for index, token in enumerate(tokens):
        text = _dequoted(sql, token) or token.text
        following = tokens[index + 1] if index + 1 < len(tokens) else None
        after_that = tokens[index + 2] if index + 2 < len(tokens) else None
        if (index and word(tokens[index - 1]) == "AS") or (
            following is not None
            and word(following) == "AS"
            and after_that is not None
            and after_that.token_type == TokenType.L_PAREN  # a CTE: name AS (SELECT ...)
        ):
            names.add(fold_name(text))
    return names


def _is_name_position(tokens: list[Token], index: int) -> bool:
    """A qualifier (`"t".c`), a qualified column (`t."c"`), a function (`"f"(x)`), or the
    table after FROM, JOIN, INTO or UPDATE."""
    before = tokens[index - 1] if index else None
    after = tokens[index + 1] if index + 1 < len(tokens) else None
    if before is not None and before.token_type == TokenType.DOT:
        return True
    if before is not None and word(before) in _TABLE_BEFORE:
        return True
    return after is not None and after.token_type in (TokenType.DOT, TokenType.L_PAREN)


def single_quoted(
    conn: apsw.Connection, sql: str, missing: str, statement: bool = True
) -> str | None:
    """`sql` (a statement, or a condition when `statement` is false) with its double-quoted
    strings single-quoted, on one line; None when `missing` (the token SQLite named) would
    not be rewritten or the text is not safe to put on one line."""
    if (statement and inspect_statement(sql).kind not in _KINDS) or "--" in sql:
        return None  # a line comment would swallow the rest once the lines are joined
    tokens = sqlite_tokens(sql)
    if tokens is None:
        return None
    try:
        known = _schema_names(conn) | _defined_here(sql, tokens)
    except apsw.Error:  # a view SQLite cannot expand: no rewrite rather than a second error
        return None
    parts: list[str] = []
    done, rewritten = 0, set()
    for index, token in enumerate(tokens):
        text = _dequoted(sql, token)
        if text is None:
            if len(sql[token.start : token.end + 1].splitlines()) > 1:
                return None  # a string or name spanning lines cannot be put on one line
            continue
        if fold_name(text) in known or _is_name_position(tokens, index):
            continue
        if len(text.splitlines()) > 1:
            return None
        parts += [sql[done : token.start], quote_literal(text)]
        done = token.end + 1
        rewritten.add(text)
    if missing not in rewritten:
        return None
    parts.append(sql[done:])
    return " ".join("".join(parts).splitlines()).strip()
