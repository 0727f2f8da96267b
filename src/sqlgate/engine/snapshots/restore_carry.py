"""Carrying sqlgate's own records into a restored file: a snapshot restore rolls back the
user's tables and schema, never the audit log, the memory or the claims.

`carry_server_rows` runs on the staging copy of the snapshot (already migrated to the
current schema), with the pre-restore copy attached as "before", inside one transaction
the caller opened, on a connection whose triggers are off (the server tables' append-only
triggers would refuse the claims' new states; they stay in the file and fire for every
other connection). It copies, by id, every row the snapshot lacks:

- query_log, memory_events (and their full-text rows), memory_checkpoints, claims_history;
- claims: every claim as it stands now (new ones, and the current state of older ones);
- server_info: the live file's facts (its database id);
- members and member_tokens: the live file's, each member and token in its newest state
  (engine/snapshots/restore_members.py): who may connect is never rolled back, and a revoked token
  never works again;
- undo_changesets of the calls the restore rolled back, marked undone by the restore, so
  `sqlgate undo` of such a call says what happened instead of "gone" (their row data is not
  copied: there is nothing left to put back).

Columns are matched by name, so a snapshot of an older schema takes the rows too.
`stage_restore` does the whole of it on the staging file: migrate, carry, check the chain's
link, and add the restore's audit row and the recorder's event, in one transaction.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import apsw

from sqlgate.engine.raw_text import RawText, with_raw_text
from sqlgate.engine.schema import migrate
from sqlgate.engine.snapshots.restore_members import carry_members
from sqlgate.engine.snapshots.restore_plan import CARRIED_TABLES, RestorePlan, has_table, scalar
from sqlgate.engine.sqltext import quote_identifier
from sqlgate.errors import SnapshotError

__all__ = [
    "RestoreFacts",
    "RestoreRecorder",
    "carry_server_rows",
    "check_chain_link",
    "stage_restore",
]


def _columns(conn: apsw.Connection, table: str, schema: str) -> list[str]:
    return [
        str(row[1])
        for row in conn.execute(
            f"PRAGMA {quote_identifier(schema)}.table_info({quote_identifier(table)})"
        )
    ]


def _shared_columns(conn: apsw.Connection, table: str) -> list[str]:
    theirs = set(_columns(conn, table, "before"))
    return [column for column in _columns(conn, table, "main") if column in theirs]


def _carry_by_id(conn: apsw.Connection, table: str) -> int:
    if not (has_table(conn, table) and has_table(conn, table, "before")):
        return 0
    columns = ", ".join(map(quote_identifier, _shared_columns(conn, table)))
    name = quote_identifier(table)
    conn.execute(
        f"INSERT INTO main.{name} ({columns}) SELECT {columns} FROM before.{name} "
        f"WHERE id NOT IN (SELECT id FROM main.{name}) ORDER BY id"
    )
    return int(conn.changes())


def _carry_events(conn: apsw.Connection) -> int:
    """memory_events by id, and a full-text row for each (as the chain writes them)."""
    if not (has_table(conn, "memory_events") and has_table(conn, "memory_events", "before")):
        return 0
    sql = (
        "SELECT id, content, tags FROM before.memory_events "
        "WHERE id NOT IN (SELECT id FROM main.memory_events) ORDER BY id"
    )
    # another program may have stored bytes that are not UTF-8 (`engine.raw_text`)
    carried = with_raw_text(lambda rows: list(rows(conn, sql, 3, [()])))
    _carry_by_id(conn, "memory_events")
    for event_id, content, tags in carried:
        try:
            words = json.loads(tags) if isinstance(tags, str) else []
        except ValueError:
            words = []
        text = " ".join(str(word) for word in words) if isinstance(words, list) else ""
        value, cast = (
            (content.data, "CAST(? AS TEXT)") if isinstance(content, RawText) else (content, "?")
        )
        conn.execute(
            f"INSERT INTO memory_events_fts (rowid, content, tags) VALUES (?, {cast}, ?)",
            (event_id, value, text),
        )
    return len(carried)


def _carry_claims(conn: apsw.Connection) -> int:
    """Every claim of before, by id, in its current state; returns how many are new."""
    if not (has_table(conn, "claims") and has_table(conn, "claims", "before")):
        return 0
    new = scalar(
        conn, "SELECT count(*) FROM before.claims WHERE id NOT IN (SELECT id FROM main.claims)"
    )
    columns = ", ".join(map(quote_identifier, _shared_columns(conn, "claims")))
    conn.execute("DELETE FROM main.claims WHERE id IN (SELECT id FROM before.claims)")
    conn.execute(f"INSERT INTO main.claims ({columns}) SELECT {columns} FROM before.claims")
    return new


def _carry_server_info(conn: apsw.Connection) -> None:
    if not (has_table(conn, "server_info") and has_table(conn, "server_info", "before")):
        return
    conn.execute("DELETE FROM main.server_info WHERE key IN (SELECT key FROM before.server_info)")
    conn.execute(
        "INSERT INTO main.server_info (key, value) SELECT key, value FROM before.server_info"
    )


def _carry_undone(conn: apsw.Connection, moment: str, undone_by: str) -> int:
    table = "undo_changesets"
    if not (has_table(conn, table) and has_table(conn, table, "before")):
        return 0
    columns = _shared_columns(conn, table)
    values = {"undone_at": "?", "undone_by": "?"}
    chosen = ", ".join(values.get(c, quote_identifier(c)) for c in columns)
    params = tuple(value for c in columns for value in ((moment,) if c == "undone_at" else (
        (undone_by,) if c == "undone_by" else ()
    )))  # fmt: skip
    conn.execute(
        f"INSERT INTO main.{table} ({', '.join(map(quote_identifier, columns))}) "
        f"SELECT {chosen} FROM before.{table} WHERE id NOT IN (SELECT id FROM main.{table}) "
        "ORDER BY id",
        params,
    )
    return int(conn.changes())


def carry_server_rows(conn: apsw.Connection, moment: str, undone_by: str) -> dict[str, int]:
    """Copy what "before" holds that "main" lacks; returns the rows carried per table (and
    `claims`: the claims that are new; `members`, `member_tokens`: the rows the live file
    held newer). The caller holds the transaction."""
    carried: dict[str, int] = {}
    for table in CARRIED_TABLES:
        carried[table] = (
            _carry_events(conn) if table == "memory_events" else _carry_by_id(conn, table)
        )
    carried["claims"] = _carry_claims(conn)
    carried["undo_changesets"] = _carry_undone(conn, moment, undone_by)
    carried.update(carry_members(conn))
    _carry_server_info(conn)
    return carried


def check_chain_link(conn: apsw.Connection, snapshot_head: int) -> None:
    """The first carried event must link onto the snapshot's head (it does when the
    snapshot's chain is a prefix of the live one); SnapshotError otherwise."""
    if not has_table(conn, "memory_events"):
        return
    after = conn.execute(
        "SELECT prev_hash FROM memory_events WHERE id = ?", (snapshot_head + 1,)
    ).fetchone()
    if after is None:
        return
    head = conn.execute("SELECT hash FROM memory_events WHERE id = ?", (snapshot_head,)).fetchone()
    expected = "0" * 64 if snapshot_head == 0 else (None if head is None else head[0])
    if after[0] != expected:
        raise SnapshotError(
            f"the events after the snapshot do not link onto its head (event {snapshot_head})"
        )


class RestoreRecorder(Protocol):
    """What the memory adds to a restore: an event recording it, and the witness of it."""

    def record(self, staging: apsw.Connection, facts: RestoreFacts) -> int | None:
        """Inside the staging transaction: append the record; returns its event id."""

    def publish(self) -> None:
        """After staging committed, just before the database is replaced."""

    def revert(self) -> None:
        """The database was not replaced after all: take back what `publish` did."""


@dataclass(frozen=True)
class RestoreFacts:
    plan: RestorePlan
    before_name: str
    moment: str  # ISO-8601 UTC of the restore
    carried: dict[str, int] = field(default_factory=dict)


def stage_restore(
    staging: Path, before: Path, facts: RestoreFacts, recorder: RestoreRecorder | None
) -> tuple[dict[str, int], int | None]:
    """Migrate the staging copy and carry the server rows into it, all in one transaction;
    the restore's audit row and the recorder's event land in the same one."""
    conn = apsw.Connection(str(staging))
    try:
        migrate(conn)
        conn.config(apsw.SQLITE_DBCONFIG_ENABLE_TRIGGER, 0)
        conn.execute("ATTACH DATABASE ? AS before", (str(before),))
        conn.execute("BEGIN IMMEDIATE")
        try:
            snapshot_head = scalar(conn, "SELECT max(id) FROM main.memory_events")
            undone_by = f"snapshot restore {facts.plan.name}"
            carried = carry_server_rows(conn, facts.moment, undone_by)
            check_chain_link(conn, snapshot_head)
            done = RestoreFacts(facts.plan, facts.before_name, facts.moment, carried)
            event_id = None if recorder is None else recorder.record(conn, done)
            detail = {"snapshot": facts.plan.name, "before": facts.before_name,
                      "carried": carried, "not_carried": facts.plan.not_carried,
                      "event": event_id}  # fmt: skip
            conn.execute(
                "INSERT INTO query_log (ts, session, tool, query, ok, rows, error, duration_ms, "
                "detail) VALUES (?, 'cli', 'snapshots restore', NULL, 1, ?, NULL, NULL, ?)",
                (facts.moment, sum(t.now or 0 for t in facts.plan.tables),
                 json.dumps(detail, separators=(",", ":"))),
            )  # fmt: skip
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        conn.execute("DETACH DATABASE before")
        return carried, event_id
    finally:
        conn.close()
