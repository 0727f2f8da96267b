"""Which undo changesets were applied back (engine/records/changesets.py), for the console's
page of destructive calls."""

from __future__ import annotations

import json

import pytest

from sqlgate.engine.undo import changeset_states
from sqlgate.service import Service


@pytest.fixture
def undone(service: Service) -> Service:
    """Changesets 1 and 2 of the writes, 3 and 4 of two destructive calls: 3 undone."""
    service.write_query("CREATE TABLE t (x)")
    service.write_query("INSERT INTO t VALUES (1), (2)")
    service.destructive_query("DELETE FROM t WHERE x = 1", reason="one")
    service.destructive_query("DELETE FROM t WHERE x = 2", reason="two")
    with service.db.reading() as conn:
        (audit_id,) = conn.execute(
            "SELECT id FROM query_log WHERE tool = 'destructive_query' ORDER BY id LIMIT 1"
        ).fetchone()
    service.undo(int(audit_id), None)
    return service


@pytest.mark.parametrize(
    ("ids", "undone_ones", "kept_ones"),
    [
        pytest.param([3, 4], {3}, {4}, id="both"),
        pytest.param([4, 4, 3], {3}, {4}, id="repeated-ids"),
        pytest.param([1, 4], set(), {1, 4}, id="kept"),
        pytest.param([9], set(), set(), id="rotated-out-or-never"),
        pytest.param([], set(), set(), id="none-asked"),
    ],
)
def test_each_changeset_kept_says_whether_it_was_undone(
    undone: Service, ids: list[int], undone_ones: set[int], kept_ones: set[int]
) -> None:
    with undone.db.reading() as conn:
        found = changeset_states(conn, ids)
        details = [
            json.loads(d)
            for (d,) in conn.execute(
                "SELECT detail FROM query_log WHERE tool = 'destructive_query' ORDER BY id"
            )
        ]
    assert [d["undo"] for d in details] == [3, 4]
    assert set(found) == undone_ones | kept_ones
    assert {i for i, (at, by) in found.items() if at is not None and by} == undone_ones
    assert {i for i, (at, by) in found.items() if at is None and by is None} == kept_ones
