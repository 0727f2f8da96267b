"""Shared fixtures: a fresh database per test, small budgets, and clocks driven by hand.

The temporary files live in memory when they can (tests/temp_root.py).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from sqlgate.config import Settings
from sqlgate.service import Service
from tests.temp_root import move_temp_root

_DATA_HOME = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    """Before the first tmp_path: keep temporary files on the tmpfs when there is one (the
    workers of `pytest -n` inherit the TMPDIR set here)."""
    move_temp_root(os.environ)
    tempfile.tempdir = None  # read TMPDIR again
    # sqlgate's per-user home (records of databases outside any project) in a folder of the
    # run's own, never the person's: a test's database lives in tmp_path, outside projects.
    # The process that makes it (the only one, or xdist's controller) removes it at the end:
    # a run leaves over a gigabyte of records there, in memory when TMPDIR is a tmpfs
    if "SQLGATE_TEST_DATA_HOME" not in os.environ:
        os.environ["SQLGATE_TEST_DATA_HOME"] = tempfile.mkdtemp(prefix="sqlgate-data-")
        config.stash[_DATA_HOME] = os.environ["SQLGATE_TEST_DATA_HOME"]
    os.environ["XDG_DATA_HOME"] = os.environ["SQLGATE_TEST_DATA_HOME"]


def pytest_unconfigure(config: pytest.Config) -> None:
    made = config.stash.get(_DATA_HOME, None)
    if made is not None:
        shutil.rmtree(made, ignore_errors=True)
        os.environ.pop("SQLGATE_TEST_DATA_HOME", None)


class FakeClock:
    """A monotonic clock that only moves when told, or by `step` on every reading."""

    def __init__(self, start: float = 1000.0, step: float = 0.0) -> None:
        self.now = start
        self.step = step

    def __call__(self) -> float:
        self.now += self.step
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "agent.db"


@pytest.fixture
def settings(db_path: Path) -> Settings:
    return Settings(db=db_path)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def make_service(settings: Settings, clock: FakeClock) -> Iterator[Callable[..., Service]]:
    """Open a Service on the test's database; `make_service(max_rows=5)` overrides settings."""
    opened: list[Service] = []

    def make(clock_: Callable[[], float] | None = None, **overrides: Any) -> Service:
        service = Service.open(
            replace(settings, **overrides), clock=clock_ or clock, session="s-test"
        )
        opened.append(service)
        return service

    yield make
    for service in opened:
        service.close()


@pytest.fixture
def service(make_service: Callable[..., Service]) -> Service:
    return make_service()
