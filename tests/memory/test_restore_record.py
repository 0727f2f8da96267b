"""The memory chain records a snapshot restore: every event written after the snapshot
survives it, the chain verifies, and verify names the restore."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlgate.config import Settings
from sqlgate.engine.snapshots.files import restore_snapshot
from sqlgate.errors import InvalidArgument
from sqlgate.home import record_files
from sqlgate.memory.restore_record import ChainRestoreRecorder
from sqlgate.service import Service
from tests.records import connect_both


def table(db: Path, name: str) -> list[tuple[Any, ...]]:
    conn = connect_both(db, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return [tuple(row) for row in conn.execute(f"SELECT * FROM {name} ORDER BY id")]
    finally:
        conn.close()


def notes(db: Path) -> list[tuple[Any, ...]]:
    conn = connect_both(db, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return [tuple(row) for row in conn.execute("SELECT rowid, * FROM notes ORDER BY rowid")]
    finally:
        conn.close()


def restore(db: Path, name: str) -> int | None:
    recorder = ChainRestoreRecorder(db, "cli-test", time.time)
    return restore_snapshot(db, Settings(db=db).snapshot_dir, name, 5, recorder=recorder).event_id


def test_the_restore_is_an_event_the_chain_verifies_and_verify_names_it(
    make_service: Callable[..., Service], db_path: Path
) -> None:
    service = make_service()
    service.write_query("CREATE TABLE notes (body TEXT)")
    service.append_event("one")
    snapshot = service.sql.snapshot()
    service.append_event("two")
    service.append_event("three")
    events = table(db_path, "memory_events")
    service.close()
    event_id = restore(db_path, snapshot.name)
    after = table(db_path, "memory_events")
    assert after[: len(events)] == events
    assert event_id == len(events) + 1
    (recorded,) = after[len(events) :]
    assert recorded[3] == "restore"
    assert f"rolled back to snapshot {snapshot.name}" in recorded[4]
    assert "; 0 calls made after the snapshot marked undone;" in recorded[4]
    assert (
        "sqlgate's records (memory, claims, audit log, members) are not rolled back"
        in (recorded[4])
    )
    answer = json.loads(make_service().verify_chain())
    assert answer["ok"] is True
    assert answer["events"] == event_id
    assert answer["restores"]["count"] == 1
    assert answer["restores"]["latest"]["id"] == event_id
    assert answer["restores"]["latest"]["summary"].startswith("rolled back to snapshot")


@pytest.mark.parametrize(("writes", "said"), [(1, "1 call"), (2, "2 calls")])
def test_the_restore_event_counts_the_calls_it_marked_undone(
    make_service: Callable[..., Service], db_path: Path, writes: int, said: str
) -> None:
    service = make_service()
    service.write_query("CREATE TABLE notes (body TEXT)")
    snapshot = service.sql.snapshot()
    for n in range(writes):
        service.write_query("INSERT INTO notes VALUES (?)", [f"after {n}"])
    service.append_event("an event after the snapshot stays")
    service.close()
    event_id = restore(db_path, snapshot.name)
    (recorded,) = [row for row in table(db_path, "memory_events") if row[0] == event_id]
    assert f"; {said} made after the snapshot marked undone;" in recorded[4]
    assert any(
        row[4] == "an event after the snapshot stays" for row in table(db_path, "memory_events")
    )


def test_a_chain_without_restores_says_nothing_of_them(service: Service) -> None:
    service.append_event("one")
    assert "restores" not in json.loads(service.verify_chain())


def test_an_agent_cannot_forge_a_restore_event(service: Service) -> None:
    with pytest.raises(InvalidArgument, match="written only by the server"):
        service.memory.append_event("rolled back to snapshot x", "restore", [])


def test_the_witness_is_moved_on_to_the_restore_event(
    make_service: Callable[..., Service], db_path: Path
) -> None:
    service = make_service()
    service.append_event("one")
    snapshot = service.sql.snapshot()
    service.append_event("two")
    service.verify_chain()  # the witness records a verified position
    service.close()
    event_id = restore(db_path, snapshot.name)
    witness = json.loads(record_files(db_path).witness.read_text())
    assert witness["head_id"] == event_id
    assert witness["verified_id"] == event_id - 1  # kept: nothing before it was rewritten


ACTIONS = st.lists(st.sampled_from(["event", "claim", "confirm", "checkpoint", "write", "read"]),
                   max_size=8)  # fmt: skip


def act(service: Service, action: str, step: int) -> None:
    if action == "event":
        service.append_event(f"event {step}")
    elif action == "claim":
        service.claim_add(f"entity {step}", "fact", f"claim {step}", "slow", 0.7)
    elif action == "confirm":
        service.claim_confirm(1, 0.9)
    elif action == "checkpoint":
        service.checkpoint(f"checkpoint {step}")
    elif action == "write":
        service.write_query("INSERT INTO notes VALUES (?)", [step])
    else:
        service.read_query("SELECT count(*) FROM notes")


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(before=ACTIONS, after=ACTIONS)
def test_whatever_is_written_after_a_snapshot_survives_the_restore_and_the_chain_verifies(
    tmp_path_factory: pytest.TempPathFactory, before: list[str], after: list[str]
) -> None:
    db = tmp_path_factory.mktemp("restore") / "agent.db"
    service = Service.open(Settings(db=db), session="s-prop")
    service.write_query("CREATE TABLE notes (body)")
    service.claim_add("first", "fact", "the first claim", "slow", 0.7)
    for step, action in enumerate(before):
        act(service, action, step)
    snapshot = service.sql.snapshot()
    for step, action in enumerate(after, start=100):
        act(service, action, step)
    kept = {
        name: table(db, name)
        for name in ("memory_events", "memory_checkpoints", "claims", "claims_history", "query_log")
    }
    service.close()
    restore(db, snapshot.name)
    for name, rows in kept.items():
        now = table(db, name)
        if name in ("memory_events", "query_log"):
            now = now[: len(rows)]  # the restore adds its own event and audit row
        assert now == rows, name
    assert notes(db) == notes(snapshot)  # the user's table is the snapshot's
    reopened = Service.open(Settings(db=db), session="s-check")
    try:
        answer = json.loads(reopened.verify_chain())
        assert answer["ok"] is True
        assert answer["restores"]["count"] == 1
    finally:
        reopened.close()
