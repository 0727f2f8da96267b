"""Every kind and volatility a claim may have is accepted by the store, by name (the lists
in claims/model.py are read there; mutation testing found no test naming each one)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from sqlgate.claims.model import effective_confidence, parse_timestamp
from sqlgate.claims.store import ClaimStore
from sqlgate.errors import InvalidArgument


@pytest.mark.parametrize("kind", ["priority", "status", "fact", "relationship"])
def test_each_kind_is_accepted(store: ClaimStore, kind: str) -> None:
    claim, new = store.add("acme", kind, f"a {kind} claim")
    assert (claim.kind, new) == (kind, True)


@pytest.mark.parametrize("volatility", ["stable", "slow", "volatile"])
def test_each_volatility_is_accepted(store: ClaimStore, volatility: str) -> None:
    claim, _ = store.add("acme", "fact", "a claim", volatility=volatility)
    assert claim.volatility == volatility


def test_another_kind_is_refused(store: ClaimStore) -> None:
    with pytest.raises(InvalidArgument, match="kind"):
        store.add("acme", "opinion", "a claim")


def test_a_stored_timestamp_reads_as_utc() -> None:
    moment = parse_timestamp("2026-01-01T00:00:00.000Z")
    assert moment.isoformat() == "2026-01-01T00:00:00+00:00"
    assert parse_timestamp("2026-01-01T01:00:00.000+01:00") == moment


@pytest.mark.parametrize(("volatility", "days"), [("stable", 365), ("slow", 30), ("volatile", 7)])
def test_each_volatility_halves_confidence_in_its_documented_half_life(
    volatility: str, days: int
) -> None:
    start = parse_timestamp("2026-01-01T00:00:00.000Z")
    later = start + timedelta(days=days)
    assert effective_confidence(0.8, volatility, start, later) == pytest.approx(0.4)
