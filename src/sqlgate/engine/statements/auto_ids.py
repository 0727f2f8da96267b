"""A primary key spelled as another dialect's auto-generated id, which SQLite would not number.

In a rowid table SQLite numbers a row's key itself only when the key is the rowid: one
column declared with the type spelled exactly `INTEGER` and `PRIMARY KEY` (not `PRIMARY
KEY DESC` in the column's own definition, an old quirk). Any other PRIMARY KEY of a rowid
table may hold NULL, and does for every row inserted without one: `id SERIAL PRIMARY KEY`
(PostgreSQL), `id INT AUTO_INCREMENT PRIMARY KEY` (MySQL), `id INT IDENTITY(1,1)` (SQL
Server), `id BIGINT PRIMARY KEY`. Such a table's ids stay NULL, rows cannot be told apart,
and row-level undo (keyed by the primary key) cannot record them.

`auto_id_key` reads a CREATE TABLE and returns its key when it is declared so, with the
statement rewritten: the key's type becomes `INTEGER` and the other dialect's words
(`AUTO_INCREMENT`, `IDENTITY(...)`, `GENERATED ... AS IDENTITY`, the `DESC`) go; every other
character (names, comments, columns, constraints) stays as written. The tiers refuse the
statement with the rewrite for the agent to check and send (`engine.statements.tier_check`); the
server never runs it. A pure function of the text, on tokens (`engine.sqltext`): a table of cases
tests it. Left alone: a key declared NOT NULL (every row must then name its id; STRICT
tables imply it), composite keys, `WITHOUT ROWID` tables (their keys are never NULL), and
`CREATE TABLE ... AS SELECT`.

Other dialects' words elsewhere in the statement (MySQL's `ENGINE=InnoDB`, ...) are not
rewritten: SQLite reports those itself once the rewrite is sent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sqlgate.engine.deferred import deferred
from sqlgate.engine.limits import REWRITE_MAX_CHARS
from sqlgate.engine.names import fold_name
from sqlgate.engine.sqltext import sqlite_tokens, word

if TYPE_CHECKING:
    from sqlglot.tokenizer_core import Token, TokenType
else:  # sqlglot is imported when the first statement is read (engine.deferred)
    TokenType = deferred("sqlglot.tokenizer_core", "TokenType")

__all__ = ["AutoIdKey", "auto_id_key", "auto_id_refusal"]

_SERIALS = frozenset({"SERIAL", "BIGSERIAL", "SMALLSERIAL", "SERIAL2", "SERIAL4", "SERIAL8"})
# words of the integer types agents write (SQLite gives them all integer affinity)
_INTEGER_WORDS = frozenset(
    {"INT", "INTEGER", "TINYINT", "SMALLINT", "MEDIUMINT", "BIGINT", "INT2", "INT4", "INT8",
     "UNSIGNED", "SIGNED", "BIG"}
)  # fmt: skip
# words that end a column's type: the first of a column constraint (SQLite's grammar)
_CONSTRAINT_WORDS = frozenset(
    {"CONSTRAINT", "PRIMARY", "NOT", "NULL", "UNIQUE", "CHECK", "DEFAULT", "COLLATE",
     "REFERENCES", "GENERATED", "AS"}
)  # fmt: skip
_TABLE_CONSTRAINTS = frozenset({"CONSTRAINT", "PRIMARY", "UNIQUE", "CHECK", "FOREIGN"})


@dataclass(frozen=True)
class AutoIdKey:
    """A CREATE TABLE's key that SQLite would not number, and the statement that fixes it."""

    column: str  # the key column's name
    declared: str  # the column's definition as written
    why: str  # how the definition spells an id SQLite does not make
    rewrite: str  # the statement with the key declared INTEGER, every other character kept


@dataclass
class _Column:
    """What one column definition says about its key, by token index."""

    name: str
    name_at: int
    start: int  # first and last token of the definition
    end: int
    type_units: list[tuple[int, int]] = field(default_factory=list)  # a word or a (...)
    type_words: list[str] = field(default_factory=list)  # upper-cased, (...) left out
    sized: bool = False  # the type has a (size)
    primary: bool = False  # PRIMARY KEY in its own definition
    desc_at: int | None = None  # the DESC right after that PRIMARY KEY
    not_null: bool = False
    autoincrement: bool = False
    foreign: list[tuple[int, int]] = field(default_factory=list)  # other dialects' words
    marks: list[str] = field(default_factory=list)  # their first words, upper-cased


def _parts(token: Token) -> list[str]:
    """The keyword(s) a token is (`PRIMARY KEY` is one token); [""] for a name or string."""
    return word(token).split() or [""]


def _pair(tokens: list[Token], at: int, first: str, second: str) -> int | None:
    """Index after `first second` (one token or two) at `at`; None when not there."""
    parts = _parts(tokens[at])
    if parts == [first, second]:
        return at + 1
    if parts == [first] and at + 1 < len(tokens) and _parts(tokens[at + 1]) == [second]:
        return at + 2
    return None


def _closing(tokens: list[Token], at: int) -> int:
    """Index of the `)` that closes the `(` at `at`, or of the last token."""
    depth = 0
    for index in range(at, len(tokens)):
        depth += {TokenType.L_PAREN: 1, TokenType.R_PAREN: -1}.get(tokens[index].token_type, 0)
        if depth == 0:
            return index
    return len(tokens) - 1


def _split(tokens: list[Token], start: int, end: int) -> list[tuple[int, int]]:
    """The comma-separated parts of tokens start..end (inclusive), at their own depth."""
    parts, depth, first = [], 0, start
    for index in range(start, end + 1):
        kind = tokens[index].token_type
        depth += {TokenType.L_PAREN: 1, TokenType.R_PAREN: -1}.get(kind, 0)
        if kind == TokenType.COMMA and depth == 0:
            parts.append((first, index - 1))
            first = index + 1
    parts.append((first, end))
    return [(a, b) for a, b in parts if a <= b]


def _name(sql: str, token: Token) -> str:
    """The name a token spells, unquoted (SQLite's four ways of quoting one)."""
    raw = sql[token.start : token.end + 1]
    if raw[:1] in ('"', "`") and len(raw) > 1:
        return raw[1:-1].replace(raw[0] * 2, raw[0])
    return raw[1:-1] if raw[:1] == "[" and len(raw) > 1 else raw


def _body(tokens: list[Token]) -> tuple[int, int] | None:
    """The `(` and `)` around a CREATE TABLE's definitions; None for anything else."""
    keys = [word(token) for token in tokens[:9]]
    at = 2 if keys[1:2] in (["TEMP"], ["TEMPORARY"]) else 1
    if keys[:1] != ["CREATE"] or keys[at : at + 1] != ["TABLE"]:
        return None
    at += 1
    if keys[at : at + 3] == ["IF", "NOT", "EXISTS"]:
        at += 3
    at += 3 if at + 1 < len(tokens) and tokens[at + 1].token_type == TokenType.DOT else 1
    if at >= len(tokens) or tokens[at].token_type != TokenType.L_PAREN:
        return None  # AS SELECT, or not a table SQLite could create
    return at, _closing(tokens, at)


def _column(sql: str, tokens: list[Token], start: int, end: int) -> _Column:
    """Read one column definition: its type, then its constraints."""
    column = _Column(_name(sql, tokens[start]), start, start, end)
    at = start + 1
    while at <= end and _parts(tokens[at])[0] not in _CONSTRAINT_WORDS:
        close = _closing(tokens, at) if tokens[at].token_type == TokenType.L_PAREN else at
        column.type_units.append((at, close))
        if close > at:
            column.sized = True
        else:
            column.type_words += [part or tokens[at].text.upper() for part in _parts(tokens[at])]
        at = close + 1
    while at <= end:
        at = _constraint(tokens, at, end, column)
    return column


def _constraint(tokens: list[Token], at: int, end: int, column: _Column) -> int:
    """Read the constraint word(s) at `at` into `column`; returns where to read next."""
    if tokens[at].token_type == TokenType.L_PAREN:
        return _closing(tokens, at) + 1  # an expression (CHECK, DEFAULT, AS): not read
    primary = _pair(tokens, at, "PRIMARY", "KEY")
    if primary is not None:
        column.primary = True
        if primary <= end and _parts(tokens[primary]) == ["DESC"]:
            column.desc_at = primary
        return primary
    not_null = _pair(tokens, at, "NOT", "NULL")
    if not_null is not None:
        column.not_null = True
        return not_null
    keyword = _parts(tokens[at])[0]
    if keyword == "AUTOINCREMENT":
        column.autoincrement = True
    elif keyword in ("AUTO_INCREMENT", "IDENTITY", "GENERATED"):
        last = at
        if keyword == "GENERATED":  # GENERATED {ALWAYS | BY DEFAULT} AS IDENTITY [(...)]
            identity = [i for i in range(at + 2, end + 1) if _parts(tokens[i]) == ["IDENTITY"]]
            if not identity or _parts(tokens[identity[0] - 1]) != ["AS"]:
                return at + 1  # a generated column: GENERATED ALWAYS AS (expr)
            last = identity[0]
        options = last < end and tokens[last + 1].token_type == TokenType.L_PAREN
        if keyword != "AUTO_INCREMENT" and options:  # IDENTITY(1, 1), AS IDENTITY (START ...)
            last = _closing(tokens, last + 1)
        column.foreign.append((at, last))
        column.marks.append(keyword)
        return last + 1
    return at + 1


def _table_key(sql: str, tokens: list[Token], start: int, end: int) -> list[str] | None:
    """The columns of a table constraint's PRIMARY KEY (...); None for another constraint."""
    at = start + 2 if _parts(tokens[start]) == ["CONSTRAINT"] else start
    after = _pair(tokens, at, "PRIMARY", "KEY") if at <= end else None
    if after is None or after > end or tokens[after].token_type != TokenType.L_PAREN:
        return None
    close = _closing(tokens, after)
    return [_name(sql, tokens[first]) for first, _ in _split(tokens, after + 1, close - 1)]


def _key_column(sql: str, tokens: list[Token], body: tuple[int, int]) -> _Column | None:
    """The one column that is the table's whole PRIMARY KEY; None for a composite key, no
    key, or more than one (which SQLite refuses itself)."""
    columns: list[_Column] = []
    keys: list[list[str]] = []
    for start, end in _split(tokens, body[0] + 1, body[1] - 1):
        if _parts(tokens[start])[0] in _TABLE_CONSTRAINTS:
            key = _table_key(sql, tokens, start, end)
            keys += [key] if key is not None else []
        else:
            columns.append(_column(sql, tokens, start, end))
    keys += [[column.name] for column in columns if column.primary]
    if len(keys) != 1 or len(keys[0]) != 1:
        return None
    named = [column for column in columns if fold_name(column.name) == fold_name(keys[0][0])]
    return named[0] if named else None


def _no_rowid(column: _Column, strict: bool) -> str | None:
    """How the key column's definition spells an id SQLite will not make (the rule), or None
    when SQLite numbers it (INTEGER PRIMARY KEY) or every row must give one (NOT NULL)."""
    words = column.type_words
    serial = [w for w in words if w in _SERIALS]
    if serial:
        return f"{serial[0]} is PostgreSQL's auto-generated id"
    if "AUTO_INCREMENT" in words + column.marks:
        return "AUTO_INCREMENT is MySQL's auto-generated id"
    if "IDENTITY" in words or column.marks:
        return "IDENTITY is SQL Server's and standard SQL's auto-generated id"
    rowid_type = words == ["INTEGER"] and not column.sized
    if column.autoincrement and not rowid_type:
        return "AUTOINCREMENT is only allowed on a column whose type is spelled INTEGER"
    if strict or column.not_null:
        return None  # every row must name its id: nothing is silently NULL
    if rowid_type and column.desc_at is not None:
        return "INTEGER PRIMARY KEY DESC is not the rowid (an old quirk SQLite keeps)"
    integer = all(w in _INTEGER_WORDS for w in words) and any("INT" in w for w in words)
    if integer and not rowid_type:
        return f"{' '.join(words)}{'(...)' if column.sized else ''} is not spelled INTEGER"
    return None


def _rewritten(sql: str, tokens: list[Token], column: _Column) -> str:
    """`sql` with the key column's type spelled INTEGER and the other dialect's words (and
    a DESC) taken out, each with the space before it; every other character as written."""
    edits: list[tuple[int, int, str]] = []  # (start, end exclusive, replacement)

    def drop(first: int, last: int) -> None:
        start = tokens[first].start
        gap = sql[tokens[first - 1].end + 1 : start]  # the space before it, a comment kept
        edits.append((start - len(gap) + len(gap.rstrip()), tokens[last].end + 1, ""))

    if column.type_units:
        first = tokens[column.type_units[0][0]]
        edits.append((first.start, first.end + 1, "INTEGER"))
        for unit in column.type_units[1:]:
            drop(*unit)
    else:
        after = tokens[column.name_at].end + 1
        edits.append((after, after, " INTEGER"))
    for unit in column.foreign:
        drop(*unit)
    if column.desc_at is not None:
        drop(column.desc_at, column.desc_at)
    text = sql
    for start, end, new in sorted(edits, reverse=True):
        text = text[:start] + new + text[end:]
    return text


def auto_id_key(sql: str) -> AutoIdKey | None:
    """The key of a CREATE TABLE that is declared the way another dialect spells an
    auto-generated id but would not be SQLite's rowid, with the statement rewritten to make
    it one (module doc); None for every other statement."""
    tokens = sqlite_tokens(sql)
    while tokens and tokens[0].token_type == TokenType.SEMICOLON:
        tokens = tokens[1:]
    body = _body(tokens) if tokens else None
    if tokens is None or body is None:
        return None
    options = {part for token in tokens[body[1] + 1 :] for part in _parts(token)}
    if "WITHOUT" in options:
        return None  # WITHOUT ROWID: its key is never NULL, and there is no rowid to be
    column = _key_column(sql, tokens, body)
    why = None if column is None else _no_rowid(column, strict="STRICT" in options)
    if column is None or why is None:
        return None
    declared = sql[tokens[column.start].start : tokens[column.end].end + 1]
    return AutoIdKey(column.name, declared, why, _rewritten(sql, tokens, column))


def auto_id_refusal(key: AutoIdKey) -> str:
    """The answer to a CREATE TABLE whose key is `key`: why, and the statement to send."""
    said = (
        f"refused: the primary key declared as {_one_line(key.declared)}: {key.why}, but "
        "SQLite numbers a row's key itself only when the key is the rowid (a column declared "
        "INTEGER PRIMARY KEY), so this one would stay NULL in every row inserted without an "
        "id. Nothing was run"
    )
    if len(key.rewrite) > REWRITE_MAX_CHARS:
        return f"{said}. Next: declare {key.column} INTEGER PRIMARY KEY and send it again"
    from sqlgate.engine.dialects import mended_definition

    # the same definition's other dialect's words (DEFAULT NOW(), ENGINE=...) mended too,
    # so that the statement sent back runs at the next try
    mended = mended_definition(key.rewrite.strip())
    rewrite = key.rewrite.strip() if mended is None else mended[0]
    notes = "" if mended is None or not mended[1] else f" ({'; '.join(mended[1])})"
    return f"{said}{notes}. Send instead: {rewrite}"


def _one_line(text: str) -> str:
    return " ".join(text.split())
