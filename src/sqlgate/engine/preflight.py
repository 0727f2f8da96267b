"""Reading a statement before SQLite runs it, with sqlglot's SQLite tokenizer.

Preflight gives early, specific answers (which tool a statement belongs to, an UPDATE or
DELETE without WHERE, one statement per call) and a fingerprint for the audit log. It
never has the last word on safety: the authorizer does. Tokens, not a full parse, so SQL
that sqlglot cannot parse (fts5 MATCH syntax, new SQLite features) is never refused here.

Preflight also reports the names a statement writes that SQLite's authorizer is never told
about: the new name in `ALTER TABLE ... RENAME TO`, and the tables a trigger's body writes
(SQLite compiles a trigger body only when it fires). Those are checked against the server's
protected names here.
"""

from __future__ import annotations

import functools
import itertools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlgate.engine.deferred import deferred
from sqlgate.engine.names import fold_name
from sqlgate.engine.policy import Operation, Tier, decide, server_object_message
from sqlgate.engine.schema import protected_names
from sqlgate.engine.sqltext import (
    bounded_cache,
    sqlite_tokens,
    word,
)
from sqlgate.errors import InvalidArgument, PolicyDenied

if TYPE_CHECKING:
    from sqlglot.tokenizer_core import Token, TokenType
else:  # sqlglot is imported when the first statement is read (engine.deferred)
    Token = deferred("sqlglot.tokenizer_core", "Token")
    TokenType = deferred("sqlglot.tokenizer_core", "TokenType")

__all__ = [
    "DropIfExists",
    "Statement",
    "check_tier",
    "destructive_keeps",
    "drop_if_exists",
    "emptied_table",
    "inspect_statement",
    "unfiltered_update_message",
    "validate_new_name",
]


# token types by name, so the sets need no sqlglot at import (a function cached on first use
# would also run its line once only, which mutation testing cannot see being read)
_PUNCTUATION = frozenset({"L_PAREN", "R_PAREN", "COMMA", "DOT", "SEMICOLON"})
# every verb a SQLite statement can start with; anything else is a syntax error
_VERBS = frozenset(
    {
        "SELECT", "VALUES", "WITH", "INSERT", "REPLACE", "UPDATE", "DELETE", "CREATE", "DROP",
        "ALTER", "ANALYZE", "REINDEX", "PRAGMA", "EXPLAIN", "VACUUM", "ATTACH", "DETACH",
        "BEGIN", "COMMIT", "END", "ROLLBACK", "SAVEPOINT", "RELEASE",
    }
)  # fmt: skip
_DML_KINDS = frozenset({"INSERT", "REPLACE", "UPDATE", "DELETE"})
_FTS_DESTRUCTIVE_COMMANDS = {"delete-all", "delete"}


# tokens of a WHERE that never name a column: literals and parameters, and reserved words
# (SQLite takes no other meaning for them there; TRUE and FALSE name a column only when the
# table has one so called, which then counts as no WHERE: refused in write_query, the safe way)
_NEVER_NAMES = frozenset({"STRING", "NUMBER", "HEX_STRING", "BIT_STRING", "PLACEHOLDER"})
_NOT_NAMES = frozenset(
    {"NULL", "TRUE", "FALSE", "AND", "OR", "NOT", "IS", "ISNULL", "NOTNULL", "IN", "BETWEEN",
     "SELECT", "EXISTS", "DISTINCT"}
)  # fmt: skip


@dataclass(frozen=True)
class Statement:
    """What preflight learned: the statement's kind (e.g. "SELECT", "DROP TABLE") and more."""

    kind: str
    has_where: bool = True
    fts_delete: bool = False  # INSERT INTO t(t) VALUES('delete-all'): a delete in disguise
    # names the statement creates or writes that the authorizer may never be asked about:
    # a new object's name, a trigger body's tables, the new name of a renamed table
    writes: tuple[str, ...] = ()
    # the table an INSERT, REPLACE, UPDATE or DELETE writes; what a REINDEX, DROP or ALTER
    # names
    target: str | None = None
    has_nul: bool = False  # SQLite would stop reading at a NUL; apsw refuses the text
    # PRAGMA name [= value | (value)]: (name, value or None)
    pragma: tuple[str, str | None] | None = None
    explained: str | None = None  # the kind of statement an EXPLAIN [QUERY PLAN] explains
    on_table: str | None = None  # the table a CREATE INDEX or CREATE TRIGGER is ON


def _after_parens(tokens: list[Token], at: int) -> int:
    """Index just after the parenthesised group that opens at `at`."""
    depth = 0
    for index in range(at, len(tokens)):
        if tokens[index].token_type == TokenType.L_PAREN:
            depth += 1
        elif tokens[index].token_type == TokenType.R_PAREN:
            depth -= 1
            if depth == 0:
                return index + 1
    return len(tokens)


def _main_verb_index(tokens: list[Token]) -> int:
    """Index of the statement's verb, after a leading WITH clause.

    The clause is walked by its grammar (`name [(columns)] AS [NOT] [MATERIALIZED] (select)`,
    comma-separated), not searched for a verb: a CTE may be called `replace`.
    """
    if not tokens or word(tokens[0]) != "WITH":
        return 0
    at = 2 if len(tokens) > 1 and word(tokens[1]) == "RECURSIVE" else 1
    while at < len(tokens):
        at += 1  # the CTE's name
        if at < len(tokens) and tokens[at].token_type == TokenType.L_PAREN:
            at = _after_parens(tokens, at)
        if at < len(tokens) and word(tokens[at]) == "AS":
            at += 1
        while at < len(tokens) and word(tokens[at]) in ("NOT", "MATERIALIZED"):
            at += 1
        if at < len(tokens) and tokens[at].token_type == TokenType.L_PAREN:
            at = _after_parens(tokens, at)
        if at < len(tokens) and tokens[at].token_type == TokenType.COMMA:
            at += 1
            continue
        break
    return at if at < len(tokens) else 0


def _kind(tokens: list[Token], verb_at: int) -> str:
    words = [word(token) for token in tokens[verb_at : verb_at + 5]]
    first = words[0] if words else ""
    if first not in _VERBS:
        return "UNKNOWN"
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
    return first


def _may_name_a_column(token: Token, following: Token | None) -> bool:
    """Whether `token` (before `following`) could be a column's name, to SQLite.

    Literals, parameters, operators, the words below and a function's name (a name just
    before `(`) never are; anything else may be, keywords included (SQLite takes `key`,
    `date` or `end` as names), so this errs towards "a name".
    """
    call = following is not None and following.token_type == TokenType.L_PAREN
    if token.token_type == TokenType.IDENTIFIER:  # quoted: a name, or a function's
        return not call
    first = token.text[:1]
    return (
        token.token_type.name not in _NEVER_NAMES
        and (first.isalpha() or first == "_")  # not an operator, nor a `$name` parameter
        and word(token) not in _NOT_NAMES
        and not call
    )


def _has_top_level_where(tokens: list[Token], verb_at: int) -> bool:
    """Whether the statement has a WHERE of its own (not a subquery's) that names something.

    A WHERE made only of literals, parameters, operators and function calls (`WHERE 1=1`,
    `WHERE ?`, `WHERE abs(-1)`) names no column, so it cannot filter: it counts as no WHERE.
    Whether a name is a column of the table changed needs the schema (`engine.where`).
    RETURNING ends the WHERE (it can stand nowhere but at the statement's top level).
    """
    depth, where = 0, False
    rest = tokens[verb_at:]
    for token, following in itertools.zip_longest(rest, rest[1:]):
        if token.token_type == TokenType.L_PAREN:
            depth += 1
        elif token.token_type == TokenType.R_PAREN:
            depth -= 1
        elif depth == 0 and word(token) == "WHERE":
            where = True
        elif word(token) == "RETURNING":
            return False
        elif where and _may_name_a_column(token, following):
            return True
    return False


def _name_at(tokens: list[Token], at: int) -> tuple[str | None, int]:
    """The object named at `at` (`schema.name` gives `name`) and the index after it."""
    if at >= len(tokens) or tokens[at].token_type.name in _PUNCTUATION:
        return None, at
    if at + 2 < len(tokens) and tokens[at + 1].token_type == TokenType.DOT:
        return tokens[at + 2].text, at + 3
    return tokens[at].text, at + 1


def _dml_target(tokens: list[Token], verb_at: int, kind: str) -> tuple[str | None, int]:
    """The table an INSERT/REPLACE (after INTO), UPDATE [OR x] or DELETE FROM writes."""
    at = verb_at + 1
    if kind in ("INSERT", "REPLACE"):
        into = [i for i in range(at, min(at + 3, len(tokens))) if word(tokens[i]) == "INTO"]
        if not into:
            return None, at
        at = into[0] + 1
    elif at < len(tokens) and word(tokens[at]) in ("OR", "FROM"):
        at += 2 if word(tokens[at]) == "OR" else 1
    return _name_at(tokens, at)


def _is_fts_delete(tokens: list[Token], table: str | None, after: int) -> bool:
    """INSERT INTO t(..., t, ...) ... 'delete-all': a command to FTS5's hidden column `t`.

    Any string literal naming a removing command counts, wherever it stands; commands built
    at run time (bound, computed) are caught while running (see `emptied_table`).
    """
    at = after
    if at < len(tokens) and word(tokens[at]) == "AS":
        at += 2  # INSERT INTO t AS alias(...)
    if table is None or at >= len(tokens) or tokens[at].token_type != TokenType.L_PAREN:
        return False
    end = _after_parens(tokens, at)
    columns = {
        fold_name(t.text) for t in tokens[at + 1 : end - 1] if t.token_type.name not in _PUNCTUATION
    }
    if fold_name(table) not in columns:
        return False
    return any(
        token.token_type == TokenType.STRING and fold_name(token.text) in _FTS_DESTRUCTIVE_COMMANDS
        for token in tokens[end:]
    )


def _trigger_writes(tokens: list[Token], verb_at: int) -> tuple[str, ...]:
    """Tables the statements of a CREATE TRIGGER body (after BEGIN) insert, update or delete."""
    words = [word(token) for token in tokens]
    if "BEGIN" not in words[verb_at:]:
        return ()
    names: list[str] = []
    for index in range(words.index("BEGIN", verb_at) + 1, len(tokens)):
        if words[index] not in ("INTO", "UPDATE", "DELETE"):
            continue
        at = index + 1
        if at < len(tokens) and words[at] in ("OR", "FROM"):
            at += 2 if words[at] == "OR" else 1
        name, _ = _name_at(tokens, at)
        if name is not None:
            names.append(name)
    return tuple(names)


def _created_name(tokens: list[Token], verb_at: int) -> tuple[str, ...]:
    """The name a CREATE ... [IF NOT EXISTS] name gives its new object."""
    skipped = {"TEMP", "TEMPORARY", "UNIQUE", "VIRTUAL", "TABLE", "INDEX", "VIEW", "TRIGGER"}
    at = verb_at + 1
    while at < len(tokens) and word(tokens[at]) in skipped:
        at += 1
    if [word(token) for token in tokens[at : at + 3]] == ["IF", "NOT", "EXISTS"]:
        at += 3
    name, _ = _name_at(tokens, at)
    return () if name is None else (name,)


def _on_table(tokens: list[Token], verb_at: int) -> str | None:
    """The table after the first ON of a CREATE INDEX / CREATE TRIGGER (its own table: a
    trigger's body, where other ONs may stand, comes after it)."""
    for at in range(verb_at + 1, len(tokens)):
        if word(tokens[at]) == "ON":
            return _name_at(tokens, at + 1)[0]
    return None


def _dropped_or_altered(tokens: list[Token], verb_at: int) -> str | None:
    """The object a DROP <kind> [IF EXISTS] name or an ALTER TABLE name acts on."""
    at = verb_at + 2
    if [word(token) for token in tokens[at : at + 2]] == ["IF", "EXISTS"]:
        at += 2
    return _name_at(tokens, at)[0]


def _pragma(tokens: list[Token], verb_at: int) -> tuple[str, str | None] | None:
    """PRAGMA [schema.]name [= value | (value)]: the name, and the value if one is given."""
    name, at = _name_at(tokens, verb_at + 1)
    if name is None:
        return None
    if at < len(tokens) and tokens[at].text in ("=", "("):
        return name, tokens[at + 1].text if at + 1 < len(tokens) else ""
    return name, None


def _explained(tokens: list[Token], verb_at: int) -> str:
    """The kind of the statement after EXPLAIN [QUERY PLAN]."""
    at = verb_at + 1
    if [word(token) for token in tokens[at : at + 2]] == ["QUERY", "PLAN"]:
        at += 2
    inner = tokens[at:]
    return _kind(inner, _main_verb_index(inner))


def _renamed_to(tokens: list[Token], verb_at: int) -> tuple[str, ...]:
    """The new name in ALTER TABLE ... RENAME TO name (not RENAME [COLUMN] a TO b)."""
    words = [word(token) for token in tokens]
    for index in range(verb_at, len(tokens) - 2):
        if words[index] == "RENAME" and words[index + 1] == "TO":
            return (tokens[index + 2].text,)
    return ()


_CLOSING_QUOTE = {'"': '"', "'": "'", "`": "`", "[": "]"}


def _with_real_names(sql: str, tokens: list[Token]) -> list[Token]:
    """`sqlite_tokens` reads every non-ASCII character as "x", so that sqlglot draws
    SQLite's token boundaries; put the real characters back into names and strings, so a
    name is compared with the server's as SQLite compares it. A bare word holding a
    non-ASCII character is a name to SQLite, never a keyword (its keywords are ASCII)."""
    if sql.isascii():
        return tokens
    out = []
    for token in tokens:
        raw = sql[token.start : token.end + 1]
        if raw.isascii() or token.token_type == TokenType.PLACEHOLDER:
            out.append(token)
            continue
        kind, text = TokenType.IDENTIFIER, raw
        quoted = token.token_type in (TokenType.IDENTIFIER, TokenType.STRING)
        if quoted and raw[:1] in _CLOSING_QUOTE and len(raw) > 1:
            close = _CLOSING_QUOTE[raw[0]]
            kind, text = token.token_type, raw[1:-1]
            if close != "]":
                text = text.replace(close * 2, close)
        out.append(Token(kind, text, token.line, token.col, token.start, token.end))
    return out


@bounded_cache
def inspect_statement(sql: str) -> Statement:
    if "\x00" in sql:
        return Statement("UNKNOWN", has_nul=True)
    tokens = sqlite_tokens(sql)
    if tokens is None:
        return Statement("UNKNOWN")  # an unterminated string or quoted name
    tokens = _with_real_names(sql, tokens)
    while tokens and tokens[0].token_type == TokenType.SEMICOLON:
        tokens = tokens[1:]  # SQLite skips empty statements before the first one
    if not tokens:
        return Statement("UNKNOWN")
    verb_at = _main_verb_index(tokens)
    kind = _kind(tokens, verb_at)
    has_where = True
    if kind in ("UPDATE", "DELETE"):
        has_where = _has_top_level_where(tokens, verb_at)
    target, after = _dml_target(tokens, verb_at, kind) if kind in _DML_KINDS else (None, 0)
    if kind == "REINDEX":
        target, after = _name_at(tokens, verb_at + 1)
    if kind.startswith("DROP ") or kind == "ALTER TABLE":
        target = _dropped_or_altered(tokens, verb_at)
    pragma = _pragma(tokens, verb_at) if kind == "PRAGMA" else None
    on_table = _on_table(tokens, verb_at) if kind in ("CREATE INDEX", "CREATE TRIGGER") else None
    explained = _explained(tokens, verb_at) if kind == "EXPLAIN" else None
    fts_delete = kind in ("INSERT", "REPLACE") and _is_fts_delete(tokens, target, after)
    writes: tuple[str, ...] = ()
    if kind.startswith("CREATE "):
        # IF NOT EXISTS on an existing server object would succeed without asking the policy
        writes = _created_name(tokens, verb_at)
    if kind == "CREATE TRIGGER":
        writes += _trigger_writes(tokens, verb_at)
    elif kind == "ALTER TABLE":
        writes = _renamed_to(tokens, verb_at)
    return Statement(
        kind, has_where, fts_delete, writes, target, pragma=pragma, explained=explained,
        on_table=on_table,
    )  # fmt: skip


@dataclass(frozen=True)
class DropIfExists:
    """`DROP <kind> IF EXISTS [schema.]name`: what would be dropped, if it existed."""

    kind: str  # TABLE, VIEW, INDEX or TRIGGER
    name: str
    schema: str | None = None


def drop_if_exists(sql: str) -> DropIfExists | None:
    """The object a `DROP TABLE/VIEW/INDEX/TRIGGER IF EXISTS` names; None for anything else."""
    statement = inspect_statement(sql)
    if statement.kind not in ("DROP TABLE", "DROP VIEW", "DROP INDEX", "DROP TRIGGER"):
        return None
    tokens = sqlite_tokens(sql)
    if tokens is None:
        return None
    tokens = _with_real_names(sql, tokens)
    while tokens and tokens[0].token_type == TokenType.SEMICOLON:
        tokens = tokens[1:]
    if [word(token) for token in tokens[2:4]] != ["IF", "EXISTS"]:
        return None
    at = 4
    if at + 2 < len(tokens) and tokens[at + 1].token_type == TokenType.DOT:
        schema: str | None = tokens[at].text
        name, _ = _name_at(tokens, at)
    else:
        schema, (name, _) = None, _name_at(tokens, at)
    if name is None:
        return None
    return DropIfExists(statement.kind.split(" ", 1)[1], name, schema)


def emptied_table(sql: str) -> str | None:
    """The table a DELETE without WHERE empties; None for any other statement."""
    statement = inspect_statement(sql)
    if statement.kind == "DELETE" and not statement.has_where:
        return statement.target
    return None


# kinds each tier accepts at preflight; the authorizer checks every object they touch
READ_KINDS = frozenset({"SELECT", "VALUES", "EXPLAIN", "PRAGMA", "WITH"})
# REINDEX rebuilds indexes from their tables and changes no row (docs/decisions.md)
WRITE_KINDS = frozenset(
    {"INSERT", "REPLACE", "UPDATE", "CREATE TABLE", "CREATE INDEX", "CREATE VIRTUAL TABLE",
     "ANALYZE", "REINDEX"}
)  # fmt: skip
DESTRUCTIVE_KINDS = WRITE_KINDS | {
    "DELETE", "DROP TABLE", "DROP INDEX", "DROP VIEW", "DROP TRIGGER", "ALTER TABLE",
    "CREATE TRIGGER",
}  # fmt: skip
_ONE_TRANSACTION = "no tool will run it: each call is its own transaction"
NEVER_KINDS = {
    "ATTACH": "ATTACH is never allowed, so no tool will run it: sqlgate serves one database file",
    "DETACH": "DETACH is never allowed: no tool will run it (nothing is ever attached)",
    "VACUUM": "VACUUM is never allowed, so no tool will run it (VACUUM INTO writes files; the "
    "server maintains the file)",
    "BEGIN": f"transaction control is never allowed: {_ONE_TRANSACTION}",
    "COMMIT": f"transaction control is never allowed: {_ONE_TRANSACTION}",
    "ROLLBACK": f"transaction control is never allowed: {_ONE_TRANSACTION}",
    "SAVEPOINT": f"SAVEPOINT is never allowed: {_ONE_TRANSACTION}",
    "RELEASE": f"RELEASE is never allowed: {_ONE_TRANSACTION}",
}
# what to use instead of a TEMP object of each type, in the tier that takes it
TEMP_INSTEAD = {
    "TABLE": "create a regular table with write_query (drop it with destructive_query when "
    "done), or compute the rows in a WITH clause of read_query",
    "VIEW": "save the SELECT as a view with create_view (it keeps a description for the next "
    "session), or run it in read_query",
    "INDEX": "create a regular index with write_query",
    "TRIGGER": "create a regular trigger with destructive_query",
}


def destructive_keeps(undo: str) -> str:
    """What destructive_query keeps to undo a row change, under `--undo` (rows or file)."""
    if undo == "file":
        return "destructive_query (it takes a whole-file snapshot first: --undo file)"
    return "destructive_query (it keeps the changed rows for undo)"


def unfiltered_update_message(target: str | None, undo: str = "rows") -> str:
    """The refusal of an UPDATE whose WHERE is missing or names no column of its table."""
    table = target or "its table"
    return (
        f"UPDATE without a WHERE on a column of {table} rewrites every row: use "
        f"{destructive_keeps(undo)}, or add a WHERE that names a column of {table} "
        "(describe_table lists them)"
    )


def _home_tool(statement: Statement) -> str:
    kind = statement.kind
    if kind in READ_KINDS:
        return "read_query"
    if kind == "CREATE VIEW":
        return "create_view"
    if kind in WRITE_KINDS and statement.has_where and not statement.fts_delete:
        return "write_query"
    return "destructive_query"


@functools.cache
def _server_names() -> frozenset[str]:
    """The schema registry's names: fixed for the life of the process, so built once."""
    return protected_names()


def check_tier(
    statement: Statement, tier: Tier, protected: frozenset[str] | None = None, undo: str = "rows"
) -> None:
    """Refuse early, naming the right tool, a statement this tier never takes.

    `protected` (folded server object names, `fold_name`) defaults to the schema's registry;
    `undo` is the --undo setting, which the advice to use destructive_query describes.
    """
    kind = statement.kind
    if statement.has_nul:
        raise InvalidArgument("the query contains a NUL character; remove it")
    explained = statement.explained
    # the read policy refuses what an EXPLAIN of a change prepares, and no other tool
    # takes EXPLAIN (an EXPLAIN of VACUUM prepares nothing the read policy refuses)
    if explained in DESTRUCTIVE_KINDS | {"CREATE VIEW"}:
        raise PolicyDenied(
            f"EXPLAIN of {explained} is not allowed: no tool will run it (read_query explains "
            "only queries, and the other tools take no EXPLAIN); EXPLAIN a SELECT in read_query"
        )
    if kind in NEVER_KINDS:
        raise PolicyDenied(NEVER_KINDS[kind])
    if " TEMP " in f" {kind} ":
        what = kind.rsplit(" ", 1)[-1]
        instead = TEMP_INSTEAD.get(what) if kind.startswith("CREATE") else None
        if kind.startswith("DROP"):
            instead = f"there is no TEMP {what.lower()} to drop: sqlgate never creates one"
        raise PolicyDenied(
            f"{kind} is not allowed: TEMP objects vanish and escape the audit, so no tool will "
            "make one" + (f"; {instead}" if instead else "")
        )
    server_names = _server_names() if protected is None else protected
    for name in statement.writes:
        if fold_name(name) in server_names:
            raise PolicyDenied(
                f"{name} is a sqlgate server object: no object may take its name and no "
                "trigger may write it, so no tool will run this; agents may only read it "
                "(read_query)"
            )
    if kind == "UNKNOWN":
        if tier is Tier.WRITE:
            # its WHERE and FTS5 checks cannot be made on text preflight cannot read
            raise InvalidArgument(
                "write_query cannot read this statement: it does not start with an SQL verb, "
                "or a string, quoted name or comment is not closed; check the SQL"
            )
        return  # let SQLite report the syntax error in its own words
    allowed = {
        Tier.READ: READ_KINDS,
        Tier.WRITE: WRITE_KINDS,
        Tier.DESTRUCTIVE: DESTRUCTIVE_KINDS,
        Tier.VIEW: READ_KINDS - {"PRAGMA", "EXPLAIN"},
    }[tier]
    if tier is Tier.WRITE and kind == "UPDATE" and not statement.has_where:
        raise PolicyDenied(unfiltered_update_message(statement.target, undo))
    if tier is Tier.WRITE and statement.fts_delete:
        raise PolicyDenied(
            "the FTS5 'delete-all'/'delete' command removes rows: use destructive_query"
        )
    if kind == "REINDEX" and statement.target is None and tier is not Tier.READ:
        raise PolicyDenied(
            "REINDEX without a name rebuilds every index, sqlgate's own among them, which only "
            "the server may touch, so no tool will run it: name a table or index of yours "
            "(REINDEX items)"
        )
    if kind == "CREATE VIEW" and tier is Tier.VIEW:
        raise InvalidArgument(
            "select_sql is the SELECT alone: leave out CREATE VIEW name AS (the name goes in name)"
        )
    if kind not in allowed:
        _refuse_in_every_tier(statement, server_names)
        home = _home_tool(statement)
        if home == "create_view":
            home = "create_view (the view's name in name, the SELECT alone in select_sql)"
        raise PolicyDenied(f"{kind} is not allowed in {tier.value}; use {home}")


def _refuse_in_every_tier(statement: Statement, server_names: frozenset[str]) -> None:
    """Refuse, saying so, a statement that the tool it belongs to would refuse as well, so
    the advice never sends the agent to a second refusal."""
    kind = statement.kind
    acts = kind in _DML_KINDS or kind.startswith("DROP ") or kind in ("ALTER TABLE", "REINDEX")
    # what it writes, drops, alters or rebuilds, or the table it indexes or triggers on
    for target in (statement.target if acts else None, statement.on_table):
        if target is not None and fold_name(target) in server_names:
            raise PolicyDenied(server_object_message(target))
    if statement.pragma is not None:
        name, value = statement.pragma
        verdict = decide(Tier.READ, Operation("PRAGMA", name, value), server_names)
        if not verdict.allowed:
            raise PolicyDenied(verdict.reason)


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


def validate_new_name(name: str, what: str, protected: frozenset[str]) -> str:
    """A name for a new object: plain letters, digits and `_`; not SQLite's, not the server's."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise InvalidArgument(
            f"{what} name {name!r} is invalid: use letters, digits and _ (not starting with a "
            "digit), at most 128 characters"
        )
    if fold_name(name).startswith("sqlite_"):
        raise InvalidArgument(f"{what} name {name!r} is reserved by SQLite (sqlite_ prefix)")
    if fold_name(name) in protected:
        raise PolicyDenied(f"{name} is a sqlgate server object; choose another name")
    return name
