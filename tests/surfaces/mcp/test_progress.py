"""Progress notifications from long tool calls, relayed from the worker thread to the client."""

from __future__ import annotations

from collections.abc import Callable

import anyio
import pytest
from mcp import Client

from sqlgate.engine.snapshots import files as snapshots
from sqlgate.service import Service
from sqlgate.surfaces.mcp.server import build_server

pytestmark = pytest.mark.anyio

ERAS = [pytest.param("legacy", id="handshake-era"), pytest.param("2026-07-28", id="modern")]
CHAIN_EVENTS = 5000


class Updates:
    """A progress callback that keeps what arrives."""

    def __init__(self) -> None:
        self.seen: list[tuple[float, float | None, str | None]] = []

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.seen.append((progress, total, message))


def build_chain(service: Service, events: int) -> None:
    """Many events in one transaction: a long chain in a fraction of a second."""
    with service.memory.chain.writing() as writer:
        for number in range(events):
            writer.append("note", f"event {number}", ["bulk"])


def assert_steady(updates: Updates, total: int, unit: str) -> None:
    values = [progress for progress, _, _ in updates.seen]
    assert len(values) >= 3, updates.seen
    assert values == sorted(values), "progress never goes back"
    assert values[-1] == total
    assert all(seen_total == total for _, seen_total, _ in updates.seen)
    assert all(message is not None and unit in message for _, _, message in updates.seen)


@pytest.mark.parametrize("mode", ERAS)
async def test_verify_chain_reports_progress_over_a_long_chain(service: Service, mode: str) -> None:
    build_chain(service, CHAIN_EVENTS)
    updates = Updates()
    async with Client(build_server(service), mode=mode) as client:
        result = await client.call_tool("verify_chain", {}, progress_callback=updates)
    assert not result.is_error
    assert '"ok": true' in result.content[0].text  # type: ignore[union-attr]
    assert_steady(updates, CHAIN_EVENTS, "events verified")
    assert updates.seen[-1][2] == f"{CHAIN_EVENTS}/{CHAIN_EVENTS} events verified"


@pytest.mark.parametrize("mode", ERAS)
async def test_destructive_query_reports_snapshot_progress_page_by_page(
    make_service: Callable[..., Service], mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = make_service(confirm="never", undo="file")  # a snapshot to report on
    service.write_query("CREATE TABLE blobs (id INTEGER PRIMARY KEY, body BLOB)")
    for _ in range(12):
        service.write_query("INSERT INTO blobs (body) VALUES (zeroblob(3000))")
    monkeypatch.setattr(snapshots, "BACKUP_PAGES_PER_STEP", 2)  # many small steps
    pages = int(service.read_query("PRAGMA page_count").splitlines()[1])
    updates = Updates()
    async with Client(build_server(service), mode=mode) as client:
        result = await client.call_tool(
            "destructive_query",
            {"query": "DELETE FROM blobs WHERE id > 6", "reason": "shrink"},
            progress_callback=updates,
        )
    assert not result.is_error, result.content
    assert_steady(updates, pages, "pages copied to the snapshot")


async def test_verify_chain_without_a_progress_callback_answers_as_before(
    service: Service,
) -> None:
    build_chain(service, CHAIN_EVENTS)  # the worker still reports; nothing is sent
    async with Client(build_server(service)) as client:
        result = await client.call_tool("verify_chain", {})
    assert not result.is_error
    assert f'"events": {CHAIN_EVENTS}' in result.content[0].text  # type: ignore[union-attr]


async def test_progress_goes_only_to_the_call_that_asked_for_it(service: Service) -> None:
    build_chain(service, CHAIN_EVENTS)
    asked, other = Updates(), Updates()
    async with Client(build_server(service)) as client, anyio.create_task_group() as group:
        group.start_soon(lambda: client.call_tool("verify_chain", {}, progress_callback=asked))
        group.start_soon(lambda: client.call_tool("list_tables", {}, progress_callback=other))
    assert len(asked.seen) >= 3
    assert other.seen == []
