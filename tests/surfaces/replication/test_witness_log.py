"""The witness log: the chain's witnessed hashes, mirrored from the records file (where the
chain lives) so that they can be replicated with it, and the verdict a restored copy of the
records gets from them.

Every chain here is built by a real Service; an attacker rewrites it through a plain
connection (tests/memory/conftest.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from sqlgate.config import Settings
from sqlgate.engine.connect import connect_read_only
from sqlgate.memory.witness import Witness, WitnessFile
from sqlgate.service import Service
from sqlgate.surfaces.replication.verdict import judge
from sqlgate.surfaces.replication.witness_log import WitnessLog, mirror_once
from tests.memory.conftest import rehash_from, rewitness, rows, tampered
from tests.records import connect_both, records_path

NOW = "2026-01-01T00:00:00.000Z"


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    with Service.open(Settings(db=tmp_path / "agent.db"), session="s-mirror") as opened:
        yield opened


@pytest.fixture
def log(tmp_path: Path) -> Iterator[WitnessLog]:
    opened = WitnessLog.open(tmp_path / "witness-log")
    yield opened
    opened.close()


def append(service: Service, count: int) -> None:
    for n in range(count):
        service.append_event(f"event {n}")


def mirror(service: Service, log: WitnessLog, now: str = NOW) -> tuple[int, int, str | None]:
    reader = connect_read_only(records_path(service.settings.db))
    try:
        done = mirror_once(reader, WitnessFile.beside(service.settings.db), log, now)
    finally:
        reader.close()
    return done.recorded, done.last_id, done.problem


def hashes(db: Path) -> list[tuple[int, str]]:
    return [(row["id"], row["hash"]) for row in rows(db)]


def logged(log: WitnessLog) -> list[tuple[int, str]]:
    last, _ = log.last()
    return [(n, log.hash_at(n) or "") for n in range(1, last + 1)]


# -- mirroring ------------------------------------------------------------------------------


def test_nothing_to_mirror_on_a_new_database(service: Service, log: WitnessLog) -> None:
    assert mirror(service, log) == (0, 0, None)
    assert log.last() == (0, "0" * 64)


def test_every_witnessed_event_is_logged_with_its_hash(service: Service, log: WitnessLog) -> None:
    append(service, 5)
    assert mirror(service, log) == (5, 5, None)
    assert logged(log) == hashes(service.settings.db)
    assert log.seen_at(3) == NOW


def test_later_passes_log_only_the_new_events(service: Service, log: WitnessLog) -> None:
    append(service, 3)
    mirror(service, log)
    append(service, 4)
    assert mirror(service, log, "2026-01-01T00:00:09.000Z") == (4, 7, None)
    assert mirror(service, log) == (0, 7, None)
    assert logged(log) == hashes(service.settings.db)
    assert (log.seen_at(3), log.seen_at(4)) == (NOW, "2026-01-01T00:00:09.000Z")


def test_a_witness_ahead_of_the_committed_chain_waits(service: Service, log: WitnessLog) -> None:
    append(service, 2)
    db = service.settings.db
    # what the witness says while an append is in flight: an event not committed yet
    WitnessFile.beside(db).write(Witness(3, "a" * 64))
    assert mirror(service, log) == (0, 0, None)


def test_a_chain_rewritten_behind_the_witness_is_not_mirrored(
    service: Service, log: WitnessLog
) -> None:
    append(service, 3)
    mirror(service, log)
    append(service, 2)
    db = service.settings.db
    with tampered(db) as conn:
        conn.execute("UPDATE memory_events SET content = 'forged' WHERE id = 4")
        rehash_from(conn, 4)
    recorded, last, problem = mirror(service, log)
    assert (recorded, last) == (0, 3)
    assert problem is not None
    assert "disagrees with its witness at event 5" in problem


def test_a_rewrite_that_also_rewrote_the_witness_is_caught_by_the_log(
    service: Service, log: WitnessLog
) -> None:
    append(service, 4)
    mirror(service, log)
    db = service.settings.db
    with tampered(db) as conn:
        conn.execute("UPDATE memory_events SET content = 'forged' WHERE id = 2")
        rehash_from(conn, 2)
    rewitness(db)  # someone with both local files: the log follows, and says so
    recorded, last, problem = mirror(service, log)
    assert (recorded, last, problem) == (3, 4, None)
    assert log.resets() == [(NOW, 1, "the chain no longer matches the log after event 1")]


def test_a_restored_snapshot_rewinds_the_log(service: Service, log: WitnessLog) -> None:
    append(service, 4)
    mirror(service, log)
    db = service.settings.db
    first_two = hashes(db)[:2]
    WitnessFile.beside(db).write(Witness(2, first_two[-1][1]))  # as `snapshots restore` does
    assert mirror(service, log) == (0, 2, None)
    assert logged(log) == first_two
    assert log.resets()[0][1:] == (2, "the witness now names event 2 as the head")


def test_the_log_keeps_its_database_id(tmp_path: Path) -> None:
    first = WitnessLog.open(tmp_path / "w")
    identity = first.database_id
    first.close()
    again = WitnessLog.open(tmp_path / "w")
    assert again.database_id == identity
    assert len(identity) == 32
    again.close()


def test_the_log_is_a_wal_database_litestream_can_replicate(tmp_path: Path) -> None:
    WitnessLog.open(tmp_path / "w").close()
    conn = connect_both(tmp_path / "w")
    assert conn.pragma("journal_mode") == "wal"
    conn.close()


# -- the verdict on a restored copy ---------------------------------------------------------


def verdict(
    records: Path, log: WitnessLog | None, witness: Witness | None = None
) -> dict[str, object]:
    """The verdict on the records file `records` (a copy, or a database's own)."""
    reader = connect_read_only(records)
    try:
        found = judge(reader, log, witness, "--witness w.json")
    finally:
        reader.close()
    answer: dict[str, object] = json.loads(json.dumps(found.as_dict()))
    return answer


def test_a_replica_that_matches_its_log_is_witnessed(service: Service, log: WitnessLog) -> None:
    append(service, 6)
    mirror(service, log)
    found = verdict(records_path(service.settings.db), log)
    assert found["witnessed"] is True
    assert (found["head_id"], found["witnessed_id"], found["mismatch"]) == (6, 6, None)


def test_events_logged_but_missing_from_the_replica_are_reported_lost(
    tmp_path: Path, service: Service, log: WitnessLog
) -> None:
    append(service, 3)
    copy = tmp_path / "copy.db"
    service.db.server.execute(f"VACUUM INTO '{copy}'")  # the replica, three events in
    append(service, 2)
    mirror(service, log)
    found = verdict(copy, log)
    assert found["witnessed"] is True
    assert found["lost"] == {"first_id": 4, "last_id": 5, "first_seen": NOW, "last_seen": NOW}


def test_events_replicated_before_their_log_entry_are_not_witnessed(
    service: Service, log: WitnessLog
) -> None:
    append(service, 3)
    mirror(service, log)
    append(service, 2)
    found = verdict(records_path(service.settings.db), log)
    assert found["witnessed"] is False
    assert (found["head_id"], found["witnessed_id"], found["mismatch"]) == (5, 3, None)
    assert "events 4 to 5" in str(found["lines"])


def test_a_replica_rewritten_after_the_log_is_a_mismatch(service: Service, log: WitnessLog) -> None:
    append(service, 5)
    mirror(service, log)
    db = service.settings.db
    with tampered(db) as conn:
        conn.execute("UPDATE memory_events SET content = 'forged' WHERE id = 3")
        rehash_from(conn, 3)
    found = verdict(records_path(db), log)
    assert found["witnessed"] is False
    assert found["mismatch"] == {
        "event_id": 3,
        "reason": "event 3 differs from the replica's witness log (rewritten, hashes recomputed)",
    }


def test_without_a_log_nothing_is_witnessed(service: Service) -> None:
    append(service, 2)
    found = verdict(records_path(service.settings.db), None)
    assert (found["witnessed"], found["witnessed_id"]) == (False, 0)
    assert "no witness log" in str(found["lines"])


def test_an_empty_chain_is_witnessed_by_nothing_at_all(service: Service) -> None:
    found = verdict(records_path(service.settings.db), None)
    assert (found["witnessed"], found["head_id"]) == (True, 0)


def test_a_witness_kept_elsewhere_vouches_and_finds_rewrites(service: Service) -> None:
    append(service, 4)
    db = service.settings.db
    kept = WitnessFile.beside(db).read()
    assert kept is not None
    assert verdict(records_path(db), None, kept)["witnessed"] is True
    with tampered(db) as conn:
        conn.execute("UPDATE memory_events SET content = 'forged' WHERE id = 4")
        rehash_from(conn, 4)
    found = verdict(records_path(db), None, kept)
    assert found["mismatch"] == {
        "event_id": 4,
        "reason": "event 4 differs from --witness w.json (its head; rewritten, hashes recomputed)",
    }


def test_a_witness_kept_elsewhere_names_what_the_replica_lost(
    tmp_path: Path, service: Service
) -> None:
    append(service, 2)
    copy = tmp_path / "copy.db"
    service.db.server.execute(f"VACUUM INTO '{copy}'")
    append(service, 3)
    kept = WitnessFile.beside(service.settings.db).read()
    found = verdict(copy, None, kept)
    assert found["lost"] == {"first_id": 3, "last_id": 5, "first_seen": None, "last_seen": None}
    assert found["witnessed"] is False  # the kept head is not in the copy: nothing vouches
