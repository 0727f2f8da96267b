"""Gathering facts: an authorizer that turns SQLite's callbacks into `Operation`s.

It decides nothing itself: each fact goes to `policy.decide`, and the first refusal is kept
so the caller can say exactly why the statement was refused. SQLite consults the authorizer
only while it prepares a statement, so agent SQL is always prepared uncached, and the
recorder stays installed while the statement runs, when virtual table modules (fts5, pragma
functions) prepare nested statements of their own.

One fact the authorizer cannot see is what a module's nested statement does to its rows:
FTS5's 'delete-all' and 'rebuild' commands prepare `DELETE FROM <shadow table>` without a
WHERE, whatever way the command value was written (literal, bound, computed). A statement
tracer reports each nested statement's text while the recorder is installed, and a DELETE
without WHERE becomes an `EMPTY_TABLE` fact for the policy.

Nor is the authorizer told the parent table of a FOREIGN KEY: `check_references` reads the
foreign keys SQLite stored for the tables a statement created or altered, after it ran and
before its transaction commits, and `policy.decide_reference` judges each.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import apsw

from sqlgate.engine.names import SERVER_SCHEMA, fold_name
from sqlgate.engine.rules.live_rules import NO_RULES, LiveRules
from sqlgate.engine.rules.rule_policy import decide_with_rules
from sqlgate.engine.schema_cookie import schema_version
from sqlgate.engine.statements import (
    WRITE_ACTIONS,
    Decision,
    Operation,
    Reference,
    Tier,
    decide_reference,
    in_main,
)
from sqlgate.errors import PolicyDenied

__all__ = ["PolicyRecorder", "check_references", "recording", "shadow_tables"]

_PREFIX = "SQLITE_"
_TRACER_ID = "sqlgate-policy-tracer"
_SHADOW_TABLES = "SELECT name FROM pragma_table_list WHERE schema = 'main' AND type = 'shadow'"
_shadow_cache: weakref.WeakKeyDictionary[apsw.Connection, tuple[int, frozenset[str]]] = (
    weakref.WeakKeyDictionary()
)
_shadow_cache_lock = threading.Lock()


def shadow_tables(conn: apsw.Connection) -> frozenset[str]:
    """Folded names (`fold_name`) of the main database's virtual-table shadow tables (module
    bookkeeping; the records' are sqlgate's, which no agent statement writes).

    Listing them scans the schema; they only change with the schema, so the list is kept
    per connection and read again only when `PRAGMA schema_version` has moved.
    """
    version = schema_version(conn)
    with _shadow_cache_lock:
        cached = _shadow_cache.get(conn)
    if cached is not None and cached[0] == version:
        return cached[1]
    names = frozenset(fold_name(str(name)) for (name,) in conn.execute(_SHADOW_TABLES))
    with _shadow_cache_lock:
        _shadow_cache[conn] = (version, names)
    return names


def _action_name(code: int) -> str:
    name = apsw.mapping_authorizer_function.get(code)
    if not isinstance(name, str):
        return f"UNKNOWN_{code}"
    return name[len(_PREFIX) :] if name.startswith(_PREFIX) else name


class PolicyRecorder:
    """Authorizer callback (and statement tracer) for one statement in one tier.

    `protected`: the folded names of the server objects in the main database (the policy
    judges them as (main, name); every object of the attached records is one too)."""

    def __init__(self, tier: Tier, protected: frozenset[str], rules: LiveRules = NO_RULES) -> None:
        self.tier = tier
        self.protected = protected
        self.server_objects = in_main(protected)
        self.rules = rules
        self.operations: list[Operation] = []
        # hidden columns whose reads were answered NULL: (table, column) as SQLite named them
        self.hidden_reads: dict[tuple[str, str], None] = {}
        self.refusal: Decision | None = None
        self.running = False  # set once preparation is over: later facts are nested
        # (index, table) of a plan allowed to walk an index over a hidden column, its result
        # being free of row order (`engine.rules.hidden_checks`): its errors must be too
        self.hidden_order: tuple[str, str] | None = None
        self.shadow_tables: frozenset[str] = frozenset()  # folded; set by `recording`

    def _verdict(self, op: Operation) -> Decision:
        self.operations.append(op)
        verdict = decide_with_rules(self.tier, op, self.server_objects, self.rules, self.operations)
        if not verdict.allowed and self.refusal is None:
            self.refusal = verdict
        if verdict.ignore:
            self.hidden_reads[(op.target or "", op.detail or "")] = None
        return verdict

    def _allowed(self, op: Operation) -> bool:
        return self._verdict(op).allowed

    def __call__(
        self,
        code: int,
        arg1: str | None,
        arg2: str | None,
        database: str | None,
        inside: str | None,
    ) -> int:
        action = _action_name(code)
        # rtree prepares the writes to its shadow tables while it connects, inside the
        # preparation of the agent's statement: module bookkeeping all the same
        module_write = (
            inside is None
            and action in WRITE_ACTIONS
            and fold_name(arg1 or "") in self.shadow_tables
        )
        nested = self.running or module_write
        verdict = self._verdict(Operation(action, arg1, arg2, database, inside, nested=nested))
        if not verdict.allowed:
            return int(apsw.SQLITE_DENY)
        return int(apsw.SQLITE_IGNORE if verdict.ignore else apsw.SQLITE_OK)

    def statement_started(self, event: Mapping[str, Any]) -> None:
        """SQLITE_TRACE_STMT callback; `trigger` marks trigger and virtual table statements.

        A refusal raises: apsw hands the exception to the running statement, which stops
        and fails (its transaction is rolled back by the caller).
        """
        if not event.get("trigger"):
            return
        from sqlgate.engine.statements import emptied_table  # rare: not paid at every start

        table = emptied_table(str(event.get("sql") or ""))
        if table is None:
            return
        if not self._allowed(Operation("EMPTY_TABLE", table, nested=True)):
            raise apsw.AuthError(self.refusal.reason if self.refusal else "not authorized")


@contextmanager
def recording(conn: apsw.Connection, recorder: PolicyRecorder) -> Iterator[PolicyRecorder]:
    """Install `recorder` as the connection's authorizer and tracer for the block."""
    recorder.shadow_tables = shadow_tables(conn)
    conn.authorizer = recorder
    conn.trace_v2(apsw.SQLITE_TRACE_STMT, recorder.statement_started, id=_TRACER_ID)
    try:
        yield recorder
    finally:
        conn.trace_v2(0, None, id=_TRACER_ID)
        conn.authorizer = None


def _created_or_altered(operations: Iterable[Operation]) -> set[str]:
    tables = set()
    for op in operations:
        if op.action == "CREATE_TABLE" and op.target:
            tables.add(op.target)
        elif op.action == "ALTER_TABLE" and op.detail:  # (database, table)
            tables.add(op.detail)
    return tables


def check_references(
    conn: apsw.Connection, operations: Iterable[Operation], protected: frozenset[str]
) -> None:
    """Refuse (PolicyDenied) a foreign key that a statement, whose authorizer facts are
    `operations`, gave a table it created or altered, when the policy does not allow it.
    Call it after the statement ran, inside its transaction, so a refusal rolls it back.
    `protected`: folded names of the server objects in main; the tables are main's (the
    policy refused any other database's CREATE or ALTER)."""
    server_objects = in_main(protected)
    for table in sorted(_created_or_altered(operations)):
        for column, parent in conn.execute(
            'SELECT "from", "table" FROM pragma_foreign_key_list(?, \'main\')', (table,)
        ):
            ref = Reference(table, str(column), str(parent))
            verdict = decide_reference(ref, server_objects)
            if not verdict.allowed:
                raise PolicyDenied(f"refused: {verdict.reason}")
            if _only_in_records(conn, ref.parent):
                raise PolicyDenied(_records_key(ref))


# a parent no table of main holds, which one of sqlgate's records is named
_ONLY_IN_RECORDS = (
    f"SELECT EXISTS (SELECT 1 FROM {SERVER_SCHEMA}.sqlite_schema WHERE name = ?1 COLLATE NOCASE)"
    " AND NOT EXISTS (SELECT 1 FROM main.sqlite_schema WHERE type = 'table' "
    "AND name = ?1 COLLATE NOCASE)"
)


def _only_in_records(conn: apsw.Connection, parent: str) -> bool:
    try:
        return bool(conn.execute(_ONLY_IN_RECORDS, (parent,)).get)
    except apsw.Error:  # no records attached
        return False


def _records_key(ref: Reference) -> str:
    """A key meant for sqlgate's records, which SQLite would look up in main (issue 33)."""
    return (
        f"refused: {ref.table}.{ref.column} REFERENCES {ref.parent}: your database has no "
        f"table {ref.parent}, so the key would point at no table of yours, and "
        f"{SERVER_SCHEMA}.{ref.parent} is one of sqlgate's records, which no foreign key can "
        "reference (a key resolves in its own database only; the records are read-only); "
        "nothing was changed. Next: keep the id in a plain column without REFERENCES, or "
        f"create a table {ref.parent} of your own first"
    )
