"""Reading the audit log: the one query builder of `sqlgate log`, `sqlgate stats` and the
console (its activity, errors, patterns and destructive pages).

The one place that knows how query_log is read: its columns, the actor of a row (the
column, or NULL in a file older than migration 9 that a read-only command opened without
upgrading it), the outcomes of a call in SQL, the indexes a page walks, and the audit queue
beside the file. Callers pass filters (`AuditFilter`) and the columns they want by name;
values are bound, column names validated and quoted.

Outcomes: ok; refused (the server's policy said no: the row's `detail.refused` is true);
error (any other failure). `call_outcome` decides it for one row, `OUTCOME_SQL` selects
each outcome's rows; a test holds the two equal.

Order: newest first by id; oldest first above `after` (folding new rows into a summary).
A filter by an actor as recorded (`by_actor_index`, the console) walks the index
`query_log_by_actor (actor, ts)`: newest first by time, then id, and `before` goes back
from the time of that row, so a page of one actor's calls reads that page and not all of
the actor's calls.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw

from sqlgate.engine.records.audit import ACTOR_SINCE
from sqlgate.engine.records.audit_queue import queued_rows
from sqlgate.engine.sqltext import quote_identifier
from sqlgate.errors import InvalidArgument

__all__ = [
    "AUDIT_COLUMNS",
    "OUTCOMES",
    "OUTCOME_SQL",
    "REFUSED_SQL",
    "AuditFilter",
    "AuditReader",
    "call_outcome",
    "one_call",
    "succeeded_calls",
]

OUTCOMES = ("ok", "refused", "error")

# 1 when the row's `detail.refused` is JSON true, else 0 (a `detail` that is not JSON too:
# another program may have written the row)
REFUSED_SQL = (
    "(CASE WHEN json_valid(detail) THEN json_type(detail, '$.refused') IS 'true' ELSE 0 END)"
)
OUTCOME_SQL = {
    "ok": "ok = 1",
    "refused": f"ok = 0 AND {REFUSED_SQL}",
    "error": f"ok = 0 AND NOT {REFUSED_SQL}",
}

AUDIT_COLUMNS = ("id", "ts", "actor", "session", "tool", "query", "ok", "rows", "error",
                 "duration_ms", "detail")  # fmt: skip
EXAMPLE_CHARS = 2000  # a statement shape's example: its statement up to this many characters
# what a reader may ask for beside the columns: a row's hour, whether it was refused, its
# statement's shape (`detail.fingerprint`) and the start of its statement
_DERIVED = {
    "hour": "substr(ts, 1, 13)",
    "refused": REFUSED_SQL,
    "fingerprint": "(CASE WHEN json_valid(detail) THEN json_extract(detail, '$.fingerprint') END)",
    "example": f"substr(query, 1, {EXAMPLE_CHARS})",
}
# the actors of query_log as recorded that equal `?` ignoring case (member names are unique
# ignoring case): a skip-scan of query_log_by_actor, one index seek per distinct actor, so
# the calls are then found through the index rather than by reading the whole log
_ACTOR_SPELLINGS = """
    WITH RECURSIVE recorded(name) AS (
        SELECT (SELECT min(actor) FROM query_log)
        UNION ALL
        SELECT (SELECT min(actor) FROM query_log WHERE actor > name)
        FROM recorded WHERE name IS NOT NULL
    )
    SELECT name FROM recorded WHERE name = ? COLLATE NOCASE"""


def call_outcome(ok: bool, detail: Any) -> str:
    """The outcome of one query_log row, from its `ok` and its parsed `detail`."""
    if ok:
        return "ok"
    return "refused" if isinstance(detail, dict) and detail.get("refused") is True else "error"


@dataclass(frozen=True)
class AuditFilter:
    """Which calls of the audit log: every field left at its default lets every call by.

    `actor`: the calls of this actor, as recorded, or in any case with `actor_any_case`
    (member names are unique ignoring case); `unrecorded`: the calls that name no actor
    (written before actors were recorded). `by_actor_index`: with either, newest first by
    time through the actor index (the module's docstring). `since`/`until`: ISO times
    (inclusive), already checked. `before`: newest first below this id; `after`: oldest
    first above it."""

    actor: str | None = None
    actor_any_case: bool = False
    unrecorded: bool = False
    by_actor_index: bool = False
    session: str | None = None
    tool: str | None = None
    outcome: str | None = None  # one of OUTCOMES
    failed: bool = False  # refused or error
    since: str | None = None
    until: str | None = None
    before: int | None = None
    after: int | None = None


class AuditReader:
    """Reads query_log for a file whose rows record their actor (`actors_recorded`) or not."""

    def __init__(self, actors_recorded: bool = True) -> None:
        self.actors_recorded = actors_recorded

    @classmethod
    def for_schema(cls, schema_version: int) -> AuditReader:
        return cls(schema_version >= ACTOR_SINCE)

    def column_sql(self, name: str) -> str:
        """The SQL of a column (quoted) or of a derived value, by name; unknown: refused."""
        if name == "actor" and not self.actors_recorded:
            return "NULL"
        if name in AUDIT_COLUMNS:
            return quote_identifier(name)
        if name in _DERIVED:
            return _DERIVED[name]
        raise InvalidArgument(f"query_log has no column {name!r}")

    def select(
        self, filters: AuditFilter, columns: Sequence[str], limit: int | None
    ) -> tuple[str, list[Any]]:
        """The SELECT (values bound) of `columns` of the calls `filters` lets by, at most
        `limit` of them (None: all)."""
        shown = ", ".join(self.column_sql(name) for name in columns)
        where, params = self._where(filters)
        by_time = (
            self.actors_recorded
            and filters.by_actor_index
            and (filters.actor is not None or filters.unrecorded)
        )
        source, order = "query_log", "id DESC"
        if by_time:  # the actor index's order: time, then id
            source, order = "query_log INDEXED BY query_log_by_actor", "ts DESC, id DESC"
        if filters.before is not None:
            where.append("(ts, id) < (SELECT ts, id FROM query_log WHERE id = ?)" if by_time
                         else "id < ?")  # fmt: skip
            params.append(filters.before)
        if filters.after is not None:
            where.append("id > ?")
            params.append(filters.after)
            order = "id"
        sql = f"SELECT {shown} FROM {source} WHERE {' AND '.join(where) or '1'} ORDER BY {order}"
        return f"{sql} LIMIT ?", [*params, -1 if limit is None else limit]

    def _where(self, filters: AuditFilter) -> tuple[list[str], list[Any]]:
        where: list[str] = []
        params: list[Any] = []
        if filters.unrecorded and self.actors_recorded:
            where.append("actor IS NULL")
        if filters.actor is not None and not self.actors_recorded:
            where.append("0")  # no row of an older file names an actor
        elif filters.actor is not None:
            where.append(f"actor IN ({_ACTOR_SPELLINGS})" if filters.actor_any_case
                         else "actor = ?")  # fmt: skip
            params.append(filters.actor)
        for name, value in (("session", filters.session), ("tool", filters.tool)):
            if value is not None:
                where.append(f"{name} = ?")
                params.append(value)
        if filters.failed:
            where.append("ok = 0")
        if filters.outcome is not None:
            if filters.outcome not in OUTCOME_SQL:
                raise InvalidArgument(f"no outcome {filters.outcome!r}: one of {OUTCOMES}")
            where.append(OUTCOME_SQL[filters.outcome])
        for bound, value in ((">=", filters.since), ("<=", filters.until)):
            if value is not None:
                where.append(f"ts {bound} ?")
                params.append(value)
        return where, params

    def rows(
        self, conn: apsw.Connection, filters: AuditFilter, columns: Sequence[str],
        limit: int | None,
    ) -> list[tuple[Any, ...]]:  # fmt: skip
        """`columns` of the calls `filters` lets by, in the order of `select`."""
        sql, params = self.select(filters, columns, limit)
        return [tuple(row) for row in conn.execute(sql, params)]

    def by_actor(self, conn: apsw.Connection) -> list[dict[str, Any]]:
        """Each actor's calls by outcome, by name (any case), the calls of no recorded actor
        (rows written before migration 9) last with actor None."""
        actor = self.column_sql("actor")
        sums = ", ".join(f"sum({OUTCOME_SQL[o]})" for o in OUTCOMES)
        return [
            {"actor": name, "calls": calls,
             **{o: int(n or 0) for o, n in zip(OUTCOMES, found, strict=True)}}
            for name, calls, *found in conn.execute(
                f"SELECT {actor}, count(*), {sums} FROM query_log GROUP BY 1 "
                f"ORDER BY {actor} IS NULL, {actor} COLLATE NOCASE, {actor}"
            )
        ]  # fmt: skip

    def tally(self, conn: apsw.Connection, db: Path) -> dict[str, Any]:
        """The calls by outcome, the audit rows queued beside `db` (waiting for the write
        lock) and the calls of each actor (`by_actor`): `sqlgate stats`' audit figures."""
        actors = self.by_actor(conn)
        counts = {o: sum(actor[o] for actor in actors) for o in OUTCOMES}
        return {"calls": sum(counts.values()), **counts, "queued": queued_rows(db),
                "actors": actors}  # fmt: skip


def one_call(
    conn: apsw.Connection, audit_id: int, columns: Sequence[str]
) -> tuple[Any, ...] | None:
    """`columns` (by name, as `AuditReader.column_sql` knows them) of the call `audit_id`;
    None when the log has no such call."""
    shown = ", ".join(AuditReader().column_sql(name) for name in columns)
    row = conn.execute(f"SELECT {shown} FROM query_log WHERE id = ?", (audit_id,)).fetchone()
    return None if row is None else tuple(row)


def succeeded_calls(conn: apsw.Connection, tools: Sequence[str]) -> Iterator[tuple[int, Any]]:
    """(id, detail) of the calls of `tools` that succeeded, newest first, read as the
    caller walks them (it may stop early)."""
    names = json.dumps(list(tools))
    for audit_id, detail in conn.execute(
        "SELECT id, detail FROM query_log WHERE tool IN (SELECT value FROM json_each(?)) "
        "AND ok = 1 ORDER BY id DESC",
        (names,),
    ):
        yield int(audit_id), detail
