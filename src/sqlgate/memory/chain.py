"""The event chain: append under the hash contract, and verify, streaming.

Hash contract (docs/hash-contract.md): `hash = sha256_hex(canonical)`, where canonical is
the UTF-8 of `json.dumps([id, ts, session, kind, content, tags, prev_hash],
ensure_ascii=False, separators=(",", ":"))`; `tags` is the sorted, unique list of strings
(stored as JSON array text); the first event's prev_hash is 64 zeros.

An append is one IMMEDIATE transaction on the server connection: the event, its full-text
row and the witness update land together or not at all, and appends from any number of
processes queue on SQLite's write lock, so the chain never forks.

What each verification catches:

- `verify()` (verify_chain) recomputes every hash and link, then checks the witness: the
  witnessed head and last verified event must still be there, unchanged, and nothing may
  follow the witnessed head. Edits, deletions, reordering and insertions show up as the
  first event whose hash or link fails; a rewrite that recomputed every hash after it
  shows up only as a witness mismatch (at the earliest witnessed event it changed).
- `verify(incremental=True)` (resume context, stats) checks the last verified event (its
  own hash, its link to the stored hash before it, and the witnessed hash) and then only
  the events after it, so its cost follows the events added since. A rewrite before that
  position which recomputed the hashes is still caught (the anchor's hash or link no
  longer matches); an edit before it that left the stored hashes alone is not: only a
  full `verify()` recomputes those.
- A missing or unreadable witness with a non-empty chain is reported (see witness.py).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from json.encoder import encode_basestring
from pathlib import Path
from typing import Any

import apsw

from sqlgate.engine.audit import utc_timestamp
from sqlgate.engine.database import Database
from sqlgate.errors import SqlgateError
from sqlgate.memory.witness import Witness, WitnessFile

__all__ = [
    "GENESIS",
    "Appended",
    "ChainStatus",
    "ChainWriter",
    "EventChain",
    "canonical",
    "event_hash",
    "witness_restored_chain",
]

GENESIS = "0" * 64
_EVENT_COLUMNS = "id, ts, session, kind, content, tags, prev_hash, hash"
_FETCH_BATCH = 2048
_PROGRESS_EVERY = 4096  # events between two calls of verify's progress callback
# the JSON string encoder json.dumps(..., ensure_ascii=False) itself uses (C when available)
_string = encode_basestring
_CANONICAL = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def canonical(
    id: int, ts: str, session: str, kind: str, content: str, tags: list[str], prev_hash: str
) -> bytes:
    """The exact bytes an event's hash covers.

    Byte for byte `json.dumps([...], ensure_ascii=False, separators=(",", ":"))`, built
    from the same string encoder without the per-call encoder setup (verify's hot path).
    """
    fields = (ts, session, kind, content, prev_hash, *tags)
    if type(id) is not int or not all(type(field) is str for field in fields):
        return _CANONICAL.encode([id, ts, session, kind, content, tags, prev_hash]).encode()
    return (
        f"[{id},{_string(ts)},{_string(session)},{_string(kind)},{_string(content)},"
        f"[{','.join(map(_string, tags))}],{_string(prev_hash)}]"
    ).encode()


def event_hash(
    id: int, ts: str, session: str, kind: str, content: str, tags: list[str], prev_hash: str
) -> str:
    return hashlib.sha256(canonical(id, ts, session, kind, content, tags, prev_hash)).hexdigest()


@dataclass(frozen=True)
class Appended:
    id: int
    hash: str
    ts: str


@dataclass(frozen=True)
class ChainStatus:
    """The answer of a verification, as the agent sees it (`as_dict`)."""

    ok: bool
    events: int = 0
    head_id: int | None = None
    head_hash: str | None = None
    first_broken_id: int | None = None
    reason: str | None = None
    checked: int = 0  # events whose hashes were recomputed by this verification

    def as_dict(self) -> dict[str, Any]:
        if self.ok:
            return {
                "ok": True,
                "events": self.events,
                "head_id": self.head_id,
                "head_hash": self.head_hash,
            }
        return {"ok": False, "first_broken_id": self.first_broken_id, "reason": self.reason}

    def as_json(self) -> str:
        return json.dumps(self.as_dict(), separators=(", ", ": "))


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


class EventChain:
    """Appends and verifies `memory_events` through the server's own connection."""

    def __init__(
        self,
        db: Database,
        witness: WitnessFile,
        session: str,
        wall_clock: Callable[[], float],
    ) -> None:
        self.db = db
        self.witness = witness
        self.session = session
        self.wall_clock = wall_clock

    # -- append -------------------------------------------------------------------------
    def append(self, kind: str, content: str, tags: Iterable[str]) -> Appended:
        """Append one event in its own transaction; returns its id, hash and timestamp."""
        with self.writing() as writer:
            return writer.append(kind, content, tags)

    @contextmanager
    def writing(self) -> Iterator[ChainWriter]:
        """One write transaction on the server connection, in which a caller may write its own
        server rows and append any number of events: all of it lands together, or nothing.

        The witness is replaced inside the transaction, after the rows are written, so it
        is written in the same order as the appends; if anything fails after that (the
        commit included), the previous witness file is put back before the write lock is
        given up, so no other server sees the witness of an event that never landed.
        """
        conn = self.db.server
        with self.db.server_lock:
            conn.execute("BEGIN IMMEDIATE")
            replaced = False
            previous_raw: bytes | None = None
            try:
                writer = ChainWriter(conn, self.session, self.wall_clock)
                yield writer
                if writer.first is not None and writer.last is not None:
                    previous_raw = self.witness.read_raw()
                    following = _next_witness(
                        self._read_witness(), writer.first, writer.first_prev, writer.last
                    )
                    self.witness.write(following)
                    replaced = True
                conn.execute("COMMIT")
            except BaseException:
                if replaced:
                    self.witness.restore(previous_raw)
                if conn.in_transaction:  # also when COMMIT itself failed and left it open
                    conn.execute("ROLLBACK")
                raise

    def _read_witness(self) -> Witness | None:
        try:
            return self.witness.read()
        except SqlgateError:
            return None

    # -- verify -------------------------------------------------------------------------
    def verify(
        self, *, incremental: bool = False, progress: Callable[[int, int], None] | None = None
    ) -> ChainStatus:
        """Recompute hashes and links; `incremental` starts at the witnessed verified event.

        Either records the new verified position in the witness when the chain is whole.
        `progress(checked_up_to_id, head_id)` is called every few thousand events of the walk
        over the snapshot, and once at its end.

        The walk reads a snapshot on its own connection, so tools are not held up. The
        witness is then judged under the write lock, where no append is in flight, after
        the walk has caught up with events committed since the snapshot.
        """
        try:
            witness = self.witness.read()
        except SqlgateError as exc:
            return _broken(None, f"witness mismatch: {exc}")
        with self.db.snapshot_reader() as reader:
            walk = _Walk.start(reader, witness, incremental)
            if walk.status is None:
                walk.run(reader, _reporter(reader, progress))
        if walk.status is not None:
            return walk.status
        conn = self.db.server
        with self.db.server_lock:
            conn.execute("BEGIN IMMEDIATE")
            try:
                status = self._judge(conn, walk)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        return status

    def _judge(self, conn: apsw.Connection, walk: _Walk) -> ChainStatus:
        """Inside the write transaction: finish the walk and hold it against the witness."""
        try:
            witness = self.witness.read()
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
            self._record_verified(witness, status.head_id, status.head_hash or "")
        return status

    def _record_verified(self, current: Witness, verified_id: int, verified_hash: str) -> None:
        """Called inside the write transaction, so witness writes stay ordered."""
        if current.verified_id == verified_id and current.verified_hash == verified_hash:
            return
        self.witness.write(Witness(current.head_id, current.head_hash, verified_id, verified_hash))


def _next_witness(previous: Witness | None, first: int, first_prev: str, last: Appended) -> Witness:
    """The witness after appending events `first`..`last.id` onto a head whose hash is
    `first_prev`.

    No (readable) witness: start one now (trust on first use). A witness whose head is not
    the event appended onto: the chain changed behind its back, so its head is kept as the
    verified position, where verification keeps reporting the mismatch.
    """
    if previous is None:
        return Witness(last.id, last.hash)
    matches = previous.head_id == first - 1 and (
        previous.head_id == 0 or previous.head_hash == first_prev
    )
    if matches:
        return Witness(last.id, last.hash, previous.verified_id, previous.verified_hash)
    return Witness(last.id, last.hash, previous.head_id, previous.head_hash)


class ChainWriter:
    """Appends events inside a transaction opened by `EventChain.writing`."""

    def __init__(self, conn: apsw.Connection, session: str, wall_clock: Callable[[], float]):
        self.conn = conn
        self.session = session
        self.wall_clock = wall_clock
        self.first: int | None = None  # the first event this transaction appends
        self.first_prev = GENESIS  # the hash it was appended onto
        self.last: Appended | None = None

    def append(self, kind: str, content: str, tags: Iterable[str]) -> Appended:
        ordered = sorted(set(tags))
        tags_text = json.dumps(ordered, ensure_ascii=False, separators=(",", ":"))
        if self.last is None:
            head_id, prev_hash = _head(self.conn)
        else:
            head_id, prev_hash = self.last.id, self.last.hash
        new_id = head_id + 1
        ts = utc_timestamp(self.wall_clock())
        digest = event_hash(new_id, ts, self.session, kind, content, ordered, prev_hash)
        self.conn.execute(
            f"INSERT INTO memory_events ({_EVENT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (new_id, ts, self.session, kind, content, tags_text, prev_hash, digest),
        )
        self.conn.execute(
            "INSERT INTO memory_events_fts (rowid, content, tags) VALUES (?, ?, ?)",
            (new_id, content, " ".join(ordered)),
        )
        if self.first is None:
            self.first, self.first_prev = new_id, prev_hash
        self.last = Appended(new_id, digest, ts)
        return self.last


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


def witness_restored_chain(db: Path, keep_previous_at: Path) -> Witness | None:
    """After a person restores a snapshot, the restored chain is the reference again.

    The old witness (which names events the restore removed) is kept at `keep_previous_at`,
    beside the copy of the pre-restore database, and the witness is rewritten for the
    restored head with no verified position, so the next verify_chain checks everything.
    Returns the new witness, or None when the restored database holds no events.
    """
    witness = WitnessFile.beside(db)
    previous = witness.read_raw()
    if previous is not None:
        keep_previous_at.write_bytes(previous)
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        has_events = conn.execute(
            "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'memory_events'"
        ).fetchone()
        head_id, head_hash = _head(conn) if has_events else (0, GENESIS)
    finally:
        conn.close()
    if head_id == 0:
        witness.restore(None)
        return None
    restored = Witness(head_id, head_hash, 0, "")
    witness.write(restored)
    return restored


def _head(conn: apsw.Connection) -> tuple[int, str]:
    row = conn.execute("SELECT id, hash FROM memory_events ORDER BY id DESC LIMIT 1").fetchone()
    return (0, GENESIS) if row is None else (int(row[0]), str(row[1]))


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
