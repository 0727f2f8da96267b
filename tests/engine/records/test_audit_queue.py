"""The audit queue file and its background drainer, on their own."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import apsw
import pytest

from sqlgate.engine.records.audit_queue import AuditQueue, QueueDrainer, queue_path
from sqlgate.home import record_files

ROW: dict[str, Any] = {
    "ts": "2026-01-01T00:00:00.000Z",
    "session": "s-1",
    "tool": "read_query",
    "query": "SELECT 1",
    "ok": 1,
    "rows": 1,
    "error": None,
    "duration_ms": 0.5,
    "detail": '{"queued": "t1"}',
}


def made_queue_path(db: Path) -> Path:
    """The queue's path, its records folder made as opening the database makes it."""
    return record_files(db).make(db).queue


@pytest.fixture
def queue(tmp_path: Path) -> AuditQueue:
    opened = AuditQueue(made_queue_path(tmp_path / "agent.db"), busy_timeout=1.0)
    yield opened  # type: ignore[misc]
    opened.close()


def test_the_queue_lives_in_the_records_folder_not_beside_the_database(tmp_path: Path) -> None:
    db = tmp_path / "agent.db"
    assert queue_path(db) == record_files(db).folder / "audit-queue.sqlite"
    assert queue_path(db).parent != tmp_path


def test_reading_an_absent_queue_creates_no_file(queue: AuditQueue) -> None:
    assert queue.peek(10) == []
    assert queue.count() == 0
    queue.remove(["t1"])
    assert not queue.path.exists()


def test_rows_come_back_oldest_first_until_removed(queue: AuditQueue) -> None:
    for n in range(3):
        queue.append(f"t{n}", dict(ROW, rows=n))
    assert [(token, row["rows"]) for token, row in queue.peek(10)] == [
        ("t0", 0),
        ("t1", 1),
        ("t2", 2),
    ]
    assert [token for token, _ in queue.peek(2)] == ["t0", "t1"]
    queue.remove(["t0", "t2"])
    assert [token for token, _ in queue.peek(10)] == ["t1"]
    assert queue.count() == 1


def test_rows_survive_the_queue_being_closed_and_reopened(queue: AuditQueue) -> None:
    queue.append("t1", ROW)
    queue.close()
    again = AuditQueue(queue.path, busy_timeout=1.0)
    try:
        assert again.peek(10) == [("t1", ROW)]
    finally:
        again.close()


def test_text_that_utf8_cannot_encode_is_kept(queue: AuditQueue) -> None:
    queue.append("t1", dict(ROW, query="SELECT '\ud800'"))
    ((_, row),) = queue.peek(10)
    assert row["query"] == "SELECT '\ud800'"


@pytest.mark.parametrize(
    "stored",
    [
        pytest.param("not json", id="not-json"),
        pytest.param(json.dumps([1, 2]), id="not-an-object"),
        pytest.param(json.dumps(dict(ROW, ok=2)), id="ok-out-of-range"),
        pytest.param(json.dumps(dict(ROW, ok=True)), id="ok-a-boolean"),
        pytest.param(json.dumps({k: v for k, v in ROW.items() if k != "tool"}), id="no-tool"),
        pytest.param(json.dumps(dict(ROW, rows="many")), id="rows-text"),
    ],
)
def test_a_damaged_row_becomes_a_failed_row_that_says_so(queue: AuditQueue, stored: str) -> None:
    queue.append("t0", ROW)  # creates the file
    conn = apsw.Connection(str(queue.path))
    conn.execute("INSERT INTO pending (token, row) VALUES ('bad', ?)", (stored,))
    conn.close()
    (_, (token, row)) = queue.peek(10)
    assert token == "bad"
    assert row["ok"] == 0
    assert "damaged" in row["error"]
    assert json.loads(row["detail"]) == {"queued": "bad"}


def test_a_symlink_in_place_of_the_queue_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.db"
    path = made_queue_path(tmp_path / "agent.db")
    path.symlink_to(target)
    queue = AuditQueue(path, busy_timeout=1.0)
    with pytest.raises(apsw.CantOpenError):
        queue.append("t1", ROW)
    assert not target.exists()


class Drains:
    """A drain function answering False (still locked) a set number of times, then True."""

    def __init__(self, locked_times: int) -> None:
        self.locked_times = locked_times
        self.calls = 0
        self.empty = threading.Event()

    def __call__(self) -> bool:
        self.calls += 1
        if self.calls <= self.locked_times:
            return False
        self.empty.set()
        return True


def test_the_drainer_retries_while_locked_then_rests() -> None:
    drains = Drains(locked_times=3)
    drainer = QueueDrainer(drains, first_wait=0.001, max_wait=0.002)
    drainer.wake()
    assert drains.empty.wait(10)
    drainer.stop(10)
    assert drains.calls == 4


def test_the_drainer_starts_no_thread_until_woken() -> None:
    drainer = QueueDrainer(Drains(0))
    drainer.stop(1)
    assert drainer._thread is None


def test_a_failing_drain_does_not_end_the_drainer(caplog: pytest.LogCaptureFixture) -> None:
    calls: list[int] = []
    done = threading.Event()

    def drain() -> bool:
        calls.append(1)
        if len(calls) == 1:
            raise apsw.IOError("disk trouble")
        done.set()
        return True

    drainer = QueueDrainer(drain, first_wait=0.001)
    drainer.wake()
    assert done.wait(10)
    drainer.stop(10)
    assert "disk trouble" in caplog.text


def test_a_stopped_drainer_is_not_started_again() -> None:
    drains = Drains(0)
    drainer = QueueDrainer(drains)
    drainer.stop(1)
    drainer.wake()
    assert drainer._thread is None
    assert drains.calls == 0
