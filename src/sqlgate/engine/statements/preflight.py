"""Reading a statement before SQLite runs it, with sqlglot's SQLite tokenizer.

Preflight reads what `engine.statements.tier_check` needs for its early, specific answers (which
tool a statement belongs to, an UPDATE or DELETE without WHERE, one statement per call). It
never has the last word on safety: the authorizer does. Tokens, not a full parse, so SQL
that sqlglot cannot parse (fts5 MATCH syntax, new SQLite features) is never refused here.

Preflight also reports the names a statement writes that SQLite's authorizer is never told
about: the new name in `ALTER TABLE ... RENAME TO`, and the tables a trigger's body writes
(SQLite compiles a trigger body only when it fires). `engine.statements.tier_check` checks those
against the server's protected names.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlgate.engine.deferred import deferred
from sqlgate.engine.names import fold_name
from sqlgate.engine.sqltext import (
    bounded_cache,
    sqlite_tokens,
    word,
)
from sqlgate.engine.statements.auto_ids import AutoIdKey, auto_id_key
from sqlgate.engine.statements.policy import SERVER_SCHEMA

if TYPE_CHECKING:
    from sqlglot.tokenizer_core import Token, TokenType
else:  # sqlglot is imported when the first statement is read (engine.deferred)
    Token = deferred("sqlglot.tokenizer_core", "Token")
    TokenType = deferred("sqlglot.tokenizer_core", "TokenType")

__all__ = [
    "DML_KINDS",
    "CreateIfNotExists",
    "DropIfExists",
    "Statement",
    "create_if_not_exists",
    "drop_if_exists",
    "emptied_table",
    "inspect_statement",
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
DML_KINDS = frozenset({"INSERT", "REPLACE", "UPDATE", "DELETE"})
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
    # a CREATE TABLE's key spelled as another dialect's auto-generated id
    # (engine.statements.auto_ids)
    auto_id: AutoIdKey | None = None
    # the first object the text names in sqlgate's records (`sqlgate.name`): no view or
    # trigger may use one (SQLite keeps them to their own database)
    server_object: str | None = None
    # the schema a CREATE, DROP or ALTER TABLE names its object in (`schema.name`), if given
    object_schema: str | None = None


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
    Whether a name is a column of the table changed needs the schema (`engine.statements.where`).
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
    # the parentheses are punctuation; an unclosed group leaves no literal after it
    columns = {fold_name(t.text) for t in tokens[at:end] if t.token_type.name not in _PUNCTUATION}
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
    for index in range(words.index("BEGIN", verb_at), len(tokens)):  # BEGIN writes nothing
        if words[index] not in ("INTO", "UPDATE", "DELETE"):
            continue
        at = index + 1
        if at < len(tokens) and words[at] in ("OR", "FROM"):
            at += 2 if words[at] == "OR" else 1
        name, _ = _name_at(tokens, at)
        if name is not None:
            names.append(name)
    return tuple(names)


def _created_at(tokens: list[Token], verb_at: int) -> int:
    """Where a CREATE ... [IF NOT EXISTS] [schema.]name names its new object."""
    skipped = {"TEMP", "TEMPORARY", "UNIQUE", "VIRTUAL", "TABLE", "INDEX", "VIEW", "TRIGGER"}
    at = verb_at + 1
    while at < len(tokens) and word(tokens[at]) in skipped:
        at += 1
    if [word(token) for token in tokens[at : at + 3]] == ["IF", "NOT", "EXISTS"]:
        at += 3
    return at


def _created_name(tokens: list[Token], verb_at: int) -> tuple[str, ...]:
    """The name a CREATE ... [IF NOT EXISTS] name gives its new object."""
    name, _ = _name_at(tokens, _created_at(tokens, verb_at))
    return () if name is None else (name,)


def _schema_at(tokens: list[Token], at: int) -> str | None:
    """The schema of a `schema.name` at `at`; None for a plain name."""
    if at + 2 < len(tokens) and tokens[at + 1].token_type == TokenType.DOT:
        return tokens[at].text
    return None


def _on_table(tokens: list[Token], verb_at: int) -> str | None:
    """The table after the first ON of a CREATE INDEX / CREATE TRIGGER (its own table: a
    trigger's body, where other ONs may stand, comes after it)."""
    for at in range(verb_at, len(tokens)):  # the verb is CREATE, never ON
        if word(tokens[at]) == "ON":
            return _name_at(tokens, at + 1)[0]
    return None


def _dropped_at(tokens: list[Token], verb_at: int) -> int:
    """Where a DROP <kind> [IF EXISTS] [schema.]name or an ALTER TABLE names its object."""
    at = verb_at + 2
    if [word(token) for token in tokens[at : at + 2]] == ["IF", "EXISTS"]:
        at += 2
    return at


def _dropped_or_altered(tokens: list[Token], verb_at: int) -> str | None:
    """The object a DROP <kind> [IF EXISTS] name or an ALTER TABLE name acts on."""
    return _name_at(tokens, _dropped_at(tokens, verb_at))[0]


def _pragma(tokens: list[Token], verb_at: int) -> tuple[str, str | None] | None:
    """PRAGMA [schema.]name [= value | (value)]: the name, and the value if one is given."""
    name, at = _name_at(tokens, verb_at + 1)
    if name is None:
        return None
    if at < len(tokens) and tokens[at].text in ("=", "("):
        return name, tokens[at + 1].text if at + 1 < len(tokens) else ""
    return name, None


def _server_object(tokens: list[Token]) -> str | None:
    """The name after the first `sqlgate.` (the records' schema) in the statement, if any."""
    for at in range(len(tokens) - 2):
        if (
            fold_name(tokens[at].text) == SERVER_SCHEMA
            and tokens[at + 1].token_type == TokenType.DOT
        ):
            return tokens[at + 2].text
    return None


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
        # only a quoted name or string starts with a quote: its quotes around the text (an
        # unterminated one never gets here, a non-ASCII one is longer than one character)
        if raw[:1] in _CLOSING_QUOTE:
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
    target, after = _dml_target(tokens, verb_at, kind) if kind in DML_KINDS else (None, 0)
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
    auto_id = auto_id_key(sql) if kind == "CREATE TABLE" else None
    object_schema = None
    if kind.startswith("CREATE "):
        object_schema = _schema_at(tokens, _created_at(tokens, verb_at))
    elif kind.startswith("DROP ") or kind == "ALTER TABLE":
        object_schema = _schema_at(tokens, _dropped_at(tokens, verb_at))
    return Statement(
        kind, has_where, fts_delete, writes, target, pragma=pragma, explained=explained,
        on_table=on_table, auto_id=auto_id, server_object=_server_object(tokens),
        object_schema=object_schema,
    )  # fmt: skip


@dataclass(frozen=True)
class DropIfExists:
    """`DROP <kind> IF EXISTS [schema.]name`: what would be dropped, if it existed."""

    kind: str  # TABLE, VIEW, INDEX or TRIGGER
    name: str
    schema: str | None = None


def _leading_tokens(sql: str) -> list[Token]:
    """The tokens of a statement preflight read as a DROP or CREATE (so it has them), with
    their real names, after any empty statements before it."""
    tokens = sqlite_tokens(sql)
    assert tokens is not None, "a statement of a known kind is made of tokens"
    while tokens[0].token_type == TokenType.SEMICOLON:  # its verb comes after them
        tokens = tokens[1:]
    return _with_real_names(sql, tokens)


def _schema_and_name(tokens: list[Token], at: int) -> tuple[str | None, str | None]:
    """`[schema.]name` at `at`: the schema (None when not given) and the name."""
    if at + 2 < len(tokens) and tokens[at + 1].token_type == TokenType.DOT:
        return tokens[at].text, _name_at(tokens, at)[0]
    return None, _name_at(tokens, at)[0]


def drop_if_exists(sql: str) -> DropIfExists | None:
    """The object a `DROP TABLE/VIEW/INDEX/TRIGGER IF EXISTS` names; None for anything else."""
    statement = inspect_statement(sql)
    if statement.kind not in ("DROP TABLE", "DROP VIEW", "DROP INDEX", "DROP TRIGGER"):
        return None
    tokens = _leading_tokens(sql)
    if [word(token) for token in tokens[2:4]] != ["IF", "EXISTS"]:
        return None
    schema, name = _schema_and_name(tokens, 4)
    if name is None:
        return None
    return DropIfExists(statement.kind.partition(" ")[2], name, schema)


@dataclass(frozen=True)
class CreateIfNotExists:
    """`CREATE <kind> IF NOT EXISTS [schema.]name`: what it creates, unless it exists."""

    kind: str  # TABLE, VIRTUAL TABLE, INDEX or TRIGGER
    name: str
    schema: str | None = None


_CREATED_IF_NOT_EXISTS = ("CREATE TABLE", "CREATE VIRTUAL TABLE", "CREATE INDEX", "CREATE TRIGGER")


def create_if_not_exists(sql: str) -> CreateIfNotExists | None:
    """The object a `CREATE TABLE/VIRTUAL TABLE/[UNIQUE] INDEX/TRIGGER IF NOT EXISTS`
    names; None for anything else (TEMP objects, views: no tier runs those)."""
    statement = inspect_statement(sql)
    if statement.kind not in _CREATED_IF_NOT_EXISTS:
        return None
    tokens = _leading_tokens(sql)
    at = len(statement.kind.split()) + (word(tokens[1]) == "UNIQUE")  # after the kind's words
    if [word(token) for token in tokens[at : at + 3]] != ["IF", "NOT", "EXISTS"]:
        return None
    schema, name = _schema_and_name(tokens, at + 3)
    if name is None:
        return None
    return CreateIfNotExists(statement.kind.partition(" ")[2], name, schema)


def emptied_table(sql: str) -> str | None:
    """The table a DELETE without WHERE empties; None for any other statement."""
    statement = inspect_statement(sql)
    if statement.kind == "DELETE" and not statement.has_where:
        return statement.target
    return None
