"""A snapshot restore rolls back the user's tables and schema, never sqlgate's own records:
what the live file holds that the snapshot lacks is listed first (restore_plan), then
carried into the restored file (restore_carry), and the copy of before is kept outside
the rotation."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw
import pytest

from sqlgate.config import Settings
from sqlgate.engine.snapshots.files import list_snapshots, restore_snapshot, take_snapshot
from sqlgate.engine.snapshots.restore_plan import KEPT_FOLDER, plan_restore
from sqlgate.errors import SnapshotError, UndoRefused
from sqlgate.service import Service
from tests.records import connect_both

SERVER_TABLES = ("query_log", "memory_events", "memory_checkpoints", "claims", "claims_history")


def rows(db: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    conn = connect_both(db, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return [tuple(row) for row in conn.execute(sql, params)]
    finally:
        conn.close()


def count(db: Path, table: str) -> int:
    return int(rows(db, f"SELECT count(*) FROM {table}")[0][0])


def user_state(db: Path) -> dict[str, Any]:
    """The user's schema and every row of the user's tables."""
    schema = rows(db, "SELECT type, name, sql FROM sqlite_schema WHERE name IN "
                  "('notes', 'later', 'gone') ORDER BY name")  # fmt: skip
    tables = {str(name) for _, name, _ in schema if _ == "table"}
    return {
        "schema": schema,
        **{t: rows(db, f"SELECT * FROM {t} ORDER BY rowid") for t in sorted(tables)},
    }


def server_rows(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    return {t: rows(db, f"SELECT * FROM {t} ORDER BY id") for t in SERVER_TABLES}


@pytest.fixture
def history(make_service: Callable[..., Service], db_path: Path) -> dict[str, Any]:
    """A database with memory, claims and audit rows on both sides of a snapshot, and user
    tables changed after it (rows added and deleted, a table created, one dropped)."""
    service = make_service()
    service.write_query("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    service.write_query("CREATE TABLE gone (x)")
    service.write_query("INSERT INTO notes (body) VALUES ('a'), ('b'), ('c')")
    service.append_event("before the snapshot", tags=["early"])
    service.checkpoint("first checkpoint")
    first = json.loads(service.claim_add("api", "fact", "uses REST", "slow", 0.8))
    snapshot = service.sql.snapshot()
    service.append_event("after the snapshot", tags=["late"])
    service.append_event("and another")
    service.checkpoint("second checkpoint")
    service.claim_add("db", "status", "migrating", "volatile", 0.6)
    service.claim_confirm(first["id"], 0.9)
    service.write_query("INSERT INTO notes (body) VALUES ('d')")
    deleted = service.destructive_query("DELETE FROM notes WHERE body = 'a'", reason="test")
    service.write_query("CREATE TABLE later (y)")
    service.destructive_query("DROP TABLE gone", reason="test")
    service.close()
    audit_id = int(deleted.split("sqlgate undo ", 1)[1].split("@", 1)[0])
    return {"snapshot": snapshot, "folder": snapshot.parent, "undo_audit_id": audit_id}


def test_the_plan_counts_what_the_snapshot_lacks(db_path: Path, history: dict[str, Any]) -> None:
    snap: Path = history["snapshot"]
    plan = plan_restore(db_path, history["folder"], snap.name)
    for table in ("memory_events", "memory_checkpoints", "claims_history", "query_log"):
        assert plan.carried[table] == count(db_path, table) - count(snap, table), table
    assert plan.carried["memory_events"] >= 3  # 2 notes and the claim events
    assert plan.events == (count(snap, "memory_events") + 1, count(db_path, "memory_events"))
    tables = {change.name: (change.now, change.snapshot) for change in plan.tables}
    assert tables == {"notes": (3, 3), "later": (0, None), "gone": (None, 0)}
    assert plan.database_id == plan.snapshot_id is not None


def test_the_plan_lists_a_table_whose_count_is_unchanged_but_rows_differ_by_count_only(
    db_path: Path, history: dict[str, Any]
) -> None:
    # notes: 'a' deleted and 'd' added: 3 rows on both sides, listed with both counts
    plan = plan_restore(db_path, history["folder"], history["snapshot"].name)
    (notes,) = [change for change in plan.tables if change.name == "notes"]
    assert (notes.now, notes.snapshot) == (3, 3)


def test_restore_brings_back_the_user_tables_and_carries_every_server_row(
    db_path: Path, history: dict[str, Any], make_service: Callable[..., Service]
) -> None:
    snap: Path = history["snapshot"]
    expected_user = user_state(snap)
    before_server = server_rows(db_path)
    result = restore_snapshot(db_path, history["folder"], snap.name, keep=5)
    assert user_state(db_path) == expected_user
    after_server = server_rows(db_path)
    for table in ("memory_events", "memory_checkpoints", "claims", "claims_history"):
        assert after_server[table] == before_server[table], table
    # the audit log keeps every row, and gains the restore's own row
    assert (
        after_server["query_log"][: len(before_server["query_log"])] == before_server["query_log"]
    )
    (last,) = after_server["query_log"][len(before_server["query_log"]) :]
    assert last[3] == "snapshots restore"
    assert result.carried["memory_events"] == len(before_server["memory_events"]) - count(
        snap, "memory_events"
    )
    assert rows(db_path, "PRAGMA integrity_check") == [("ok",)]
    # the full-text index knows the carried events
    reopened = make_service()
    assert "after the snapshot" in reopened.memory_search("after snapshot")


def test_the_calls_rolled_back_are_marked_undone_by_the_restore(
    db_path: Path, history: dict[str, Any], make_service: Callable[..., Service]
) -> None:
    restore_snapshot(db_path, history["folder"], history["snapshot"].name, keep=5)
    service = make_service()
    with pytest.raises(UndoRefused, match=r"already undone .* snapshot restore"):
        service.undo(history["undo_audit_id"])


def test_the_copy_of_before_is_kept_outside_the_rotation(
    db_path: Path, history: dict[str, Any]
) -> None:
    folder: Path = history["folder"]
    result = restore_snapshot(db_path, folder, history["snapshot"].name, keep=2)
    assert result.before.parent == folder / KEPT_FOLDER
    assert result.before_name == f"{KEPT_FOLDER}/{result.before.name}"
    conn = connect_both(db_path)
    try:
        for _ in range(6):  # more than --snapshots-keep new snapshots
            take_snapshot(conn, folder, keep=2)
    finally:
        conn.close()
    assert len(list_snapshots(folder)) == 2
    assert result.before.is_file()
    assert count(result.before, "notes") == 3


def test_restoring_the_copy_of_before_undoes_the_restore_and_carries_again(
    db_path: Path, history: dict[str, Any]
) -> None:
    before_user = user_state(db_path)
    folder: Path = history["folder"]
    first = restore_snapshot(db_path, folder, history["snapshot"].name, keep=5)
    events = count(db_path, "memory_events")
    logged = count(db_path, "query_log")
    restore_snapshot(db_path, folder, first.before_name, keep=5)
    assert user_state(db_path) == before_user
    assert count(db_path, "memory_events") == events
    assert count(db_path, "query_log") == logged + 1


def test_a_snapshot_of_another_database_is_refused_and_nothing_changes(
    db_path: Path, history: dict[str, Any], tmp_path: Path
) -> None:
    other = Service.open(Settings(db=tmp_path / "other.db"), session="s-other")
    other.write_query("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    foreign = other.sql.snapshot()
    other.close()
    folder: Path = history["folder"]
    shutil.copy(foreign, folder / foreign.name)
    original = db_path.read_bytes()
    kept = sorted(p.name for p in folder.rglob("*"))
    with pytest.raises(SnapshotError, match="another database") as caught:
        restore_snapshot(db_path, folder, foreign.name, keep=5)
    assert caught.value.exit_code == 7
    with pytest.raises(SnapshotError, match="another database"):
        plan_restore(db_path, folder, foreign.name)
    assert db_path.read_bytes() == original
    assert sorted(p.name for p in folder.rglob("*")) == kept


def test_a_snapshot_whose_chain_is_not_a_prefix_is_refused(
    db_path: Path, history: dict[str, Any]
) -> None:
    snap: Path = history["snapshot"]
    conn = connect_both(snap)
    try:
        conn.execute("DROP TRIGGER memory_events_no_update")
        conn.execute("UPDATE memory_events SET content = 'rewritten' WHERE id = 1")
    finally:
        conn.close()
    original = db_path.read_bytes()
    with pytest.raises(SnapshotError, match="event 1"):
        restore_snapshot(db_path, history["folder"], snap.name, keep=5)
    assert db_path.read_bytes() == original


def test_a_snapshot_older_than_database_ids_is_restored_and_keeps_the_live_id(
    db_path: Path, history: dict[str, Any]
) -> None:
    snap: Path = history["snapshot"]
    live_id = rows(db_path, "SELECT value FROM server_info")[0][0]
    conn = connect_both(snap)
    try:  # what a file of schema 7 looked like: no server_info, no undo tool column
        conn.execute("DROP TABLE server_info")
        for column in ("tool", "created", "format", "data", "shapes", "digests"):
            conn.execute(f"ALTER TABLE undo_changesets DROP COLUMN {column}")
        # nor migration 9's actor and members (issue 22)
        for statement in (
            "DROP TABLE member_tokens",
            "DROP TABLE members",
            "DROP INDEX query_log_by_actor",
            "DROP VIEW query_errors",
            "DROP VIEW query_patterns",
            "ALTER TABLE query_log DROP COLUMN actor",
            "CREATE VIEW query_errors AS SELECT id FROM query_log",
            "CREATE VIEW query_patterns AS SELECT id FROM query_log",
        ):
            conn.execute(statement)
        conn.pragma("user_version", 7)
    finally:
        conn.close()
    plan = plan_restore(db_path, history["folder"], snap.name)
    assert plan.snapshot_id is None
    assert plan.note is not None
    assert "database ids" in plan.note
    restore_snapshot(db_path, history["folder"], snap.name, keep=5)
    assert rows(db_path, "SELECT value FROM server_info") == [(live_id,)]
    assert rows(db_path, "PRAGMA user_version")[0][0] >= 8


def test_an_event_whose_text_is_not_utf8_is_carried_byte_for_byte(
    db_path: Path, history: dict[str, Any]
) -> None:
    """Another program appended an event whose content and tags are bytes, not UTF-8 (issue
    30): the restore carries it as it is, with its full-text row."""
    conn = connect_both(db_path)
    conn.execute(
        "INSERT INTO memory_events (ts, session, kind, content, tags, prev_hash, hash) "
        "VALUES ('2026-01-01', 'other', 'note', CAST(x'ff61' AS TEXT), CAST(x'5bff5d' AS TEXT), "
        "'x', 'y')"
    )
    conn.close()
    events = count(db_path, "memory_events")
    snap: Path = history["snapshot"]
    result = restore_snapshot(db_path, history["folder"], snap.name, keep=5)
    assert result.carried["memory_events"] == events - count(snap, "memory_events")
    stored = rows(
        db_path,
        "SELECT hex(content), typeof(content), hex(tags) FROM memory_events "
        "WHERE session = 'other'",
    )
    assert stored == [("FF61", "text", "5BFF5D")]
    indexed = rows(
        db_path,
        "SELECT hex(content) FROM memory_events_fts WHERE rowid = "
        "(SELECT id FROM memory_events WHERE session = 'other')",
    )
    assert indexed == [("FF61",)]
