"""How claims read to the agent: JSON for one claim and for findings, CSV for lists."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest

from sqlgate.claims.present import claim_json, claims_csv, decayed_csv, evaluation_json
from sqlgate.claims.rules import Finding
from sqlgate.claims.store import Decayed, Evaluation
from sqlgate.service import Service
from tests.claims.conftest import iso, make_claim

AT = datetime(2026, 1, 11, tzinfo=timezone.utc)  # ten days after the claims were confirmed


def test_one_claim_is_json_with_extras_first_and_two_decimal_effective_confidence() -> None:
    claim = make_claim(4, "Zürich", "fact", confidence=0.9)
    text = claim_json(claim, AT, created=True)
    assert text.startswith('{"created": true, "id": 4, ')
    shown = json.loads(text)
    assert shown["effective_confidence"] == round(0.9 * 0.5 ** (10 / 30), 2) == 0.71
    assert shown["entity"] == "Zürich"
    assert "Zürich" in text  # not \u-escaped


def test_a_list_of_claims_is_csv_with_a_count() -> None:
    claims = [
        make_claim(1, "acme", rank=1, confidence=0.8),
        make_claim(2, "launch, part 2", "status", confidence=1.0, state="stale"),
    ]
    lines = claims_csv(claims, AT, cell_chars=200).splitlines()
    assert lines == [
        "id,entity,kind,claim,rank,volatility,confidence,effective,state,last_confirmed",
        "1,acme,priority,acme priority 1,1,slow,0.80,0.63,active,2026-01-01T00:00:00.000Z",
        '2,"launch, part 2",status,"launch, part 2 status 2",,slow,1.00,0.79,stale,'
        "2026-01-01T00:00:00.000Z",
        "# 2 claims",
    ]


def test_long_cells_are_cut_in_claim_lists() -> None:
    claim = make_claim(1, "a" * 50, "fact")
    (row,) = claims_csv([claim], AT, cell_chars=10).splitlines()[1:2]
    assert "aaaaaaaaaa…[+40 chars]" in row


def test_no_claims_is_a_header_and_a_zero_count() -> None:
    assert claims_csv([], AT, 100).splitlines()[1:] == ["# 0 claims"]


def test_decayed_claims_show_two_decimal_effective_confidence_and_what_was_marked() -> None:
    items = [
        Decayed(make_claim(3, "acme", "fact", state="stale"), 0.31666),
        Decayed(make_claim(5, "globex", "fact", state="stale"), 0.05),
    ]
    changes = [{"id": 3, "from": "active", "to": "stale"}, {"id": 5, "from": "active",
                                                             "to": "stale"}]  # fmt: skip
    lines = decayed_csv(items, changes, 0.5, 200).splitlines()
    assert lines == [
        "id,entity,kind,claim,effective,last_confirmed,state",
        "3,acme,fact,acme fact 3,0.32,2026-01-01T00:00:00.000Z,stale",
        "5,globex,fact,globex fact 5,0.05,2026-01-01T00:00:00.000Z,stale",
        "# 2 claims below 0.5, oldest confirmation first; marked stale: 3, 5; "
        "claim_confirm(id) if still true, claim_retract(id) if not",
    ]


def test_the_trailer_says_which_claims_were_stale_already() -> None:
    items = [
        Decayed(make_claim(3, "acme", "fact", state="stale"), 0.31666),
        Decayed(make_claim(5, "globex", "fact", state="stale"), 0.05),
        Decayed(make_claim(6, "initech", "fact", state="stale"), 0.05),
    ]
    changes = [{"id": 5, "from": "active", "to": "stale"}]
    trailer = decayed_csv(items, changes, 0.5, 200).splitlines()[-1]
    assert trailer == (
        "# 3 claims below 0.5, oldest confirmation first; marked stale: 5; already stale: "
        "3, 6; claim_confirm(id) if still true, claim_retract(id) if not"
    )


def test_no_decayed_claims_is_a_plain_trailer_without_advice() -> None:
    text = decayed_csv([], [], 0.25, 200)
    assert text.splitlines()[-1] == "# 0 claims below 0.25, oldest confirmation first"


@pytest.mark.parametrize(("as_of", "shown"), [(None, "now"), ("2026-01-05", "2026-01-05")])
def test_findings_are_json_with_rule_entities_ids_and_state_changes(
    as_of: str | None, shown: str
) -> None:
    evaluation = Evaluation(
        [Finding("duplicate-rank", ("acme", "globex"), (1, 2), "2 entities claim priority rank 1")],
        [{"id": 1, "from": "active", "to": "contradicted"}],
    )
    assert json.loads(evaluation_json(evaluation, as_of)) == {
        "findings": [
            {
                "rule": "duplicate-rank",
                "entities": ["acme", "globex"],
                "claim_ids": [1, 2],
                "detail": "2 entities claim priority rank 1",
            }
        ],
        "state_changes": [{"id": 1, "from": "active", "to": "contradicted"}],
        "evaluated_at": shown,
    }


# -- as the service answers ------------------------------------------------------------------


def test_claim_add_answers_whether_the_claim_is_new(service: Service) -> None:
    first = json.loads(service.claim_add("acme", "priority", "acme is #1", rank=1))
    again = json.loads(service.claim_add("acme", "priority", "acme is #1", rank=2))
    assert (first["created"], again["created"]) == (True, False)
    assert (first["id"], again["rank"]) == (again["id"], 2)


def test_claims_decayed_csv_is_oldest_first_and_shows_the_state_just_recorded(
    service: Service,
) -> None:
    newer = service.claims.add("a", "fact", "a holds", confirmed_at=iso(-40))[0].id
    older = service.claims.add("b", "fact", "b holds", confirmed_at=iso(-60))[0].id
    lines = service.claims_decayed().splitlines()
    assert [line.split(",")[0] for line in lines[1:3]] == [str(older), str(newer)]
    assert [line.split(",")[4] for line in lines[1:3]] == ["0.20", "0.32"]
    assert all(line.endswith(",stale") for line in lines[1:3])
    assert f"marked stale: {newer}, {older}" in lines[-1]
    as_of = service.claims_decayed(as_of=iso(0)).splitlines()
    assert "marked stale" not in as_of[-1]
    again = service.claims_decayed().splitlines()  # the reminder stays until acted on
    assert [line.split(",")[0] for line in again[1:3]] == [str(older), str(newer)]
    assert "marked stale" not in again[-1]
    assert f"already stale: {older}, {newer}" in again[-1]


def test_the_resource_lists_every_claim_whatever_its_state(service: Service) -> None:
    kept = service.claims.add("acme", "fact", "acme ships")[0].id
    gone = service.claims.add("globex", "fact", "globex ships")[0].id
    service.claims.retract(gone)
    shown = json.loads(service.claims_all())
    assert [(claim["id"], claim["state"]) for claim in shown] == [(kept, "active"),
                                                                  (gone, "retired")]  # fmt: skip
