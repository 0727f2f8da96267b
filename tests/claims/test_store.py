"""Claims in the database: decay on the wall clock, identity, states, the chain, bad input.

Every change is one claims row change + one claims_history row + one chain event of kind
`claim`, in one transaction; evaluating "as of" a moment writes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sqlgate.claims.model import FLOOR, HALF_LIFE_DAYS
from sqlgate.claims.store import ClaimStore
from sqlgate.errors import InvalidArgument, NotFound, PolicyDenied, SqlgateError
from sqlgate.memory.chain import ChainWriter
from sqlgate.memory.witness import WitnessFile
from sqlgate.service import Service
from tests.claims.conftest import (
    DAY,
    OpenClaims,
    chain_ok,
    claim_events,
    history,
    iso,
    snapshot,
    state_of,
)
from tests.conftest import FakeClock


def add(store: ClaimStore, entity: str, kind: str, text: str, **options: Any) -> int:
    return store.add(entity, kind, text, **options)[0].id


def ranked(store: ClaimStore, entity: str, rank: int, **options: Any) -> int:
    return add(store, entity, "priority", f"{entity} is priority {rank}", rank=rank, **options)


def stale_by_decay(store: ClaimStore, entity: str = "acme", **options: Any) -> int:
    """A volatile claim confirmed 8 days ago (effective 0.36), marked stale by claims_decayed."""
    claim_id = add(store, entity, "fact", f"{entity} ships weekly", volatility="volatile",
                   confirmed_at=iso(-8), **options)  # fmt: skip
    store.decayed()
    assert state_of(store, claim_id) == "stale"
    return claim_id


def contradicted_pair(store: ClaimStore) -> tuple[int, int]:
    first, second = ranked(store, "acme", 1), ranked(store, "globex", 1)
    store.contradictions()
    assert (state_of(store, first), state_of(store, second)) == ("contradicted", "contradicted")
    return first, second


# -- decay on the wall clock ---------------------------------------------------------------


@pytest.mark.parametrize("volatility", ["stable", "slow", "volatile"])
@pytest.mark.parametrize(
    ("half_lives", "expected"),
    [
        pytest.param(0, 0.8, id="fresh"),
        pytest.param(1, 0.4, id="one-half-life"),
        pytest.param(2, 0.2, id="two-half-lives"),
    ],
)
def test_effective_confidence_halves_every_half_life_of_wall_time(
    service: Service, wall: FakeClock, volatility: str, half_lives: int, expected: float
) -> None:
    add(service.claims, "acme", "fact", "acme ships", volatility=volatility, confidence=0.8)
    wall.advance(DAY * HALF_LIFE_DAYS[volatility] * half_lives)
    (shown,) = json.loads(service.claims_all())
    assert shown["effective_confidence"] == pytest.approx(expected)
    (claim,) = service.claims.all()
    assert claim.effective(service.claims.now()) == pytest.approx(expected)


@pytest.mark.parametrize("volatility", ["stable", "slow", "volatile"])
def test_effective_confidence_stops_at_the_floor(
    store: ClaimStore, wall: FakeClock, volatility: str
) -> None:
    add(store, "acme", "fact", "acme ships", volatility=volatility, confidence=1.0)
    wall.advance(DAY * HALF_LIFE_DAYS[volatility] * 20)
    (item,) = store.decayed(threshold=1.0)[0]
    assert item.effective == FLOOR


def test_a_claim_confirmed_after_as_of_counts_as_freshly_confirmed(store: ClaimStore) -> None:
    add(store, "acme", "fact", "acme ships", volatility="volatile", confidence=0.7)
    (item,) = store.decayed(threshold=1.0, as_of=iso(-30))[0]
    assert item.effective == 0.7


def test_confirmed_at_in_the_past_starts_the_decay_then(store: ClaimStore) -> None:
    claim, _ = store.add("acme", "fact", "acme ships", volatility="volatile",
                         confidence=0.8, confirmed_at="2025-12-25")  # fmt: skip
    assert claim.last_confirmed == "2025-12-25T00:00:00.000Z"
    assert claim.created_at == "2026-01-01T00:00:00.000Z"
    assert claim.effective(store.now()) == pytest.approx(0.4)


def test_confirmed_at_a_few_seconds_ahead_is_tolerated_as_clock_skew(store: ClaimStore) -> None:
    claim, _ = store.add("acme", "fact", "acme ships", confirmed_at=iso(30 / DAY))
    assert claim.effective(store.now()) == 0.8


# -- identity: adding again updates ----------------------------------------------------------


def test_adding_the_same_claim_again_updates_it_and_keeps_its_id(
    store: ClaimStore, wall: FakeClock, db_path: Path
) -> None:
    first, created = store.add("acme", "priority", "acme is our top customer", confidence=0.6,
                               rank=2)  # fmt: skip
    wall.advance(DAY * 3)
    again, created_again = store.add(
        "  acme ", "priority", "acme   is our\ttop customer ", volatility="stable",
        confidence=0.9, rank=1,
    )  # fmt: skip
    assert (created, created_again) == (True, False)
    assert again.id == first.id
    assert (again.confidence, again.rank, again.volatility) == (0.9, 1, "stable")
    assert again.last_confirmed == "2026-01-04T00:00:00.000Z"
    assert again.created_at == first.created_at
    assert [claim.id for claim in store.all()] == [first.id]
    assert len(snapshot(db_path).claims) == 1


@pytest.mark.parametrize(
    ("entity", "kind", "text"),
    [
        pytest.param("globex", "fact", "acme ships", id="other-entity"),
        pytest.param("acme", "status", "acme ships", id="other-kind"),
        pytest.param("acme", "fact", "acme ships daily", id="other-text"),
    ],
)
def test_a_claim_differing_in_entity_kind_or_text_is_a_new_claim(
    store: ClaimStore, entity: str, kind: str, text: str
) -> None:
    first = add(store, "acme", "fact", "acme ships")
    second, created = store.add(entity, kind, text)
    assert created is True
    assert second.id != first


def test_evidence_accumulates_across_updates_and_confirmations(service: Service) -> None:
    one, two, three = (json.loads(service.append_event(f"seen {n}"))["id"] for n in range(3))
    claim, _ = service.claims.add("acme", "fact", "acme ships", evidence=[two, one])
    assert claim.evidence == (two, one)
    updated, _ = service.claims.add("acme", "fact", "acme ships", evidence=[two, three])
    assert updated.evidence == (one, two, three)
    confirmed = service.claims.confirm(claim.id, evidence=[one])
    assert confirmed.evidence == (one, two, three)


# -- states ----------------------------------------------------------------------------------


def test_claims_decayed_now_marks_live_claims_below_the_threshold_stale(
    store: ClaimStore, db_path: Path
) -> None:
    old = add(store, "acme", "fact", "acme ships", volatility="volatile", confirmed_at=iso(-8))
    fresh = add(store, "globex", "fact", "globex ships")
    items, changes = store.decayed()
    assert [(item.claim.id, item.claim.state) for item in items] == [(old, "stale")]
    assert changes == [{"id": old, "from": "active", "to": "stale",
                        "reason": "effective confidence below 0.5"}]  # fmt: skip
    assert (state_of(store, old), state_of(store, fresh)) == ("stale", "active")
    assert history(db_path)[-1]["detail"]["changes"]["state"] == ["active", "stale"]


def test_a_stale_claim_is_listed_again_until_confirmed_but_not_marked_again(
    store: ClaimStore, db_path: Path
) -> None:
    """Issue 30: an agent that does not act at once keeps the reminder; nothing is written
    again for a claim already stale."""
    claim_id = stale_by_decay(store)
    before = snapshot(db_path)
    items, changes = store.decayed()
    assert [(item.claim.id, item.claim.state) for item in items] == [(claim_id, "stale")]
    assert changes == []
    assert snapshot(db_path) == before
    store.confirm(claim_id)
    assert store.decayed() == ([], [])


def test_a_retracted_claim_is_no_longer_listed(store: ClaimStore) -> None:
    claim_id = stale_by_decay(store)
    store.retract(claim_id)
    assert store.decayed() == ([], [])


def test_a_claim_marked_with_a_higher_threshold_is_listed_only_below_the_one_asked(
    store: ClaimStore,
) -> None:
    claim_id = add(store, "acme", "fact", "acme ships")  # 0.8, confirmed now
    assert [item.claim.id for item in store.decayed(threshold=0.9)[0]] == [claim_id]
    assert store.decayed(threshold=0.5) == ([], [])
    (item,) = store.decayed(threshold=0.85)[0]
    assert (item.claim.id, item.claim.state) == (claim_id, "stale")


def test_claims_decayed_as_of_ignores_stored_states(store: ClaimStore) -> None:
    claim_id = stale_by_decay(store)
    items, changes = store.decayed(as_of=iso(0))
    assert [(item.claim.id, item.claim.state) for item in items] == [(claim_id, "stale")]
    assert changes == []


def test_contradictions_now_marks_decayed_live_claims_stale(store: ClaimStore) -> None:
    claim_id = add(store, "acme", "fact", "acme ships", volatility="volatile",
                   confirmed_at=iso(-8))  # fmt: skip
    evaluation = store.contradictions()
    assert evaluation.findings == []
    assert [(c["id"], c["from"], c["to"]) for c in evaluation.state_changes] == [
        (claim_id, "active", "stale")
    ]
    assert state_of(store, claim_id) == "stale"


def test_claims_in_a_finding_become_contradicted(store: ClaimStore, db_path: Path) -> None:
    first, second = ranked(store, "acme", 1), ranked(store, "globex", 1)
    evaluation = store.contradictions()
    assert [finding.rule for finding in evaluation.findings] == ["duplicate-rank"]
    assert [(c["id"], c["to"]) for c in evaluation.state_changes] == [
        (first, "contradicted"),
        (second, "contradicted"),
    ]
    assert history(db_path)[-1]["detail"]["changes"]["reason"] == "in a finding: duplicate-rank"
    before = snapshot(db_path)
    assert store.contradictions().state_changes == []  # still contradicted: nothing to record
    assert snapshot(db_path) == before


def test_a_contradicted_claim_no_longer_in_a_finding_returns_to_active(
    store: ClaimStore,
) -> None:
    first, second = contradicted_pair(store)
    store.retract(second)
    evaluation = store.contradictions()
    assert evaluation.findings == []
    assert [(c["id"], c["from"], c["to"]) for c in evaluation.state_changes] == [
        (first, "contradicted", "active")
    ]
    assert state_of(store, first) == "active"


def test_a_contradicted_claim_that_decays_becomes_stale(store: ClaimStore, wall: FakeClock) -> None:
    first, second = contradicted_pair(store)
    wall.advance(DAY * 31)  # slow: 0.8 → 0.39
    evaluation = store.contradictions()
    assert evaluation.findings == []
    assert {(c["id"], c["from"], c["to"]) for c in evaluation.state_changes} == {
        (first, "contradicted", "stale"),
        (second, "contradicted", "stale"),
    }


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(stale_by_decay, id="stale"),
        pytest.param(lambda store: contradicted_pair(store)[0], id="contradicted"),
    ],
)
def test_confirm_makes_a_stale_or_contradicted_claim_active_and_fresh(
    store: ClaimStore, wall: FakeClock, make: Callable[[ClaimStore], int]
) -> None:
    claim_id = make(store)
    wall.advance(DAY)
    confirmed = store.confirm(claim_id)
    assert confirmed.state == "active"
    assert confirmed.last_confirmed == "2026-01-02T00:00:00.000Z"
    assert confirmed.effective(store.now()) == confirmed.confidence
    assert state_of(store, claim_id) == "active"


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(stale_by_decay, id="stale"),
        pytest.param(lambda store: contradicted_pair(store)[0], id="contradicted"),
    ],
)
def test_adding_a_stale_or_contradicted_claim_again_reactivates_it(
    store: ClaimStore, wall: FakeClock, make: Callable[[ClaimStore], int]
) -> None:
    claim_id = make(store)
    old = store.get(claim_id)
    wall.advance(DAY)
    again, created = store.add(old.entity, old.kind, old.claim, volatility=old.volatility,
                               rank=old.rank)  # fmt: skip
    assert (again.id, created, again.state) == (claim_id, False, "active")
    assert again.last_confirmed == "2026-01-02T00:00:00.000Z"


def test_confirm_may_set_a_new_confidence_or_keep_the_old(store: ClaimStore) -> None:
    claim_id = add(store, "acme", "fact", "acme ships", confidence=0.6)
    assert store.confirm(claim_id).confidence == 0.6
    assert store.confirm(claim_id, confidence=0.95).confidence == 0.95


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda store: add(store, "acme", "fact", "acme ships"), id="active"),
        pytest.param(stale_by_decay, id="stale"),
        pytest.param(lambda store: contradicted_pair(store)[0], id="contradicted"),
    ],
)
def test_retract_retires_a_claim_in_any_state(
    store: ClaimStore, make: Callable[[ClaimStore], int]
) -> None:
    claim_id = make(store)
    assert store.retract(claim_id).state == "retired"
    assert state_of(store, claim_id) == "retired"


def test_a_retired_claim_cannot_be_confirmed_or_added_again(
    store: ClaimStore, db_path: Path
) -> None:
    claim_id = add(store, "acme", "fact", "acme ships")
    store.retract(claim_id)
    before = snapshot(db_path)
    with pytest.raises(PolicyDenied, match="retired"):
        store.confirm(claim_id)
    with pytest.raises(PolicyDenied, match="stay retired"):
        store.add("acme", "fact", "acme   ships")
    assert snapshot(db_path) == before


def test_retracting_twice_changes_and_records_nothing(store: ClaimStore, db_path: Path) -> None:
    claim_id = add(store, "acme", "fact", "acme ships")
    store.retract(claim_id)
    before = snapshot(db_path)
    assert store.retract(claim_id).state == "retired"
    assert snapshot(db_path) == before


def test_evaluations_never_change_a_retired_claim(store: ClaimStore, wall: FakeClock) -> None:
    first, second = contradicted_pair(store)
    store.retract(first)
    wall.advance(DAY * 365)
    store.decayed()
    store.contradictions()
    assert state_of(store, first) == "retired"
    assert state_of(store, second) == "stale"


# -- which claims the rules see ---------------------------------------------------------------


def rules_found(store: ClaimStore, **options: Any) -> list[str]:
    return [finding.rule for finding in store.contradictions(**options).findings]


@pytest.mark.parametrize("as_of", [None, iso(0)], ids=["now", "as-of"])
def test_equal_ranks_held_by_retired_claims_do_not_count(
    store: ClaimStore, as_of: str | None
) -> None:
    ranked(store, "acme", 1)
    store.retract(ranked(store, "globex", 1))
    assert rules_found(store, as_of=as_of) == []


def test_stale_claims_do_not_count_at_present_but_do_as_of_a_moment(
    store: ClaimStore,
) -> None:
    old = ranked(store, "acme", 1, volatility="volatile", confirmed_at=iso(-8))
    ranked(store, "globex", 1)
    assert rules_found(store) == []  # acme's claim has decayed: marked stale, not a finding
    assert state_of(store, old) == "stale"
    # a week ago acme's claim had decayed for one day (0.72), so both held rank 1
    assert rules_found(store, as_of=iso(-7)) == ["duplicate-rank"]
    assert state_of(store, old) == "stale"


def test_a_stored_stale_state_excludes_a_claim_at_present_whatever_its_confidence(
    store: ClaimStore,
) -> None:
    first = ranked(store, "acme", 1)
    ranked(store, "globex", 1)
    store.decayed(threshold=0.9)  # both marked stale while still at 0.8
    assert state_of(store, first) == "stale"
    assert rules_found(store) == []
    assert rules_found(store, as_of=iso(0)) == ["duplicate-rank"]


def test_status_conflict_and_rank_drop_are_found_in_the_store(store: ClaimStore) -> None:
    add(store, "launch", "status", "the launch is on schedule")
    add(store, "launch", "status", "the launch slipped")
    drop = ranked(store, "acme", 1)
    observed = {"signals": [{"acme": [4, 5, 6]}], "validPeriods": [True, True, True]}
    evaluation = store.contradictions(observed=observed)
    assert [finding.rule for finding in evaluation.findings] == ["status-conflict", "rank-drop"]
    assert evaluation.findings[1].claim_ids == (drop,)
    assert state_of(store, drop) == "contradicted"


# -- as_of writes nothing ---------------------------------------------------------------------


def test_evaluating_as_of_a_moment_writes_nothing(
    service: Service, wall: FakeClock, db_path: Path
) -> None:
    store = service.claims
    ranked(store, "acme", 1, volatility="volatile")
    ranked(store, "globex", 1)
    contradicted_pair_ids = [claim.id for claim in store.all()]
    wall.advance(DAY * 10)  # acme's claim decayed below 0.5: an evaluation now would write
    before = snapshot(db_path)
    items, changes = store.decayed(as_of=iso(10))
    evaluation = store.contradictions(as_of=iso(1))
    service.claims_decayed(as_of=iso(10))
    service.claims_contradictions(as_of=iso(1))
    assert [item.claim.id for item in items] == contradicted_pair_ids[:1]
    assert changes == []
    assert [finding.rule for finding in evaluation.findings] == ["duplicate-rank"]
    assert evaluation.state_changes == []
    assert snapshot(db_path) == before
    assert store.decayed()[1] != []  # the same evaluation now does record


# -- the chain: one event and one history row per change --------------------------------------


def seeded(store: ClaimStore) -> int:
    return add(store, "acme", "fact", "acme ships", confidence=0.8)


CHANGES: list[Any] = [
    pytest.param(lambda s, i: s.add("globex", "fact", "globex ships"), "add",
                 {"entity": "globex", "state": "active"}, id="add"),
    pytest.param(lambda s, i: s.add("acme", "fact", "acme ships", confidence=0.3), "update",
                 {"confidence": [0.8, 0.3]}, id="update"),
    pytest.param(lambda s, i: s.confirm(i, confidence=0.9), "confirm",
                 {"confidence": [0.8, 0.9]}, id="confirm"),
    pytest.param(lambda s, i: s.retract(i), "retract", {"state": ["active", "retired"]},
                 id="retract"),
    pytest.param(lambda s, i: s.decayed(threshold=0.9), "state",
                 {"state": ["active", "stale"], "reason": "effective confidence below 0.9"},
                 id="state-change"),
]  # fmt: skip


@pytest.mark.parametrize(("change", "action", "expected"), CHANGES)
def test_every_change_appends_one_claim_event_and_one_history_row(
    service: Service,
    db_path: Path,
    change: Callable[[ClaimStore, int], object],
    action: str,
    expected: dict[str, Any],
) -> None:
    claim_id = seeded(service.claims)
    before = snapshot(db_path)
    change(service.claims, claim_id)
    after = snapshot(db_path)
    assert len(after.events) == len(before.events) + 1
    assert len(after.history) == len(before.history) + 1
    (event,) = claim_events(db_path)[len(before.events) :]
    (row,) = history(db_path)[len(before.history) :]
    assert event["action"] == action
    assert event["claim"] == row["claim_id"]
    assert row == {"claim_id": event["claim"], "action": action,
                   "detail": {"claim": event["claim"], "action": action,
                              "changes": event["changes"]},
                   "event_id": event["id"]}  # fmt: skip
    assert expected.items() <= event["changes"].items()
    assert after.events[-1][3] == "claim"  # kind
    assert after.events[-1][5] == '["claim"]'  # tags
    assert chain_ok(service)


def test_a_state_change_per_claim_each_with_its_event(service: Service, db_path: Path) -> None:
    first, second = ranked(service.claims, "acme", 1), ranked(service.claims, "globex", 1)
    before = len(claim_events(db_path))
    service.claims.contradictions()
    events = claim_events(db_path)[before:]
    assert [(e["claim"], e["action"], e["changes"]["state"]) for e in events] == [
        (first, "state", ["active", "contradicted"]),
        (second, "state", ["active", "contradicted"]),
    ]
    assert [row["event_id"] for row in history(db_path)[-2:]] == [e["id"] for e in events]
    assert chain_ok(service)


def test_claim_events_share_the_chain_with_memory_events(service: Service) -> None:
    service.append_event("a note")
    seeded(service.claims)
    service.append_event("another note")
    assert chain_ok(service)


# -- atomicity ---------------------------------------------------------------------------------


def failing_append(self: ChainWriter, kind: str, content: str, tags: Any) -> Any:
    raise RuntimeError("the chain append failed")


ATOMIC: list[Any] = [
    pytest.param(lambda s, i: s.add("globex", "fact", "globex ships"), id="add"),
    pytest.param(lambda s, i: s.add("acme", "fact", "acme ships", confidence=0.3), id="update"),
    pytest.param(lambda s, i: s.confirm(i, confidence=0.9), id="confirm"),
    pytest.param(lambda s, i: s.retract(i), id="retract"),
    pytest.param(lambda s, i: s.decayed(threshold=0.9), id="decayed-state-change"),
    pytest.param(lambda s, i: s.contradictions(), id="contradictions-state-change"),
]  # fmt: skip


@pytest.mark.parametrize("change", ATOMIC)
def test_a_failed_chain_append_leaves_claims_history_and_chain_unchanged(
    service: Service,
    db_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    change: Callable[[ClaimStore, int], object],
) -> None:
    claim_id = seeded(service.claims)
    add(service.claims, "launch", "status", "the launch is on schedule")
    add(service.claims, "launch", "status", "the launch slipped")  # a finding to record
    before = snapshot(db_path)
    witness = WitnessFile.beside(db_path).read_raw()
    monkeypatch.setattr(ChainWriter, "append", failing_append)
    with pytest.raises(RuntimeError, match="append failed"):
        change(service.claims, claim_id)
    assert snapshot(db_path) == before
    assert WitnessFile.beside(db_path).read_raw() == witness
    monkeypatch.undo()
    change(service.claims, claim_id)  # nothing half-written stands in the way
    assert snapshot(db_path) != before
    assert chain_ok(service)


def test_a_failed_append_through_the_service_is_an_error_and_writes_no_claim(
    service: Service, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = snapshot(db_path)
    monkeypatch.setattr(ChainWriter, "append", failing_append)
    with pytest.raises(SqlgateError, match="internal error"):
        service.claim_add("acme", "fact", "acme ships")
    assert snapshot(db_path) == before


# -- bad input ---------------------------------------------------------------------------------

BASE = {"entity": "acme", "kind": "priority", "claim": "acme is our top customer"}

ADD_REFUSED: list[Any] = [
    pytest.param({"kind": "opinion"}, InvalidArgument,
                 "kind 'opinion' is not one of: priority, status, fact, relationship",
                 id="unknown-kind"),
    pytest.param({"kind": None}, InvalidArgument, "not one of", id="kind-none"),
    pytest.param({"kind": "Priority"}, InvalidArgument, "not one of", id="kind-case"),
    pytest.param({"volatility": "fast"}, InvalidArgument,
                 "volatility 'fast' is not one of: stable, slow, volatile",
                 id="unknown-volatility"),
    pytest.param({"confidence": 1.01}, InvalidArgument, "from 0 to 1", id="confidence-above-1"),
    pytest.param({"confidence": -0.01}, InvalidArgument, "from 0 to 1", id="confidence-negative"),
    pytest.param({"confidence": "0.5"}, InvalidArgument, "from 0 to 1", id="confidence-text"),
    pytest.param({"confidence": True}, InvalidArgument, "from 0 to 1", id="confidence-bool"),
    pytest.param({"confidence": None}, InvalidArgument, "from 0 to 1", id="confidence-none"),
    pytest.param({"confidence": float("nan")}, InvalidArgument, "from 0 to 1",
                 id="confidence-nan"),
    pytest.param({"confidence": float("inf")}, InvalidArgument, "from 0 to 1",
                 id="confidence-inf"),
    pytest.param({"confidence": 10**400}, InvalidArgument, "from 0 to 1", id="confidence-huge"),
    pytest.param({"kind": "fact", "rank": 1}, InvalidArgument,
                 "rank is only for priority claims, not fact", id="rank-on-fact"),
    pytest.param({"kind": "status", "rank": 2}, InvalidArgument, "only for priority",
                 id="rank-on-status"),
    pytest.param({"rank": 0}, InvalidArgument, "whole number from 1", id="rank-zero"),
    pytest.param({"rank": -3}, InvalidArgument, "whole number from 1", id="rank-negative"),
    pytest.param({"rank": 1.0}, InvalidArgument, "whole number from 1", id="rank-float"),
    pytest.param({"rank": "1"}, InvalidArgument, "whole number from 1", id="rank-text"),
    pytest.param({"rank": True}, InvalidArgument, "whole number from 1", id="rank-bool"),
    pytest.param({"rank": 2**70}, InvalidArgument, "whole number from 1", id="rank-huge"),
    pytest.param({"entity": ""}, InvalidArgument, "entity is empty", id="entity-empty"),
    pytest.param({"entity": "   "}, InvalidArgument, "entity is empty", id="entity-blank"),
    pytest.param({"entity": 7}, InvalidArgument, "entity must be text", id="entity-int"),
    pytest.param({"claim": None}, InvalidArgument, "claim must be text", id="claim-none"),
    pytest.param({"claim": "x" * 2001}, InvalidArgument, "over the limit of 2000 for claims",
                 id="claim-too-long"),
    pytest.param({"entity": "e" * 201}, InvalidArgument, "over the limit of 200 for claims",
                 id="entity-too-long"),
    pytest.param({"claim": "acme\x00ships"}, InvalidArgument, "control characters",
                 id="claim-control-byte"),
    pytest.param({"confirmed_at": "last tuesday"}, InvalidArgument,
                 "confirmed_at='last tuesday' is not an ISO-8601", id="confirmed-at-unparseable"),
    pytest.param({"confirmed_at": 1767225600}, InvalidArgument, "confirmed_at must be an ISO",
                 id="confirmed-at-a-number"),
    pytest.param({"confirmed_at": iso(1)}, InvalidArgument, "in the future",
                 id="confirmed-at-tomorrow"),
    pytest.param({"confirmed_at": iso(3 / 1440)}, InvalidArgument, "in the future",
                 id="confirmed-at-beyond-skew"),
    pytest.param({"evidence": [99]}, NotFound, "no memory event 99", id="evidence-unknown"),
    pytest.param({"evidence": "1"}, InvalidArgument, "list of event ids", id="evidence-text"),
    pytest.param({"evidence": [0]}, InvalidArgument, "not an event id", id="evidence-zero"),
    pytest.param({"evidence": [True]}, InvalidArgument, "not an event id", id="evidence-bool"),
    pytest.param({"claim": "deploy with password=hunter2"}, InvalidArgument,
                 "looks like it holds a secret", id="secret-in-claim"),
    pytest.param({"entity": "ghp_" + "a1B2" * 9}, InvalidArgument,
                 "looks like it holds a secret", id="secret-in-entity"),
]  # fmt: skip


@pytest.mark.parametrize(("options", "error", "says"), ADD_REFUSED)
def test_bad_claims_are_refused_and_nothing_is_written(
    service: Service,
    db_path: Path,
    options: dict[str, Any],
    error: type[Exception],
    says: str,
) -> None:
    service.append_event("evidence one")
    service.claims.add(**BASE, rank=1)  # a refused update must leave this one alone too
    before = snapshot(db_path)
    with pytest.raises(error, match=says):
        service.claims.add(**{**BASE, **options})
    assert snapshot(db_path) == before


ID_REFUSED: list[Any] = [
    pytest.param(999, NotFound, "no claim 999", id="unknown"),
    pytest.param(2**70, NotFound, "no claim", id="beyond-sqlite-integers"),
    pytest.param(0, InvalidArgument, "not a claim id", id="zero"),
    pytest.param(-1, InvalidArgument, "not a claim id", id="negative"),
    pytest.param("1", InvalidArgument, "not a claim id", id="text"),
    pytest.param(1.0, InvalidArgument, "not a claim id", id="float"),
    pytest.param(True, InvalidArgument, "not a claim id", id="bool"),
    pytest.param(None, InvalidArgument, "not a claim id", id="none"),
]


@pytest.mark.parametrize(("claim_id", "error", "says"), ID_REFUSED)
@pytest.mark.parametrize("action", ["confirm", "retract", "get"])
def test_a_bad_or_unknown_id_is_refused(
    store: ClaimStore,
    db_path: Path,
    action: str,
    claim_id: object,
    error: type[Exception],
    says: str,
) -> None:
    seeded(store)
    before = snapshot(db_path)
    with pytest.raises(error, match=says):
        getattr(store, action)(claim_id)
    assert snapshot(db_path) == before


EVALUATION_REFUSED: list[Any] = [
    pytest.param(lambda s: s.confirm(1, confidence=2), InvalidArgument, "confidence 2 must be",
                 id="confirm-confidence"),
    pytest.param(lambda s: s.confirm(1, evidence=[42]), NotFound, "no memory event 42",
                 id="confirm-evidence"),
    pytest.param(lambda s: s.decayed(threshold=1.5), InvalidArgument,
                 "threshold 1.5 must be a number from 0 to 1", id="threshold-above-1"),
    pytest.param(lambda s: s.decayed(threshold=-0.5), InvalidArgument, "threshold",
                 id="threshold-negative"),
    pytest.param(lambda s: s.decayed(threshold="half"), InvalidArgument, "threshold",
                 id="threshold-text"),
    pytest.param(lambda s: s.decayed(threshold=float("nan")), InvalidArgument, "threshold",
                 id="threshold-nan"),
    pytest.param(lambda s: s.decayed(threshold=10**400), InvalidArgument, "threshold",
                 id="threshold-huge"),
    pytest.param(lambda s: s.decayed(as_of="soon"), InvalidArgument,
                 "as_of='soon' is not an ISO-8601", id="decayed-as-of"),
    pytest.param(lambda s: s.contradictions(as_of="2026-13-45"), InvalidArgument,
                 "as_of='2026-13-45' is not an ISO-8601", id="contradictions-as-of"),
    pytest.param(lambda s: s.contradictions(as_of=20260101), InvalidArgument,
                 "as_of must be an ISO-8601", id="as-of-a-number"),
    pytest.param(lambda s: s.contradictions(observed={"signals": []}), InvalidArgument,
                 "validPeriods", id="observed-malformed"),
    pytest.param(lambda s: s.contradictions(observed=[1, 2]), InvalidArgument,
                 "validPeriods", id="observed-not-an-object"),
    pytest.param(lambda s: s.search("   "), InvalidArgument, "query is empty", id="search-blank"),
    pytest.param(lambda s: s.search(None), InvalidArgument, "query is empty", id="search-none"),
]  # fmt: skip


@pytest.mark.parametrize(("call", "error", "says"), EVALUATION_REFUSED)
def test_bad_arguments_are_refused_before_anything_is_written(
    store: ClaimStore,
    db_path: Path,
    call: Callable[[ClaimStore], object],
    error: type[Exception],
    says: str,
) -> None:
    add(store, "acme", "fact", "acme ships", volatility="volatile", confirmed_at=iso(-8))
    before = snapshot(db_path)  # a valid evaluation now would mark claim 1 stale
    with pytest.raises(error, match=says):
        call(store)
    assert snapshot(db_path) == before


# -- search and ordering -----------------------------------------------------------------------


@pytest.fixture
def catalogue(store: ClaimStore) -> dict[str, int]:
    return {
        "acme": add(store, "Acme Corp", "fact", "ships every Monday"),
        "märz": add(store, "launch", "status", "Die Einführung ist im MÄRZ"),
        "straße": add(store, "Hauptstraße", "relationship", "owned by the city"),
        "schedule": add(store, "globex", "status", "the launch is on schedule"),
    }


SEARCHES = [
    pytest.param("acme", ["acme"], id="entity-lower"),
    pytest.param("ACME CORP", ["acme"], id="entity-upper"),
    pytest.param("every monday", ["acme"], id="claim-any-case"),
    pytest.param("märz", ["märz"], id="unicode-lower"),
    pytest.param("EINFÜHRUNG", ["märz"], id="unicode-upper"),
    pytest.param("HAUPTSTRASSE", ["straße"], id="casefold-sharp-s"),
    pytest.param("  on   schedule ", ["schedule"], id="whitespace-folded"),
    pytest.param("launch", ["märz", "schedule"], id="entity-or-claim"),
    pytest.param("relationship", [], id="kind-is-not-searched"),
    pytest.param("nothing like it", [], id="no-match"),
]


@pytest.mark.parametrize(("query", "expected"), SEARCHES)
def test_search_is_a_case_insensitive_substring_over_claim_and_entity(
    store: ClaimStore, catalogue: dict[str, int], query: str, expected: list[str]
) -> None:
    assert [claim.id for claim in store.search(query)] == [catalogue[key] for key in expected]


def test_search_finds_claims_in_every_state(store: ClaimStore, catalogue: dict[str, int]) -> None:
    store.retract(catalogue["acme"])
    (found,) = store.search("acme")
    assert found.state == "retired"


def test_decayed_lists_oldest_confirmation_first(store: ClaimStore) -> None:
    newest = add(store, "a", "fact", "a holds", confirmed_at=iso(-40))
    oldest = add(store, "b", "fact", "b holds", confirmed_at=iso(-60))
    middle = add(store, "c", "fact", "c holds", confirmed_at=iso(-50))
    tied = add(store, "d", "fact", "d holds", confirmed_at=iso(-50))
    add(store, "e", "fact", "e holds")  # fresh: not below 0.5
    items, _ = store.decayed()
    assert [item.claim.id for item in items] == [oldest, middle, tied, newest]
    assert [round(item.effective, 3) for item in items] == [0.2, 0.252, 0.252, 0.317]


def test_decayed_lists_only_claims_strictly_below_the_threshold(store: ClaimStore) -> None:
    at_half = add(store, "a", "fact", "a holds", volatility="volatile", confidence=1.0,
                  confirmed_at=iso(-7))  # fmt: skip
    assert store.decayed(threshold=0.5, as_of=iso(0)) == ([], [])
    (item,) = store.decayed(threshold=0.51, as_of=iso(0))[0]
    assert (item.claim.id, item.effective) == (at_half, 0.5)
    assert store.decayed(threshold=FLOOR, as_of=iso(10_000)) == ([], [])
    assert store.decayed(threshold=0) == ([], [])


def test_decayed_as_of_leaves_retired_claims_out(store: ClaimStore) -> None:
    store.retract(add(store, "a", "fact", "a holds", confirmed_at=iso(-90)))
    assert store.decayed(as_of=iso(0)) == ([], [])


def test_re_adding_without_a_rank_keeps_the_claims_rank(store: ClaimStore) -> None:
    first, _ = store.add("acme", "priority", "acme leads", rank=2)
    again, created = store.add("acme", "priority", "acme leads", confidence=0.9)
    assert not created
    assert again.id == first.id
    assert again.rank == 2
    moved, _ = store.add("acme", "priority", "acme leads", rank=1)
    assert moved.rank == 1


def test_a_claim_confirmed_after_it_was_evaluated_is_not_marked_stale(
    open_claims: OpenClaims, wall: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    evaluator, confirmer = open_claims(), open_claims()
    evaluator.claims.add("launch", "status", "on schedule", volatility="volatile")
    wall.advance(14 * 86_400)  # two half-lives: 0.2, below 0.5
    snapshot = evaluator.claims.all()
    confirmer.claims.confirm(1)  # another server confirms it meanwhile
    monkeypatch.setattr(evaluator.claims, "all", lambda: snapshot)
    _, changes = evaluator.claims.decayed()
    assert changes == []
    assert evaluator.claims.get(1).state == "active"


def test_agents_cannot_append_events_of_the_servers_claim_kind(service: Service) -> None:
    with pytest.raises(InvalidArgument, match="only by the server"):
        service.append_event('{"claim": 1, "action": "retract"}', kind="claim")


# -- listing ---------------------------------------------------------------------------------
def test_listing_gives_every_claim_oldest_first(store: ClaimStore) -> None:
    ids = [add(store, "acme", "fact", "acme ships weekly"), ranked(store, "globex", 1)]
    assert [claim.id for claim in store.listing()] == ids


def test_listing_filters_by_the_recorded_state(store: ClaimStore) -> None:
    kept = add(store, "acme", "fact", "acme ships weekly")
    first, second = contradicted_pair(store)
    assert [claim.id for claim in store.listing(state="contradicted")] == [first, second]
    assert [claim.id for claim in store.listing(state="active")] == [kept]
    assert store.listing(state="retired") == []


def test_listing_filters_by_entity_in_any_case_and_folded_whitespace(store: ClaimStore) -> None:
    add(store, "acme corp", "fact", "acme ships weekly")
    other = add(store, "globex", "fact", "globex ships monthly")
    assert [c.entity for c in store.listing(entity="  ACME   Corp ")] == ["acme corp"]
    assert [c.id for c in store.listing(state="active", entity="globex")] == [other]
    assert store.listing(state="stale", entity="globex") == []


def test_listing_refuses_a_state_that_does_not_exist(store: ClaimStore) -> None:
    with pytest.raises(InvalidArgument, match="state 'dead' is not one of: active, stale"):
        store.listing(state="dead")


# -- add_in: claims written inside the caller's transaction ----------------------------------
def test_add_in_writes_with_the_defaults_of_add_and_answers_the_claim(
    store: ClaimStore, service: Service
) -> None:
    with service.memory.chain.writing() as writer:
        claim, created = store.add_in(writer, "acme", "fact", "acme ships weekly")
    assert created is True
    assert (claim.volatility, claim.confidence) == ("slow", 0.8)
    assert store.get(claim.id) == claim
