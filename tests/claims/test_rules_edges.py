"""Rule guards mutation testing found unpinned: only priority claims with a rank are ranked."""

from __future__ import annotations

import pytest

from sqlgate.claims.rules import Observed, find_contradictions, parse_observed
from sqlgate.errors import InvalidArgument
from tests.claims.conftest import make_claim

FALLING = Observed(({"acme": (9, 9, 9)},), (True, True, True))


@pytest.mark.parametrize("kind", ["status", "fact", "relationship"])
def test_rank_drop_reads_only_priority_claims(kind: str) -> None:
    claim = make_claim(1, "acme", kind, rank=1)
    assert find_contradictions([claim], FALLING) == []


def test_rank_drop_needs_a_claimed_rank() -> None:
    assert find_contradictions([make_claim(1, "acme", "priority", rank=None)], FALLING) == []


def test_duplicate_rank_reads_only_priority_claims_with_a_rank() -> None:
    claims = [
        make_claim(1, "acme", "fact", rank=1),
        make_claim(2, "globex", "priority", rank=1),
        make_claim(3, "initech", "priority", rank=None),
        make_claim(4, "umbrella", "priority", rank=None),
    ]
    assert find_contradictions(claims, None) == []


def test_a_rank_drop_is_found_only_for_the_entity_observed() -> None:
    claims = [make_claim(1, "acme", rank=1), make_claim(2, "globex", rank=1)]
    found = find_contradictions(claims, FALLING)
    assert [(f.rule, f.entities) for f in found] == [
        ("duplicate-rank", ("acme", "globex")),
        ("rank-drop", ("acme",)),
    ]


@pytest.mark.parametrize(
    ("raw", "phrase"),
    [
        pytest.param({"signals": [{1: [1]}], "validPeriods": [True]}, "entity names must be text",
                     id="entity-a-number"),
        pytest.param({"signals": [{"acme": "1"}], "validPeriods": [True]}, "a list of ranks",
                     id="ranks-a-text"),
    ],
)  # fmt: skip
def test_observed_from_python_is_checked_like_json(raw: object, phrase: str) -> None:
    with pytest.raises(InvalidArgument, match=phrase):
        parse_observed(raw)
