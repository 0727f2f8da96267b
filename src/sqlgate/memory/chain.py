"""The event chain: append under the hash contract, and verify, streaming.

The hash contract (docs/hash-contract.md) lives in contract.py; its names are re-exported
here for the callers that append.

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

The hash contract is in contract.py, the checks in verification.py and witness_check.py.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import apsw

from sqlgate.engine.database import Database
from sqlgate.engine.records import session_now, utc_timestamp
from sqlgate.errors import SqlgateError
from sqlgate.memory.contract import (
    EVENT_COLUMNS,
    GENESIS,
    ChainStatus,
    canonical,
    event_hash,
    head_of,
    stored_tags,
)
from sqlgate.memory.verification import verify_chain
from sqlgate.memory.witness import Witness, WitnessFile

__all__ = [
    "GENESIS",
    "Appended",
    "ChainStatus",
    "ChainWriter",
    "EventChain",
    "canonical",
    "event_hash",
    "next_witness",
    "stored_tags",
]


@dataclass(frozen=True)
class Appended:
    id: int
    hash: str
    ts: str


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
                writer = ChainWriter(conn, session_now(self.session), self.wall_clock)
                yield writer
                if writer.first is not None and writer.last is not None:
                    previous_raw = self.witness.read_raw()
                    following = next_witness(
                        self._read_witness(), writer.first, writer.first_prev, writer.last
                    )
                    replaced = True  # a write that fails half-way is put back too
                    self.witness.write(following)
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
        return verify_chain(self.db, self.witness, incremental=incremental, progress=progress)


def next_witness(previous: Witness | None, first: int, first_prev: str, last: Appended) -> Witness:
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
            head_id, prev_hash = head_of(self.conn)
        else:
            head_id, prev_hash = self.last.id, self.last.hash
        new_id = head_id + 1
        ts = utc_timestamp(self.wall_clock())
        digest = event_hash(new_id, ts, self.session, kind, content, ordered, prev_hash)
        self.conn.execute(
            f"INSERT INTO memory_events ({EVENT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
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
