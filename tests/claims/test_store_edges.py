"""The store's limits at their exact edges, and the details mutation testing found unpinned:
the largest id, the clock-skew allowance, evidence merged on confirm, decay as of a moment."""

from __future__ import annotations

import json
from pathlib import Path

import apsw
import pytest

from sqlgate.claims.store import ClaimStore
from sqlgate.errors import InvalidArgument, NotFound
from sqlgate.service import Service
from tests.claims.conftest import DAY, claim_events, iso
from tests.conftest import FakeClock
from tests.records import connect_both

LARGEST = 2**63 - 1


def test_ranks_run_from_1_to_a_million(store: ClaimStore) -> None:
    assert store.add("acme", "priority", "top", rank=1_000_000)[0].rank == 1_000_000
    with pytest.raises(InvalidArgument, match="from 1 to 1000000"):
        store.add("globex", "priority", "top", rank=1_000_001)


def test_the_largest_sqlite_id_is_a_claim_id_and_one_past_it_is_not_found(
    store: ClaimStore, db_path: Path
) -> None:
    store.add("acme", "fact", "a claim")
    conn = connect_both(db_path)
    try:
        conn.execute("UPDATE claims SET id = ? WHERE id = 1", (LARGEST,))
    finally:
        conn.close()
    assert store.get(LARGEST).entity == "acme"
    with pytest.raises(NotFound, match=f"no claim {LARGEST + 1}"):
        store.get(LARGEST + 1)
    with pytest.raises(NotFound, match="no claim 100"):
        store.get(100)


def test_confirmed_at_may_be_one_minute_ahead_and_no_more(
    store: ClaimStore, wall: FakeClock
) -> None:
    wall.advance(DAY)
    minute = 60 / DAY
    claim, _ = store.add("acme", "fact", "one", confirmed_at=iso(1 + minute))
    assert claim.last_confirmed == "2026-01-02T00:01:00.000Z"
    with pytest.raises(InvalidArgument, match="in the future"):
        store.add("acme", "fact", "two", confirmed_at=iso(1 + 61 / DAY))


def test_an_entity_may_be_exactly_200_characters(store: ClaimStore) -> None:
    assert len(store.add("e" * 200, "fact", "a claim")[0].entity) == 200
    with pytest.raises(InvalidArgument, match="201 characters, over the limit of 200"):
        store.add("e" * 201, "fact", "a claim")


def test_claim_events_keep_text_as_written(store: ClaimStore, db_path: Path) -> None:
    store.add("café", "fact", "naïve ☕")
    conn = connect_both(db_path, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        (content,) = conn.execute(
            "SELECT content FROM memory_events WHERE kind = 'claim'"
        ).fetchone()
    finally:
        conn.close()
    assert "café" in content
    assert "naïve ☕" in content
    assert claim_events(db_path)[0]["action"] == "add"


def test_confirm_adds_its_evidence_to_what_the_claim_had(
    service: Service, store: ClaimStore
) -> None:
    first = json.loads(service.append_event("seen once"))["id"]
    second = json.loads(service.append_event("seen again"))["id"]
    claim, _ = store.add("acme", "fact", "a claim", evidence=[first])
    assert store.confirm(claim.id, evidence=[second]).evidence == (first, second)
    assert store.confirm(claim.id).evidence == (first, second)


def test_decayed_as_of_a_later_moment_reads_decay_then(store: ClaimStore) -> None:
    store.add("acme", "fact", "volatile", volatility="volatile", confidence=0.8)
    assert store.decayed(as_of=iso(0))[0] == []
    below, _ = store.decayed(as_of=iso(30))
    assert [item.claim.claim for item in below] == ["volatile"]
