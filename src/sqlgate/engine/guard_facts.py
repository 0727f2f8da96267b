"""What the schema says about the user's protected and append-only tables, beyond their
names: facts the authorizer is never told.

    parents     tables a guarded table's foreign keys reference: `ALTER TABLE parent RENAME`
                rewrites the guarded table's REFERENCES clause, and SQLite names only the
                parent to the authorizer
    replacing   append-only tables whose definition turns a conflicting INSERT into a
                delete and an insert (`ON CONFLICT REPLACE` on a key or column)
    replacing_triggers
                triggers whose body holds an `INSERT OR REPLACE` or `REPLACE INTO`: an
                insert of theirs into an append-only table may delete a row

`replaces(sql)` reads a statement the same way: whether its own conflict clause is REPLACE.
REPLACE is found among the statement's keyword tokens (sqlglot's tokenizer, as
`engine.sqltext` uses it), so a `replace()` function call or a 'REPLACE' string is not one.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import apsw

from sqlgate.engine.names import fold_name
from sqlgate.engine.sqltext import bounded_cache, sqlite_tokens, word

__all__ = ["GuardFacts", "conflict_clause", "guard_facts", "replaces"]

_CONFLICT_WORDS = frozenset({"ROLLBACK", "ABORT", "FAIL", "IGNORE", "REPLACE"})


@dataclass(frozen=True)
class GuardFacts:
    parents: frozenset[str] = frozenset()
    replacing: frozenset[str] = frozenset()
    replacing_triggers: frozenset[str] = frozenset()


def _words(sql: str) -> list[str] | None:
    tokens = sqlite_tokens(sql)
    return None if tokens is None else [word(token) for token in tokens]


@bounded_cache
def conflict_clause(sql: str) -> str | None:
    """The conflict resolution an INSERT or REPLACE statement names itself (`INSERT OR
    IGNORE` -> "IGNORE", `REPLACE INTO` -> "REPLACE"), or None; its verb is the first
    INSERT or REPLACE INTO (after a WITH clause, whose bodies are SELECTs). Unreadable text:
    "REPLACE", the reading that refuses."""
    words = _words(sql)
    if words is None:
        return "REPLACE"
    for at, current in enumerate(words):
        if current == "REPLACE" and words[at + 1 : at + 2] == ["INTO"]:
            return "REPLACE"
        if current == "INSERT":
            following = words[at + 1 : at + 3]
            if following[:1] == ["OR"] and following[1:] and following[1] in _CONFLICT_WORDS:
                return following[1]
            return None
    return None


def replaces(sql: str) -> bool:
    """Whether the text holds an INSERT OR REPLACE, a REPLACE INTO or an ON CONFLICT REPLACE
    anywhere (a trigger body holds several statements; a table definition its keys)."""
    words = _words(sql)
    if words is None:
        return True
    pairs = zip(["", *words[:-1]], words, [*words[1:], ""], strict=True)
    return any(
        current == "REPLACE" and (before == "CONFLICT" or following == "INTO")
        for before, current, following in pairs
    )


def guard_facts(
    conn: apsw.Connection, guarded: Iterable[str], append_only: Iterable[str]
) -> GuardFacts:
    """The facts above for the tables named (folded names) in `conn`'s schema now."""
    tables = frozenset(guarded)
    if not tables:
        return GuardFacts()
    parents: set[str] = set()
    for table in sorted(tables):
        for (parent,) in conn.execute(
            'SELECT DISTINCT "table" FROM pragma_foreign_key_list(?)', (table,)
        ):
            if fold_name(str(parent)) != table:
                parents.add(fold_name(str(parent)))
    appending = frozenset(append_only)
    replacing: set[str] = set()
    triggers: set[str] = set()
    for kind, name, sql in conn.execute(
        "SELECT type, name, sql FROM sqlite_schema WHERE type IN ('table', 'trigger') "
        "AND sql IS NOT NULL"
    ):
        if kind == "table" and fold_name(str(name)) in appending and replaces(str(sql)):
            replacing.add(fold_name(str(name)))
        elif kind == "trigger" and replaces(str(sql)):
            triggers.add(fold_name(str(name)))
    return GuardFacts(frozenset(parents), frozenset(replacing), frozenset(triggers))
