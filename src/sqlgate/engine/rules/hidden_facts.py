"""What the schema adds to hidden columns: the objects that hold, order or test their values.

Read from the schema when the rules are resolved (`engine.rules.live_rules`), so once per schema
change. Stored SQL is matched word by word (`names_in`), which errs towards "it names a
hidden column": a false match refuses more, never less.

    generated columns     whose expression names a hidden column: hidden too
    sqlite_stat4.sample   hidden whenever any column is (ANALYZE samples hold index keys)
    undo data             hidden whenever any column is: every server column that holds row
                          values or their digests (`engine.server_columns.ROW_VALUES`)
    fts5 tables           indexing a hidden column of their content table, their shadow
                          tables and fts5vocab tables over them: unreadable (MATCH answers
                          whether a guess is there)
    hidden indexes        an index whose columns, expressions or WHERE name a hidden column:
                          a scan of it returns rows in hidden order (`engine.rules.hidden_checks`)
    oracle tables         a write to them can tell a right guess from a wrong one: a CHECK,
                          multi-column key, UNIQUE/partial/expression index or generated
                          column mixing a hidden column with others, or a FOREIGN KEY to one
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

import apsw

from sqlgate.engine.names import fold_name
from sqlgate.engine.server_columns import ROW_VALUES
from sqlgate.engine.sqltext import sqlite_tokens

__all__ = ["VALUE_TABLES", "HiddenFacts", "hidden_facts", "names_in"]

# tables of SQLite's and sqlgate's that hold row values: while any column is hidden, these
# of their columns are too (whatever the user's table is)
_VALUE_COLUMNS = {"sqlite_stat4": frozenset({"sample"}), **ROW_VALUES}
VALUE_TABLES = frozenset(_VALUE_COLUMNS)
FTS_SHADOWS = ("_data", "_idx", "_content", "_docsize", "_config")
_OBJECTS = "SELECT type, name, tbl_name, sql FROM main.sqlite_schema WHERE sql IS NOT NULL"
_XINFO = "SELECT name, hidden FROM pragma_table_xinfo(?, 'main')"
_INDEXES = "SELECT name, \"unique\", partial FROM pragma_index_list(?, 'main')"
_INDEX_COLUMNS = "SELECT name FROM pragma_index_xinfo(?, 'main') WHERE key = 1"
_FOREIGN_KEYS = 'SELECT "table", "to" FROM pragma_foreign_key_list(?, \'main\')'


def names_in(sql: str) -> Counter[str]:
    """Each word of `sql` (names, keywords, strings' text), folded, with how often it occurs."""
    tokens = sqlite_tokens(sql)
    if tokens is None:  # unreadable text: every word a name, split crudely
        return Counter(fold_name(w) for w in sql.replace("(", " ").replace(")", " ").split())
    return Counter(fold_name(token.text) for token in tokens)


@dataclass(frozen=True)
class HiddenFacts:
    """Folded names; `hidden` adds to the rules' own hidden columns."""

    hidden: Mapping[str, frozenset[str]] = field(default_factory=dict)
    unreadable: frozenset[str] = frozenset()
    hidden_indexes: frozenset[str] = frozenset()
    oracle_tables: frozenset[str] = frozenset()


def _generated(conn: apsw.Connection, table: str, sql: str, hidden: frozenset[str]) -> set[str]:
    """Generated columns of `table` whose expression may name a hidden column."""
    generated = {
        fold_name(str(name)) for name, kind in conn.execute(_XINFO, (table,)) if kind in (2, 3)
    }
    if not generated or not hidden & set(names_in(sql)):
        return set()
    return generated  # which expression names it is not parsed: all of them, to be safe


def _indexes(
    conn: apsw.Connection, table: str, hidden: frozenset[str], sqls: Mapping[str, str]
) -> tuple[set[str], bool]:
    """Indexes of `table` over a hidden column, and whether one of them is a guess oracle."""
    found: set[str] = set()
    oracle = False
    for name, unique, partial in conn.execute(_INDEXES, (table,)):
        index = fold_name(str(name))
        keys = [c for (c,) in conn.execute(_INDEX_COLUMNS, (str(name),))]
        columns = {fold_name(str(c)) for c in keys if c is not None}
        if not hidden & (columns | set(names_in(sqls.get(index, "")))):
            continue
        found.add(index)
        expression = None in keys
        if partial or (unique and (len(keys) > 1 or expression)):
            oracle = True
    return found, oracle


def hidden_facts(conn: apsw.Connection, hidden: Mapping[str, frozenset[str]]) -> HiddenFacts:
    """The facts above for the live tables in `hidden` (folded table -> folded columns)."""
    live = {t: cols for t, cols in hidden.items() if cols}
    if not live:
        return HiddenFacts()
    objects = [(str(k), str(n), str(t), str(s)) for k, n, t, s in conn.execute(_OBJECTS)]
    sqls = {fold_name(n): s for _, n, _, s in objects}
    extra: dict[str, frozenset[str]] = dict(_VALUE_COLUMNS)
    hidden_indexes: set[str] = set()
    oracles: set[str] = set()
    tables = [n for kind, n, _, _ in objects if kind == "table"]
    for table in tables:
        folded = fold_name(table)
        columns = live.get(folded)
        if columns:
            sql = sqls.get(folded, "")
            generated = _generated(conn, table, sql, columns)
            if generated:
                extra[folded] = frozenset(generated)
            counts = names_in(sql)
            if generated or any(counts[c] > 1 for c in columns):  # CHECK, keys, generated
                oracles.add(folded)
            found, oracle = _indexes(conn, table, columns, sqls)
            hidden_indexes |= found
            if oracle:
                oracles.add(folded)
        for parent, to in conn.execute(_FOREIGN_KEYS, (table,)):
            if to is not None and fold_name(str(to)) in live.get(fold_name(str(parent)), ()):
                oracles.add(folded)
    unreadable: set[str] = set()
    for kind, name, _, sql in objects:
        words = names_in(sql)
        if kind != "table" or "fts5" not in words:
            continue
        for table, columns in live.items():
            if table in words and columns & set(words):
                base = fold_name(name)
                unreadable |= {base, *(base + suffix for suffix in FTS_SHADOWS)}
    for kind, name, _, sql in objects:
        words = names_in(sql)
        if kind == "table" and "fts5vocab" in words and unreadable & set(words):
            unreadable.add(fold_name(name))
    return HiddenFacts(
        hidden=extra,
        unreadable=frozenset(unreadable),
        hidden_indexes=frozenset(hidden_indexes),
        oracle_tables=frozenset(oracles),
    )
