"""The witness judgement, case by case, on a table of hashes (no chain needed): which event
each disagreement names first, and what the verified position is recorded as."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest

from sqlgate.memory.witness import Witness, WitnessFile
from sqlgate.memory.witness_check import (
    broken,
    check_visible,
    check_witness,
    record_verified,
    stored_hash,
)

HASHES = {1: "h1", 2: "h2", 3: "h3", 4: "h4"}


@pytest.fixture
def conn() -> Iterator[apsw.Connection]:
    connection = apsw.Connection(":memory:")
    connection.execute("CREATE TABLE memory_events (id INTEGER PRIMARY KEY, hash TEXT)")
    connection.executemany("INSERT INTO memory_events VALUES (?, ?)", list(HASHES.items()))
    yield connection
    connection.close()


def judged(conn: apsw.Connection, witness: Witness | None, count: int = 4) -> object:
    status = check_witness(conn, witness, count)
    return None if status is None else (status.first_broken_id, status.reason)


def test_a_witness_that_agrees_is_no_problem(conn: apsw.Connection) -> None:
    assert judged(conn, Witness(4, "h4", 2, "h2")) is None
    assert judged(conn, Witness(4, "h4")) is None
    assert check_witness(conn, None, 0) is None  # a new database


@pytest.mark.parametrize(
    ("count", "events"), [pytest.param(4, "4 events", id="4"), pytest.param(1, "1 event", id="1")]
)
def test_a_missing_witness_with_events_is_reported(
    conn: apsw.Connection, count: int, events: str
) -> None:
    assert judged(conn, None, count) == (
        None,
        f"witness mismatch: the witness file is missing but the chain has {events}; nothing "
        "vouches that the chain was not rewritten (the next append starts a new one)",
    )


def test_a_witness_ahead_of_the_chain_names_the_first_missing_event(
    conn: apsw.Connection,
) -> None:
    assert judged(conn, Witness(6, "h6", 2, "h2")) == (
        5,
        "witness mismatch: the witness names event 6 as the head, but the chain ends at 4 "
        "(events were removed, or a crash interrupted an append)",
    )


def test_events_after_the_witnessed_head_name_the_first_of_them(conn: apsw.Connection) -> None:
    assert judged(conn, Witness(2, "h2", 1, "h1")) == (
        3,
        "witness mismatch: events 3 to 4 follow the witnessed head (written outside the server)",
    )


def test_the_earliest_rewritten_witnessed_event_is_named(conn: apsw.Connection) -> None:
    assert judged(conn, Witness(4, "x4", 2, "x2")) == (
        2,
        "witness mismatch: the witnessed last verified event 2 was rewritten (hashes recomputed)",
    )
    assert judged(conn, Witness(4, "x4", 2, "h2")) == (
        4,
        "witness mismatch: the witnessed head event 4 was rewritten (hashes recomputed)",
    )


def test_a_verified_event_past_the_chain_is_gone(conn: apsw.Connection) -> None:
    # the head agrees (4), the verified position names an event the chain no longer has
    assert judged(conn, Witness(4, "h4", 5, "h5")) == (
        5,
        "witness mismatch: the last verified event 5 is gone",
    )
    assert judged(conn, Witness(4, "h4", 4, "h4")) is None


def test_the_earliest_of_several_problems_wins(conn: apsw.Connection) -> None:
    # events follow the head (3 on) and the verified event 1 was rewritten: 1 comes first
    status = judged(conn, Witness(2, "h2", 1, "x1"))
    assert status == (
        1,
        "witness mismatch: the witnessed last verified event 1 was rewritten (hashes recomputed)",
    )


def test_check_visible_judges_only_the_events_it_can_see(conn: apsw.Connection) -> None:
    assert check_visible(conn, Witness(6, "h6", 4, "h4"), 4) is None  # 6 not visible yet
    assert check_visible(conn, Witness(6, "h6", 3, "x3"), 4) == broken(
        3, "witness mismatch: the witnessed last verified event 3 was rewritten (hashes recomputed)"
    )
    assert check_visible(conn, Witness(4, "x4", 0, ""), 4) == broken(
        4, "witness mismatch: the witnessed head event 4 was rewritten (hashes recomputed)"
    )
    assert check_visible(conn, Witness(4, "x4", 2, "x2"), 4) == broken(
        2, "witness mismatch: the witnessed last verified event 2 was rewritten (hashes recomputed)"
    )
    assert check_visible(conn, Witness(4, "x4", 3, "x3"), 3) == broken(
        3, "witness mismatch: the witnessed last verified event 3 was rewritten (hashes recomputed)"
    )


def test_stored_hash_is_none_for_a_missing_event(conn: apsw.Connection) -> None:
    assert stored_hash(conn, 2) == "h2"
    assert stored_hash(conn, 9) is None


def test_broken_has_no_events_and_says_why() -> None:
    status = broken(3, "why")
    assert (status.ok, status.first_broken_id, status.reason, status.events) == (False, 3, "why", 0)


def test_record_verified_writes_only_a_new_position(tmp_path: Path) -> None:
    a, b, c, d = ("a" * 64, "b" * 64, "c" * 64, "d" * 64)
    file = WitnessFile(tmp_path / "w.json")
    current = Witness(4, a, 2, b)
    record_verified(file, current, 2, b)
    assert file.read_raw() is None  # the same position: nothing written
    record_verified(file, current, 3, c)
    assert file.read() == Witness(4, a, 3, c)
    record_verified(file, current, 2, d)
    assert file.read() == Witness(4, a, 2, d)
    record_verified(file, current, 3, b)  # another event, whatever its hash
    assert file.read() == Witness(4, a, 3, b)
