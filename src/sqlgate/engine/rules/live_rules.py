"""The table rules as they apply to the schema now: which live tables and columns they name.

A rule names a table; the table may be renamed later (by the agent, through
destructive_query, or by another program), so each rule is anchored to the table's root
page the first time it is seen, and follows that page through a rename. A rule applies to
the table holding its name and to the table its anchor points at, both when they differ:
after `ALTER TABLE users RENAME TO people` and a new `users`, both keep the rule.

A hidden column whose table exists but which the table no longer has (renamed or dropped by
another program) fails closed: every column of that table is hidden until the rule names a
column again. A rule for a table that does not exist yet applies once it appears.

Resolving reads the schema, so it is done again only when `PRAGMA schema_version` moves
(any connection's schema change moves it); with no rules it costs nothing.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field

import apsw

from sqlgate.engine.names import fold_name
from sqlgate.engine.rules.guard_facts import guarded_parents, guarded_shadows
from sqlgate.engine.rules.hidden_facts import hidden_facts
from sqlgate.engine.rules.table_rules import FLAG_ORIGIN, TableRules
from sqlgate.engine.schema_cookie import read_schema_version

__all__ = ["NO_RULES", "LiveRules", "RuleResolver"]

_TABLES = "SELECT name, rootpage FROM main.sqlite_schema WHERE type = 'table'"
_COLUMNS = "SELECT name FROM pragma_table_xinfo(?, 'main')"
_TRIGGERS = "SELECT name FROM main.sqlite_schema WHERE type = 'trigger'"


@dataclass(frozen=True)
class LiveRules:
    """Folded names of what the rules cover in the schema as it is now.

    `hidden`: table -> its hidden columns. `sealed`: tables none of whose columns the agent
    reads (a rule's column is missing: fail closed). `triggers`: every trigger's name, so a
    read inside a trigger body is told from one inside a view (both name themselves as the
    authorizer's fifth argument). `origin`: who set the rules, for refusals.
    """

    hidden: Mapping[str, frozenset[str]] = field(default_factory=dict)
    sealed: frozenset[str] = frozenset()
    protected: frozenset[str] = frozenset()
    append_only: frozenset[str] = frozenset()
    triggers: frozenset[str] = frozenset()
    origin: str = FLAG_ORIGIN
    # the names as the rules give them, for messages: folded table -> name shown
    shown: Mapping[str, str] = field(default_factory=dict)
    # derived for the guarded tables (`engine.rules.guard_facts`): the tables they reference, and
    # the shadow tables of the guarded virtual tables (shadow -> virtual table)
    guarded_parents: frozenset[str] = frozenset()
    shadow_of: Mapping[str, str] = field(default_factory=dict)
    # derived from the schema (`engine.rules.hidden_facts`): tables no read of which is allowed,
    # indexes over a hidden column, tables a write to which can test a guess
    unreadable: frozenset[str] = frozenset()
    hidden_indexes: frozenset[str] = frozenset()
    oracle_tables: frozenset[str] = frozenset()

    @property
    def active(self) -> bool:
        return bool(self.hidden or self.sealed or self.protected or self.append_only)

    @property
    def hides(self) -> bool:
        """Whether any column is hidden (the statement checks of `engine.rules.hidden_checks`)."""
        return bool(self.hidden or self.sealed)

    def hidden_in(self, table: str | None) -> frozenset[str]:
        """The hidden columns of `table` (folded); every column's when it is sealed."""
        if table is None:
            return frozenset()
        return self.hidden.get(fold_name(table), frozenset())

    def is_hidden(self, table: str | None, column: str | None) -> bool:
        """Whether the agent may not see `table`.`column` (names as SQLite passes them)."""
        if table is None:
            return False
        folded = fold_name(table)
        if folded in self.sealed:
            return True
        columns = self.hidden.get(folded)
        return columns is not None and column is not None and fold_name(column) in columns

    def name_of(self, table: str) -> str:
        """The table's name for a message: as the rule gives it when a rule names it."""
        return self.shown.get(fold_name(table), table)


NO_RULES = LiveRules()


class RuleResolver:
    """Resolves one database's `TableRules` per connection, again after schema changes."""

    def __init__(self, rules: TableRules) -> None:
        self.rules = rules
        self._anchors: dict[str, int] = {}  # folded rule table -> root page it was seen at
        self._cache: weakref.WeakKeyDictionary[apsw.Connection, tuple[int, LiveRules]] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()

    def live(self, conn: apsw.Connection) -> LiveRules:
        """The rules as they apply to `conn`'s schema now."""
        if not self.rules:
            return NO_RULES
        # the statement's authorizer set-up (its shadow tables) takes this read over
        version = read_schema_version(conn, hand_on=True)
        with self._lock:
            cached = self._cache.get(conn)
            if cached is not None and cached[0] == version:
                return cached[1]
            live = self._resolve(conn)
            self._cache[conn] = (version, live)
            return live

    def _tables_of(
        self, rule_table: str, by_name: dict[str, tuple[str, int]], by_page: dict[int, str]
    ) -> list[str]:
        """Folded names of the live tables a rule about `rule_table` covers."""
        folded = fold_name(rule_table)
        covered: list[str] = []
        if folded in by_name:
            page = by_name[folded][1]
            self._anchors.setdefault(folded, page)
            covered.append(folded)
        anchor = self._anchors.get(folded)
        if anchor is not None and anchor in by_page and by_page[anchor] not in covered:
            covered.append(by_page[anchor])
        return covered

    def _resolve(self, conn: apsw.Connection) -> LiveRules:
        by_name: dict[str, tuple[str, int]] = {}
        by_page: dict[int, str] = {}
        for name, page in conn.execute(_TABLES):
            by_name[fold_name(str(name))] = (str(name), int(page or 0))
            if page:
                by_page[int(page)] = fold_name(str(name))
        rules = self.rules
        shown: dict[str, str] = {}
        hidden: dict[str, set[str]] = {}
        sealed: set[str] = set()
        for rule in rules.hidden:
            for table in self._tables_of(rule.table, by_name, by_page):
                shown.setdefault(table, rule.table)
                columns = {fold_name(str(c)) for (c,) in conn.execute(_COLUMNS, (table,))}
                if fold_name(rule.column) in columns:
                    hidden.setdefault(table, set()).add(fold_name(rule.column))
                else:
                    sealed.add(table)
        protected: set[str] = set()
        append_only: set[str] = set()
        for names, into in ((rules.protected, protected), (rules.append_only, append_only)):
            for rule_table in names:
                for table in self._tables_of(rule_table, by_name, by_page):
                    shown.setdefault(table, rule_table)
                    into.add(table)
                into.add(fold_name(rule_table))  # a table created later under that name
        for rule in rules.hidden:  # likewise, its column hidden once the table appears
            hidden.setdefault(fold_name(rule.table), set()).add(fold_name(rule.column))
        triggers = frozenset(fold_name(str(n)) for (n,) in conn.execute(_TRIGGERS))
        folded = {table: frozenset(cols) for table, cols in hidden.items()}
        facts = hidden_facts(conn, folded)
        for table, cols in facts.hidden.items():
            folded[table] = folded.get(table, frozenset()) | cols
        return LiveRules(
            hidden=folded,
            sealed=frozenset(sealed),
            unreadable=facts.unreadable,
            hidden_indexes=facts.hidden_indexes,
            oracle_tables=facts.oracle_tables,
            protected=frozenset(protected),
            append_only=frozenset(append_only),
            triggers=triggers,
            origin=rules.origin,
            shown=shown,
            guarded_parents=guarded_parents(conn, protected | append_only),
            shadow_of=guarded_shadows(conn, protected | append_only),
        )
