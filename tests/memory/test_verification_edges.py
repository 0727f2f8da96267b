"""Verification at the edges mutation testing found unpinned: forgeries only the fast path
could wrongly accept, the anchor of an incremental walk, progress, a judgement that fails,
events and witness changing while the walk runs, and a read-only database."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import apsw
import pytest

from sqlgate.config import Settings
from sqlgate.memory import verification
from sqlgate.memory.chain import GENESIS, event_hash
from sqlgate.memory.witness import Witness
from sqlgate.service import Service
from tests.memory.conftest import append_many, rows, tampered, witness_of
from tests.records import connect_both

TS = "2026-01-01T00:00:00.000Z"


class Boom(Exception):
    pass


def forge(db: Path, events: list[tuple[bytes, str]], encoding: str = "utf-8") -> None:
    """Append events written outside the server: (content bytes, tags text), each hashed
    over SQLite's own rendering in `encoding`, linked, and the witness moved to the head."""
    conn = connect_both(db)
    try:
        head_id, prev = 0, GENESIS
        row = conn.execute("SELECT id, hash FROM memory_events ORDER BY id DESC LIMIT 1").fetchone()
        if row is not None:
            head_id, prev = int(row[0]), str(row[1])
        for content, tags in events:
            event_id = head_id + 1
            text = (
                f'[{event_id},"{TS}","s","note","'.encode()
                + content
                + f'",{tags},"{prev}"]'.encode()
            )
            digest = hashlib.sha256(
                text.decode("utf-8", "surrogateescape").encode(encoding, "surrogateescape")
                if encoding != "utf-8"
                else text
            ).hexdigest()
            conn.execute(
                "INSERT INTO memory_events (id, ts, session, kind, content, tags, prev_hash, hash)"
                " VALUES (?, ?, 's', 'note', CAST(? AS TEXT), ?, ?, ?)",
                # bytes cast to text keep their bytes in a UTF-8 file (even invalid ones);
                # a UTF-16 file would read them as UTF-16, so it is given the text
                (
                    event_id,
                    TS,
                    content if encoding == "utf-8" else content.decode(),
                    tags,
                    prev,
                    digest,
                ),
            )
            prev = digest
            head_id = event_id
    finally:
        conn.close()
    witness_of(db).write(Witness(head_id, prev))


def status_of(service: Service, **options: Any) -> tuple[bool, int | None, str | None]:
    status = service.memory.chain.verify(**options)
    return status.ok, status.first_broken_id, status.reason


# -- forgeries the fast path must not accept ----------------------------------------------


def test_a_tags_text_of_null_hashed_as_sqlite_renders_it_is_broken(memory: Service) -> None:
    memory.append_event("one")
    forge(memory.settings.db, [(b"two", "null")])
    assert status_of(memory)[:2] == (False, 2)


def test_content_not_in_utf8_hashed_over_its_bytes_is_broken(memory: Service) -> None:
    memory.append_event("one")
    forge(memory.settings.db, [(b"caf\xe9", "[]")])
    ok, first, reason = status_of(memory)
    assert (ok, first) == (False, 2)
    assert (reason or "").startswith("content changed")


def relink(conn: apsw.Connection, event_id: int, prev_hash: str) -> None:
    """Point an event at another predecessor and recompute its own hash to match."""
    row = conn.execute(
        "SELECT ts, session, kind, content, tags FROM memory_events WHERE id = ?", (event_id,)
    ).fetchone()
    ts, session, kind, content, tags = row
    digest = event_hash(event_id, ts, session, kind, content, json.loads(tags), prev_hash)
    conn.execute(
        "UPDATE memory_events SET prev_hash = ?, hash = ? WHERE id = ?",
        (prev_hash, digest, event_id),
    )


def test_a_relinked_event_with_its_hash_recomputed_is_a_broken_link(
    memory: Service, db_path: Path
) -> None:
    append_many(memory, 3)
    with tampered(db_path) as conn:
        relink(conn, 2, "a" * 64)
    assert status_of(memory) == (
        False,
        2,
        "link broken: prev_hash does not match the previous event's hash",
    )


def test_a_utf16_chain_hashed_over_its_utf16_bytes_is_broken(tmp_path: Path) -> None:
    db = tmp_path / "utf16.db"
    conn = connect_both(db)
    conn.execute("PRAGMA encoding = 'UTF-16le'")
    conn.execute("CREATE TABLE warmup (x)")
    conn.close()
    service = Service.open(Settings(db=db, adopt_db=True), session="s-utf16")
    try:
        forge(db, [(b"one", "[]")], encoding="utf-16-le")
        assert status_of(service)[:2] == (False, 1)
    finally:
        service.close()


# -- the anchor of an incremental verification ----------------------------------------------


def test_an_anchor_at_the_first_event_has_no_predecessor_to_check(memory: Service) -> None:
    memory.append_event("one")
    assert memory.memory.chain.verify().ok
    memory.append_event("two")
    status = memory.memory.chain.verify(incremental=True)
    assert (status.ok, status.events, status.checked) == (True, 2, 1)


def test_an_anchor_whose_predecessor_is_gone_names_it(memory: Service, db_path: Path) -> None:
    append_many(memory, 3)
    assert memory.memory.chain.verify().ok
    with tampered(db_path) as conn:
        conn.execute("DELETE FROM memory_events WHERE id = 2")
    assert status_of(memory, incremental=True) == (False, 2, "event missing: expected id 2")


def test_an_anchor_relinked_and_rehashed_is_a_broken_link_first(
    memory: Service, db_path: Path
) -> None:
    append_many(memory, 2)
    assert memory.memory.chain.verify().ok
    with tampered(db_path) as conn:
        relink(conn, 2, "a" * 64)
    assert status_of(memory, incremental=True) == (
        False,
        2,
        "link broken: prev_hash does not match the previous event's hash",
    )


def test_an_anchor_rewritten_whose_predecessor_is_gone_is_named_itself(
    memory: Service, db_path: Path
) -> None:
    append_many(memory, 3)
    assert memory.memory.chain.verify().ok
    with tampered(db_path) as conn:
        conn.execute("UPDATE memory_events SET content = 'rewritten' WHERE id = 3")
        conn.execute("DELETE FROM memory_events WHERE id = 2")
    ok, first, reason = status_of(memory, incremental=True)
    assert (ok, first) == (False, 3)
    assert (reason or "").startswith("content changed")


# -- progress -------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["fast", "exact"])
def test_progress_comes_every_progress_step_not_every_batch(
    memory: Service, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    append_many(memory, 8)
    monkeypatch.setattr(verification, "_FETCH_BATCH", 3)
    monkeypatch.setattr(verification, "_PROGRESS_EVERY", 6)
    if path == "exact":
        monkeypatch.setattr(verification, "_fast_batch", lambda *_: None)
    seen: list[tuple[int, int]] = []
    assert memory.memory.chain.verify(progress=lambda done, total: seen.append((done, total))).ok
    assert seen == [(0, 8), (6, 8), (8, 8)]


def test_progress_stops_at_a_broken_event_without_a_last_report(
    memory: Service, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    append_many(memory, 8)
    with tampered(db_path) as conn:
        conn.execute("UPDATE memory_events SET content = 'rewritten' WHERE id = 5")
    monkeypatch.setattr(verification, "_FETCH_BATCH", 3)
    monkeypatch.setattr(verification, "_PROGRESS_EVERY", 3)
    seen: list[tuple[int, int]] = []
    status = memory.memory.chain.verify(progress=lambda done, total: seen.append((done, total)))
    assert (status.ok, status.first_broken_id) == (False, 5)
    assert seen == [(0, 8), (3, 8)]


def test_progress_is_reported_every_4096_events(memory: Service, db_path: Path) -> None:
    forge(db_path, [(b"e", "[]")] * 8193)
    seen: list[int] = []
    assert memory.memory.chain.verify(progress=lambda done, _: seen.append(done)).ok
    assert seen == [0, 4096, 8192, 8193]


# -- while the walk runs --------------------------------------------------------------------


def test_a_witness_spoiled_during_the_walk_is_a_mismatch(memory: Service, db_path: Path) -> None:
    append_many(memory, 2)

    def spoil(done: int, total: int) -> None:
        witness_of(db_path).path.write_text("not json", encoding="utf-8")

    ok, first, reason = status_of(memory, progress=spoil)
    assert (ok, first) == (False, None)
    assert (reason or "").startswith("witness mismatch: ")


def test_a_broken_event_committed_during_the_walk_is_caught(memory: Service, db_path: Path) -> None:
    append_many(memory, 2)
    added: list[int] = []

    def add_broken(done: int, total: int) -> None:
        if not added:
            added.append(3)
            with tampered(db_path) as conn:
                conn.execute(
                    "INSERT INTO memory_events (id, ts, session, kind, content, tags, prev_hash, "
                    "hash) SELECT 3, ts, session, kind, 'late', tags, hash, hash "
                    "FROM memory_events WHERE id = 2"
                )

    ok, first, _ = status_of(memory, progress=add_broken)
    assert (ok, first) == (False, 3)


def test_a_failing_judgement_is_raised_and_leaves_no_transaction(
    memory: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    append_many(memory, 2)

    def fail(*_: object) -> None:
        raise Boom

    monkeypatch.setattr(verification, "check_witness", fail)
    with pytest.raises(Boom):
        memory.memory.chain.verify()
    monkeypatch.undo()
    memory.append_event("still writable")
    assert memory.memory.chain.verify().ok


def test_a_read_only_database_is_judged_without_the_write_lock(
    memory: Service, db_path: Path
) -> None:
    append_many(memory, 2)
    reader = Service.open(Settings(db=db_path), read_only=True)
    try:
        status = reader.memory.chain.verify()
    finally:
        reader.close()
    assert (status.ok, status.events) == (True, 2)
    assert json.loads(witness_of(db_path).path.read_text())["verified_id"] == 0
    assert len(rows(db_path)) == 2


# -- the judgement while another connection holds the write lock ----------------------------


@contextmanager
def lock_held(db: Path) -> Iterator[apsw.Connection]:
    other = connect_both(db)
    other.execute("BEGIN IMMEDIATE")
    try:
        yield other
    finally:
        other.execute("ROLLBACK")
        other.close()


def test_without_the_lock_a_missing_witness_is_reported(memory: Service, db_path: Path) -> None:
    append_many(memory, 2)
    witness_of(db_path).path.unlink()
    with lock_held(db_path):
        ok, first, reason = status_of(memory)
    assert (ok, first) == (False, None)
    assert (reason or "").startswith("witness mismatch: the witness file is missing")


def test_without_the_lock_a_witness_spoiled_during_the_walk_is_a_mismatch(
    memory: Service, db_path: Path
) -> None:
    append_many(memory, 2)

    def spoil(done: int, total: int) -> None:
        witness_of(db_path).path.write_text("not json", encoding="utf-8")

    with lock_held(db_path):
        ok, first, reason = status_of(memory, progress=spoil)
    assert (ok, first) == (False, None)
    assert (reason or "").startswith("witness mismatch: ")


def test_without_the_lock_a_broken_event_committed_during_the_walk_is_caught(
    memory: Service, db_path: Path
) -> None:
    append_many(memory, 2)
    held: list[apsw.Connection] = []

    def add_broken_then_lock(done: int, total: int) -> None:
        if held:
            return
        with tampered(db_path) as conn:
            conn.execute(
                "INSERT INTO memory_events (id, ts, session, kind, content, tags, prev_hash, "
                "hash) SELECT 3, ts, session, kind, 'late', tags, hash, hash "
                "FROM memory_events WHERE id = 2"
            )
        other = connect_both(db_path)
        other.execute("BEGIN IMMEDIATE")
        held.append(other)

    try:
        ok, first, _ = status_of(memory, progress=add_broken_then_lock)
    finally:
        for other in held:
            other.execute("ROLLBACK")
            other.close()
    assert (ok, first) == (False, 3)


def test_without_the_lock_events_after_the_witnessed_head_are_reported(
    memory: Service, db_path: Path
) -> None:
    """A witness whose verified event lies past the chain, and whose head is behind it:
    the events after its head are reported, as under the lock."""
    append_many(memory, 2)
    first_hash = rows(db_path)[0]["hash"]
    witness_of(db_path).write(Witness(1, first_hash, 5, "e" * 64))
    with lock_held(db_path):
        assert status_of(memory) == (
            False,
            2,
            "witness mismatch: events 2 to 2 follow the witnessed head (written outside the "
            "server)",
        )
