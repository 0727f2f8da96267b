"""CREATE TABLE and ALTER TABLE of other dialects, mended in place.

A table's definition is rewritten word for word where it must change, never regenerated:
a regenerated definition could drop a constraint, a collation or a conflict clause without
saying so. What changes:

    DEFAULT NOW()                 DEFAULT CURRENT_TIMESTAMP (also GETDATE(), SYSDATE(), ...)
    ON UPDATE CURRENT_TIMESTAMP   left out, noted: SQLite has no such clause (a trigger does it)
    COMMENT 'text'                left out (SQLite keeps no column comments)
    ENGINE=InnoDB, CHARSET=...    MySQL's table options, left out
    ADD COLUMN IF NOT EXISTS c    ADD COLUMN c, when the table has no column c yet (the
                                  caller checks: `added_column`)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["AddedColumn", "added_column", "mended_definition"]

_DDL = re.compile(r"\s*(?:CREATE\s+(?:TABLE|VIEW)|ALTER\s+TABLE)\b", re.IGNORECASE)
_NOW_DEFAULT = re.compile(
    r"\bDEFAULT\s+(?:NOW|GETDATE|SYSDATE|SYSDATETIME|LOCALTIMESTAMP|CURRENT_TIMESTAMP|"
    r"UTC_TIMESTAMP)\s*\(\s*\d*\s*\)",
    re.IGNORECASE,
)
_ON_UPDATE = re.compile(
    r"\s+ON\s+UPDATE\s+(?:CURRENT_TIMESTAMP|NOW)(?:\s*\(\s*\d*\s*\))?", re.IGNORECASE
)
_COMMENT = re.compile(r"\s+COMMENT\s+'(?:[^']|'')*'", re.IGNORECASE)
_TABLE_OPTION = re.compile(
    r"\s+(?:ENGINE|(?:DEFAULT\s+)?(?:CHARSET|CHARACTER\s+SET)|COLLATE|AUTO_INCREMENT|"
    r"ROW_FORMAT)\s*=?\s*\w+",
    re.IGNORECASE,
)
_MAX_LENGTH = re.compile(r"\s*\(\s*MAX\s*\)", re.IGNORECASE)
_POSITION = re.compile(r"\s+(?:AFTER\s+[`\"\[]?[\w$]+[`\"\]]?|FIRST)(?=\s*;?\s*$)", re.IGNORECASE)
_ADD_IF_MISSING = re.compile(
    r"(?P<head>\s*ALTER\s+TABLE\s+(?P<table>[`\"\[]?[\w$]+[`\"\]]?)\s+ADD\s+(?:COLUMN\s+)?)"
    r"IF\s+NOT\s+EXISTS\s+(?P<rest>(?P<column>[`\"\[]?[\w$]+[`\"\]]?).*)",
    re.IGNORECASE | re.DOTALL,
)
ON_UPDATE_NOTE = (
    "SQLite has no ON UPDATE clause for a column (left out: a trigger can keep it current)"
)


def _after_definition(sql: str) -> tuple[str, str]:
    """`sql` split after the parenthesis closing a CREATE TABLE's column list."""
    depth, quote = 0, ""
    for index, char in enumerate(sql):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"`":
            quote = char
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return sql[: index + 1], sql[index + 1 :]
    return sql, ""


def mended_definition(sql: str) -> tuple[str, list[str]] | None:
    """`sql` (a CREATE TABLE or ALTER TABLE) with the mends above, and notes; None when it is
    not such a statement or nothing needed mending."""
    if _DDL.match(sql) is None:
        return None
    notes: list[str] = []
    text = _NOW_DEFAULT.sub("DEFAULT CURRENT_TIMESTAMP", sql)
    if _ON_UPDATE.search(text):
        text = _ON_UPDATE.sub("", text)
        notes.append(ON_UPDATE_NOTE)
    text = _COMMENT.sub("", text)
    text = _MAX_LENGTH.sub("", text)  # NVARCHAR(MAX): SQLite's types take numbers only
    if _POSITION.search(text):
        text = _POSITION.sub("", text)
        notes.append("SQLite adds a column last (AFTER and FIRST left out)")
    head, tail = _after_definition(text)
    tail = _TABLE_OPTION.sub("", tail)
    text = head + tail
    return (text, notes) if text != sql else None


@dataclass(frozen=True)
class AddedColumn:
    """`ALTER TABLE t ADD COLUMN IF NOT EXISTS c ...`: the table, the column, and the
    statement without IF NOT EXISTS."""

    table: str
    column: str
    sql: str


def _bare(name: str) -> str:
    return name[1:-1] if name[:1] in '`"[' else name


def added_column(sql: str) -> AddedColumn | None:
    """What an ADD COLUMN IF NOT EXISTS adds; None for any other statement."""
    match = _ADD_IF_MISSING.fullmatch(sql)
    if match is None:
        return None
    statement = match["head"] + match["rest"]
    return AddedColumn(_bare(match["table"]), _bare(match["column"]), statement.strip())
