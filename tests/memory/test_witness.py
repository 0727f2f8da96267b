"""The witness file: kept in the db's records folder, replaced atomically, and what happens
when it is lost."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sqlgate.errors import SqlgateError
from sqlgate.home import record_files
from sqlgate.memory.witness import Witness, WitnessFile
from sqlgate.service import Service
from tests.memory.conftest import append_many, rehash_from, rows, tampered, verify, witness_of

H1, H2 = "a" * 64, "b" * 64


def test_the_witness_lives_in_the_records_folder_not_beside_the_database(db_path: Path) -> None:
    assert WitnessFile.beside(db_path).path == record_files(db_path).folder / "witness.json"
    assert not db_path.with_name("agent.db.witness.json").exists()


def test_every_append_moves_the_witnessed_head(memory: Service, db_path: Path) -> None:
    assert witness_of(db_path).read() is None
    for expected_id in (1, 2, 3):
        answer = json.loads(memory.append_event(f"event {expected_id}"))
        witness = witness_of(db_path).read()
        assert witness is not None
        assert (witness.head_id, witness.head_hash) == (expected_id, answer["hash"])
    assert [p.name for p in record_files(db_path).folder.iterdir() if p.suffix == ".tmp"] == []


def test_verification_records_the_verified_position(memory: Service, db_path: Path) -> None:
    append_many(memory, 3)
    assert witness_of(db_path).read() == Witness(3, rows(db_path)[-1]["hash"], 0, "")
    verify(memory)
    head = rows(db_path)[-1]["hash"]
    assert witness_of(db_path).read() == Witness(3, head, 3, head)
    memory.append_event("one more")
    witness = witness_of(db_path).read()
    assert witness is not None
    assert (witness.head_id, witness.verified_id) == (4, 3)


def test_write_then_read_round_trips_and_replaces_whole(tmp_path: Path) -> None:
    witness = WitnessFile(tmp_path / "w.json")
    witness.write(Witness(2, H1, 1, H2))
    witness.write(Witness(3, H2, 1, H2))
    assert witness.read() == Witness(3, H2, 1, H2)
    assert json.loads(witness.path.read_text())["format"] == 1


def test_restore_puts_back_the_bytes_or_the_absence(tmp_path: Path) -> None:
    witness = WitnessFile(tmp_path / "w.json")
    witness.restore(None)
    assert not witness.path.exists()
    witness.path.write_bytes(b"anything at all")
    raw = witness.read_raw()
    witness.write(Witness(1, H1))
    witness.restore(raw)
    assert witness.path.read_bytes() == b"anything at all"
    witness.restore(None)
    assert not witness.path.exists()


UNREADABLE: list[Any] = [
    pytest.param(b"not json", id="not-json"),
    pytest.param(b"[1, 2]", id="a-list"),
    pytest.param(b"{}", id="no-head"),
    pytest.param(b'{"head_id": "3", "head_hash": "' + H1.encode() + b'"}', id="id-as-text"),
    pytest.param(b'{"head_id": -1, "head_hash": ""}', id="negative-id"),
    pytest.param(b'{"head_id": true, "head_hash": ""}', id="boolean-id"),
    pytest.param(b'{"head_id": 1e400, "head_hash": ""}', id="infinite-id"),
    pytest.param(b'{"head_id": 3, "head_hash": "abc"}', id="short-hash"),
    pytest.param(b'{"head_id": 3, "head_hash": "' + H1.upper().encode() + b'"}', id="upper-hex"),
    pytest.param(b'{"head_id": 3, "head_hash": "' + H1.encode() + b'", "verified_id": 2}',
                 id="verified-without-hash"),
    pytest.param(b"\xff\xfe", id="not-utf8"),
]  # fmt: skip


@pytest.mark.parametrize("raw", UNREADABLE)
def test_an_unreadable_witness_is_an_error_naming_the_file(tmp_path: Path, raw: bytes) -> None:
    witness = WitnessFile(tmp_path / "w.json")
    witness.path.write_bytes(raw)
    with pytest.raises(SqlgateError, match=r"w\.json"):
        witness.read()


def test_a_missing_witness_on_a_new_database_is_fine(memory: Service) -> None:
    assert verify(memory)["ok"] is True


def test_a_missing_witness_with_events_is_reported(memory: Service, db_path: Path) -> None:
    append_many(memory, 3)
    witness_of(db_path).path.unlink()
    result = verify(memory)
    assert result["ok"] is False
    assert result["first_broken_id"] is None
    assert "witness file is missing" in result["reason"]
    assert "3 events" in result["reason"]
    assert memory.memory.chain.verify(incremental=True).ok is False


def test_the_next_append_starts_a_new_witness_trusting_the_chain(
    memory: Service, db_path: Path
) -> None:
    append_many(memory, 3)
    witness_of(db_path).path.unlink()
    memory.append_event("after the loss")
    assert verify(memory)["ok"] is True
    head = rows(db_path)[-1]["hash"]
    assert witness_of(db_path).read() == Witness(4, head, 4, head)


def test_a_corrupt_witness_is_reported_then_replaced_by_the_next_append(
    memory: Service, db_path: Path
) -> None:
    append_many(memory, 2)
    witness_of(db_path).path.write_text("{ torn")
    result = verify(memory)
    assert (result["ok"], result["first_broken_id"]) == (False, None)
    assert result["reason"].startswith("witness mismatch")
    assert "not valid witness JSON" in result["reason"]
    memory.append_event("after the damage")
    assert verify(memory)["ok"] is True


def test_an_append_does_not_launder_a_rewrite_the_witness_caught(
    memory: Service, db_path: Path
) -> None:
    append_many(memory, 5)
    with tampered(db_path) as conn:
        conn.execute("UPDATE memory_events SET content = 'rewritten' WHERE id >= 2")
        rehash_from(conn, 2)
    memory.append_event("the agent carries on")
    memory.append_event("and on")
    for status in (memory.memory.chain.verify(), memory.memory.chain.verify(incremental=True)):
        assert (status.ok, status.first_broken_id) == (False, 5)
        assert (status.reason or "").startswith("witness mismatch")


def test_an_append_does_not_launder_a_truncation(memory: Service, db_path: Path) -> None:
    append_many(memory, 5)
    with tampered(db_path) as conn:
        conn.execute("DELETE FROM memory_events WHERE id >= 4")
    memory.append_event("the agent carries on")  # becomes event 4; the witnessed 5 is gone
    result = verify(memory)
    assert (result["ok"], result["first_broken_id"]) == (False, 5)
    assert "last verified event 5 is gone" in result["reason"]


def test_deleting_the_witness_accepts_the_chain_as_it_stands(
    memory: Service, db_path: Path
) -> None:
    append_many(memory, 5)
    with tampered(db_path) as conn:
        conn.execute("DELETE FROM memory_events WHERE id >= 4")  # e.g. a deliberate restore
    memory.append_event("carry on")
    assert verify(memory)["ok"] is False
    witness_of(db_path).path.unlink()
    memory.append_event("accepted")
    assert verify(memory) == {
        "ok": True,
        "events": 5,
        "head_id": 5,
        "head_hash": rows(db_path)[-1]["hash"],
    }


def test_a_witness_ahead_of_the_chain_is_reported_as_events_removed(
    memory: Service, db_path: Path
) -> None:
    append_many(memory, 2)
    witness_of(db_path).write(Witness(3, H1, 0, ""))  # as a crash after the witness write
    result = verify(memory)
    assert (result["ok"], result["first_broken_id"]) == (False, 3)
    assert "chain ends at 2" in result["reason"]
