"""Reading claims for the surfaces that show them (claims/reading.py): the console's Claims
page, `sqlgate stats` and `sqlgate export`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sqlgate.claims.reading import CLAIMS_EXPORT, claim_history, claims_by_state
from sqlgate.claims.store import ClaimStore
from sqlgate.memory.reading import count_rows, table_records
from sqlgate.service import Service
from tests.claims.conftest import history


@pytest.fixture
def changed(service: Service, store: ClaimStore) -> Service:
    """Claims 1 to 3: 1 confirmed, 2 retracted, 3 only added."""
    for entity in ("api", "db", "cache"):
        store.add(entity, "fact", f"{entity} is fine")
    store.confirm(1)
    store.retract(2)
    return service


def test_no_claims_have_no_states(service: Service) -> None:
    with service.db.reading() as conn:
        assert claims_by_state(conn) == {}
        assert claim_history(conn, [1]) == {1: []}


def test_claims_are_counted_by_state(changed: Service) -> None:
    with changed.db.reading() as conn:
        assert claims_by_state(conn) == {"active": 2, "retired": 1}


@pytest.mark.parametrize("ids", [[1, 2, 3], [3, 1], [2], [], [7, 1]])
def test_each_claim_asked_for_has_its_changes_oldest_first(
    changed: Service, db_path: Path, ids: list[int]
) -> None:
    with changed.db.reading() as conn:
        found = claim_history(conn, ids)
    stored = history(db_path)
    assert list(found) == ids
    for claim_id in ids:
        expected = [(h["action"], h["detail"]) for h in stored if h["claim_id"] == claim_id]
        assert [(a, json.loads(d)) for a, d in found[claim_id]] == expected
    if 1 in ids:  # added, then confirmed
        assert len(found[1]) == 2


def test_the_export_reads_claims_then_their_history(changed: Service, db_path: Path) -> None:
    with changed.db.reading() as conn:
        counts = {kind: count_rows(conn, table) for table, kind, _ in CLAIMS_EXPORT}
        rows = [r for t, k, j in CLAIMS_EXPORT for r in table_records(conn, t, k, j)]
    assert counts == {"claim": 3, "claim_history": len(history(db_path))}
    assert [r["type"] for r in rows] == ["claim"] * 3 + ["claim_history"] * counts["claim_history"]
    assert [r["detail"] for r in rows[3:]] == [h["detail"] for h in history(db_path)]
