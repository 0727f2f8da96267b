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

The checks themselves live in verification.py.
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
    "stored_tags",
    "witness_restored_chain",
]

GENESIS = "0" * 64
_EVENT_COLUMNS = "id, ts, session, kind, content, tags, prev_hash, hash"
# the JSON string encoder json.dumps(..., ensure_ascii=False) itself uses (C when available)
_string = encode_basestring
_CANONICAL = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def stored_tags(raw: object) -> list[str] | None:
    """The tag list a `tags` column holds (JSON array text of strings), or None when it
    holds anything else: a value the contract cannot hash."""
    if raw == "[]":
        return []
    try:
        tags = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        return None
    if not isinstance(tags, list) or not all(isinstance(tag, str) for tag in tags):
        return None
    return tags


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
    # why the newest witnessed events could not be checked (another writer held the lock)
    unconfirmed: str | None = None

    def as_dict(self) -> dict[str, Any]:
        if self.ok:
            answer: dict[str, Any] = {
                "ok": True,
                "events": self.events,
                "head_id": self.head_id,
                "head_hash": self.head_hash,
            }
            if self.unconfirmed:
                answer["unconfirmed"] = self.unconfirmed
            return answer
        return {"ok": False, "first_broken_id": self.first_broken_id, "reason": self.reason}

    def as_json(self) -> str:
        return json.dumps(self.as_dict(), separators=(", ", ": "))


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
        # imported here: verification.py builds on this module's hash contract
        from sqlgate.memory.verification import verify_chain

        return verify_chain(self.db, self.witness, incremental=incremental, progress=progress)


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
