"""A snapshot restore copies the user's file back and leaves sqlgate's records as they are
(they live in the records file of the database's home): it only adds the restore to them,
an audit row, and marks undone the undo data of the calls it rolled back (issue 33)."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import apsw
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sqlgate.config import Settings
from sqlgate.engine.records import utc_timestamp
from sqlgate.engine.schema import REGISTRY, migrate
from sqlgate.engine.snapshots.files import (
    list_snapshots,
    plan_restore,
    restore_snapshot,
    take_snapshot,
)
from sqlgate.engine.snapshots.restore_plan import KEPT_FOLDER
from sqlgate.engine.snapshots.restore_records import snapshot_moment
from sqlgate.errors import SnapshotError, UndoRefused
from sqlgate.service import Service
from tests.records import connect_both, records_path

SERVER_TABLES = (
    "memory_events", "memory_checkpoints", "claims", "claims_history", "members",
    "member_tokens", "server_info",
)  # fmt: skip


def rows(db: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return [tuple(row) for row in conn.execute(sql, params)]
    finally:
        conn.close()


def count(db: Path, table: str) -> int:
    return int(rows(db, f"SELECT count(*) FROM {table}")[0][0])


def user_state(db: Path) -> dict[str, Any]:
    """The user's schema and every row of the user's tables."""
    schema = rows(db, "SELECT type, name, sql FROM sqlite_schema ORDER BY name")
    tables = {str(name) for kind, name, _ in schema if kind == "table"}
    data = {t: rows(db, f'SELECT * FROM "{t}" ORDER BY rowid') for t in sorted(tables)}
    return {"schema": schema, **data}


def records(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    path = records_path(db)
    return {t: rows(path, f"SELECT * FROM {t} ORDER BY 1") for t in SERVER_TABLES}


def changesets(db: Path) -> list[tuple[Any, ...]]:
    return rows(
        records_path(db), "SELECT id, ts, undone_at, undone_by FROM undo_changesets ORDER BY id"
    )


@pytest.fixture
def history(make_service: Callable[..., Service], db_path: Path) -> dict[str, Any]:
    """A database with memory, claims and calls on both sides of a snapshot, and user
    tables changed after it (rows added and deleted, a table created, one dropped)."""
    service = make_service()
    service.write_query("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    service.write_query("CREATE TABLE gone (x)")
    service.write_query("INSERT INTO notes (body) VALUES ('a'), ('b'), ('c')")
    service.append_event("before the snapshot", tags=["early"])
    first = json.loads(service.claim_add("api", "fact", "uses REST", "slow", 0.8))
    snapshot = service.sql.snapshot()
    service.append_event("after the snapshot", tags=["late"])
    service.checkpoint("second checkpoint")
    service.claim_confirm(first["id"], 0.9)
    service.write_query("INSERT INTO notes (body) VALUES ('d')")
    deleted = service.destructive_query("DELETE FROM notes WHERE body = 'a'", reason="test")
    service.write_query("CREATE TABLE later (y)")
    service.destructive_query("DROP TABLE gone", reason="test")
    undoable = service.undoable()
    service.close()
    audit_id = int(deleted.split("sqlgate undo ", 1)[1].split("@", 1)[0])
    return {"snapshot": snapshot, "folder": snapshot.parent, "undo_audit_id": audit_id,
            "undoable": undoable}  # fmt: skip


def test_the_plan_lists_the_user_tables_and_the_calls_it_rolls_back(
    db_path: Path, history: dict[str, Any]
) -> None:
    snap: Path = history["snapshot"]
    plan = plan_restore(db_path, history["folder"], snap.name)
    tables = {change.name: (change.now, change.snapshot) for change in plan.tables}
    assert tables == {"notes": (3, 3), "later": (0, None), "gone": (None, 0)}
    # INSERT 'd', the DELETE, CREATE TABLE later (the DROP kept a snapshot, no undo data)
    assert plan.undone == 3
    assert plan.left_out == ()
    assert plan.as_dict()["calls_rolled_back"] == 3


def test_restore_brings_back_the_users_file_and_leaves_the_records_as_they_are(
    db_path: Path, history: dict[str, Any]
) -> None:
    snap: Path = history["snapshot"]
    expected_user = user_state(snap)
    kept = records(db_path)
    logged = count(records_path(db_path), "query_log")
    result = restore_snapshot(db_path, history["folder"], snap.name, keep=5)
    assert user_state(db_path) == expected_user
    assert records(db_path) == kept  # memory, claims, members: nothing rolled back
    (last,) = rows(records_path(db_path), "SELECT tool, ok, detail FROM query_log WHERE id > ?",
                   (logged,))  # fmt: skip
    assert last[:2] == ("snapshots restore", 1)
    assert json.loads(last[2])["undone"] == result.undone == 3
    assert json.loads(last[2])["before"] == result.before_name
    assert rows(db_path, "PRAGMA integrity_check") == [("ok",)]
    # the user's file holds none of sqlgate's objects and none of its marks
    assert rows(db_path, "PRAGMA application_id") == [(0,)]
    assert rows(db_path, "PRAGMA user_version") == [(0,)]


def test_the_calls_rolled_back_are_marked_undone_and_no_longer_offered(
    db_path: Path, history: dict[str, Any], make_service: Callable[..., Service]
) -> None:
    result = restore_snapshot(db_path, history["folder"], history["snapshot"].name, keep=5)
    service = make_service()
    with pytest.raises(UndoRefused, match=r"already undone .* snapshot restore"):
        service.undo(history["undo_audit_id"])
    offered = {item["changeset"] for item in service.undoable()}
    before = {item["changeset"] for item in history["undoable"]}
    assert len(before - offered) == result.undone == 3
    marked = [c for c in changesets(db_path) if c[3] is not None]
    assert {c[3] for c in marked} == {
        f"snapshot restore {history['snapshot'].name} (previous content: {result.before_name})"
    }


def test_restoring_the_copy_of_before_brings_back_the_calls_and_their_undo(
    db_path: Path, history: dict[str, Any], make_service: Callable[..., Service]
) -> None:
    before_user = user_state(db_path)
    offered = changesets(db_path)
    folder: Path = history["folder"]
    first = restore_snapshot(db_path, folder, history["snapshot"].name, keep=5)
    logged = count(records_path(db_path), "query_log")
    second = restore_snapshot(db_path, folder, first.before_name, keep=5)
    assert user_state(db_path) == before_user
    assert changesets(db_path) == offered  # the first restore's marks are taken back
    assert second.undone == 0
    assert count(records_path(db_path), "query_log") == logged + 1
    service = make_service()
    assert "DELETE" in service.undo(history["undo_audit_id"])


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


def test_a_snapshot_of_another_database_is_refused_and_nothing_changes(
    db_path: Path, history: dict[str, Any], tmp_path: Path
) -> None:
    other = Service.open(Settings(db=tmp_path / "other.db"), session="s-other")
    other.write_query("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    foreign = other.sql.snapshot()
    other.close()
    original = db_path.read_bytes()
    kept = records(db_path), changesets(db_path)
    for call in (restore_snapshot, plan_restore):
        with pytest.raises(SnapshotError, match="not the snapshots folder of") as caught:
            call(db_path, foreign.parent, foreign.name, keep=5) if call is restore_snapshot else (
                call(db_path, foreign.parent, foreign.name))  # fmt: skip
        assert caught.value.exit_code == 7
    assert db_path.read_bytes() == original
    assert (records(db_path), changesets(db_path)) == kept


# -- a snapshot of sqlgate 0.1.0: its tables lived inside the user's file ------------------


def old_file(path: Path, auto_vacuum: int, tables: tuple[str, ...]) -> None:
    """A file as 0.1.0 left it: the user's tables, then sqlgate's, migrated into it."""
    conn = apsw.Connection(str(path))
    try:
        conn.pragma("auto_vacuum", auto_vacuum)
        for table in tables:
            conn.execute(f'CREATE TABLE "{table}" (id INTEGER PRIMARY KEY, body TEXT)')
            conn.execute(f"INSERT INTO \"{table}\" (body) VALUES ('then'), ('{table}')")
        migrate(conn)
        conn.execute("INSERT INTO query_log (ts, session, tool, ok) VALUES ('t', 's', 'x', 1)")
        conn.execute(
            "INSERT INTO memory_events_fts (rowid, content, tags) VALUES (1, 'old words', '')"
        )
        conn.pragma("journal_mode", "delete")
    finally:
        conn.close()


@pytest.mark.parametrize("auto_vacuum", [0, 1])
@pytest.mark.parametrize("mode", ["delete", "wal"])
@pytest.mark.parametrize("tables", [("notes",), ("notes", "Orders", "with space")])
def test_an_old_snapshot_is_restored_without_sqlgates_tables(
    tmp_path: Path, auto_vacuum: int, mode: str, tables: tuple[str, ...]
) -> None:
    db = tmp_path / "app.db"
    conn = apsw.Connection(str(db))
    conn.pragma("journal_mode", mode)
    conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    conn.close()
    folder = Settings(db=db).snapshot_dir
    folder.mkdir(parents=True)
    snap = folder / "20250101T000000000000Z-abcdef.sqlite"
    old_file(snap, auto_vacuum, tables)
    snapshot_bytes = snap.read_bytes()
    plan = plan_restore(db, folder, snap.name)
    assert sorted(change.name for change in plan.tables) == sorted(tables)
    assert "query_log" in plan.left_out
    assert "memory_events_fts_data" in plan.left_out
    result = restore_snapshot(db, folder, snap.name, keep=5)
    assert result.plan.left_out == plan.left_out
    names = {str(name) for (name,) in rows(db, "SELECT name FROM sqlite_schema")}
    assert names == set(tables)  # no table, index, trigger, view or shadow of sqlgate's
    assert not {obj.name for obj in REGISTRY} & names
    for table in tables:
        assert rows(db, f'SELECT body FROM "{table}" ORDER BY id') == [("then",), (table,)]
    assert rows(db, "PRAGMA application_id") == [(0,)]
    assert rows(db, "PRAGMA user_version") == [(0,)]
    assert rows(db, "PRAGMA journal_mode") == [(mode,)]
    assert rows(db, "PRAGMA integrity_check") == [("ok",)]
    assert snap.read_bytes() == snapshot_bytes  # the snapshot itself is never changed
    assert sorted(p.name for p in folder.iterdir()) == [snap.name, KEPT_FOLDER]


@pytest.mark.parametrize("names", [("query_log",), ("members", "claims", "memory_events")])
def test_a_users_tables_named_like_sqlgates_come_back_from_a_snapshot(
    tmp_path: Path, names: tuple[str, ...]
) -> None:
    db = tmp_path / "app.db"
    conn = apsw.Connection(str(db))
    for name in names:
        conn.execute(f"CREATE TABLE {name} (x); INSERT INTO {name} VALUES ('then')")
    with conn:
        take_snapshot(conn, Settings(db=db).snapshot_dir, keep=5)
    for name in names:
        conn.execute(f"DELETE FROM {name}")
    conn.close()
    (snap,) = list_snapshots(Settings(db=db).snapshot_dir)
    plan = plan_restore(db, snap.path.parent, snap.name)
    assert {change.name: (change.now, change.snapshot) for change in plan.tables} == dict.fromkeys(
        names, (0, 1)
    )
    assert plan.left_out == ()
    restore_snapshot(db, snap.path.parent, snap.name, keep=5)
    for name in names:
        assert rows(db, f"SELECT x FROM {name}") == [("then",)]


# -- which calls a restore marks ------------------------------------------------------------

EPOCHS = st.floats(min_value=0, max_value=4_000_000_000, allow_nan=False)


@settings(max_examples=300, deadline=None)
@given(taken=EPOCHS, offset=st.floats(min_value=0, max_value=5, allow_nan=False))
def test_every_call_made_after_a_snapshot_sorts_at_or_after_its_moment(
    taken: float, offset: float
) -> None:
    """The records store a call's time as utc_timestamp; a call made at or after the moment
    a snapshot's name records is never left unmarked by the restore (`ts >= moment`)."""
    moment = datetime.fromtimestamp(taken, timezone.utc)
    name = f"{moment.strftime('%Y%m%dT%H%M%S%fZ')}-abcdef.sqlite"
    called = moment.timestamp() + offset
    assert utc_timestamp(called) >= snapshot_moment(name)
    assert utc_timestamp(called) >= snapshot_moment(f"{KEPT_FOLDER}/{name}")


@pytest.mark.parametrize("name", ["notes.sqlite", "x-y.sqlite", "2026-01-01.sqlite"])
def test_a_name_recording_no_moment_marks_every_call(name: str) -> None:
    assert snapshot_moment(name) == ""


# -- a restore that fails changes neither file -----------------------------------------------


class FailingRecorder:
    """A recorder whose event cannot be written (as a full disk would)."""

    published = False

    def record(self, staging: apsw.Connection, facts: Any) -> int | None:
        raise apsw.FullError("database or disk is full")

    def publish(self) -> None:
        self.published = True

    def revert(self) -> None:
        """Nothing was published."""


@pytest.mark.parametrize("failing", ["recording", "copy-in"])
def test_a_restore_that_fails_leaves_the_file_and_the_records_as_they_were(
    db_path: Path, history: dict[str, Any], monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    from sqlgate.engine.snapshots import files

    recorder = FailingRecorder() if failing == "recording" else None
    if failing == "copy-in":

        def copy_fails(live: apsw.Connection, source: Path) -> None:
            raise apsw.IOError("disk I/O error")

        monkeypatch.setattr(files, "_copy_into", copy_fails)
    original = db_path.read_bytes()
    kept = records(db_path), changesets(db_path), count(records_path(db_path), "query_log")
    folder: Path = history["folder"]
    with pytest.raises(SnapshotError, match="the database is unchanged"):
        restore_snapshot(db_path, folder, history["snapshot"].name, keep=5, recorder=recorder)  # type: ignore[arg-type]
    assert db_path.read_bytes() == original
    assert (
        records(db_path),
        changesets(db_path),
        count(records_path(db_path), "query_log"),
    ) == kept
    assert list((folder / KEPT_FOLDER).iterdir()) == []
    assert recorder is None or not recorder.published
