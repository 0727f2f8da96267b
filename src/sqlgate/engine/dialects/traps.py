"""Statements that run in SQLite but mean something else in the dialect they are written in.

Each trap has a sign in the text, looked for with one regular expression over the statement
before anything else (most statements show none, and cost one search); a statement showing
a sign is read in SQLite's tokens to be sure and to write the statement that gives the
intended result:

    CAST(a AS NUMERIC) / b     SQLite keeps a whole number whole under NUMERIC and DECIMAL,
                               so `/` divides integers (1/2 is 0): cast to REAL
    CAST(x AS DATE)            a date type has NUMERIC affinity in SQLite: '2024-03-05' becomes
                               2024; date(x) (datetime(x), time(x)) is the date
    'text' + x                 SQL Server joins text with +; SQLite adds numbers ('a' + 'b' is
                               0): || joins text
    FORMAT(d, 'yyyy-MM')       SQL Server's date pattern; SQLite's format() is printf and prints
                               the pattern itself: strftime('%Y-%m', d)
    strftime(d, '%Y')          DuckDB's argument order; SQLite's answers NULL
    name[1:3]                  DuckDB's slice; SQLite reads [1:3] as an alias: substr()

No sqlglot parser here: the tokens are SQLite's own (`engine.sqltext`), read already when
the statement was checked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlgate.engine.deferred import deferred
from sqlgate.engine.sqltext import sqlite_tokens, word

if TYPE_CHECKING:
    from sqlglot.tokenizer_core import Token, TokenType
else:
    TokenType = deferred("sqlglot.tokenizer_core", "TokenType")

__all__ = ["Trap", "has_sign", "trap"]

# one search on the success path: a sign of any trap (a CAST to a decimal or date type,
# or a string literal beside a +)
_CAST_SIGN = re.compile(
    r"\bAS\s+(?:NUMERIC|DECIMAL|DEC|NUMBER|MONEY|DATE|DATETIME|TIMESTAMP|TIME)\b", re.IGNORECASE
)
_PLUS_SIGN = re.compile(r"'\s*\+|\+\s*'")
_STRFTIME_SIGN = re.compile(r"strftime\s*\(\s*[A-Za-z_\"\[`]", re.IGNORECASE)
# DuckDB's strftime(value, format): SQLite's takes the format first, and answers NULL
_SWAPPED = re.compile(
    r"\bstrftime\s*\(\s*((?:[A-Za-z_][\w$]*\.)?[A-Za-z_][\w$]*)\s*,\s*('[^']*%[^']*')\s*\)",
    re.IGNORECASE,
)
SWAPPED = "SQLite's strftime() takes the format first (strftime(value, format) answers NULL)"
# SQL Server's FORMAT(date, 'yyyy-MM'): SQLite's format() is printf, which prints the pattern
_DOTNET = re.compile(
    r"\bFORMAT\s*\(\s*((?:[A-Za-z_][\w$]*\.)?[A-Za-z_][\w$]*)\s*,\s*'([yMdHms:./ -]+)'\s*\)",
    re.IGNORECASE,
)
_DOTNET_CODES = (("yyyy", "%Y"), ("MM", "%m"), ("dd", "%d"), ("HH", "%H"), ("mm", "%M"),
                 ("ss", "%S"))  # fmt: skip
DOTNET = "SQLite's format() is printf, which prints a date pattern as it is: strftime() reads it"
# DuckDB's name[1:3] (a slice): SQLite reads [1:3] as the column's alias
_SLICE = re.compile(r"\b((?:[A-Za-z_][\w$]*\.)?[A-Za-z_][\w$]*)\[(\d+):(\d+)\]")
SLICE = "SQLite reads name[1:3] as an alias of name, not a slice: substr() cuts it"
_DECIMAL = frozenset({"NUMERIC", "DECIMAL", "DEC", "NUMBER", "MONEY"})
_DATES = {"DATE": "date", "DATETIME": "datetime", "TIMESTAMP": "datetime", "TIME": "time"}
_NUMBER = re.compile(r"\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*")
DIVISION = (
    "in SQLite CAST(... AS NUMERIC or DECIMAL) keeps whole numbers whole, so / divides "
    "integers (1/2 is 0)"
)
DATE_CAST = (
    "in SQLite a CAST to DATE, DATETIME, TIMESTAMP or TIME keeps only the number the text "
    "starts with ('2024-03-05' becomes 2024)"
)
PLUS = "in SQLite + adds numbers ('a' + 'b' is 0); || joins text"


@dataclass(frozen=True)
class Trap:
    """What differs (`why`) and the statement that gives the intended result."""

    why: str
    sql: str


@dataclass
class _Edit:
    start: int
    end: int  # exclusive
    text: str


def _cast_type(sql: str, tokens: list[Token], index: int) -> tuple[str, int, int] | None:
    """At a CAST's AS (tokens[index]): its type word, and the span of the type (with any
    `(p, s)` after it)."""
    if index + 1 >= len(tokens):
        return None
    name = word(tokens[index + 1])
    start, end = tokens[index + 1].start, tokens[index + 1].end + 1
    if index + 2 < len(tokens) and tokens[index + 2].token_type == TokenType.L_PAREN:
        closing = next(
            (i for i in range(index + 3, len(tokens)) if tokens[i].token_type == TokenType.R_PAREN),
            None,
        )
        if closing is None:
            return None
        end = tokens[closing].end + 1
    return name, start, end


def _enclosing_cast(tokens: list[Token], index: int) -> tuple[int, int] | None:
    """The CAST around the AS at `index`: the indexes of `CAST` and of its closing paren."""
    depth, opening = 0, None
    for i in range(index - 1, -1, -1):
        kind = tokens[i].token_type
        if kind == TokenType.R_PAREN:
            depth += 1
        elif kind == TokenType.L_PAREN:
            if depth == 0:
                opening = i
                break
            depth -= 1
    if opening is None or opening == 0 or word(tokens[opening - 1]) != "CAST":
        return None
    depth = 0
    for i in range(opening, len(tokens)):
        kind = tokens[i].token_type
        if kind == TokenType.L_PAREN:
            depth += 1
        elif kind == TokenType.R_PAREN:
            depth -= 1
            if depth == 0:
                return opening - 1, i
    return None


_REAL = frozenset({"REAL", "FLOAT", "DOUBLE", "FLOAT4", "FLOAT8"})


def _cast_type_at(tokens: list[Token], cast: int) -> str:
    """The type word of the CAST whose keyword is tokens[cast] ('' when it is not one)."""
    depth = 0
    for i in range(cast + 1, len(tokens)):
        kind = tokens[i].token_type
        depth += kind == TokenType.L_PAREN
        depth -= kind == TokenType.R_PAREN
        if depth == 1 and word(tokens[i]) == "AS" and i + 1 < len(tokens):
            return word(tokens[i + 1])
        if depth == 0 and i > cast + 1:
            return ""
    return ""


def _real_number(token: Token) -> bool:
    return token.token_type == TokenType.NUMBER and any(c in token.text for c in ".eE")


def _real_from(tokens: list[Token], index: int) -> bool:
    """Whether the operand starting at tokens[index] is a REAL: 2.0, CAST(b AS REAL)."""
    if index >= len(tokens):
        return False
    if _real_number(tokens[index]):
        return True
    return word(tokens[index]) == "CAST" and _cast_type_at(tokens, index) in _REAL


def _real_until(tokens: list[Token], index: int) -> bool:
    """Whether the operand ending at tokens[index] is a REAL."""
    if index < 0:
        return False
    if _real_number(tokens[index]):
        return True
    if tokens[index].token_type != TokenType.R_PAREN:
        return False
    depth = 0
    for i in range(index, -1, -1):
        kind = tokens[i].token_type
        depth += kind == TokenType.R_PAREN
        depth -= kind == TokenType.L_PAREN
        if depth == 0:
            return (
                i > 0 and word(tokens[i - 1]) == "CAST" and (_cast_type_at(tokens, i - 1) in _REAL)
            )
    return False


def _divided(tokens: list[Token], first: int, last: int) -> bool:
    """Whether the CAST spanning tokens[first..last] is divided by, or divides, an operand
    that is not a REAL (a REAL on either side makes SQLite divide in floating point)."""
    before = tokens[first - 1] if first else None
    after = tokens[last + 1] if last + 1 < len(tokens) else None
    if after is not None and after.token_type == TokenType.SLASH:
        return not _real_from(tokens, last + 2)
    if before is not None and before.token_type == TokenType.SLASH:
        return not _real_until(tokens, first - 2)
    return False


def _casts(sql: str, tokens: list[Token]) -> tuple[list[_Edit], list[str]]:
    edits: list[_Edit] = []
    whys: list[str] = []
    for index, token in enumerate(tokens):
        if word(token) != "AS":
            continue
        cast = _enclosing_cast(tokens, index)
        typed = _cast_type(sql, tokens, index)
        if cast is None or typed is None:
            continue
        name, start, end = typed
        if name in _DECIMAL and _divided(tokens, *cast):
            edits.append(_Edit(start, end, "REAL"))
            whys.append(DIVISION)
        elif name in _DATES:
            first, last = cast
            inner = sql[tokens[first + 2].start : tokens[index].start].strip()
            edits.append(_Edit(tokens[first].start, tokens[last].end + 1,
                               f"{_DATES[name]}({inner})"))  # fmt: skip
            whys.append(DATE_CAST)
    return edits, whys


def _text_literal(sql: str, token: Token) -> bool:
    if token.token_type != TokenType.STRING:
        return False
    return _NUMBER.fullmatch(token.text) is None  # '5' + 1 is SQLite's own arithmetic


def _pluses(sql: str, tokens: list[Token]) -> list[_Edit]:
    edits = []
    for index, token in enumerate(tokens):
        if token.token_type != TokenType.PLUS or index == 0 or index + 1 >= len(tokens):
            continue
        if _text_literal(sql, tokens[index - 1]) or _text_literal(sql, tokens[index + 1]):
            edits.append(_Edit(token.start, token.end + 1, "||"))
    return edits


def _dotnet(pattern: str) -> str | None:
    """A .NET date pattern of the codes above, in strftime's; None for any other letter."""
    out = pattern
    for code, instead in _DOTNET_CODES:
        out = out.replace(code, instead)
    return None if re.search(r"[A-Za-z]", re.sub(r"%.", "", out)) else out


def _patterns(sql: str, tokens: list[Token]) -> tuple[list[_Edit], list[str]]:
    """FORMAT(date, 'yyyy-MM') and name[1:3], outside strings."""
    starts = {t.start for t in tokens}
    edits: list[_Edit] = []
    whys: list[str] = []
    for found in _DOTNET.finditer(sql):
        pattern = _dotnet(found[2])
        if found.start() in starts and pattern is not None:
            edits.append(_Edit(found.start(), found.end(), f"strftime('{pattern}', {found[1]})"))
            whys.append(DOTNET)
    for found in _SLICE.finditer(sql):
        first, last = int(found[2]), int(found[3])
        if found.start() in starts and 1 <= first <= last:
            cut = f"substr({found[1]}, {first}, {last - first + 1})"
            edits.append(_Edit(found.start(), found.end(), cut))
            whys.append(SLICE)
    return edits, whys


def has_sign(sql: str) -> bool:
    """Whether `sql` shows a sign of any trap: what a statement that runs pays, a few
    substring tests (every sign needs a CAST, a + beside a quote, or strftime) and, for the
    few that pass one, a search starting from it."""
    if ("CAST" in sql or "cast" in sql or "Cast" in sql) and _CAST_SIGN.search(sql):
        return True
    if "+" in sql and "'" in sql and _PLUS_SIGN.search(sql):
        return True
    if ("ORMAT" in sql or "ormat" in sql) and _DOTNET.search(sql):
        return True
    if "[" in sql and ":" in sql and _SLICE.search(sql):
        return True
    return ("trftime" in sql or "TRFTIME" in sql) and _STRFTIME_SIGN.search(sql) is not None


def trap(sql: str) -> Trap | None:
    """The trap `sql` falls into, and the statement that avoids it; None for a statement
    that shows no sign of one (nearly all)."""
    if not has_sign(sql):
        return None
    tokens = sqlite_tokens(sql)
    if (
        not tokens
        or "--" in sql
        or any(len(sql[t.start : t.end + 1].splitlines()) > 1 for t in tokens)
    ):
        return None  # a line comment, string or name would change once the lines are joined
    edits, whys = _casts(sql, tokens)
    for found in _SWAPPED.finditer(sql):
        if any(t.start == found.start(2) and t.token_type == TokenType.STRING for t in tokens):
            swapped = f"strftime({found[2]}, {found[1]})"
            edits.append(_Edit(found.start(), found.end(), swapped))
            whys.append(SWAPPED)
    edits_more, whys_more = _patterns(sql, tokens)
    edits += edits_more
    whys += whys_more
    pluses = _pluses(sql, tokens)
    if pluses:
        edits += pluses
        whys.append(PLUS)
    if not edits:
        return None
    edits.sort(key=lambda edit: edit.start)
    parts, done = [], 0
    for edit in edits:
        if edit.start < done:
            return None  # overlapping edits: no statement rather than a wrong one
        parts += [sql[done : edit.start], edit.text]
        done = edit.end
    parts.append(sql[done:])
    fixed = " ".join("".join(parts).splitlines()).strip()
    return Trap("; ".join(dict.fromkeys(whys)), fixed)
