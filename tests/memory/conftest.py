"""The memory room's world: services with a hand-driven wall clock, and an attacker's tools.

`open_memory(session=..., **settings)` opens a Service whose wall clock starts at
2026-01-01T00:00:00Z and moves one second per event, so timestamps are known in advance.
`tampered(db)` opens the file like someone with file access would: a plain connection with
the append-only triggers dropped.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import apsw
import pytest

from sqlgate.config import Settings
from sqlgate.memory.chain import GENESIS, event_hash
from sqlgate.memory.witness import Witness, WitnessFile
from sqlgate.service import Service
from tests.conftest import FakeClock
from tests.records import connect_both

START = 1767225600.0  # 2026-01-01T00:00:00Z
APPEND_ONLY_TRIGGERS = (
    "memory_events_no_update",
    "memory_events_no_delete",
    "memory_events_no_replace",
)
COLUMNS = ("id", "ts", "session", "kind", "content", "tags", "prev_hash", "hash")

Row = dict[str, Any]
OpenMemory = Callable[..., Service]


@pytest.fixture
def wall_clock() -> FakeClock:
    return FakeClock(start=START, step=1.0)


@pytest.fixture
def open_memory(
    settings: Settings, clock: FakeClock, wall_clock: FakeClock
) -> Iterator[OpenMemory]:
    """Open a Service on the test's database; every one is closed at the end."""
    opened: list[Service] = []

    def open_(session: str = "s-test", **overrides: Any) -> Service:
        service = Service.open(
            replace(settings, **overrides), clock=clock, wall_clock=wall_clock, session=session
        )
        opened.append(service)
        return service

    yield open_
    for service in opened:
        service.close()


@pytest.fixture
def memory(open_memory: OpenMemory) -> Service:
    return open_memory()


def witness_of(db: Path) -> WitnessFile:
    return WitnessFile.beside(db)


def append_many(service: Service, count: int, *, kind: str = "note") -> list[int]:
    return [json.loads(service.append_event(f"event {n}", kind=kind))["id"] for n in range(count)]


def verify(service: Service) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(service.verify_chain())
    return result


@contextmanager
def tampered(db: Path) -> Iterator[apsw.Connection]:
    """A plain connection with the append-only triggers gone, changes committed on exit."""
    conn = connect_both(db)
    try:
        with conn:
            for trigger in APPEND_ONLY_TRIGGERS:
                conn.execute(f"DROP TRIGGER IF EXISTS {trigger}")
            yield conn
    finally:
        conn.close()


def rows(db: Path) -> list[Row]:
    conn = connect_both(db, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        found = conn.execute(f"SELECT {', '.join(COLUMNS)} FROM memory_events ORDER BY id")
        return [dict(zip(COLUMNS, row, strict=True)) for row in found]
    finally:
        conn.close()


def count_rows(db: Path, table: str) -> int:
    conn = connect_both(db, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        (count,) = conn.execute(f"SELECT count(*) FROM {table}").fetchone() or (0,)
        return int(count)
    finally:
        conn.close()


def rehash_from(conn: apsw.Connection, start_id: int) -> str:
    """Recompute prev_hash and hash of every event from `start_id` on; returns the new head."""
    before = conn.execute("SELECT hash FROM memory_events WHERE id = ?", (start_id - 1,))
    prev = next((str(h) for (h,) in before), GENESIS)
    events = conn.execute(
        "SELECT id, ts, session, kind, content, tags FROM memory_events WHERE id >= ? ORDER BY id",
        (start_id,),
    ).fetchall()
    for event_id, ts, session, kind, content, tags in events:
        digest = event_hash(event_id, ts, session, kind, content, json.loads(tags), prev)
        conn.execute(
            "UPDATE memory_events SET prev_hash = ?, hash = ? WHERE id = ?",
            (prev, digest, event_id),
        )
        prev = digest
    return prev


def rewitness(db: Path) -> None:
    """Make the witness agree with the chain as it stands (what a careful attacker does)."""
    last = rows(db)[-1]
    witness_of(db).write(Witness(last["id"], last["hash"], last["id"], last["hash"]))
