"""The chain's edges mutation testing found unpinned: a write transaction that fails before
its witness is written, and the hash contract's
fallback for values that are not plain ints and strings."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from sqlgate.memory.chain import GENESIS, EventChain, canonical, event_hash
from sqlgate.memory.contract import ChainStatus, head_of, stored_tags
from sqlgate.memory.witness import Witness
from sqlgate.service import Service
from tests.memory.conftest import rehash_from, rows, tampered, witness_of
from tests.records import connect_both


class Boom(Exception):
    pass


def fail_after_appending(chain: EventChain) -> None:
    with chain.writing() as writer:
        writer.append("note", "never lands", [])
        raise Boom


def test_a_transaction_failing_before_its_witness_keeps_the_witness(
    memory: Service, db_path: Path
) -> None:
    memory.append_event("first")
    before = witness_of(db_path).read_raw()
    assert before is not None
    chain = memory.memory.chain
    with pytest.raises(Boom):
        fail_after_appending(chain)
    assert witness_of(db_path).read_raw() == before
    assert [row["content"] for row in rows(db_path)] == ["first"]
    with pytest.raises(Boom), chain.writing():
        raise Boom  # nothing appended either
    assert witness_of(db_path).read_raw() == before
    memory.append_event("second")  # the connection is usable: no transaction left open
    assert [row["content"] for row in rows(db_path)] == ["first", "second"]


def test_a_transaction_without_events_leaves_the_witness_alone(
    memory: Service, db_path: Path
) -> None:
    memory.append_event("first")
    before = witness_of(db_path).read_raw()
    with memory.memory.chain.writing():
        pass
    assert witness_of(db_path).read_raw() == before


def test_a_witness_that_fails_to_be_written_is_put_back(
    memory: Service, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory.append_event("first")
    before = witness_of(db_path).read_raw()
    witness = memory.memory.chain.witness
    write = witness.write

    def write_then_fail(value: Witness) -> None:
        write(value)
        raise Boom

    monkeypatch.setattr(witness, "write", write_then_fail)
    with pytest.raises(Boom), memory.memory.chain.writing() as writer:
        writer.append("note", "never lands", [])
    monkeypatch.undo()
    assert [row["content"] for row in rows(db_path)] == ["first"]
    # a write that fails once the new file is in place (its directory's fsync, say) must
    # not leave the witness of an event that never landed
    assert witness_of(db_path).read_raw() == before


# -- the hash contract's fallback ---------------------------------------------------------


def dumps(*fields: object) -> bytes:
    return json.dumps(list(fields), ensure_ascii=False, separators=(",", ":")).encode()


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param((True, "t", "s", "k", "c", ["a"], GENESIS), id="bool-id"),
        pytest.param((True, "té", "s", "k", "ç 😀", ["é"], GENESIS), id="bool-id-not-ascii"),
        pytest.param((1, None, "s", "k", "c", [], GENESIS), id="null-ts"),
        pytest.param((1, "t", 5, "k", "c", [], GENESIS), id="int-session"),
        pytest.param((1, "t", "s", "k", "c", ["a", 2], GENESIS), id="int-tag"),
        pytest.param((1, "t", "s", "k", 1.5, [], GENESIS), id="float-content"),
        pytest.param((1, "t", "s", "k", "c", [], None), id="null-prev-hash"),
    ],
)
def test_canonical_falls_back_to_json_dumps_for_other_types(fields: tuple[object, ...]) -> None:
    assert canonical(*fields) == dumps(*fields)  # type: ignore[arg-type]


def test_event_hash_is_the_sha256_of_canonical() -> None:
    fields = (3, "t", "s", "k", "c", ["x"], GENESIS)
    assert event_hash(*fields) == hashlib.sha256(dumps(*fields)).hexdigest()


@pytest.mark.parametrize(
    ("raw", "tags"),
    [
        pytest.param("[]", [], id="empty"),
        pytest.param('["a","b"]', ["a", "b"], id="strings"),
        pytest.param("[ ]", [], id="empty-spaced"),
        pytest.param('["a",1]', None, id="a-number"),
        pytest.param('{"a":1}', None, id="object"),
        pytest.param('"a"', None, id="string"),
        pytest.param("[", None, id="not-json"),
        pytest.param(b"[]", None, id="bytes"),
        pytest.param(None, None, id="null"),
    ],
)
def test_stored_tags_reads_only_json_arrays_of_strings(raw: object, tags: list[str] | None) -> None:
    assert stored_tags(raw) == tags


def test_head_of_an_empty_chain_is_genesis(memory: Service, db_path: Path) -> None:
    conn = connect_both(db_path)
    try:
        assert head_of(conn) == (0, GENESIS)
        memory.append_event("one")
        (row,) = rows(db_path)
        assert head_of(conn) == (1, row["hash"])
    finally:
        conn.close()


def test_chain_status_answers() -> None:
    ok = ChainStatus(True, events=2, head_id=2, head_hash="h", unconfirmed="busy")
    assert ok.as_json() == (
        '{"ok": true, "events": 2, "head_id": 2, "head_hash": "h", "unconfirmed": "busy"}'
    )
    assert ChainStatus(True).as_dict() == {
        "ok": True,
        "events": 0,
        "head_id": None,
        "head_hash": None,
    }
    assert ChainStatus(False, first_broken_id=3, reason="r").checked == 0
    broken = ChainStatus(False, first_broken_id=3, reason="r", checked=9)
    assert broken.as_dict() == {"ok": False, "first_broken_id": 3, "reason": "r"}


# -- the witness an append writes -----------------------------------------------------------


def test_an_append_onto_a_rewritten_never_verified_head_does_not_launder_it(
    memory: Service, db_path: Path
) -> None:
    memory.append_event("one")
    with tampered(db_path) as conn:
        conn.execute("UPDATE memory_events SET content = 'rewritten' WHERE id = 1")
        rehash_from(conn, 1)
    memory.append_event("the agent carries on")
    status = memory.memory.chain.verify()
    assert (status.ok, status.first_broken_id) == (False, 1)
    assert (status.reason or "").startswith("witness mismatch")


def test_an_append_under_a_witness_naming_another_head_keeps_the_mismatch(
    memory: Service, db_path: Path
) -> None:
    memory.append_event("one")
    memory.append_event("two")
    head = rows(db_path)[-1]
    witness_of(db_path).write(Witness(5, head["hash"]))  # event 2's hash, named event 5
    memory.append_event("three")
    status = memory.memory.chain.verify()
    assert (status.ok, status.first_broken_id) == (False, 4)
    assert status.reason == "witness mismatch: the last verified event 5 is gone"
