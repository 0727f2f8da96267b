"""SQL text as SQLite reads it: tokens, statement boundaries, fingerprints, quoting.

sqlglot's SQLite tokenizer does the work, adjusted where SQLite draws token boundaries
differently (variables such as `$v::x`, non-ASCII characters inside names, an unterminated
`/*` at the end of the input), so that what preflight sees is what SQLite will run.

sqlglot is imported when the first statement is read (`engine.deferred`), not with this
module: opening a database reads none, and `quote_identifier` needs no tokenizer.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar, TypeVar

from sqlgate.engine.deferred import deferred
from sqlgate.errors import InvalidArgument

if TYPE_CHECKING:
    from sqlglot.dialects.sqlite import SQLite
    from sqlglot.tokenizer_core import Token, TokenType
else:  # imported when the first statement is read
    Token = deferred("sqlglot.tokenizer_core", "Token")
    TokenType = deferred("sqlglot.tokenizer_core", "TokenType")

__all__ = [
    "bounded_cache",
    "check_condition",
    "fingerprint",
    "has_more_statements",
    "quote_identifier",
    "quote_literal",
    "sqlite_tokens",
    "tokens_of",
    "word",
]

# texts longer than this are analysed every time rather than kept in a cache
_CACHED_TEXT_CHARS = 8192
T = TypeVar("T")


@functools.cache
def _not_keywords() -> frozenset[TokenType]:
    return frozenset({TokenType.STRING, TokenType.IDENTIFIER, TokenType.HEX_STRING})


@functools.cache
def _literals() -> frozenset[TokenType]:
    return frozenset({TokenType.STRING, TokenType.NUMBER, TokenType.HEX_STRING,
                      TokenType.BIT_STRING})  # fmt: skip


@functools.cache
def _tokenizer() -> tuple[type[SQLite.Tokenizer], tuple[type[Exception], ...]]:
    """sqlglot's SQLite tokenizer class without its command mode, which turns the rest of a
    statement into one string after `;` or BEGIN (`BEGIN REPLACE INTO t ...` in a trigger);
    and the errors it raises on text it cannot read."""
    from sqlglot.dialects.sqlite import SQLite
    from sqlglot.errors import SqlglotError

    class SqliteTokenizer(SQLite.Tokenizer):
        COMMANDS: ClassVar[set[TokenType]] = set()

    return SqliteTokenizer, (SqlglotError, ValueError, IndexError)


def tokens_of(sql: str) -> list[Token] | None:
    tokenizer, unreadable = _tokenizer()
    # SQLite ends an unterminated /* comment at the end of the input; sqlglot refuses it
    for text in (sql, sql + "*/"):
        try:
            return list(tokenizer().tokenize(text))
        except unreadable:
            continue
    return None


# SQLite reads every non-ASCII character as part of an identifier; sqlglot splits on some
# (U+00A0, U+2028, ...), which would show it a WHERE that SQLite reads as part of a name
_NON_ASCII = re.compile(r"[^\x00-\x7f]")
_SQLITE_SPACE = " \t\n\v\f\r"


def _variable_end(text: str, start: int) -> int:
    """Where SQLite ends the variable that starts at `start` with $, @, : or #.

    Besides letters and digits it takes `::` and a final `(...)` (Tcl-style names), so
    `$v::WHERE` is one variable to SQLite, not a variable, a cast and a WHERE.
    """
    at, named = start + 1, 0
    while at < len(text):
        char = text[at]
        if char.isalnum() or char in "_$":
            named += 1
            at += 1
        elif char == "(" and named:
            close = at + 1
            while close < len(text) and text[close] not in _SQLITE_SPACE + ")":
                close += 1
            return close + 1 if close < len(text) and text[close] == ")" else close
        elif char == ":" and text[at + 1 : at + 2] == ":":
            at += 2
        else:
            break
    return at


def sqlite_tokens(sql: str) -> list[Token] | None:
    """Tokens with SQLite's boundaries where they differ from sqlglot's (see above)."""
    text = _NON_ASCII.sub("x", sql)
    tokens = tokens_of(text)
    if tokens is None:
        return None
    regrouped: list[Token] = []
    covered = -1  # last character already inside a regrouped variable
    for token in tokens:
        if token.start <= covered:
            continue
        if token.token_type not in _not_keywords() and text[token.start] in "$@:#":
            end = _variable_end(text, token.start)
            if end > token.end + 1:
                name = text[token.start : end]
                regrouped.append(Token(TokenType.PLACEHOLDER, name, start=token.start, end=end - 1))
                covered = end - 1
                continue
        regrouped.append(token)
    return regrouped


def word(token: Token) -> str:
    """The token as an upper-cased keyword; empty for strings and quoted names."""
    return "" if token.token_type in _not_keywords() else token.text.upper()


def bounded_cache(fn: Callable[[str], T]) -> Callable[[str], T]:
    """Cache results for short texts only: a cache of megabyte-long queries is a memory leak."""
    cached = functools.lru_cache(maxsize=2048)(fn)

    @functools.wraps(fn)
    def lookup(sql: str) -> T:
        return cached(sql) if len(sql) <= _CACHED_TEXT_CHARS else fn(sql)

    return lookup


@bounded_cache  # every call asks it of the whole query text first: agents repeat queries
def has_more_statements(rest: str) -> bool:
    """True when text after the first statement holds anything but `;`, space and comments."""
    if not rest.strip():
        return False
    tokens = tokens_of(rest)
    if tokens is None:
        return True
    return any(token.token_type != TokenType.SEMICOLON for token in tokens)


@bounded_cache
def fingerprint(sql: str) -> str:
    """The statement's shape: keywords upper-cased, literals replaced by `?`, space folded.

    Placeholders (`?`, `?1`, `:name`, `@name`, `$name`) stay as written: they are already
    the shape. Lists of literals of any length fold to `?+`, so `IN (1)` and `IN (4, 5)`
    group together.
    """
    tokens = sqlite_tokens(sql)
    if tokens is None:
        return " ".join(sql.split())[:500]
    parts: list[str] = []
    previous: Token | None = None
    for token in tokens:
        numbered = (
            previous is not None
            and previous.token_type == TokenType.PLACEHOLDER
            and previous.text == "?"
            and token.token_type == TokenType.NUMBER
            and token.start == previous.end + 1
        )
        if numbered:
            parts[-1] = f"?{token.text}"
        elif token.token_type in _literals():
            parts.append("?")
        elif token.token_type == TokenType.IDENTIFIER:
            # a name SQLite could not hold (a NUL) is kept as written: a shape, never an error
            parts.append(quote_identifier(token.text) if "\x00" not in token.text else token.text)
        elif token.token_type in (TokenType.VAR, TokenType.PLACEHOLDER):
            parts.append(token.text)
        else:
            parts.append(token.text.upper())
        previous = token
    text = " ".join(parts)
    text = re.sub(r"\s+([,)])", r"\1", text)
    text = re.sub(r"\(\s+", "(", text)
    text = re.sub(r"(\w) \(", r"\1(", text)
    text = re.sub(r"\?(?:, \?)+", "?+", text)
    text = re.sub(r"\(\?\)", "(?+)", text)
    return text.rstrip("; ")


def check_condition(condition: str) -> str:
    """An SQL condition to put inside `WHERE (...)`: it must not close that bracket early,
    open a comment or string that swallows the rest, or hold a second statement."""
    if "\x00" in condition:
        raise InvalidArgument("where contains a NUL character; remove it")
    tokens = sqlite_tokens(condition)
    if tokens is None or tokens_of(condition) is None:
        raise InvalidArgument("where has an unclosed string or quoted name; check the SQL")
    depth = 0
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            raise InvalidArgument("where must be one condition, without ';'")
        depth += {TokenType.L_PAREN: 1, TokenType.R_PAREN: -1}.get(token.token_type, 0)
        if depth < 0:
            raise InvalidArgument("where closes a bracket it did not open; check the brackets")
    if depth:
        raise InvalidArgument("where leaves a bracket open; check the brackets")
    if _open_block_comment(condition):
        raise InvalidArgument("where leaves a /* comment open; close it with */")
    return condition


def _open_block_comment(text: str) -> bool:
    """True when a /* outside strings and quoted names has no closing */."""
    tokenizer, unreadable = _tokenizer()
    try:
        list(tokenizer().tokenize(text))
    except unreadable:
        return True
    return False


def quote_identifier(name: str) -> str:
    """Quote any identifier for SQLite: wrap in double quotes, double the inner ones."""
    if "\x00" in name:
        raise InvalidArgument("identifiers cannot contain NUL characters")
    return '"' + name.replace('"', '""') + '"'


def quote_literal(text: str) -> str:
    """`text` as a SQLite string literal, for SQL shown to the agent (values are bound in
    SQL the server runs): wrapped in single quotes, the inner ones doubled."""
    return "'" + text.replace("'", "''") + "'"
