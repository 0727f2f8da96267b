"""Memory replies stay within --max-result-bytes, and busy or odd input fails clearly."""

from __future__ import annotations

import json
import threading

import apsw
import pytest

from sqlgate.errors import InvalidArgument, LimitExceeded
from tests.memory.conftest import OpenMemory
from tests.records import records_path


def test_resume_context_keeps_the_newest_events_that_fit_the_byte_cap(
    open_memory: OpenMemory,
) -> None:
    service = open_memory(max_result_bytes=4096)
    for n in range(40):
        service.append_event(f"event {n} " + "x" * 300)
    text = service.get_resume_context(max_events=40)
    assert len(text.encode()) <= 4096 + 200  # the trailer line is outside the cap
    assert "(the newest" in text
    assert "event 39 " in text  # the newest is kept
    assert "event 0 " not in text  # the oldest are dropped first


def test_timeline_is_cut_at_the_byte_cap_and_says_so(open_memory: OpenMemory) -> None:
    service = open_memory(max_result_bytes=1024)
    for n in range(60):
        service.append_event(f"event {n} " + "y" * 120)
    text = service.memory_timeline(list(range(5, 50, 10)), window=5)
    assert len(text.encode()) <= 1024 + 200
    assert "(truncated: 1024 bytes" in text


@pytest.mark.parametrize(
    "tag",
    [
        pytest.param("two words", id="space"),
        pytest.param("line\nbreak", id="newline"),
        pytest.param("tab\tbed", id="tab"),
        pytest.param("password=hunter2", id="secret"),
        pytest.param("AKIAIOSFODNN7EXAMPLE", id="aws-key"),  # publish-gate: allow
    ],
)
def test_tags_that_are_not_plain_labels_are_refused_and_nothing_is_written(
    open_memory: OpenMemory, tag: str
) -> None:
    service = open_memory()
    with pytest.raises(InvalidArgument, match="tag"):
        service.append_event("content", tags=[tag])
    assert json.loads(service.memory_stats())["events"] == 0


def test_a_writer_holding_the_lock_past_the_busy_timeout_gives_a_clear_retry_error(
    open_memory: OpenMemory,
) -> None:
    service = open_memory(busy_timeout=0.05)
    holder = apsw.Connection(str(records_path(service.db.path)))  # the memory's file
    holder.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(LimitExceeded, match="busy"):
            service.append_event("blocked")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert json.loads(service.append_event("after"))["id"] == 1


def test_servers_starting_together_on_a_new_file_all_open_it(open_memory: OpenMemory) -> None:
    barrier = threading.Barrier(6)
    errors: list[BaseException] = []

    def start() -> None:
        barrier.wait()
        try:
            open_memory(session="s-race")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
