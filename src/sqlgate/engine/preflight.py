"""Reading a statement before SQLite runs it, with sqlglot's SQLite tokenizer.

Preflight gives early, specific answers (which tool a statement belongs to, an UPDATE or
DELETE without WHERE, one statement per call) and a fingerprint for the audit log. It
never has the last word on safety: the authorizer does. Tokens, not a full parse, so SQL
that sqlglot cannot parse (fts5 MATCH syntax, new SQLite features) is never refused here.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import sqlglot
from sqlglot.errors import SqlglotError
from sqlglot.tokenizer_core import Token, TokenType

from sqlgate.engine.policy import Tier
from sqlgate.errors import InvalidArgument, PolicyDenied

__all__ = [
    "Statement",
    "check_tier",
    "fingerprint",
    "has_more_statements",
    "inspect_statement",
    "quote_identifier",
    "validate_new_name",
]

_LITERALS = {TokenType.STRING, TokenType.NUMBER, TokenType.HEX_STRING, TokenType.BIT_STRING}
_NOT_KEYWORDS = {TokenType.STRING, TokenType.IDENTIFIER, TokenType.HEX_STRING}
_MAIN_VERBS = {"SELECT", "VALUES", "INSERT", "REPLACE", "UPDATE", "DELETE"}
_FTS_DESTRUCTIVE_COMMANDS = {"delete-all", "delete"}


@dataclass(frozen=True)
class Statement:
    """What preflight learned: the statement's kind (e.g. "SELECT", "DROP TABLE") and more."""

    kind: str
    has_where: bool = True
    fts_delete: bool = False  # INSERT INTO t(t) VALUES('delete-all'): a delete in disguise


def _tokens(sql: str) -> list[Token] | None:
    try:
        return list(sqlglot.tokenize(sql, read="sqlite"))
    except (SqlglotError, ValueError, IndexError):
        return None


def _word(token: Token) -> str:
    return "" if token.token_type in _NOT_KEYWORDS else token.text.upper()


def _main_verb_index(tokens: list[Token]) -> int:
    """Index of the statement's verb, skipping a leading WITH clause."""
    if not tokens or _word(tokens[0]) != "WITH":
        return 0
    depth = 0
    for index, token in enumerate(tokens[1:], start=1):
        if token.token_type == TokenType.L_PAREN:
            depth += 1
        elif token.token_type == TokenType.R_PAREN:
            depth -= 1
        elif depth == 0 and _word(token) in _MAIN_VERBS:
            return index
    return 0


def _kind(tokens: list[Token], verb_at: int) -> str:
    words = [_word(token) for token in tokens[verb_at : verb_at + 5]]
    first = words[0] if words else ""
    if first in ("CREATE", "DROP"):
        rest = [w for w in words[1:] if w not in ("TEMP", "TEMPORARY", "UNIQUE")]
        temp = any(w in ("TEMP", "TEMPORARY") for w in words[1:3])
        target = rest[0] if rest else ""
        if target == "VIRTUAL":
            target = "VIRTUAL TABLE"
        return f"{first}{' TEMP' if temp else ''} {target}".strip()
    if first == "ALTER":
        return "ALTER TABLE"
    if first == "END":
        return "COMMIT"
    if first == "INSERT" and len(words) > 2 and words[1] == "OR" and words[2] == "REPLACE":
        return "REPLACE"
    return first or "UNKNOWN"


def _has_top_level_where(tokens: list[Token], verb_at: int) -> bool:
    depth = 0
    for token in tokens[verb_at + 1 :]:
        if token.token_type == TokenType.L_PAREN:
            depth += 1
        elif token.token_type == TokenType.R_PAREN:
            depth -= 1
        elif depth == 0 and _word(token) == "WHERE":
            return True
        elif depth == 0 and _word(token) == "RETURNING":
            return False
    return False


def _is_fts_delete(tokens: list[Token], verb_at: int) -> bool:
    """INSERT INTO t(t) VALUES('delete-all'): the FTS5 command that empties an index."""
    words = [token.text.lower() for token in tokens[verb_at : verb_at + 10]]
    strings = [t.text.lower() for t in tokens[verb_at:] if t.token_type == TokenType.STRING]
    if len(words) < 6 or "into" not in words[:4]:
        return False
    at = words.index("into")
    if len(words) < at + 5:
        return False
    table, paren, column = words[at + 1], words[at + 2], words[at + 3]
    if paren != "(" or table != column:
        return False
    return bool(strings) and strings[0] in _FTS_DESTRUCTIVE_COMMANDS


@functools.lru_cache(maxsize=1024)
def inspect_statement(sql: str) -> Statement:
    tokens = _tokens(sql)
    if not tokens:
        return Statement("UNKNOWN")
    verb_at = _main_verb_index(tokens)
    kind = _kind(tokens, verb_at)
    has_where = True
    if kind in ("UPDATE", "DELETE"):
        has_where = _has_top_level_where(tokens, verb_at)
    fts_delete = kind == "INSERT" and _is_fts_delete(tokens, verb_at)
    return Statement(kind, has_where, fts_delete)


# kinds each tier accepts at preflight; the authorizer checks every object they touch
READ_KINDS = frozenset({"SELECT", "VALUES", "EXPLAIN", "PRAGMA", "WITH"})
WRITE_KINDS = frozenset(
    {"INSERT", "REPLACE", "UPDATE", "CREATE TABLE", "CREATE INDEX", "CREATE VIRTUAL TABLE",
     "ANALYZE"}
)  # fmt: skip
DESTRUCTIVE_KINDS = WRITE_KINDS | {
    "DELETE", "DROP TABLE", "DROP INDEX", "DROP VIEW", "DROP TRIGGER", "ALTER TABLE",
    "CREATE TRIGGER", "REINDEX",
}  # fmt: skip
NEVER_KINDS = {
    "ATTACH": "ATTACH is never allowed: sqlgate serves one database file",
    "DETACH": "DETACH is never allowed",
    "VACUUM": "VACUUM is never allowed (VACUUM INTO writes files; the server maintains the file)",
    "BEGIN": "transaction control is never allowed: each call is its own transaction",
    "COMMIT": "transaction control is never allowed: each call is its own transaction",
    "ROLLBACK": "transaction control is never allowed: each call is its own transaction",
    "SAVEPOINT": "SAVEPOINT is never allowed: each call is its own transaction",
    "RELEASE": "RELEASE is never allowed: each call is its own transaction",
}


def _home_tool(statement: Statement) -> str:
    kind = statement.kind
    if kind in READ_KINDS:
        return "read_query"
    if kind == "CREATE VIEW":
        return "create_view"
    if kind in WRITE_KINDS and statement.has_where and not statement.fts_delete:
        return "write_query"
    return "destructive_query"


def check_tier(statement: Statement, tier: Tier) -> None:
    """Refuse early, naming the right tool, a statement this tier never takes."""
    kind = statement.kind
    if kind in NEVER_KINDS:
        raise PolicyDenied(NEVER_KINDS[kind])
    if " TEMP " in f" {kind} ":
        raise PolicyDenied(f"{kind} is not allowed: TEMP objects vanish and escape the audit")
    if kind == "UNKNOWN":
        return  # let SQLite report the syntax error in its own words
    allowed = {
        Tier.READ: READ_KINDS,
        Tier.WRITE: WRITE_KINDS,
        Tier.DESTRUCTIVE: DESTRUCTIVE_KINDS,
        Tier.VIEW: READ_KINDS - {"PRAGMA", "EXPLAIN"},
    }[tier]
    if tier is Tier.WRITE and kind == "UPDATE" and not statement.has_where:
        raise PolicyDenied(
            "UPDATE without WHERE rewrites every row: use destructive_query (it snapshots first), "
            "or add a WHERE clause"
        )
    if tier is Tier.WRITE and statement.fts_delete:
        raise PolicyDenied(
            "the FTS5 'delete-all'/'delete' command removes rows: use destructive_query"
        )
    if kind not in allowed:
        home = _home_tool(statement)
        raise PolicyDenied(f"{kind} is not allowed in {tier.value}; use {home}")


def has_more_statements(rest: str) -> bool:
    """True when text after the first statement holds anything but `;`, space and comments."""
    if not rest.strip():
        return False
    tokens = _tokens(rest)
    if tokens is None:
        return True
    return any(token.token_type != TokenType.SEMICOLON for token in tokens)


@functools.lru_cache(maxsize=2048)
def fingerprint(sql: str) -> str:
    """The statement's shape: keywords upper-cased, literals replaced by `?`, space folded."""
    tokens = _tokens(sql)
    if tokens is None:
        return " ".join(sql.split())[:500]
    parts: list[str] = []
    for token in tokens:
        if token.token_type in _LITERALS:
            parts.append("?")
        elif token.token_type == TokenType.IDENTIFIER:
            parts.append(quote_identifier(token.text))
        elif token.token_type == TokenType.VAR:
            parts.append(token.text)
        else:
            parts.append(token.text.upper())
    text = " ".join(parts)
    text = re.sub(r"\s+([,)])", r"\1", text)
    text = re.sub(r"\(\s+", "(", text)
    text = re.sub(r"(\w) \(", r"\1(", text)
    text = re.sub(r"\?(?:, \?)+", "?+", text)  # IN (1, 2, 3) and IN (4, 5) group together
    return text.rstrip("; ")


def quote_identifier(name: str) -> str:
    """Quote any identifier for SQLite: wrap in double quotes, double the inner ones."""
    if "\x00" in name:
        raise InvalidArgument("identifiers cannot contain NUL characters")
    return '"' + name.replace('"', '""') + '"'


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


def validate_new_name(name: str, what: str, protected: frozenset[str]) -> str:
    """A name for a new object: plain letters, digits and `_`; not SQLite's, not the server's."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise InvalidArgument(
            f"{what} name {name!r} is invalid: use letters, digits and _ (not starting with a "
            "digit), at most 128 characters"
        )
    if name.lower().startswith("sqlite_"):
        raise InvalidArgument(f"{what} name {name!r} is reserved by SQLite (sqlite_ prefix)")
    if name.lower() in protected:
        raise PolicyDenied(f"{name} is a sqlgate server object; choose another name")
    return name
