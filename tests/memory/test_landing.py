"""Landing an import in the chain (memory/landing.py): events keep the source's moment and
session, checkpoints anchor to the event landed before them, the provenance event comes last
in the server's own session and clock, and a landing that stops writes nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import apsw
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlgate.engine.records import utc_timestamp
from sqlgate.errors import SqlgateError
from sqlgate.memory.landing import (
    IMPORT_KIND,
    IMPORT_SESSION_PREFIX,
    Prepared,
    imported_kind,
    land_chain,
    prior_imports,
)
from sqlgate.service import Service
from tests.memory.conftest import OpenMemory, rows, verify, witness_of
from tests.records import connect_both

SOURCE = "mycorrhiza"


def event(ref: int, epoch: float, **fields: Any) -> Prepared:
    return Prepared(ref, f"event {ref}", epoch, **fields)


def checkpoint(ref: int, epoch: float, session: str | None = None) -> Prepared:
    return Prepared(ref, f"summary {ref}", epoch, session=session, checkpoint=True)


def provenance(events: int, checkpoints: int, first: int | None) -> dict[str, Any]:
    return {"source": SOURCE, "path": "/données/chain.db", "events": events,
            "checkpoints": checkpoints, "first": first}  # fmt: skip


@pytest.fixture
def importing(open_memory: OpenMemory) -> Service:
    """A service in an import's session, as the importers open it."""
    return open_memory(session=IMPORT_SESSION_PREFIX + "test")


def accept(records: list[dict[str, Any]]) -> None:
    pass


def checkpoints(db: Path) -> list[tuple[Any, ...]]:
    conn = connect_both(db, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        found = conn.execute(
            "SELECT ts, session, summary, last_event_id, head_hash FROM memory_checkpoints "
            "ORDER BY id"
        )
        return [tuple(row) for row in found]
    finally:
        conn.close()


PLANS = {
    "events only": [
        event(1, 1000.0, session="src-a"),
        event(2, 2000.0, kind="decision", tags=("auth", "bug")),
    ],
    "a checkpoint before any event": [checkpoint(1, 500.0, "src-c"), event(1, 1000.0)],
    "a checkpoint between events": [
        event(1, 1000.0, session="src-a"),
        checkpoint(1, 1500.0),
        event(2, 2000.0, session="src-b"),
    ],
    "checkpoints only": [checkpoint(1, 500.0), checkpoint(2, 600.0)],
    "nothing": [],
}


@pytest.mark.parametrize("plan", PLANS.values(), ids=PLANS.keys())
def test_the_plan_lands_in_order_with_its_moments_then_the_provenance(
    memory: Service, db_path: Path, plan: list[Prepared]
) -> None:
    memory.append_event("already here")
    before = rows(db_path)
    own_session = before[0]["session"]
    event_id = land_chain(memory.memory.chain, SOURCE, plan, provenance, accept)

    landed = rows(db_path)[len(before) :]
    planned = [item for item in plan if not item.checkpoint]
    assert [r["content"] for r in landed[:-1]] == [item.content for item in planned]
    for row, item in zip(landed, planned, strict=False):
        assert row["ts"] == utc_timestamp(item.epoch)
        assert row["session"] == (item.session or own_session)
        assert row["kind"] == item.kind
        assert json.loads(row["tags"]) == sorted(item.tags)
    last = landed[-1]
    assert last["id"] == event_id
    assert (last["kind"], json.loads(last["tags"])) == (IMPORT_KIND, sorted([IMPORT_KIND, SOURCE]))
    assert last["session"] == own_session
    assert '"path":"/données/chain.db"' in last["content"]  # as written, compact
    assert last["ts"] > before[-1]["ts"]  # the server's clock, not a source's moment
    first = landed[0]["id"] if planned else None
    assert json.loads(last["content"]) == provenance(len(planned), len(plan) - len(planned), first)
    assert verify(memory)["ok"] is True


def test_a_checkpoint_anchors_to_the_event_landed_before_it(memory: Service, db_path: Path) -> None:
    memory.append_event("already here")
    (head,) = rows(db_path)
    plan = PLANS["a checkpoint before any event"] + PLANS["a checkpoint between events"]
    land_chain(memory.memory.chain, SOURCE, plan, provenance, accept)
    events = {r["id"]: r["hash"] for r in rows(db_path)}
    found = checkpoints(db_path)
    assert [(c[3], c[4]) for c in found] == [
        (head["id"], head["hash"]),  # before any event: the head it lands on
        (3, events[3]),  # after the second landed event
    ]
    assert [(c[0], c[1], c[2]) for c in found] == [
        (utc_timestamp(500.0), "src-c", "summary 1"),
        (utc_timestamp(1500.0), head["session"], "summary 1"),
    ]


def test_an_event_planned_without_a_kind_lands_as_a_note(memory: Service, db_path: Path) -> None:
    land_chain(memory.memory.chain, SOURCE, [Prepared(1, "x", 1.0)], provenance, accept)
    assert [r["kind"] for r in rows(db_path)] == ["note", IMPORT_KIND]


def test_a_checkpoint_on_an_empty_chain_anchors_to_genesis(memory: Service, db_path: Path) -> None:
    land_chain(memory.memory.chain, SOURCE, [checkpoint(1, 500.0)], provenance, accept)
    assert [(c[3], c[4]) for c in checkpoints(db_path)] == [(0, "0" * 64)]


def test_the_check_sees_earlier_imports_under_the_lock(importing: Service) -> None:
    seen: list[list[dict[str, Any]]] = []
    chain = importing.memory.chain
    land_chain(chain, SOURCE, [event(1, 1000.0)], provenance, seen.append)
    land_chain(chain, SOURCE, [event(2, 2000.0)], provenance, seen.append)
    assert seen == [[], [provenance(1, 0, 1)]]


@pytest.mark.parametrize(
    "plan", [PLANS["events only"], PLANS["a checkpoint between events"], PLANS["nothing"]]
)
@pytest.mark.parametrize("stop", ["check", "provenance"])
def test_a_landing_that_stops_writes_nothing(
    memory: Service, db_path: Path, plan: list[Prepared], stop: str
) -> None:
    memory.append_event("already here")
    before = (rows(db_path), checkpoints(db_path), witness_of(db_path).read_raw())

    def refuse(*_: Any) -> Any:
        raise SqlgateError("stop")

    with pytest.raises(SqlgateError, match="stop"):
        land_chain(
            memory.memory.chain, SOURCE, plan,
            refuse if stop == "provenance" else provenance,
            refuse if stop == "check" else accept,
        )  # fmt: skip
    assert (rows(db_path), checkpoints(db_path), witness_of(db_path).read_raw()) == before
    memory.append_event("after")  # the server's own session and clock are back
    assert rows(db_path)[-1]["session"] == before[0][0]["session"]
    assert verify(memory)["ok"] is True


def _import_event(memory: Service, content: str, session: str) -> None:
    with memory.memory.chain.writing() as writer:
        writer.session = session
        writer.append(IMPORT_KIND, content, [IMPORT_KIND])


def test_prior_imports_are_this_sources_records_oldest_first(
    importing: Service, db_path: Path
) -> None:
    memory = importing
    chain = memory.memory.chain
    land_chain(chain, SOURCE, [event(1, 1.0)], provenance, accept)
    _import_event(memory, "not json", IMPORT_SESSION_PREFIX + "x")
    _import_event(memory, "[1, 2]", IMPORT_SESSION_PREFIX + "x")
    _import_event(memory, json.dumps({"source": SOURCE, "n": 9}), "s-agent")  # not an import's
    land_chain(chain, "claims-mcp", [], lambda *_: {"source": "claims-mcp"}, accept)
    land_chain(chain, SOURCE, [], provenance, accept)
    memory.close()
    conn = connect_both(db_path, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        assert prior_imports(conn, SOURCE) == [provenance(1, 0, 1), provenance(0, 0, None)]
        assert prior_imports(conn, "claims-mcp") == [{"source": "claims-mcp"}]
        assert prior_imports(conn, "mcp-sqlite-memory") == []
    finally:
        conn.close()


@pytest.mark.parametrize(
    "schema",
    ["", "CREATE TABLE memory_events (id INTEGER PRIMARY KEY, kind TEXT, content TEXT)"],
    ids=["no memory", "memory without sessions"],
)
def test_a_database_without_memory_has_no_prior_imports(tmp_path: Path, schema: str) -> None:
    conn = connect_both(tmp_path / "other.db")
    try:
        conn.execute(schema)
        assert prior_imports(conn, SOURCE) == []
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("given_kind", "kind"),
    [
        ("decision", "decision"),
        ("note", "note"),
        ("todo.v2", "todo.v2"),
        (None, "note"),
        ("Not A Kind", "note"),
        ("x" * 33, "note"),
        ("claim", "note"),
        ("import", "note"),
        ("restore", "note"),
    ],
)
def test_a_source_kind_is_kept_only_when_an_agent_could_write_it(
    given_kind: str | None, kind: str
) -> None:
    assert imported_kind(given_kind) == kind


items = st.lists(
    st.tuples(st.booleans(), st.sampled_from([None, "src-a", "src-b"])), max_size=8
).map(
    lambda shapes: [
        Prepared(n, f"item {n}", 1000.0 + n, session=session, checkpoint=is_checkpoint)
        for n, (is_checkpoint, session) in enumerate(shapes)
    ]
)


@settings(max_examples=20, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plan=items)
def test_any_landing_keeps_the_chain_whole_and_every_checkpoint_on_it(
    memory: Service, db_path: Path, plan: list[Prepared]
) -> None:
    events_before = len(rows(db_path))
    land_chain(memory.memory.chain, SOURCE, plan, provenance, accept)
    hashes = {r["id"]: r["hash"] for r in rows(db_path)}
    assert len(hashes) == events_before + sum(not i.checkpoint for i in plan) + 1
    assert all(hashes.get(c[3], "0" * 64) == c[4] for c in checkpoints(db_path))
    assert verify(memory)["ok"] is True
