"""A second writer holds the write lock: the tools answer or fail fast, and every call keeps
exactly one audit row.

The other writer is a separate connection doing `BEGIN IMMEDIATE` (SQLite locks it apart
from sqlgate's own connections exactly as it would another process; a real second process
is in tests/surfaces/test_contention_processes.py). Tools that only read run with a busy
timeout of an hour: were any of them to wait for the lock, the test would hit its timeout
instead of passing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import apsw
import pytest

from sqlgate.engine.records.audit_queue import queue_path
from sqlgate.engine.running.textsearch import SearchRequest
from sqlgate.errors import LimitExceeded, PolicyDenied, SqlgateError
from sqlgate.memory.witness import Witness, WitnessFile
from sqlgate.service import Service
from tests.records import connect_both

HOUR = 3600.0
Call = Callable[[Service], str]


@contextmanager
def write_lock_held(db: Path) -> Iterator[apsw.Connection]:
    """Another connection holds the database's write lock for the block."""
    other = connect_both(db)
    other.execute("BEGIN IMMEDIATE")
    try:
        yield other
    finally:
        other.execute("ROLLBACK")
        other.close()


def audit_rows(db: Path) -> list[dict[str, Any]]:
    conn = connect_both(db, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        names = ("id", "tool", "ok", "error", "detail")
        return [dict(zip(names, row, strict=True)) for row in conn.execute(
            f"SELECT {', '.join(names)} FROM query_log ORDER BY id")]  # fmt: skip
    finally:
        conn.close()


def without_drainer(service: Service) -> Service:
    """The test drains by hand, so what it asserts does not race the background thread."""
    service.audit.drainer.stop(10)
    return service


@pytest.fixture
def busy_hour(make_service: Callable[..., Service]) -> Service:
    service = without_drainer(make_service(busy_timeout=HOUR))
    service.write_query("CREATE TABLE t(id INTEGER PRIMARY KEY, body TEXT)")
    service.write_query("INSERT INTO t(body) VALUES ('alpha'), ('beta')")
    service.append_event("the deploy uses blue-green", tags=["deploy"])
    service.claim_add("acme", "status", "acme ships weekly")
    return service


READS: list[Any] = [
    pytest.param("read_query", lambda s: s.read_query("SELECT * FROM t"), id="read_query"),
    pytest.param("list_tables", lambda s: s.list_tables(), id="list_tables"),
    pytest.param("describe_table", lambda s: s.describe_table("t"), id="describe_table"),
    pytest.param("get_schema", lambda s: s.get_schema(), id="get_schema"),
    pytest.param(
        "search_text", lambda s: s.search_text(SearchRequest("alp", "t")), id="search_text"
    ),
    pytest.param("memory_search", lambda s: s.memory_search("deploy"), id="memory_search"),
    pytest.param("memory_timeline", lambda s: s.memory_timeline([1]), id="memory_timeline"),
    pytest.param("memory_details", lambda s: s.memory_details([1]), id="memory_details"),
    pytest.param("memory_stats", lambda s: s.memory_stats(), id="memory_stats"),
    pytest.param("get_resume_context", lambda s: s.get_resume_context(), id="resume"),
    pytest.param("verify_chain", lambda s: s.verify_chain(), id="verify_chain"),
    pytest.param("claim_search", lambda s: s.claim_search("acme"), id="claim_search"),
    pytest.param(
        "read_query", lambda s: s.read_query("SELECT * FROM nope"), id="read_query-failing"
    ),
]


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("tool", "call"), READS)
def test_a_reading_tool_answers_without_waiting_and_its_row_is_written_later(
    busy_hour: Service, db_path: Path, tool: str, call: Call
) -> None:
    before = len(audit_rows(db_path))
    with write_lock_held(db_path):
        try:
            call(busy_hour)
        except SqlgateError as exc:
            failure = str(exc)
        else:
            failure = ""
        assert "busy" not in failure
        assert len(audit_rows(db_path)) == before  # queued: the lock is still held
        assert busy_hour.audit.pending() == 1
    assert busy_hour.audit.drain()
    rows = audit_rows(db_path)[before:]
    assert [row["tool"] for row in rows] == [tool]
    assert "queued" in json.loads(rows[0]["detail"])
    assert busy_hour.audit.pending() == 0


@pytest.mark.timeout(60)
def test_verify_chain_under_the_lock_answers_and_records_its_position_only_later(
    busy_hour: Service, db_path: Path
) -> None:
    witness = WitnessFile.beside(db_path)
    assert witness.read().verified_id == 0  # type: ignore[union-attr]
    with write_lock_held(db_path):
        status = json.loads(busy_hour.verify_chain())
        assert status["ok"] is True
        assert status["events"] == 2  # the note and the claim's event
        assert "unconfirmed" not in status
        assert witness.read().verified_id == 0  # type: ignore[union-attr]
    json.loads(busy_hour.verify_chain())
    assert witness.read().verified_id == 2  # type: ignore[union-attr]


def verify_under_the_lock(
    service: Service, db: Path, witnessed: Callable[[Witness, str], Witness]
) -> dict[str, Any]:
    """verify_chain while another connection holds the lock and the witness is replaced by
    `witnessed(current witness, hash of event 1)`."""
    witness = WitnessFile.beside(db)
    now = witness.read()
    assert now is not None
    first = connect_both(db).execute("SELECT hash FROM memory_events WHERE id = 1")
    with write_lock_held(db):
        witness.write(witnessed(now, str(first.fetchall()[0][0])))
        answer: dict[str, Any] = json.loads(service.verify_chain())
        answer["resume"] = service.get_resume_context()
    return answer


@pytest.mark.timeout(60)
def test_a_witness_ahead_of_the_committed_chain_is_unconfirmed_not_broken(
    busy_hour: Service, db_path: Path
) -> None:
    """An append in flight in another process has written the witness, not yet committed."""
    status = verify_under_the_lock(
        busy_hour,
        db_path,
        lambda w, _: Witness(w.head_id + 1, "a" * 64, w.verified_id, w.verified_hash),
    )
    assert status["ok"] is True
    assert "event 3, not committed" in status["unconfirmed"]
    assert "newer events unconfirmed" in status["resume"]


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("head_ahead", "unseen"),
    [
        pytest.param(0, 3, id="head-at-the-chain-verified-ahead"),
        pytest.param(1, 3, id="both-ahead"),
        pytest.param(2, 4, id="head-further-ahead"),
    ],
)
def test_a_witness_whose_last_verified_event_is_ahead_is_unconfirmed_too(
    busy_hour: Service, db_path: Path, head_ahead: int, unseen: int
) -> None:
    """The witness names the chain's head (or one past it) and a last verified event past
    the committed chain: without the lock that cannot be told from an append in flight."""
    status = verify_under_the_lock(
        busy_hour,
        db_path,
        lambda w, _: Witness(
            w.head_id + head_ahead,
            w.head_hash if head_ahead == 0 else "a" * 64,
            w.head_id + 1,
            "b" * 64,
        ),
    )
    assert (status["ok"], status["events"]) == (True, 2)
    assert f"event {unseen}, not committed" in status["unconfirmed"]


@pytest.mark.timeout(60)
def test_a_witness_behind_the_committed_chain_is_broken_even_under_the_lock(
    busy_hour: Service, db_path: Path
) -> None:
    status = verify_under_the_lock(busy_hour, db_path, lambda _, first: Witness(1, first))
    assert (status["ok"], status["first_broken_id"], status["reason"]) == (
        False,
        2,
        "witness mismatch: events 2 to 2 follow the witnessed head (written outside the server)",
    )


@pytest.mark.timeout(60)
def test_a_rewritten_witnessed_event_is_caught_under_the_lock(
    busy_hour: Service, db_path: Path
) -> None:
    status = verify_under_the_lock(
        busy_hour, db_path, lambda w, _: Witness(w.head_id + 5, "b" * 64, 1, "c" * 64)
    )
    assert (status["ok"], status["first_broken_id"]) == (False, 1)
    assert "last verified event 1 was rewritten" in status["reason"]


WRITES: list[Any] = [
    pytest.param(
        "write_query", lambda s: s.write_query("INSERT INTO t(body) VALUES ('c')"), id="write"
    ),
    pytest.param(
        "destructive_query",
        lambda s: s.destructive_query("DELETE FROM t WHERE id = 1", reason="tidy"),
        id="destructive",
    ),
    pytest.param("append_event", lambda s: s.append_event("more"), id="append_event"),
    pytest.param("checkpoint", lambda s: s.checkpoint("half way"), id="checkpoint"),
    pytest.param("claim_add", lambda s: s.claim_add("acme", "fact", "x"), id="claim_add"),
    pytest.param(
        "create_view", lambda s: s.create_view("v", "SELECT body FROM t"), id="create_view"
    ),
]


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("tool", "call"), WRITES)
def test_a_writing_tool_fails_with_the_busy_message_and_keeps_its_row(
    make_service: Callable[..., Service], db_path: Path, tool: str, call: Call
) -> None:
    service = without_drainer(make_service(busy_timeout=0.05))
    service.write_query("CREATE TABLE t(id INTEGER PRIMARY KEY, body TEXT)")
    service.write_query("INSERT INTO t(body) VALUES ('alpha')")
    before = len(audit_rows(db_path))
    with write_lock_held(db_path), pytest.raises(LimitExceeded, match="the database is busy"):
        call(service)
    assert service.audit.drain()
    rows = audit_rows(db_path)[before:]
    assert [(row["tool"], row["ok"]) for row in rows] == [(tool, 0)]
    assert "the database is busy" in rows[0]["error"]


@pytest.mark.timeout(60)
def test_a_refusal_found_before_the_lock_does_not_wait_for_it(busy_hour: Service) -> None:
    with write_lock_held(busy_hour.db.path), pytest.raises(PolicyDenied):
        busy_hour.write_query("DROP TABLE t")


@pytest.mark.timeout(60)
def test_rows_still_queued_at_close_are_written_by_the_next_service(
    make_service: Callable[..., Service], db_path: Path
) -> None:
    first = make_service(busy_timeout=0.05)
    before = len(audit_rows(db_path))
    with write_lock_held(db_path):
        for _ in range(3):
            first.read_query("SELECT 1")
        first.close()  # the lock is still held: the rows stay in the queue file
        assert len(audit_rows(db_path)) == before
    assert queue_path(db_path).exists()
    second = without_drainer(make_service())
    assert second.audit.drain()
    assert [row["tool"] for row in audit_rows(db_path)[before:]] == ["read_query"] * 3


@pytest.mark.timeout(60)
def test_a_drain_interrupted_after_its_commit_writes_nothing_twice(
    busy_hour: Service, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = len(audit_rows(db_path))
    with write_lock_held(db_path):
        busy_hour.read_query("SELECT 1")
        busy_hour.list_tables()
    queue = busy_hour.audit._queue
    assert queue is not None

    def crash(_: object) -> None:
        raise OSError("the process died here")

    with monkeypatch.context() as patch:
        patch.setattr(queue, "remove", crash)
        with pytest.raises(OSError, match="died"):
            busy_hour.audit.drain()
    assert len(audit_rows(db_path)) == before + 2  # committed, still queued
    assert busy_hour.audit.pending() == 2
    assert busy_hour.audit.drain()
    assert [row["tool"] for row in audit_rows(db_path)[before:]] == ["read_query", "list_tables"]
    assert busy_hour.audit.pending() == 0


@pytest.mark.timeout(60)
def test_the_background_drainer_writes_the_rows_once_the_lock_frees(
    make_service: Callable[..., Service], db_path: Path
) -> None:
    busy_hour = make_service(busy_timeout=HOUR)
    before = len(audit_rows(db_path))
    with write_lock_held(db_path):
        busy_hour.read_query("SELECT 1")
    drained = busy_hour.audit.drainer
    assert drained._thread is not None
    drained.stop(30)  # returns once the thread has ended; it ends only when told
    # the thread ran at least until the lock freed; whatever it did not write, close writes
    busy_hour.close()
    assert [row["tool"] for row in audit_rows(db_path)[before:]] == ["read_query"]


def test_a_lone_surrogate_in_a_reason_is_audited_escaped(service: Service, db_path: Path) -> None:
    service.write_query("CREATE TABLE t(id INTEGER PRIMARY KEY)")
    service.write_query("INSERT INTO t(id) VALUES (1)")
    service.destructive_query("DELETE FROM t WHERE id = 1", reason="clean \ud800 up")
    row = audit_rows(db_path)[-1]
    assert (row["tool"], row["ok"]) == ("destructive_query", 1)
    assert json.loads(row["detail"])["reason"] == "clean \\ud800 up"


def test_a_lone_surrogate_in_a_failing_query_is_audited_escaped(
    service: Service, db_path: Path
) -> None:
    with pytest.raises(SqlgateError):
        service.read_query("SELECT '\udcff'")
    row = audit_rows(db_path)[-1]
    assert (row["tool"], row["ok"]) == ("read_query", 0)


@pytest.mark.timeout(60)
def test_verification_does_not_wait_for_an_append_of_its_own_process(busy_hour: Service) -> None:
    """An append in this process waiting for the lock holds the server connection: the
    verification beside it judges without the lock instead of queueing behind it."""
    with busy_hour.db.server_lock:
        status = json.loads(busy_hour.verify_chain())
        context = busy_hour.get_resume_context()
    assert status["ok"] is True
    assert context.startswith("# chain: ok, 2 events")
