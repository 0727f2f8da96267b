"""Verifying the event chain: the walk over the events, and the check against the witness.

`verify_chain` is the body of `EventChain.verify` (see chain.py for what each verification
catches): a streaming walk that recomputes every hash and link on a snapshot reader, in
bounded batches, then the catch-up and the witness check under the write lock. The event,
anchor and witness checks each return the first problem they find as a `ChainStatus`.

The walk has two paths over each batch of events, with one verdict:

- the fast path (`_fast_batch`) lets SQLite build every event's canonical text
  (`json_quote` escapes exactly like `json.dumps(..., ensure_ascii=False)`: `"` and `\\` and
  the characters below U+0020, with the same short forms and lower-case `\\u00XX`), and
  Python only hashes it and compares the batch's hashes and links as one string each. It
  only ever *accepts* a batch, and only when every event is in the form for which its text
  is provably the contract's bytes: all fields text (ids integers), hashes 64 characters,
  ids contiguous and aggregated in id order, the whole text valid UTF-8, every `tags` text
  exactly the canonical JSON of the list it holds (checked in Python, cached per text).
- anything else (a mismatch, a field of another type, tags with escapes, a text that is
  not UTF-8, a database not in UTF-8) sends the batch to the exact path (`_check_event`
  per event), which names the first broken event and the reason. So the fast path
  changes only the speed, never a verdict.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import apsw

from sqlgate.engine.connect import lock_if_free
from sqlgate.engine.database import Database
from sqlgate.engine.records import history_lost
from sqlgate.errors import SqlgateError
from sqlgate.memory.contract import (
    EVENT_COLUMNS,
    GENESIS,
    ChainStatus,
    event_hash,
    head_of,
    stored_tags,
)
from sqlgate.memory.witness import Witness, WitnessFile
from sqlgate.memory.witness_check import broken as _broken
from sqlgate.memory.witness_check import check_visible, check_witness, record_verified

__all__ = ["verify_chain"]

_FETCH_BATCH = 2048
_PROGRESS_EVERY = 4096  # events between two calls of verify's progress callback
_KNOWN_TAGS_LIMIT = 4096  # distinct canonical tags texts a walk remembers

# One batch of events after `?`, at most `?` of them, folded into one row: how many, the
# id range and order, whether every event has the form the fast path can judge, the
# canonical texts one per line (JSON text never holds a raw line feed), the tags texts,
# and the stored hashes and prev_hashes, concatenated. prev_hash is written unescaped:
# the batch is only accepted when every prev_hash equals a computed (hex) hash.
_FAST_BATCH_SQL = """
SELECT count(*), min(id), max(id), min(ok), group_concat(id, ','),
       CAST(group_concat(canonical, char(10)) AS BLOB), group_concat(tags, char(10)),
       group_concat(hash, ''), group_concat(prev_hash, '')
FROM (
    SELECT id, tags, hash, prev_hash,
           typeof(id) = 'integer' AND typeof(ts) = 'text' AND typeof(session) = 'text'
           AND typeof(kind) = 'text' AND typeof(content) = 'text' AND typeof(tags) = 'text'
           AND typeof(prev_hash) = 'text' AND typeof(hash) = 'text'
           AND length(prev_hash) = 64 AND length(hash) = 64 AS ok,
           concat('[', id, ',', json_quote(ts), ',', json_quote(session), ',',
                  json_quote(kind), ',', json_quote(content), ',', tags, ',"', prev_hash,
                  '"]') AS canonical
    FROM memory_events WHERE id > ? ORDER BY id LIMIT ?
)
"""
_Fetched = tuple[Any, ...]  # one row of _FAST_BATCH_SQL
_sha256 = hashlib.sha256
_digest = type(hashlib.sha256()).digest
_UNREADABLE = "content changed: a field no longer has its stored form"


def verify_chain(
    db: Database,
    witness_file: WitnessFile,
    *,
    incremental: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> ChainStatus:
    """`EventChain.verify` (`_verified`), with the history that is gone named when the
    records know of one (a deleted records folder: never "no events yet")."""
    status = _verified(db, witness_file, incremental=incremental, progress=progress)
    if not status.ok:
        return status
    with db.reading_records() as conn:
        lost = history_lost(conn)
    return status if lost is None else replace(status, lost=lost)


def _verified(
    db: Database,
    witness_file: WitnessFile,
    *,
    incremental: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> ChainStatus:
    """The walk on a snapshot, then the judgement against the witness.

    The judgement runs under the write lock when it is free at that moment (then the
    verified position is recorded in the witness). When another connection holds the lock,
    it never waits: it judges on a newer snapshot and records nothing (`_judge_unlocked`).
    """
    try:
        witness = witness_file.read()
    except SqlgateError as exc:
        return _broken(None, f"witness mismatch: {exc}")
    # the witness is read before the snapshot: its verified position is then committed in it
    with db.snapshot_reader() as reader:
        walk = _Walk.start(reader, witness, incremental)
        if walk.status is None:
            walk.run(reader, _reporter(reader, progress))
    if walk.status is not None:
        return walk.status
    conn = db.server
    # the server connection may be busy in this process too (an append waiting for the
    # lock): then the lock is not free, and the judgement does not wait for it either
    if not db.read_only and db.server_lock.acquire(blocking=False):
        try:
            if lock_if_free(conn):
                try:
                    status = _judge(conn, witness_file, walk)
                    conn.execute("COMMIT")
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
                return status
        finally:
            db.server_lock.release()
    with db.snapshot_reader() as reader:
        return _judge_unlocked(reader, witness_file, walk)


def _judge(conn: apsw.Connection, witness_file: WitnessFile, walk: _Walk) -> ChainStatus:
    """Inside the write transaction: finish the walk and hold it against the witness."""
    try:
        witness = witness_file.read()
    except SqlgateError as exc:
        return _broken(None, f"witness mismatch: {exc}")
    walk.run(conn)  # events committed since the snapshot, if any
    if walk.status is not None:
        return walk.status
    problem = check_witness(conn, witness, walk.count)
    if problem is not None:
        return problem
    status = walk.result()
    if witness is not None and status.head_id is not None:
        record_verified(witness_file, witness, status.head_id, status.head_hash or "")
    return status


def _judge_unlocked(reader: apsw.Connection, witness_file: WitnessFile, walk: _Walk) -> ChainStatus:
    """The judgement while another connection holds the write lock, on a snapshot taken
    after the walk's, with the witness read after that snapshot began.

    Every append writes the witness before it commits, and honest writers only ever move
    the witness forward, so the witness names at least every event this snapshot holds.
    Whatever the snapshot can see is judged exactly as under the lock; a witness naming
    events it cannot see yet (an append in flight, or committed since) cannot be told from
    events removed, so the answer says the head is unconfirmed instead of failing or
    waiting. Nothing is recorded: the witness is only written under the write lock.
    """
    try:
        witness = witness_file.read()
    except SqlgateError as exc:
        return _broken(None, f"witness mismatch: {exc}")
    walk.run(reader)
    if walk.status is not None:
        return walk.status
    count = walk.count
    if witness is None or max(witness.head_id, witness.verified_id) <= count:
        return check_witness(reader, witness, count) or walk.result()
    rewritten = check_visible(reader, witness, count)
    if rewritten is not None:
        return rewritten
    if witness.head_id < count:
        return check_witness(reader, witness, count) or walk.result()
    unseen = max(witness.head_id, witness.verified_id)
    return replace(
        walk.result(),
        unconfirmed=(
            f"the witness names event {unseen}, not committed when checked (another process "
            f"held the write lock); events 1 to {count} are verified. Verify again to confirm "
            "the rest"
        ),
    )


@dataclass
class _Walk:
    """A verification in progress: where it stands, and the verdict once one is reached."""

    count: int  # the id of the last event checked (ids run 1..count without gaps)
    prev_hash: str
    checked: int = 0
    status: ChainStatus | None = None
    known_tags: set[str] = field(default_factory=lambda: {"[]"})

    @classmethod
    def start(cls, conn: apsw.Connection, witness: Witness | None, incremental: bool) -> _Walk:
        if not (incremental and witness is not None and witness.verified_id > 0):
            return cls(0, GENESIS)
        walk = cls(witness.verified_id, witness.verified_hash)
        walk.status = _check_anchor(conn, witness.verified_id, witness.verified_hash)
        return walk

    def run(self, conn: apsw.Connection, report: Callable[[int], None] | None = None) -> None:
        """Check every event after `count`, stopping at the first broken one."""
        step = max(1, min(_FETCH_BATCH, _PROGRESS_EVERY))
        fast = _is_utf8(conn)
        while self.status is None:
            fetched = _fetch_batch(conn, self.count, step) if fast else None
            batch = None if fetched is None else _fast_batch(self, fetched)
            if batch is None:  # the exact path judges this batch
                rows = _rows(conn, self.count, step)
                if not rows:
                    break
                if report is not None and self.checked % _PROGRESS_EVERY == 0:
                    report(self.count)
                self._check_rows(rows)
                if len(rows) < step:
                    break
                continue
            size, last_id, last_hash = batch
            if size == 0:
                break
            if report is not None and self.checked % _PROGRESS_EVERY == 0:
                report(self.count)
            self.count, self.prev_hash, self.checked = last_id, last_hash, self.checked + size
            if size < step:
                break
        if report is not None and self.status is None:
            report(self.count)

    def _check_rows(self, rows: list[tuple[Any, ...]]) -> None:
        """The exact path: each event against the contract, in id order."""
        count, prev_hash, checked = self.count, self.prev_hash, self.checked
        try:
            for row in rows:
                row_id = row[0]
                if row_id != count + 1:
                    self.status = _broken(
                        count + 1, f"event missing: expected id {count + 1}, found {row_id}"
                    )
                    return
                problem = _UNREADABLE if len(row) == 1 else _check_event(row, prev_hash)
                if problem is not None:
                    self.status = _broken(row_id, problem)
                    return
                count, prev_hash = row_id, row[7]
                checked += 1
        finally:
            self.count, self.prev_hash, self.checked = count, prev_hash, checked

    def tags_are_canonical(self, texts: list[str]) -> bool:
        """Whether every tags text is exactly the contract's JSON of the list it holds."""
        known = self.known_tags
        if known.issuperset(texts):
            return True
        for text in set(texts).difference(known):
            tags = stored_tags(text)
            if tags is None or json.dumps(tags, ensure_ascii=False, separators=(",", ":")) != text:
                return False
            if len(known) < _KNOWN_TAGS_LIMIT:
                known.add(text)
        return True

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
    total, _ = head_of(conn)
    return lambda done: progress(done, total)


def _is_utf8(conn: apsw.Connection) -> bool:
    """The fast path hashes SQLite's text bytes as they are: only right for UTF-8 files."""
    row = conn.execute("PRAGMA encoding").fetchone()
    return row is not None and row[0] == "UTF-8"


def _fetch_batch(conn: apsw.Connection, after: int, limit: int) -> _Fetched | None:
    """SQLite's half of the fast path: the batch after `after` folded into one row, or None
    when SQLite cannot build it (json_quote of a BLOB field, a tags text not in UTF-8)."""
    try:
        row: _Fetched | None = conn.execute(_FAST_BATCH_SQL, (after, limit)).fetchone()
    except (apsw.SQLError, UnicodeDecodeError):
        return None
    return row


def _fast_batch(walk: _Walk, row: _Fetched) -> tuple[int, int, str] | None:
    """The batch after `walk.count` when it is provably whole: (events, last id, last
    hash); (0, ...) when there is no event left; None when the exact path must judge it."""
    size, low, high, ok, ids, texts, tags, hashes, prev_hashes = row
    if size == 0:
        return 0, walk.count, walk.prev_hash
    if (
        not ok
        or low != walk.count + 1
        or high != walk.count + size
        or ids != ",".join(map(str, range(low, high + 1)))
        or not isinstance(texts, bytes)
    ):
        return None
    if not texts.isascii():
        try:
            texts.decode("utf-8")  # apsw would refuse such a field on the exact path
        except UnicodeDecodeError:
            return None
    canonical = texts.split(b"\n")
    tag_texts = tags.split("\n")
    if len(canonical) != size or len(tag_texts) != size or not walk.tags_are_canonical(tag_texts):
        return None
    computed = b"".join(map(_digest, map(_sha256, canonical))).hex()
    if computed != hashes or prev_hashes != walk.prev_hash + computed[:-64]:
        return None
    return size, high, computed[-64:]


def _rows(conn: apsw.Connection, after_id: int, limit: int) -> list[tuple[Any, ...]]:
    """Up to `limit` events with id > after_id, in id order. An event with a text field
    that is not UTF-8 comes back as `(id,)` alone."""
    sql = f"SELECT {EVENT_COLUMNS} FROM memory_events WHERE id > ? ORDER BY id LIMIT ?"
    try:
        rows: list[tuple[Any, ...]] = conn.execute(sql, (after_id, limit)).fetchall()
    except UnicodeDecodeError:
        rows = []
        for (event_id,) in conn.execute(
            "SELECT id FROM memory_events WHERE id > ? ORDER BY id LIMIT ?", (after_id, limit)
        ).fetchall():
            try:
                rows.extend(
                    conn.execute(
                        f"SELECT {EVENT_COLUMNS} FROM memory_events WHERE id = ?", (event_id,)
                    ).fetchall()
                )
            except UnicodeDecodeError:
                rows.append((event_id,))
    return rows


def _check_event(row: tuple[Any, ...], prev_hash: str | None) -> str | None:
    """What is wrong with one stored event, or None. `prev_hash` None skips the link check."""
    row_id, ts, session, kind, content, raw_tags, stored_prev, stored_hash = row
    if prev_hash is not None and stored_prev != prev_hash:
        return "link broken: prev_hash does not match the previous event's hash"
    tags = stored_tags(raw_tags)
    if (
        tags is None
        or type(row_id) is not int
        or not all(isinstance(v, str) for v in (ts, session, kind, content, stored_prev))
    ):
        return _UNREADABLE
    try:
        digest = event_hash(row_id, ts, session, kind, content, tags, stored_prev)
    except UnicodeEncodeError:  # a lone surrogate, from a \u escape in the tags text
        return _UNREADABLE
    if digest != stored_hash:
        return "content changed: the stored hash does not match the event"
    return None


def _check_anchor(conn: apsw.Connection, anchor_id: int, anchor_hash: str) -> ChainStatus | None:
    """The last verified event: present, whole, linked to its stored predecessor, witnessed."""
    row = conn.execute(
        f"SELECT {EVENT_COLUMNS} FROM memory_events WHERE id = ?", (anchor_id,)
    ).fetchone()
    if row is None:
        last, _ = head_of(conn)
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
