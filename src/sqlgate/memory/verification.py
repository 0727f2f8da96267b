"""Verifying the event chain: the walk over the events, and the check against the witness.

`verify_chain` is the body of `EventChain.verify` (see chain.py for what each verification
catches): a streaming walk that recomputes every hash and link on a snapshot reader, in
bounded batches, then the catch-up and the witness check under the write lock. The event,
anchor and witness checks each return the first problem they find as a `ChainStatus`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import apsw

from sqlgate.engine.database import Database
from sqlgate.errors import SqlgateError
from sqlgate.memory.chain import _EVENT_COLUMNS, GENESIS, ChainStatus, _head, event_hash
from sqlgate.memory.witness import Witness, WitnessFile

__all__ = ["verify_chain"]

_FETCH_BATCH = 2048
_PROGRESS_EVERY = 4096  # events between two calls of verify's progress callback


def verify_chain(
    db: Database,
    witness_file: WitnessFile,
    *,
    incremental: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> ChainStatus:
    """`EventChain.verify`: the walk on a snapshot, then the judgement under the write lock."""
    try:
        witness = witness_file.read()
    except SqlgateError as exc:
        return _broken(None, f"witness mismatch: {exc}")
    with db.snapshot_reader() as reader:
        walk = _Walk.start(reader, witness, incremental)
        if walk.status is None:
            walk.run(reader, _reporter(reader, progress))
    if walk.status is not None:
        return walk.status
    conn = db.server
    with db.server_lock:
        conn.execute("BEGIN IMMEDIATE")
        try:
            status = _judge(conn, witness_file, walk)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
    return status


def _judge(conn: apsw.Connection, witness_file: WitnessFile, walk: _Walk) -> ChainStatus:
    """Inside the write transaction: finish the walk and hold it against the witness."""
    try:
        witness = witness_file.read()
    except SqlgateError as exc:
        return _broken(None, f"witness mismatch: {exc}")
    walk.run(conn)  # events committed since the snapshot, if any
    if walk.status is not None:
        return walk.status
    problem = _check_witness(conn, witness, walk.count)
    if problem is not None:
        return problem
    status = walk.result()
    if witness is not None and status.head_id is not None:
        _record_verified(witness_file, witness, status.head_id, status.head_hash or "")
    return status


def _record_verified(
    witness_file: WitnessFile, current: Witness, verified_id: int, verified_hash: str
) -> None:
    """Called inside the write transaction, so witness writes stay ordered."""
    if current.verified_id == verified_id and current.verified_hash == verified_hash:
        return
    witness_file.write(Witness(current.head_id, current.head_hash, verified_id, verified_hash))


@dataclass
class _Walk:
    """A verification in progress: where it stands, and the verdict once one is reached."""

    count: int  # the id of the last event checked (ids run 1..count without gaps)
    prev_hash: str
    checked: int = 0
    status: ChainStatus | None = None

    @classmethod
    def start(cls, conn: apsw.Connection, witness: Witness | None, incremental: bool) -> _Walk:
        if not (incremental and witness is not None and witness.verified_id > 0):
            return cls(0, GENESIS)
        walk = cls(witness.verified_id, witness.verified_hash)
        walk.status = _check_anchor(conn, witness.verified_id, witness.verified_hash)
        return walk

    def run(self, conn: apsw.Connection, report: Callable[[int], None] | None = None) -> None:
        """Check every event after `count`, stopping at the first broken one."""
        count, prev_hash, checked = self.count, self.prev_hash, self.checked
        try:
            for row in _rows(conn, count):
                if report is not None and checked % _PROGRESS_EVERY == 0:
                    report(count)
                row_id = row[0]
                if row_id != count + 1:
                    self.status = _broken(
                        count + 1, f"event missing: expected id {count + 1}, found {row_id}"
                    )
                    return
                problem = _check_event(row, prev_hash)
                if problem is not None:
                    self.status = _broken(row_id, problem)
                    return
                count, prev_hash = row_id, row[7]
                checked += 1
        finally:
            self.count, self.prev_hash, self.checked = count, prev_hash, checked
        if report is not None and self.status is None:
            report(count)

    def result(self) -> ChainStatus:
        if self.count == 0:
            return ChainStatus(True, 0, None, None, checked=self.checked)
        return ChainStatus(True, self.count, self.count, self.prev_hash, checked=self.checked)


def _reporter(
    conn: apsw.Connection, progress: Callable[[int, int], None] | None
) -> Callable[[int], None] | None:
    """`progress` bound to the head id of the snapshot `conn` reads."""
    if progress is None:
        return None
    total, _ = _head(conn)
    return lambda done: progress(done, total)


def _stored_tags(raw: object) -> list[str] | None:
    """The stored tags, or None when the column does not hold a JSON list of strings."""
    if raw == "[]":
        return []
    try:
        tags = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        return None
    if not isinstance(tags, list) or not all(isinstance(tag, str) for tag in tags):
        return None
    return tags


def _rows(conn: apsw.Connection, after_id: int) -> Iterator[tuple[Any, ...]]:
    """Events with id > after_id in id order, fetched in bounded batches (constant memory)."""
    last = after_id
    while True:
        batch: list[tuple[Any, ...]] = conn.execute(
            f"SELECT {_EVENT_COLUMNS} FROM memory_events WHERE id > ? ORDER BY id LIMIT ?",
            (last, _FETCH_BATCH),
        ).fetchall()
        if not batch:
            return
        yield from batch
        last = int(batch[-1][0])


def _broken(event_id: int | None, reason: str) -> ChainStatus:
    return ChainStatus(False, first_broken_id=event_id, reason=reason)


def _check_event(row: tuple[Any, ...], prev_hash: str | None) -> str | None:
    """What is wrong with one stored event, or None. `prev_hash` None skips the link check."""
    row_id, ts, session, kind, content, raw_tags, stored_prev, stored_hash = row
    if prev_hash is not None and stored_prev != prev_hash:
        return "link broken: prev_hash does not match the previous event's hash"
    tags = _stored_tags(raw_tags)
    if (
        tags is None
        or type(row_id) is not int
        or not all(isinstance(v, str) for v in (ts, session, kind, content, stored_prev))
    ):
        return "content changed: a field no longer has its stored form"
    if event_hash(row_id, ts, session, kind, content, tags, stored_prev) != stored_hash:
        return "content changed: the stored hash does not match the event"
    return None


def _check_anchor(conn: apsw.Connection, anchor_id: int, anchor_hash: str) -> ChainStatus | None:
    """The last verified event: present, whole, linked to its stored predecessor, witnessed."""
    row = conn.execute(
        f"SELECT {_EVENT_COLUMNS} FROM memory_events WHERE id = ?", (anchor_id,)
    ).fetchone()
    if row is None:
        last, _ = _head(conn)
        return _broken(
            min(anchor_id, last + 1),
            f"event missing: the last verified event {anchor_id} is gone (the chain ends at "
            f"{last})",
        )
    problem = _check_event(row, None)
    if problem is None and anchor_id > 1:
        before = conn.execute(
            "SELECT hash FROM memory_events WHERE id = ?", (anchor_id - 1,)
        ).fetchone()
        if before is None:
            return _broken(anchor_id - 1, f"event missing: expected id {anchor_id - 1}")
        if row[6] != before[0]:
            problem = "link broken: prev_hash does not match the previous event's hash"
    if problem is None and row[7] != anchor_hash:
        problem = "witness mismatch: the last verified event was rewritten (hashes recomputed)"
    return None if problem is None else _broken(anchor_id, problem)


def _check_witness(
    conn: apsw.Connection, witness: Witness | None, count: int
) -> ChainStatus | None:
    """The earliest way in which the chain 1..count disagrees with its witness, if any."""
    if witness is None:
        if count == 0:
            return None  # a new database
        return _broken(
            None,
            f"witness mismatch: the witness file is missing but the chain has {count} events; "
            "it cannot vouch that they were not rewritten (the next append starts a new one)",
        )
    problems: list[tuple[int, str]] = []
    if witness.head_id > count:
        problems.append(
            (
                count + 1,
                f"witness mismatch: the witness names event {witness.head_id} as the head, but "
                f"the chain ends at {count} (events were removed, or a crash interrupted an "
                "append)",
            )
        )
    elif witness.head_id < count:
        problems.append(
            (
                witness.head_id + 1,
                f"witness mismatch: events {witness.head_id + 1} to {count} follow the "
                "witnessed head (written outside the server)",
            )
        )
    for event_id, expected, what in (
        (witness.head_id, witness.head_hash, "head"),
        (witness.verified_id, witness.verified_hash, "last verified"),
    ):
        if 0 < event_id <= count and _stored_hash(conn, event_id) != expected:
            problems.append(
                (
                    event_id,
                    f"witness mismatch: the witnessed {what} event {event_id} was rewritten "
                    "(hashes recomputed)",
                )
            )
    if witness.verified_id > count:
        problems.append(
            (count + 1, f"witness mismatch: the last verified event {witness.verified_id} is gone")
        )
    if not problems:
        return None
    event_id, reason = min(problems, key=lambda problem: problem[0])
    return _broken(event_id, reason)


def _stored_hash(conn: apsw.Connection, event_id: int) -> object:
    row = conn.execute("SELECT hash FROM memory_events WHERE id = ?", (event_id,)).fetchone()
    return None if row is None else row[0]
