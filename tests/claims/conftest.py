"""The claims room's world: services on a hand-driven wall clock, and what they wrote.

The wall clock starts at 2026-01-01T00:00:00Z and only moves when a test says so
(`wall.advance(DAY * n)`), so decay is exact and no test sleeps. `snapshot(db)` reads the
claims, their history and the chain with a plain read-only connection, to show that a call
wrote nothing (or exactly what it should).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import apsw
import pytest

from sqlgate.claims.model import Claim
from sqlgate.claims.store import ClaimStore
from sqlgate.config import Settings
from sqlgate.service import Service
from tests.conftest import FakeClock
from tests.records import connect_both

START = 1767225600.0  # 2026-01-01T00:00:00Z
DAY = 86_400.0

OpenClaims = Callable[..., Service]


def iso(days: float) -> str:
    """The moment `days` after START, as an ISO-8601 text the tools accept."""
    moment = datetime.fromtimestamp(START + days * DAY, tz=timezone.utc)
    return moment.isoformat().replace("+00:00", "Z")


@pytest.fixture
def wall() -> FakeClock:
    return FakeClock(start=START)


@pytest.fixture
def open_claims(settings: Settings, clock: FakeClock, wall: FakeClock) -> Iterator[OpenClaims]:
    """Open a Service on the test's database with the shared wall clock; all closed at the end."""
    opened: list[Service] = []

    def open_(**overrides: Any) -> Service:
        service = Service.open(
            replace(settings, **overrides), clock=clock, wall_clock=wall, session="s-claims"
        )
        opened.append(service)
        return service

    yield open_
    for service in opened:
        service.close()


@pytest.fixture
def service(open_claims: OpenClaims) -> Service:
    return open_claims()


@pytest.fixture
def store(service: Service) -> ClaimStore:
    return service.claims


@dataclass(frozen=True)
class Snapshot:
    claims: list[tuple[Any, ...]]
    history: list[tuple[Any, ...]]
    events: list[tuple[Any, ...]]


def _read(db: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = connect_both(db, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return [tuple(row) for row in conn.execute(sql)]
    finally:
        conn.close()


def snapshot(db: Path) -> Snapshot:
    return Snapshot(
        _read(db, "SELECT * FROM claims ORDER BY id"),
        _read(db, "SELECT * FROM claims_history ORDER BY id"),
        _read(db, "SELECT * FROM memory_events ORDER BY id"),
    )


def claim_events(db: Path) -> list[dict[str, Any]]:
    """Every chain event of kind `claim`: its id and its content parsed."""
    rows = _read(db, "SELECT id, kind, content FROM memory_events ORDER BY id")
    return [{"id": i, **json.loads(content)} for i, kind, content in rows if kind == "claim"]


def history(db: Path) -> list[dict[str, Any]]:
    rows = _read(db, "SELECT claim_id, action, detail, event_id FROM claims_history ORDER BY id")
    return [
        {"claim_id": c, "action": a, "detail": json.loads(d), "event_id": e} for c, a, d, e in rows
    ]


def chain_ok(service: Service) -> bool:
    return bool(json.loads(service.verify_chain())["ok"])


def state_of(store: ClaimStore, claim_id: int) -> str:
    return store.get(claim_id).state


def make_claim(
    id: int,
    entity: str,
    kind: str = "priority",
    rank: int | None = None,
    *,
    state: str = "active",
    confidence: float = 0.8,
    volatility: str = "slow",
    last_confirmed: str = "2026-01-01T00:00:00.000Z",
) -> Claim:
    """A claim as the rules see it, without a database."""
    return Claim(
        id,
        entity,
        kind,
        f"{entity} {kind} {id}",
        volatility,
        confidence,
        rank,
        state,
        "2026-01-01T00:00:00.000Z",
        last_confirmed,
        (),
    )
