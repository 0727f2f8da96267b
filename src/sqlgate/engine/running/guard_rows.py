"""Rows of guarded tables a statement did change, judged after it ran, before its COMMIT.

The authorizer judges what a statement may do; two changes it cannot judge at prepare are
judged here on what the statement did (`engine.rules.guarded_policy`): REPLACE's delete of the row
a new one conflicts with (SQLite never reports it), and a foreign key's action that an
INSERT sets off only when a row conflicts (SQLite reports it whether or not one does).
Only a statement that did delete or change a row of a protected or append-only table is
refused; its call's transaction is rolled back by the caller.

Two witnesses, as the write path has one or the other (apsw lets a connection have either
a session or our preupdate hooks, never both):

    changeset   paths that keep undo data record every row change in a session
                (`engine.undo.capture.capturing`); a DELETE or UPDATE of a guarded row there is
                one the statement made. A row deleted and put back as it was (same key,
                same values) is no change: the session leaves it out.
    RowWatch    paths that keep none watch the guarded tables with a preupdate hook. A row
                the statement itself inserted may be replaced again (two new rows with one
                key): only rows that were there before count, told apart by each rowid
                table's highest rowid before the statement and the rows it inserted below
                it. A deleted row put back as it was is no change here either.

The refusal names the row by its key (the declared PRIMARY KEY, else the rowid) and the
key the new row repeats when a REPLACE deleted it; a hidden column's value never shows.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

import apsw

from sqlgate.engine.framing import abridged
from sqlgate.engine.names import fold_name
from sqlgate.engine.raw_text import RawText
from sqlgate.engine.rules import LiveRules, SchemaGuard, changed_row_refusal, row_change_refused
from sqlgate.engine.running.execute import row_shadow
from sqlgate.engine.sqltext import quote_identifier, quote_literal
from sqlgate.engine.statements import ROW_ACTIONS, Operation
from sqlgate.engine.undo import read_changeset
from sqlgate.errors import PolicyDenied

__all__ = ["RowWatch", "guarding", "refuse_changed_rows"]

HOOK_ID = "sqlgate-guarded-rows"
# what the watch holds at most, whatever the statement: the changes it judges (one refused
# is enough; beyond these, the rest are refused unseen) and the new rows it remembers per
# table (beyond these, a new row replaced again counts as one that was there: refused)
MAX_CHANGES = 100
MAX_FRESH = 100_000
# a table of the rules (or a guarded virtual table's shadow), if it is a table of "main"
_TABLE = (
    "SELECT name, wr FROM pragma_table_list(?) WHERE schema = 'main' "
    "AND type IN ('table', 'shadow')"
)


@dataclass(frozen=True)
class RowChange:
    """One change of a guarded row: `values` by column name (None when unreadable)."""

    table: str  # as SQLite names it
    action: str  # INSERT, UPDATE or DELETE
    values: dict[str, Any] | None
    rowid: int | None = None


def _literal(value: object) -> str:
    """A key's value as SQL writes it (a key shown is never NULL)."""
    if isinstance(value, bytes):
        return abridged(f"x'{value.hex()}'")
    if isinstance(value, RawText):  # TEXT that is not UTF-8: the SQL that makes it
        return abridged(value.sql())
    if isinstance(value, str):
        return abridged(quote_literal(value))
    return repr(value)


def _marker(value: object) -> str:
    """The placeholder of a value bound as `_bound` binds it."""
    return "CAST(? AS TEXT)" if isinstance(value, RawText) else "?"


def _bound(value: object) -> object:
    """A value as it is bound: TEXT that is not UTF-8 as its bytes (`_marker` casts them)."""
    return value.data if isinstance(value, RawText) else value


def _named(names: list[str], row: tuple[Any, ...] | None) -> dict[str, Any] | None:
    """`row`'s values by column name; None when they are unknown or do not fit."""
    if row is None or len(names) != len(row):
        return None
    return {name: row[at] for at, name in enumerate(names)}


def _columns(conn: apsw.Connection, table: str, kinds: tuple[int, ...]) -> list[str]:
    """The table's columns whose `hidden` kind (pragma table_xinfo) is among `kinds`:
    0 plain, 3 stored generated (2 is a VIRTUAL generated column, which holds nothing)."""
    return [
        str(name)
        for name, hidden in conn.execute(
            "SELECT name, hidden FROM pragma_table_xinfo(?, 'main') ORDER BY cid", (table,)
        )
        if int(hidden) in kinds
    ]


def _primary_key(conn: apsw.Connection, table: str) -> list[str]:
    rows = conn.execute(
        "SELECT name FROM pragma_table_info(?, 'main') WHERE pk > 0 ORDER BY pk", (table,)
    )
    return [str(name) for (name,) in rows]


def _unique_keys(conn: apsw.Connection, table: str) -> list[list[str]]:
    """The table's keys a new row may conflict on: its PRIMARY KEY, then each UNIQUE index."""
    keys = [_primary_key(conn, table)]
    indexes = list(
        conn.execute("SELECT name FROM pragma_index_list(?, 'main') WHERE \"unique\"", (table,))
    )
    for (index,) in indexes:
        columns = conn.execute(
            "SELECT name FROM pragma_index_info(?, 'main') ORDER BY seqno", (index,)
        )
        keys.append([str(name) for (name,) in columns])
    return keys


class _Words:
    """How a refusal names one changed row: by its key, and the key a new row repeats."""

    def __init__(self, conn: apsw.Connection, rules: LiveRules, change: RowChange) -> None:
        self.conn = conn
        self.rules = rules
        self.change = change
        self.values = change.values or {}

    def _shown(self, columns: list[str]) -> str:
        table = self.change.table
        return ", ".join(
            f"{column} = "
            + ("(hidden)" if self.rules.is_hidden(table, column) else _literal(self.values[column]))
            for column in columns
        )

    def _known(self, columns: list[str]) -> bool:
        return bool(columns) and all(self.values.get(column) is not None for column in columns)

    def row(self) -> str:
        key = _primary_key(self.conn, self.change.table)
        if self._known(key):
            return self._shown(key)
        if self.change.rowid is not None:
            return f"rowid = {self.change.rowid}"
        return "(its key could not be read)"

    def conflict(self) -> str | None:
        """The key of the deleted row that a row now in the table repeats, or None."""
        if self.change.action != "DELETE":
            return None
        table = quote_identifier(self.change.table)
        for key in _unique_keys(self.conn, self.change.table):
            if not self._known(key):
                continue
            test = " AND ".join(
                f"{quote_identifier(column)} IS {_marker(self.values[column])}" for column in key
            )
            sql = f"SELECT 1 FROM main.{table} WHERE {test} LIMIT 1"
            values = [_bound(self.values[column]) for column in key]
            if self.conn.execute(sql, values).fetchone() is not None:
                return self._shown(key)
        return None


def _refuse(conn: apsw.Connection, rules: LiveRules, change: RowChange) -> None:
    words = _Words(conn, rules, change)
    refusal = changed_row_refusal(change.table, change.action, words.row(), words.conflict(), rules)
    raise PolicyDenied(f"refused and rolled back: {refusal}")


def _guarded(rules: LiveRules) -> frozenset[str]:
    return rules.protected | rules.append_only


def refuse_changed_rows(
    conn: apsw.Connection, changeset: bytes, rules: LiveRules, facts: Iterable[Operation]
) -> None:
    """PolicyDenied when `changeset` (a statement's, whose authorizer facts are `facts`)
    holds a change of a guarded row the rules refuse. Call it inside the transaction."""
    guarded = _guarded(rules)
    named = [op for op in facts if op.action in ROW_ACTIONS]
    if not any(fold_name(op.target or "") in guarded for op in named):
        return  # no fact names a guarded table: the changeset holds none of their rows
    updated = {fold_name(op.target or "") for op in named if op.action == "UPDATE"}
    for at, change in enumerate(apsw.Changeset.iter(changeset)):
        if not row_change_refused(change.name, change.op, rules):
            continue
        action = change.op
        if action == "UPDATE" and fold_name(change.name) not in updated:
            action = "DELETE"  # no UPDATE of it: a REPLACE put a new row under the old key
        try:
            row = change.new if change.op == "INSERT" else change.old
        except UnicodeDecodeError:  # TEXT that is not UTF-8: the changeset's own reader
            found = next(islice(read_changeset(changeset), at, None))
            row = found.new if change.op == "INSERT" else found.old
        assert row is not None  # a changeset gives each change's row
        names = _columns(conn, change.name, (0,))
        by_rowid = len(row) == len(names) + 1  # a table without a PRIMARY KEY
        values = _named(names, row[1:] if by_rowid else row)
        rowid = int(row[0]) if by_rowid else None  # type: ignore[arg-type]  # a rowid: an int
        _refuse(conn, rules, RowChange(change.name, action, values, rowid))


@dataclass
class _Watched:
    """What the watch knows of one guarded table from before the statement."""

    name: str
    owner: str  # the guarded table refusals name: itself, or the virtual table it shadows
    without_rowid: bool
    high: int | None  # its highest rowid then (None: it was empty, or has no rowid)
    stored: list[str]  # its stored columns, in the order the hook gives their values
    key: list[int]  # positions of its PRIMARY KEY among them (WITHOUT ROWID)
    fresh: set[Any] = field(default_factory=set)  # keys of rows inserted that old ones had


def _row(change: apsw.PreUpdate) -> tuple[Any, ...] | None:
    """The row's values as the hook gives them: old for a DELETE or UPDATE, new for an
    INSERT; None when apsw cannot read them (a table with a VIRTUAL generated column)."""
    try:
        values = change.new if change.op == "INSERT" else change.old
        assert values is not None  # the hook gives an INSERT's new row, the others' old
        return tuple(values)
    except (apsw.RangeError, UnicodeDecodeError):
        return None


class RowWatch:
    """Preupdate hook: the changes a statement makes to guarded rows that were there before
    it (see the module's docstring). Install it with no session on the connection."""

    def __init__(self, conn: apsw.Connection, rules: LiveRules) -> None:
        self.conn = conn
        self.rules = rules
        self.changes: list[RowChange] = []  # the first MAX_CHANGES of them
        self.seen = 0  # how many there were
        self.tables: dict[str, _Watched] = {}
        shadows = frozenset(rules.shadow_of)
        # a virtual table's rows are its row shadow's (fts5 _docsize, rtree _rowid)
        rows = {shadow for shadow in shadows if row_shadow(shadow, shadows)}
        for folded in sorted(_guarded(rules) | rows):
            for name, without_rowid in list(conn.execute(_TABLE, (folded,))):
                self._watch(str(name), bool(without_rowid), rules.shadow_of.get(folded))

    def _watch(self, name: str, without_rowid: bool, owner: str | None = None) -> None:
        high = None
        key: list[int] = []
        stored = _columns(self.conn, name, (0, 3))
        if without_rowid:
            key = [stored.index(column) for column in _primary_key(self.conn, name)]
        else:
            sql = f"SELECT max(rowid) FROM main.{quote_identifier(name)}"
            found = self.conn.execute(sql).fetchone()
            assert found is not None  # an aggregate gives one row
            (high,) = found
        shown = name if owner is None else self.rules.name_of(owner)
        self.tables[fold_name(name)] = _Watched(name, shown, without_rowid, high, stored, key)

    def _key(self, table: _Watched, change: apsw.PreUpdate, row: tuple[Any, ...] | None) -> Any:
        """The row's key: its rowid, or its PRIMARY KEY's values (None: unreadable)."""
        if not table.without_rowid:
            return change.rowid
        if row is None:
            return None
        return tuple(row[at] for at in table.key)

    def _is_new(self, table: _Watched, key: Any) -> bool:
        """Whether the row of `key` was inserted by the statement (not there before): one
        it remembered inserting, or one above the highest rowid there was."""
        return key in table.fresh or (
            not table.without_rowid and (table.high is None or key > table.high)
        )

    def __call__(self, change: apsw.PreUpdate) -> None:
        table = self.tables.get(fold_name(change.table_name))
        if table is None:
            return
        row = _row(change)
        key = self._key(table, change, row)
        if not row_change_refused(table.owner, change.op, self.rules):  # an append
            if key is not None and not self._is_new(table, key) and len(table.fresh) < MAX_FRESH:
                table.fresh.add(key)  # a new row where one that was there could have been
            return
        if change.op != "INSERT" and self._is_new(table, key):
            return  # a row the statement inserted: as a session sees it, an INSERT still
        self.seen += 1
        if len(self.changes) < MAX_CHANGES:
            rowid = None if table.without_rowid else int(change.rowid)
            values = _named(table.stored, row) if table.owner == table.name else None
            self.changes.append(RowChange(table.owner, change.op, values, rowid))

    def _now(self, change: RowChange, values: dict[str, Any]) -> tuple[Any, ...] | None:
        """The row under the changed row's key now (its declared PRIMARY KEY, else its
        rowid, as a session keys it), its columns those `values` (the old row's) name."""
        key = _primary_key(self.conn, change.table)
        if key and all(values.get(column) is not None for column in key):
            where = " AND ".join(f"{quote_identifier(column)} IS ?" for column in key)
            args = [values[column] for column in key]
        elif change.rowid is not None:
            where, args = "rowid = ?", [change.rowid]
        else:
            return None
        shown = ", ".join(quote_identifier(column) for column in values)
        table = quote_identifier(change.table)
        found = self.conn.execute(f"SELECT {shown} FROM main.{table} WHERE {where}", args)
        try:
            row = found.fetchone()
        except UnicodeDecodeError:  # the row now holds TEXT that is not UTF-8: not as it was
            return None  # (`values`, read by the hook, hold none: the hook reads no such row)
        return None if row is None else tuple(row)

    def _put_back(self, change: RowChange) -> bool:
        """Whether the deleted row is in the table again as it was: same key, same values."""
        values = change.values
        return (
            change.action == "DELETE"
            and values is not None
            and self._now(change, values) == tuple(values.values())
        )

    def refuse(self) -> None:
        """PolicyDenied for the first change the rules refuse (call it after the run); when
        there were more than it kept, for the first one, put back or not."""
        for change in self.changes:
            if not self._put_back(change):
                _refuse(self.conn, self.rules, change)
        if self.seen > len(self.changes):
            _refuse(self.conn, self.rules, self.changes[0])


@contextmanager
def guarding(conn: apsw.Connection, rules: LiveRules) -> Iterator[None]:
    """Around one statement that keeps no changeset, inside its transaction: refuse
    (PolicyDenied) when, once it has run, it changed a guarded row (`RowWatch`) or left in
    the schema what would change a guarded table when another program fires it
    (`engine.rules.guard_schema`). Nothing is watched while no table is guarded."""
    if not _guarded(rules):
        yield
        return
    schema = SchemaGuard(conn, rules)
    watch = RowWatch(conn, rules)
    conn.preupdate_hook(watch, id=HOOK_ID)
    try:
        yield
    finally:
        conn.preupdate_hook(None, id=HOOK_ID)
    watch.refuse()
    schema.refuse()
