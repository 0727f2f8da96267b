"""Which path judges what: a chain as sqlgate writes it never needs the exact path, and
an incremental verification rechecks only its anchor exactly. (Mutation testing: a fast path
switched off changes no verdict, only the speed, and no other test notices.)"""

from __future__ import annotations

from typing import Any

import pytest

from sqlgate.memory import verification
from sqlgate.service import Service
from tests.memory.conftest import append_many


@pytest.fixture
def exact_checks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The ids of the events the exact path judged, one by one."""
    seen: list[int] = []
    check = verification._check_event

    def spy(row: tuple[Any, ...], prev_hash: str | None) -> str | None:
        seen.append(int(row[0]))
        return check(row, prev_hash)

    monkeypatch.setattr(verification, "_check_event", spy)
    monkeypatch.setattr(verification, "_FETCH_BATCH", 3)  # several batches, a short last one
    return seen


def fill(memory: Service) -> None:
    memory.append_event("plain")
    memory.append_event('héllo "quoted" \\ back\nslash 😀', tags=["b", "a", "é"])
    append_many(memory, 6)


def test_a_chain_as_sqlgate_writes_it_takes_the_fast_path_only(
    memory: Service, exact_checks: list[int]
) -> None:
    fill(memory)
    status = memory.memory.chain.verify()
    assert (status.ok, status.events, status.checked) == (True, 8, 8)
    assert exact_checks == []


def test_an_incremental_verification_checks_its_anchor_exactly_and_the_rest_fast(
    memory: Service, exact_checks: list[int]
) -> None:
    fill(memory)
    assert memory.memory.chain.verify().ok
    append_many(memory, 4)
    status = memory.memory.chain.verify(incremental=True)
    assert (status.ok, status.events, status.checked) == (True, 12, 4)
    assert exact_checks == [8]


def test_progress_is_reported_once_per_batch_and_at_the_end(
    memory: Service, exact_checks: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    fill(memory)
    monkeypatch.setattr(verification, "_PROGRESS_EVERY", 3)
    seen: list[tuple[int, int]] = []
    assert memory.memory.chain.verify(progress=lambda done, total: seen.append((done, total))).ok
    assert seen == [(0, 8), (3, 8), (6, 8), (8, 8)]
    assert exact_checks == []


def test_the_exact_path_progress_is_the_same(
    memory: Service, exact_checks: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    fill(memory)
    monkeypatch.setattr(verification, "_PROGRESS_EVERY", 3)
    monkeypatch.setattr(verification, "_fast_batch", lambda *_: None)
    seen: list[tuple[int, int]] = []
    assert memory.memory.chain.verify(progress=lambda done, total: seen.append((done, total))).ok
    assert seen == [(0, 8), (3, 8), (6, 8), (8, 8)]
    assert exact_checks == list(range(1, 9))
