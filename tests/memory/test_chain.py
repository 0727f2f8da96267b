"""The event chain: the hash contract, appends, and tampering of every kind caught."""

from __future__ import annotations

import hashlib
import json
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from sqlgate.config import Settings
from sqlgate.errors import SqlgateError
from sqlgate.memory.chain import GENESIS, ChainStatus, canonical, event_hash
from sqlgate.service import Service
from tests.conftest import FakeClock
from tests.memory.conftest import (
    START,
    OpenMemory,
    append_many,
    count_rows,
    rehash_from,
    rewitness,
    rows,
    tampered,
    verify,
    witness_of,
)
from tests.records import connect_both

VECTOR = (1, "2026-01-01T00:00:00.000Z", "s-0001", "note", "héllo, chain", ["alpha", "beta"])
VECTOR_HASH = "6fc0a3258c47bbd21190c9f9f16f7eeea6e0bc04bc373adfd906ca13dda4a771"


def test_hash_contract_test_vector_verifies() -> None:
    expected = (
        '[1,"2026-01-01T00:00:00.000Z","s-0001","note","héllo, chain",["alpha","beta"],'
        f'"{GENESIS}"]'
    ).encode()
    assert canonical(*VECTOR, GENESIS) == expected
    assert event_hash(*VECTOR, GENESIS) == VECTOR_HASH
    assert hashlib.sha256(expected).hexdigest() == VECTOR_HASH


@settings(max_examples=200, deadline=None)
@given(
    event_id=st.integers(1, 2**62),
    texts=st.lists(st.text(), min_size=5, max_size=5),
    tags=st.lists(st.text()),
)
def test_canonical_is_exactly_the_contracts_json_dumps(
    event_id: int, texts: list[str], tags: list[str]
) -> None:
    ts, session, kind, content, prev = texts
    fields = [event_id, ts, session, kind, content, tags, prev]
    expected = json.dumps(fields, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    assert canonical(event_id, ts, session, kind, content, tags, prev) == expected


def test_a_stored_event_rehashes_with_ten_lines_of_plain_python(
    memory: Service, db_path: Path
) -> None:
    memory.append_event("héllo, chain", tags=["beta", "alpha", "beta"])
    (row,) = rows(db_path)
    fields = [row["id"], row["ts"], row["session"], row["kind"], row["content"]]
    fields += [json.loads(row["tags"]), row["prev_hash"]]
    text = json.dumps(fields, ensure_ascii=False, separators=(",", ":"))
    assert hashlib.sha256(text.encode("utf-8")).hexdigest() == row["hash"]
    assert row["tags"] == '["alpha","beta"]'
    assert row["ts"] == "2026-01-01T00:00:01.000Z"


def test_append_returns_the_id_and_hash_it_stored(memory: Service, db_path: Path) -> None:
    answers = [json.loads(memory.append_event(f"note {n}")) for n in range(3)]
    stored = rows(db_path)
    assert [a["id"] for a in answers] == [1, 2, 3]
    assert [a["hash"] for a in answers] == [r["hash"] for r in stored]
    assert [r["prev_hash"] for r in stored] == [GENESIS, stored[0]["hash"], stored[1]["hash"]]
    assert {r["session"] for r in stored} == {"s-test"}


def test_verify_chain_reports_count_and_head(memory: Service, db_path: Path) -> None:
    assert verify(memory) == {"ok": True, "events": 0, "head_id": None, "head_hash": None}
    append_many(memory, 3)
    assert verify(memory) == {
        "ok": True,
        "events": 3,
        "head_id": 3,
        "head_hash": rows(db_path)[-1]["hash"],
    }


def test_broken_status_names_only_the_broken_event_and_reason() -> None:
    status = ChainStatus(False, first_broken_id=4, reason="link broken: x", checked=3)
    assert json.loads(status.as_json()) == {
        "ok": False,
        "first_broken_id": 4,
        "reason": "link broken: x",
    }


# -- tampering --------------------------------------------------------------------------
# The chain: events 1..6; verify_chain ran after event 4, so the witness names head 6 and
# verified position 4.

Tamper = Callable[[apsw.Connection], None]


def _set(column: str, value: object, event_id: int = 3) -> Tamper:
    def change(conn: apsw.Connection) -> None:
        conn.execute(f"UPDATE memory_events SET {column} = ? WHERE id = ?", (value, event_id))

    return change


def _delete(event_id: int) -> Tamper:
    return lambda conn: conn.execute("DELETE FROM memory_events WHERE id = ?", (event_id,))


def _swap_contents(conn: apsw.Connection) -> None:
    (two,), (four,) = conn.execute(
        "SELECT content FROM memory_events WHERE id IN (2, 4) ORDER BY id"
    ).fetchall()
    _set("content", four, 2)(conn)
    _set("content", two, 4)(conn)


def _swap_rows(conn: apsw.Connection) -> None:
    conn.execute("UPDATE memory_events SET id = -id WHERE id IN (2, 4)")
    conn.execute("UPDATE memory_events SET id = CASE id WHEN -2 THEN 4 ELSE 2 END WHERE id < 0")


def _insert_at_3(*, forge_hash: bool) -> Tamper:
    def insert(conn: apsw.Connection) -> None:
        conn.execute("UPDATE memory_events SET id = -id WHERE id >= 3")
        conn.execute("UPDATE memory_events SET id = 1 - id WHERE id < 0")
        (prev,) = conn.execute("SELECT hash FROM memory_events WHERE id = 2").fetchone()
        fields = (3, "2026-01-01T00:00:02.500Z", "s-test", "note", "forged", [], prev)
        digest = event_hash(*fields) if forge_hash else "f" * 64
        conn.execute(
            "INSERT INTO memory_events VALUES (?, ?, ?, ?, ?, '[]', ?, ?)",
            (*fields[:5], prev, digest),
        )

    return insert


def _append_forged(conn: apsw.Connection) -> None:
    (prev,) = conn.execute("SELECT hash FROM memory_events WHERE id = 6").fetchone()
    fields = (7, "2026-01-01T00:00:09.000Z", "s-test", "note", "forged", [], prev)
    conn.execute(
        "INSERT INTO memory_events VALUES (?, ?, ?, ?, ?, '[]', ?, ?)",
        (*fields[:5], prev, event_hash(*fields)),
    )


def _rewrite_from(event_id: int) -> Tamper:
    def rewrite(conn: apsw.Connection) -> None:
        conn.execute(
            "UPDATE memory_events SET content = 'history, rewritten' WHERE id >= ?", (event_id,)
        )
        rehash_from(conn, event_id)

    return rewrite


TAMPERING: list[Any] = [
    pytest.param(_set("content", "edited"), 3, "content changed", id="edit-content"),
    pytest.param(_set("ts", "2025-01-01T00:00:00.000Z"), 3, "content changed", id="edit-ts"),
    pytest.param(_set("session", "s-other"), 3, "content changed", id="edit-session"),
    pytest.param(_set("kind", "decision"), 3, "content changed", id="edit-kind"),
    pytest.param(_set("tags", '["x"]'), 3, "content changed", id="edit-tags"),
    pytest.param(_set("tags", "not json"), 3, "content changed", id="tags-not-json"),
    pytest.param(_set("content", 42), 3, "content changed", id="content-not-text"),
    pytest.param(_set("prev_hash", "e" * 64), 3, "link broken", id="edit-prev-hash"),
    pytest.param(_set("hash", "e" * 64), 3, "content changed", id="edit-hash"),
    pytest.param(_set("hash", "e" * 64, 6), 6, "content changed", id="edit-head-hash"),
    pytest.param(_delete(3), 3, "event missing", id="delete-middle"),
    pytest.param(_delete(1), 1, "event missing", id="delete-first"),
    pytest.param(_swap_contents, 2, "content changed", id="reorder-contents"),
    pytest.param(_swap_rows, 2, "link broken", id="reorder-rows"),
    pytest.param(_insert_at_3(forge_hash=False), 3, "content changed", id="insert-naive"),
    pytest.param(_insert_at_3(forge_hash=True), 4, "link broken", id="insert-forged"),
    pytest.param(_delete(6), 6, "witness mismatch", id="truncate-last"),
    pytest.param(_append_forged, 7, "witness mismatch", id="append-forged"),
    pytest.param(_rewrite_from(2), 4, "witness mismatch", id="rewrite-before-verified"),
    pytest.param(_rewrite_from(5), 6, "witness mismatch", id="rewrite-after-verified"),
]


@pytest.fixture
def six_events(memory: Service, db_path: Path) -> Service:
    append_many(memory, 4)
    assert verify(memory)["ok"]
    append_many(memory, 2)
    return memory


@pytest.mark.parametrize(("tamper", "first_broken", "reason"), TAMPERING)
def test_tampering_is_detected_at_the_first_broken_event(
    six_events: Service, db_path: Path, tamper: Tamper, first_broken: int, reason: str
) -> None:
    with tampered(db_path) as conn:
        tamper(conn)
    result = verify(six_events)
    assert result["ok"] is False
    assert result["first_broken_id"] == first_broken
    assert result["reason"].startswith(reason)


@pytest.mark.parametrize("start", [1, 2, 5, 6])
def test_a_rehashed_rewrite_is_caught_only_by_the_witness(
    six_events: Service, db_path: Path, start: int
) -> None:
    with tampered(db_path) as conn:
        _rewrite_from(start)(conn)
    assert "witness mismatch" in verify(six_events)["reason"]
    rewitness(db_path)  # the chain on its own is consistent: only the witness knew
    assert verify(six_events)["ok"] is True


def test_a_broken_chain_does_not_move_the_verified_position(
    six_events: Service, db_path: Path
) -> None:
    before = witness_of(db_path).read()
    with tampered(db_path) as conn:
        _set("content", "edited", 5)(conn)
    assert verify(six_events)["ok"] is False
    assert witness_of(db_path).read() == before


# -- properties -------------------------------------------------------------------------
PRINTABLE = st.characters(exclude_categories=("Cc", "Cs"))
CONTENT = st.text(PRINTABLE, min_size=1, max_size=40).filter(lambda text: bool(text.strip()))
KIND = st.from_regex(r"[a-z][a-z0-9_.-]{0,8}", fullmatch=True)
TAG = st.text(st.characters(codec="ascii", categories=("L", "N")), min_size=1, max_size=6)
TAGS = st.lists(TAG, max_size=3)
EVENTS = st.lists(st.tuples(CONTENT, KIND, TAGS), min_size=1, max_size=8)
PROPERTY = settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _fresh(folder: str) -> Service:
    db = Path(folder) / "p.db"
    return Service.open(
        Settings(db=db, redact="off"),
        clock=FakeClock(),
        wall_clock=FakeClock(start=START, step=0.001),
        session="s-prop",
    )


@PROPERTY
@given(events=EVENTS)
def test_any_sequence_of_appends_verifies(events: list[tuple[str, str, list[str]]]) -> None:
    with tempfile.TemporaryDirectory() as folder, _fresh(folder) as service:
        for content, kind, tags in events:
            service.append_event(content, kind=kind, tags=tags)
        assert verify(service) == {
            "ok": True,
            "events": len(events),
            "head_id": len(events),
            "head_hash": rows(Path(folder) / "p.db")[-1]["hash"],
        }
        stored = rows(Path(folder) / "p.db")
        assert [r["content"] for r in stored] == [content for content, _, _ in events]


FIELDS = ("id", "ts", "session", "kind", "content", "tags", "prev_hash", "hash")


@st.composite
def _changes(draw: st.DrawFn) -> tuple[int, int, str, object]:
    length = draw(st.integers(1, 6))
    target = draw(st.integers(1, length))
    field = draw(st.sampled_from(FIELDS))
    value: object
    if field == "id":
        value = draw(st.integers(length + 1, length + 50))
    elif field == "tags":
        value = json.dumps(draw(TAGS))
    elif field in ("prev_hash", "hash"):
        value = draw(st.from_regex(r"[0-9a-f]{64}", fullmatch=True))
    else:
        value = draw(CONTENT)
    return length, target, field, value


@PROPERTY
@given(change=_changes())
def test_any_single_field_change_fails_verification_at_that_event(
    change: tuple[int, int, str, object],
) -> None:
    length, target, field, value = change
    with tempfile.TemporaryDirectory() as folder, _fresh(folder) as service:
        db = Path(folder) / "p.db"
        for n in range(length):
            service.append_event(f"event {n}", tags=["t"] if n % 2 else [])
        old = rows(db)[target - 1][field]
        same = json.loads(old) == json.loads(str(value)) if field == "tags" else old == value
        assume(not same)
        with tampered(db) as conn:
            _set(field, value, target)(conn)
        result = verify(service)
        assert result["ok"] is False
        assert result["first_broken_id"] == target


# -- incremental verification -----------------------------------------------------------
def test_incremental_cost_follows_new_events_not_chain_length(
    memory: Service, db_path: Path
) -> None:
    chain = memory.memory.chain
    append_many(memory, 40)
    assert chain.verify().checked == 40
    assert chain.verify(incremental=True).checked == 0
    append_many(memory, 3)
    status = chain.verify(incremental=True)
    assert (status.ok, status.events, status.checked) == (True, 43, 3)
    assert witness_of(db_path).read().verified_id == 43  # type: ignore[union-attr]
    assert chain.verify(incremental=True).checked == 0


def test_incremental_verification_without_a_verified_position_walks_everything(
    memory: Service,
) -> None:
    append_many(memory, 5)
    assert memory.memory.chain.verify(incremental=True).checked == 5


def test_incremental_verification_catches_an_edit_after_the_verified_position(
    six_events: Service, db_path: Path
) -> None:
    with tampered(db_path) as conn:
        _set("content", "edited", 5)(conn)
    status = six_events.memory.chain.verify(incremental=True)
    assert (status.ok, status.first_broken_id) == (False, 5)


@pytest.mark.parametrize(
    ("start", "reason"),
    [
        pytest.param(1, "witness mismatch", id="rehashed-through-the-anchor"),
        pytest.param(4, "witness mismatch", id="anchor-itself"),
    ],
)
def test_incremental_verification_catches_a_rehashed_rewrite_before_the_anchor(
    six_events: Service, db_path: Path, start: int, reason: str
) -> None:
    with tampered(db_path) as conn:
        _rewrite_from(start)(conn)
    status = six_events.memory.chain.verify(incremental=True)
    assert (status.ok, status.first_broken_id) == (False, 4)
    assert (status.reason or "").startswith(reason)


def test_incremental_verification_catches_a_rewrite_that_stops_before_the_anchor(
    six_events: Service, db_path: Path
) -> None:
    with tampered(db_path) as conn:
        conn.execute("UPDATE memory_events SET content = 'rewritten' WHERE id <= 3")
        conn.execute("UPDATE memory_events SET id = -id WHERE id > 3")  # hide the rest
        rehash_from(conn, 1)
        conn.execute("UPDATE memory_events SET id = -id WHERE id < 0")
    status = six_events.memory.chain.verify(incremental=True)
    assert (status.ok, status.first_broken_id) == (False, 4)
    assert (status.reason or "").startswith("link broken")


def test_an_unrehashed_edit_before_the_anchor_is_only_caught_by_a_full_verify(
    six_events: Service, db_path: Path
) -> None:
    with tampered(db_path) as conn:
        _set("content", "edited", 2)(conn)
    assert six_events.memory.chain.verify(incremental=True).ok is True  # documented limit
    status = six_events.memory.chain.verify()
    assert (status.ok, status.first_broken_id) == (False, 2)


def test_incremental_verification_reports_a_truncation_below_the_anchor(
    six_events: Service, db_path: Path
) -> None:
    with tampered(db_path) as conn:
        conn.execute("DELETE FROM memory_events WHERE id >= 3")
    status = six_events.memory.chain.verify(incremental=True)
    assert (status.ok, status.first_broken_id) == (False, 3)
    assert (status.reason or "").startswith("event missing")


# -- concurrency and atomicity ----------------------------------------------------------
def test_threads_appending_through_separate_services_make_one_linear_chain(
    open_memory: OpenMemory, db_path: Path
) -> None:
    writers, each = 4, 15
    services = [open_memory(session=f"s-{n}") for n in range(writers)]
    start = threading.Barrier(writers)
    failures: list[BaseException] = []

    def write(service: Service, writer: int) -> None:
        try:
            start.wait()
            for n in range(each):
                service.append_event(f"writer {writer} event {n}")
        except BaseException as exc:
            failures.append(exc)

    threads = [
        threading.Thread(target=write, args=(service, n)) for n, service in enumerate(services)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    stored = rows(db_path)
    assert [r["id"] for r in stored] == list(range(1, writers * each + 1))
    assert [r["prev_hash"] for r in stored] == [GENESIS] + [r["hash"] for r in stored[:-1]]
    assert len({r["content"] for r in stored}) == writers * each
    assert verify(services[0])["ok"] is True
    assert witness_of(db_path).read().head_id == writers * each  # type: ignore[union-attr]


class _FailingCommit:
    """The server connection, except that COMMIT fails the way a full disk would."""

    def __init__(self, conn: apsw.Connection) -> None:
        self._conn = conn

    def execute(self, sql: str, *args: Any) -> Any:
        if sql == "COMMIT":
            raise apsw.FullError("database or disk is full")
        return self._conn.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def _nothing_written(db: Path, events: int, witness: bytes | None) -> None:
    assert count_rows(db, "memory_events") == events
    conn = connect_both(db, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        found = conn.execute(
            "SELECT count(*) FROM memory_events_fts WHERE memory_events_fts MATCH 'zebra'"
        ).fetchone()
        assert found == (0,)
    finally:
        conn.close()
    assert witness_of(db).read_raw() == witness


@pytest.mark.parametrize("earlier", [0, 2], ids=["first-event", "later-event"])
def test_a_failed_commit_leaves_no_event_no_index_row_and_the_old_witness(
    memory: Service, db_path: Path, monkeypatch: pytest.MonkeyPatch, earlier: int
) -> None:
    append_many(memory, earlier)
    before = witness_of(db_path).read_raw()
    real = memory.db.server
    monkeypatch.setattr(memory.db, "server", _FailingCommit(real))
    with pytest.raises(SqlgateError, match="internal error"):
        memory.append_event("a zebra crossed")
    monkeypatch.setattr(memory.db, "server", real)
    _nothing_written(db_path, earlier, before)
    assert not real.in_transaction
    memory.append_event("after the failure")
    result = verify(memory)
    assert (result["ok"], result["events"]) == (True, earlier + 1)


def test_a_failed_witness_write_leaves_nothing_written(
    memory: Service, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    append_many(memory, 2)
    before = witness_of(db_path).read_raw()

    def refuse(*_: object) -> None:
        raise PermissionError("read-only folder")

    monkeypatch.setattr(type(memory.memory.witness), "write", refuse)
    with pytest.raises(SqlgateError, match="internal error"):
        memory.append_event("a zebra crossed")
    monkeypatch.undo()
    _nothing_written(db_path, 2, before)
    memory.append_event("after the failure")
    assert verify(memory)["ok"] is True
