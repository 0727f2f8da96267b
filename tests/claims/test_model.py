"""Decay, liveness and the claim as a value: pure functions of the moment passed in."""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sqlgate.claims.model import (
    FLOOR,
    HALF_LIFE_DAYS,
    Claim,
    effective_confidence,
    is_live,
    parse_timestamp,
)
from tests.claims.conftest import make_claim

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def days_later(days: float) -> datetime:
    return T0 + timedelta(days=days)


def test_half_lives_are_a_year_a_month_and_a_week() -> None:
    assert HALF_LIFE_DAYS == {"stable": 365.0, "slow": 30.0, "volatile": 7.0}
    assert FLOOR == 0.05


@pytest.mark.parametrize("volatility", ["stable", "slow", "volatile"])
@pytest.mark.parametrize(
    ("half_lives", "expected"),
    [
        pytest.param(0, 0.8, id="fresh"),
        pytest.param(1, 0.4, id="one-half-life"),
        pytest.param(2, 0.2, id="two-half-lives"),
    ],
)
def test_confidence_halves_every_half_life(
    volatility: str, half_lives: int, expected: float
) -> None:
    at = days_later(HALF_LIFE_DAYS[volatility] * half_lives)
    assert effective_confidence(0.8, volatility, T0, at) == pytest.approx(expected)


@pytest.mark.parametrize("volatility", ["stable", "slow", "volatile"])
def test_effective_confidence_never_goes_below_the_floor(volatility: str) -> None:
    at = days_later(HALF_LIFE_DAYS[volatility] * 10)  # 0.8 / 1024 without the floor
    assert effective_confidence(0.8, volatility, T0, at) == FLOOR


def test_the_floor_holds_even_for_a_claim_held_with_no_confidence() -> None:
    assert effective_confidence(0.0, "slow", T0, T0) == FLOOR


def test_a_claim_confirmed_after_the_moment_asked_counts_as_freshly_confirmed() -> None:
    assert effective_confidence(0.7, "volatile", days_later(30), T0) == 0.7


@settings(max_examples=150, deadline=None)
@given(
    confidence=st.floats(min_value=0.0, max_value=1.0),
    volatility=st.sampled_from(sorted(HALF_LIFE_DAYS)),
    earlier=st.floats(min_value=-30.0, max_value=5000.0),
    later_by=st.floats(min_value=0.0, max_value=5000.0),
)
def test_decay_is_bounded_monotonic_and_follows_the_formula(
    confidence: float, volatility: str, earlier: float, later_by: float
) -> None:
    first = effective_confidence(confidence, volatility, T0, days_later(earlier))
    second = effective_confidence(confidence, volatility, T0, days_later(earlier + later_by))
    assert FLOOR <= second <= first <= max(confidence, FLOOR)
    elapsed = max(0.0, (days_later(earlier) - T0).total_seconds() / 86_400)
    formula = confidence * 0.5 ** (elapsed / HALF_LIFE_DAYS[volatility])
    assert math.isclose(first, max(FLOOR, formula), rel_tol=1e-9, abs_tol=1e-12)


def test_stored_timestamps_parse_as_utc() -> None:
    parsed = parse_timestamp("2026-03-04T05:06:07.089Z")
    assert parsed == datetime(2026, 3, 4, 5, 6, 7, 89_000, tzinfo=timezone.utc)


def test_a_claim_decays_from_its_last_confirmation() -> None:
    claim = make_claim(1, "acme", volatility="volatile", last_confirmed="2026-01-08T00:00:00.000Z")
    assert claim.effective(days_later(7)) == 0.8
    assert claim.effective(days_later(14)) == pytest.approx(0.4)


LIVENESS = [
    pytest.param("active", 0.0, False, True, id="active-now"),
    pytest.param("contradicted", 0.0, False, True, id="contradicted-now"),
    pytest.param("stale", 0.0, False, False, id="stale-now"),
    pytest.param("retired", 0.0, False, False, id="retired-now"),
    pytest.param("stale", 0.0, True, True, id="stale-as-of"),
    pytest.param("contradicted", 0.0, True, True, id="contradicted-as-of"),
    pytest.param("retired", 0.0, True, False, id="retired-as-of"),
    pytest.param("active", 7.0, False, True, id="exactly-at-threshold"),
    pytest.param("active", 7.001, False, False, id="just-below-threshold"),
    pytest.param("stale", 7.001, True, False, id="below-threshold-as-of"),
]


@pytest.mark.parametrize(("state", "days", "as_of", "live"), LIVENESS)
def test_liveness_follows_state_and_threshold(
    state: str, days: float, as_of: bool, live: bool
) -> None:
    claim = make_claim(1, "acme", state=state, confidence=1.0, volatility="volatile")
    assert is_live(claim, days_later(days), 0.5, as_of=as_of) is live


def test_a_claim_as_a_dict_shows_effective_confidence_at_the_moment() -> None:
    claim = Claim(
        3, "acme", "priority", "acme is #1", "slow", 0.9, 1, "active",
        "2026-01-01T00:00:00.000Z", "2026-01-01T00:00:00.000Z", (4, 7),
    )  # fmt: skip
    shown = claim.as_dict(days_later(10))
    assert shown == {
        "id": 3,
        "entity": "acme",
        "kind": "priority",
        "claim": "acme is #1",
        "volatility": "slow",
        "confidence": 0.9,
        "effective_confidence": round(0.9 * 0.5 ** (10 / 30), 4),
        "rank": 1,
        "state": "active",
        "created_at": "2026-01-01T00:00:00.000Z",
        "last_confirmed": "2026-01-01T00:00:00.000Z",
        "evidence": [4, 7],
    }


SHOWN_ORDER = [
    "id", "entity", "kind", "claim", "volatility", "confidence", "effective_confidence", "rank",
    "state", "created_at", "last_confirmed", "evidence",
]  # fmt: skip


@pytest.mark.parametrize(
    "claim",
    [
        pytest.param(make_claim(1, "acme", rank=2), id="ranked"),
        pytest.param(make_claim(2, "acme", "fact", state="retired"), id="unranked-retired"),
        pytest.param(
            Claim(
                5,
                "a",
                "status",
                "b",
                "volatile",
                0.1,
                None,
                "stale",
                "2026-01-01T00:00:00Z",
                "2026-01-02T00:00:00Z",
                (),
            ),
            id="no-evidence",
        ),
    ],
)
def test_a_claim_as_a_dict_keeps_its_keys_in_order(claim: Claim) -> None:
    # JSON answers and history rows print the keys in this order: the bytes depend on it
    assert list(claim.as_dict(days_later(1))) == SHOWN_ORDER
