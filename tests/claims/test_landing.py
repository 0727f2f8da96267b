"""Landing imported claims (claims/landing.py): what is here already, and every planned claim
with the import's provenance event in one transaction, or nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import apsw
import pytest

from sqlgate.claims.landing import ClaimPlan, existing_claims, land_claims
from sqlgate.claims.store import ClaimStore
from sqlgate.errors import PolicyDenied
from sqlgate.service import Service
from tests.claims.conftest import chain_ok, history, snapshot
from tests.records import connect_both

RECORD = {"source": "claims-mcp", "path": "/tmp/reçus/claims.db", "claims": 2}


def plan(entity: str, claim: str = "is a customer", **fields: Any) -> ClaimPlan:
    values: dict[str, Any] = {
        "kind": "fact", "volatility": "slow", "confidence": 0.8, "rank": None,
        "confirmed_at": None, **fields,
    }  # fmt: skip
    return ClaimPlan(entity, values["kind"], claim, values["volatility"], values["confidence"],
                     values["rank"], values["confirmed_at"])  # fmt: skip


def read_only(db: Path) -> apsw.Connection:
    return connect_both(db, flags=apsw.SQLITE_OPEN_READONLY)


@pytest.mark.parametrize(
    "plans",
    [
        [plan("acme"), plan("globex", kind="priority", rank=2)],
        [plan("acme", confirmed_at="2025-06-01T00:00:00.000Z", volatility="stable")],
        [],
    ],
    ids=["two claims", "a dated claim", "no claims"],
)
def test_every_claim_lands_then_the_provenance_event(
    store: ClaimStore, db_path: Path, plans: list[ClaimPlan]
) -> None:
    event_id = land_claims(store, plans, RECORD)
    here = {(c.entity, c.kind, c.claim): c for c in store.all()}
    assert set(here) == {(p.entity, p.kind, p.claim) for p in plans}
    for item in plans:
        claim = here[(item.entity, item.kind, item.claim)]
        assert (claim.volatility, claim.confidence, claim.rank) == (
            item.volatility, item.confidence, item.rank,
        )  # fmt: skip
        if item.confirmed_at is not None:
            assert claim.last_confirmed == item.confirmed_at
    assert [h["action"] for h in history(db_path)] == ["add"] * len(plans)
    events = snapshot(db_path).events
    assert events[-1][0] == event_id
    kind, content, tags = events[-1][3], events[-1][4], events[-1][5]
    assert (kind, json.loads(tags)) == ("import", ["claims-mcp", "import"])
    assert content == (
        '{"source":"claims-mcp","path":"/tmp/reçus/claims.db","claims":2}'
    )  # compact, as written


def test_a_claim_here_already_is_updated(store: ClaimStore, db_path: Path) -> None:
    land_claims(store, [plan("acme", confidence=0.5)], RECORD)
    land_claims(store, [plan("acme", confidence=0.9, confirmed_at="2026-01-01T00:00:00.000Z")],
                RECORD)  # fmt: skip
    (claim,) = store.all()
    assert (claim.confidence, claim.last_confirmed) == (0.9, "2026-01-01T00:00:00.000Z")
    assert [h["action"] for h in history(db_path)] == ["add", "update"]


def test_a_claim_that_cannot_land_leaves_nothing(
    service: Service, store: ClaimStore, db_path: Path
) -> None:
    retired, _ = store.add("acme", "fact", "is a customer")
    store.retract(retired.id)
    before = snapshot(db_path)
    with pytest.raises(PolicyDenied, match="retired claims stay retired"):
        land_claims(store, [plan("globex"), plan("acme")], RECORD)
    assert snapshot(db_path) == before
    assert chain_ok(service)


def test_existing_claims_are_keyed_by_entity_kind_and_claim(
    service: Service, store: ClaimStore, db_path: Path
) -> None:
    kept, _ = store.add("acme", "fact", "is a customer", confirmed_at="2025-06-01T00:00:00Z")
    gone, _ = store.add("globex", "status", "churned")
    store.retract(gone.id)
    conn = read_only(db_path)
    try:
        assert existing_claims(conn) == {
            ("acme", "fact", "is a customer"): ("active", kept.last_confirmed),
            ("globex", "status", "churned"): ("retired", gone.last_confirmed),
        }
    finally:
        conn.close()


@pytest.mark.parametrize(
    "schema",
    ["", "CREATE TABLE claims (entity TEXT, kind TEXT, claim TEXT, state TEXT)"],
    ids=["no claims table", "claims without confirmations"],
)
def test_a_database_without_claims_has_none_here(tmp_path: Path, schema: str) -> None:
    conn = connect_both(tmp_path / "other.db")
    try:
        conn.execute(schema)
        assert existing_claims(conn) == {}
    finally:
        conn.close()
