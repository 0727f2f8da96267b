"""Fixtures for the surfaces: the anyio backend, and services on a hand-driven wall clock."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import pytest

from sqlgate.config import Settings
from sqlgate.service import Service
from tests.conftest import FakeClock

START = 1767225600.0  # 2026-01-01T00:00:00Z
OpenService = Callable[..., Service]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def wall() -> FakeClock:
    """The wall clock events and claims are dated by: 2026-01-01, moved only by the tests."""
    return FakeClock(start=START)


@pytest.fixture
def open_service(
    request: pytest.FixtureRequest, settings: Settings, clock: FakeClock, wall: FakeClock
) -> Iterator[OpenService]:
    """Open Services on the test's database with the `wall` clock and the test module's
    `SESSION` (if it names one); all are closed at the end."""
    session = getattr(request.module, "SESSION", "s-surface")
    opened: list[Service] = []

    def make(**overrides: Any) -> Service:
        service = Service.open(
            replace(settings, **overrides), clock=clock, wall_clock=wall, session=session
        )
        opened.append(service)
        return service

    yield make
    for service in opened:
        service.close()
