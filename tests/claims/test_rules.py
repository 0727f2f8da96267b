"""The three contradiction rules and the `observed` they read, on claims built in memory."""

from __future__ import annotations

from typing import Any

import pytest

from sqlgate.claims.model import Claim
from sqlgate.claims.rules import Finding, Observed, find_contradictions, parse_observed
from sqlgate.errors import InvalidArgument
from tests.claims.conftest import make_claim

# -- observed ------------------------------------------------------------------------------


def test_observed_is_parsed_into_signals_and_valid_periods() -> None:
    parsed = parse_observed(
        {
            "signals": [{"acme": [4, 5], "globex": [1, 1]}, {"acme": [6, 2]}],
            "validPeriods": [True, False],
        }
    )
    assert parsed == Observed(({"acme": (4, 5), "globex": (1, 1)}, {"acme": (6, 2)}), (True, False))


def test_observed_entity_names_fold_whitespace_like_stored_claims() -> None:
    parsed = parse_observed({"signals": [{"  acme   corp ": [4]}], "validPeriods": [True]})
    assert parsed.signals == ({"acme corp": (4,)},)


def test_no_signals_and_no_periods_is_well_formed() -> None:
    assert parse_observed({"signals": [], "validPeriods": []}) == Observed((), ())


MALFORMED: list[Any] = [
    pytest.param(None, "exactly the keys", id="none"),
    pytest.param([], "exactly the keys", id="a-list"),
    pytest.param("signals", "exactly the keys", id="text"),
    pytest.param({"signals": []}, "exactly the keys", id="missing-validPeriods"),
    pytest.param({"validPeriods": []}, "exactly the keys", id="missing-signals"),
    pytest.param({"signals": [], "validPeriods": [], "extra": 1}, "exactly the keys", id="extra"),
    pytest.param({"signals": [], "valid_periods": []}, "exactly the keys", id="misspelt-key"),
    pytest.param({"signals": {"acme": [1]}, "validPeriods": [True]}, "signals must be a list",
                 id="signals-an-object"),
    pytest.param({"signals": "acme", "validPeriods": []}, "signals must be a list",
                 id="signals-text"),
    pytest.param({"signals": 3, "validPeriods": []}, "signals must be a list", id="signals-int"),
    pytest.param({"signals": [[1]], "validPeriods": [True]}, "non-empty object",
                 id="signal-a-list"),
    pytest.param({"signals": [{}], "validPeriods": []}, "non-empty object", id="signal-empty"),
    pytest.param({"signals": ["acme"], "validPeriods": []}, "non-empty object",
                 id="signal-text"),
    pytest.param({"signals": [{"": [1]}], "validPeriods": [True]}, "entity names",
                 id="entity-empty"),
    pytest.param({"signals": [{"  ": [1]}], "validPeriods": [True]}, "entity names",
                 id="entity-blank"),
    pytest.param({"signals": [{"acme": [1], "acme ": [2]}], "validPeriods": [True]}, "twice",
                 id="entity-twice-once-folded"),
    pytest.param({"signals": [{"acme": 3}], "validPeriods": [True]}, "list of ranks",
                 id="ranks-an-int"),
    pytest.param({"signals": [{"acme": "3"}], "validPeriods": [True]}, "list of ranks",
                 id="ranks-text"),
    pytest.param({"signals": [{"acme": {"now": 3}}], "validPeriods": [True]}, "list of ranks",
                 id="ranks-an-object"),
    pytest.param({"signals": [{"acme": [1.5]}], "validPeriods": [True]}, "whole-number ranks",
                 id="rank-a-float"),
    pytest.param({"signals": [{"acme": [2.0]}], "validPeriods": [True]}, "whole-number ranks",
                 id="rank-a-whole-float"),
    pytest.param({"signals": [{"acme": ["1"]}], "validPeriods": [True]}, "whole-number ranks",
                 id="rank-text"),
    pytest.param({"signals": [{"acme": [True]}], "validPeriods": [True]}, "whole-number ranks",
                 id="rank-a-bool"),
    pytest.param({"signals": [{"acme": [None]}], "validPeriods": [True]}, "whole-number ranks",
                 id="rank-null"),
    pytest.param({"signals": [{"acme": [0]}], "validPeriods": [True]}, "whole-number ranks",
                 id="rank-zero"),
    pytest.param({"signals": [{"acme": [-2]}], "validPeriods": [True]}, "whole-number ranks",
                 id="rank-negative"),
    pytest.param({"signals": [{"acme": [1, 2]}], "validPeriods": [True]}, "2 ranks for 1 period",
                 id="ranks-longer-than-periods"),
    pytest.param({"signals": [{"acme": [1]}], "validPeriods": [True, True]},
                 "1 rank for 2 periods", id="ranks-shorter-than-periods"),
    pytest.param({"signals": [{"acme": [1, 1]}, {"acme": [1]}], "validPeriods": [True, True]},
                 r"signals\[1\]", id="second-signal-short"),
    pytest.param({"signals": [], "validPeriods": "true"}, "list of true/false",
                 id="periods-text"),
    pytest.param({"signals": [], "validPeriods": True}, "list of true/false",
                 id="periods-a-bool"),
    pytest.param({"signals": [], "validPeriods": {"0": True}}, "list of true/false",
                 id="periods-an-object"),
    pytest.param({"signals": [], "validPeriods": [1, 0]}, "only true or false",
                 id="periods-ints"),
    pytest.param({"signals": [], "validPeriods": ["true"]}, "only true or false",
                 id="periods-text-items"),
    pytest.param({"signals": [], "validPeriods": [None]}, "only true or false",
                 id="periods-null"),
]  # fmt: skip


@pytest.mark.parametrize(("raw", "says"), MALFORMED)
def test_malformed_observed_is_refused_with_the_shape_it_needs(raw: Any, says: str) -> None:
    with pytest.raises(InvalidArgument, match=says) as caught:
        parse_observed(raw)
    assert '"validPeriods"' in str(caught.value)  # the message shows the expected shape


# -- duplicate-rank ------------------------------------------------------------------------


def rules_of(findings: list[Finding]) -> list[str]:
    return [finding.rule for finding in findings]


def test_two_entities_holding_the_same_rank_are_a_duplicate_rank() -> None:
    claims = [make_claim(1, "acme", rank=1), make_claim(2, "globex", rank=1)]
    assert find_contradictions(claims, None) == [
        Finding("duplicate-rank", ("acme", "globex"), (1, 2), "2 entities claim priority rank 1")
    ]


def test_three_entities_on_one_rank_are_one_finding() -> None:
    claims = [make_claim(5, "c", rank=2), make_claim(3, "a", rank=2), make_claim(4, "b", rank=2)]
    (finding,) = find_contradictions(claims, None)
    assert finding.entities == ("a", "b", "c")
    assert finding.claim_ids == (3, 4, 5)


def test_one_entity_holding_a_rank_twice_is_not_a_duplicate_rank() -> None:
    claims = [make_claim(1, "acme", rank=1), make_claim(2, "acme", rank=1)]
    assert find_contradictions(claims, None) == []


def test_a_duplicate_rank_lists_every_claim_on_that_rank() -> None:
    claims = [make_claim(1, "acme", rank=1), make_claim(2, "acme", rank=1),
              make_claim(3, "globex", rank=1)]  # fmt: skip
    (finding,) = find_contradictions(claims, None)
    assert finding.entities == ("acme", "globex")
    assert finding.claim_ids == (1, 2, 3)


def test_different_ranks_and_unranked_priorities_are_no_duplicate() -> None:
    claims = [make_claim(1, "acme", rank=1), make_claim(2, "globex", rank=2),
              make_claim(3, "initech"), make_claim(4, "hooli")]  # fmt: skip
    assert find_contradictions(claims, None) == []


def test_each_shared_rank_is_its_own_finding_in_rank_order() -> None:
    claims = [make_claim(1, "a", rank=2), make_claim(2, "b", rank=2),
              make_claim(3, "c", rank=1), make_claim(4, "d", rank=1)]  # fmt: skip
    findings = find_contradictions(claims, None)
    assert [finding.claim_ids for finding in findings] == [(3, 4), (1, 2)]


# -- status-conflict -----------------------------------------------------------------------


def test_one_entity_with_two_status_claims_is_a_status_conflict() -> None:
    claims = [make_claim(1, "launch", "status"), make_claim(2, "launch", "status")]
    assert find_contradictions(claims, None) == [
        Finding("status-conflict", ("launch",), (1, 2), "launch has 2 live status claims")
    ]


@pytest.mark.parametrize(
    "claims",
    [
        pytest.param([make_claim(1, "launch", "status")], id="one-status"),
        pytest.param([make_claim(1, "launch", "status"), make_claim(2, "site", "status")],
                     id="two-entities"),
        pytest.param([make_claim(1, "launch", "status"), make_claim(2, "launch", "fact")],
                     id="status-and-fact"),
        pytest.param([make_claim(1, "launch", "fact"), make_claim(2, "launch", "fact")],
                     id="two-facts"),
        pytest.param([make_claim(1, "a", "relationship"), make_claim(2, "a", "relationship")],
                     id="two-relationships"),
    ],
)  # fmt: skip
def test_no_status_conflict_without_two_status_claims_on_one_entity(claims: list[Claim]) -> None:
    assert find_contradictions(claims, None) == []


# -- rank-drop -----------------------------------------------------------------------------


def observed(signals: list[dict[str, list[int]]], periods: list[bool]) -> Observed:
    return parse_observed({"signals": signals, "validPeriods": periods})


ALL_VALID = [True, True, True]
RANK_DROPS = [
    pytest.param([{"acme": [4, 4, 4]}], ALL_VALID, True, id="rank-plus-3-is-a-drop"),
    pytest.param([{"acme": [3, 3, 3]}], ALL_VALID, False, id="exactly-rank-plus-2-is-not"),
    pytest.param([{"acme": [9, 9, 3]}], ALL_VALID, False, id="one-period-not-worse"),
    pytest.param([{"acme": [3, 9, 9]}], ALL_VALID, False, id="now-not-worse"),
    pytest.param([{"acme": [4, 4, 4, 4]}], [True, True, False, False], False,
                 id="two-valid-periods-are-not-enough"),
    pytest.param([{"acme": [4, 4]}], [True, True], False, id="two-periods-in-all"),
    pytest.param([{"acme": [4, 1, 4, 4]}], [True, False, True, True], True,
                 id="invalid-period-skipped"),
    pytest.param([{"acme": [4, 4, 1, 4]}], [True, False, True, True], False,
                 id="indices-0-2-3-are-used"),
    pytest.param([{"acme": [4, 4, 4, 1]}], [True, True, True, True], True,
                 id="only-the-3-most-recent-valid-periods"),
    pytest.param([{"acme": [1, 4, 4, 4]}], [False, True, True, True], True,
                 id="invalid-now-skipped"),
    pytest.param([{"acme": [4, 4, 4]}, {"globex": [1, 1, 1]}], ALL_VALID, True,
                 id="a-signal-not-naming-the-entity-does-not-count"),
    pytest.param([{"acme": [4, 4, 4]}, {"acme": [1, 1, 1]}], ALL_VALID, False,
                 id="must-be-worse-in-every-signal"),
    pytest.param([{"acme": [4, 4, 4]}, {"acme": [3, 4, 4]}], ALL_VALID, False,
                 id="one-signal-at-the-margin"),
    pytest.param([{"acme": [5, 6, 7]}, {"acme": [4, 4, 9]}], ALL_VALID, True,
                 id="worse-in-two-signals"),
    pytest.param([{"globex": [9, 9, 9]}], ALL_VALID, False, id="no-signal-names-the-entity"),
    pytest.param([], ALL_VALID, False, id="no-signals"),
]  # fmt: skip


@pytest.mark.parametrize(("signals", "periods", "drops"), RANK_DROPS)
def test_rank_drop_boundaries(
    signals: list[dict[str, list[int]]], periods: list[bool], drops: bool
) -> None:
    claims = [make_claim(7, "acme", rank=1)]
    findings = find_contradictions(claims, observed(signals, periods))
    assert rules_of(findings) == (["rank-drop"] if drops else [])


def test_a_rank_drop_names_the_entity_its_claim_and_what_was_seen() -> None:
    claims = [make_claim(7, "acme", rank=2)]
    (finding,) = find_contradictions(
        claims, observed([{"acme": [5, 9, 6, 7]}], [True, False, True, True])
    )
    assert (finding.rule, finding.entities, finding.claim_ids) == ("rank-drop", ("acme",), (7,))
    assert "claimed rank 2" in finding.detail
    assert "5, 6, 7" in finding.detail
    assert "worse than 4" in finding.detail


@pytest.mark.parametrize(
    "claim",
    [
        pytest.param(make_claim(1, "acme"), id="unranked-priority"),
        pytest.param(make_claim(1, "acme", "status"), id="status"),
        pytest.param(make_claim(1, "acme", "fact"), id="fact"),
    ],
)
def test_only_ranked_priority_claims_can_drop(claim: Claim) -> None:
    assert find_contradictions([claim], observed([{"acme": [9, 9, 9]}], ALL_VALID)) == []


def test_no_rank_drop_is_looked_for_without_observed() -> None:
    assert find_contradictions([make_claim(1, "acme", rank=1)], None) == []


def test_every_rule_reports_in_one_list() -> None:
    claims = [
        make_claim(1, "acme", rank=1),
        make_claim(2, "globex", rank=1),
        make_claim(3, "launch", "status"),
        make_claim(4, "launch", "status"),
    ]
    findings = find_contradictions(claims, observed([{"acme": [5, 5, 5]}], ALL_VALID))
    assert rules_of(findings) == ["duplicate-rank", "status-conflict", "rank-drop"]
    assert findings[2].as_dict() == {
        "rule": "rank-drop",
        "entities": ["acme"],
        "claim_ids": [1],
        "detail": findings[2].detail,
    }
