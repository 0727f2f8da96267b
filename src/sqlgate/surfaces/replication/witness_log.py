"""The witness log: every witnessed event's hash, in a small SQLite file that Litestream
replicates beside the database, so a restored replica can be held against its witness.

Why a log and not a copy of `<db>.witness.json`: Litestream ships the database's changes
about once a second, so a replica ends at some event M that is rarely the head the witness
file named when the host was lost. The log holds every event's (id, hash) as the witness
vouched for it, so whatever M the replica ends at, its hash can be checked; and the events
the log names beyond M are the ones replication lost.

What goes in: a pass (`mirror_once`, run every few tens of milliseconds by the replication
supervisor) reads the witness file, then the committed chain. It records events only when
the database agrees with the witness: the event the witness names as the head is committed
with that hash, and the stored links run unbroken from the last logged event to it. A chain
rewritten behind the witness is therefore never mirrored (the pass reports it instead), so
the replica keeps the witness's protection against someone with access to the database
file alone. When the witness and the chain agree with each other but no longer with the log
(a snapshot was restored, or someone rewrote both local files), the log follows the chain
from the last event they share and records that reset in `resets`, which a restore reports.

Tables: `about` (format, database id, created), `witnessed(id, hash, pass)` with the hash as
32 bytes, `passes(id, seen_at, head_id)`, `resets(id, at, after_id, reason)`.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeGuard

import apsw

from sqlgate.errors import SqlgateError, StartupError
from sqlgate.service import GENESIS, WitnessFile, chain_hash_at, connect_read_only, stored_links

__all__ = ["MirrorPass", "WitnessLog", "mirror_once"]

FORMAT = "1"
BATCH = 10_000  # events read and recorded per transaction
_SCHEMA = """
CREATE TABLE IF NOT EXISTS about (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS passes (id INTEGER PRIMARY KEY, seen_at TEXT NOT NULL,
                                   head_id INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS witnessed (id INTEGER PRIMARY KEY, hash BLOB NOT NULL,
                                      pass INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS resets (id INTEGER PRIMARY KEY, at TEXT NOT NULL,
                                   after_id INTEGER NOT NULL, reason TEXT NOT NULL);
"""


class WitnessLog:
    """One witness log file. Open with `WitnessLog.open(path)`; close when done."""

    def __init__(self, conn: apsw.Connection, path: Path) -> None:
        self.conn = conn
        self.path = path

    @classmethod
    def open(cls, path: Path, *, read_only: bool = False) -> WitnessLog:
        """Open (creating it unless `read_only`) the log at `path`. Raises StartupError."""
        try:
            if read_only:
                conn = connect_read_only(path)
            else:
                conn = apsw.Connection(str(path))
                conn.set_busy_timeout(5000)
                conn.pragma("journal_mode", "wal")  # Litestream replicates WAL databases
                conn.pragma("synchronous", "normal")
                with conn:
                    conn.execute(_SCHEMA)
                    conn.execute(
                        "INSERT OR IGNORE INTO about VALUES ('format', ?), ('database_id', ?)",
                        (FORMAT, secrets.token_hex(16)),
                    )
            log = cls(conn, path)
            log.database_id  # noqa: B018 - a file that is not a witness log fails here
        except (apsw.Error, SqlgateError) as exc:
            raise StartupError(f"cannot open the witness log {path}: {exc}") from None
        return log

    def close(self) -> None:
        self.conn.close()

    @property
    def database_id(self) -> str:
        """A random id given to the database when its log was created; a replica carries it,
        so a URL already holding another database's replica is recognised."""
        row = self.conn.execute("SELECT value FROM about WHERE key = 'database_id'").fetchone()
        if row is None:
            raise StartupError(f"{self.path} is not a sqlgate witness log")
        return str(row[0])

    def last(self) -> tuple[int, str]:
        """The last logged event (id, hash); (0, 64 zeros) when none is."""
        row = self.conn.execute(
            "SELECT id, hash FROM witnessed ORDER BY id DESC LIMIT 1"
        ).fetchone()
        return (0, GENESIS) if row is None else (int(row[0]), bytes(row[1]).hex())

    def hash_at(self, event_id: int) -> str | None:
        if event_id == 0:
            return GENESIS
        row = self.conn.execute("SELECT hash FROM witnessed WHERE id = ?", (event_id,)).fetchone()
        return None if row is None else bytes(row[0]).hex()

    def seen_at(self, event_id: int) -> str | None:
        """When the pass that logged the event ran (UTC, ISO 8601)."""
        row = self.conn.execute(
            "SELECT p.seen_at FROM witnessed AS w JOIN passes AS p ON p.id = w.pass WHERE w.id = ?",
            (event_id,),
        ).fetchone()
        return None if row is None else str(row[0])

    def resets(self) -> list[tuple[str, int, str]]:
        """(at, after_id, reason) of every reset, oldest first."""
        found = self.conn.execute("SELECT at, after_id, reason FROM resets ORDER BY id")
        return [(str(at), int(after), str(reason)) for at, after, reason in found]

    def record(self, events: Sequence[tuple[int, str]], seen_at: str) -> None:
        """Log `events` ((id, hash) in id order, following the last logged one)."""
        if not events:
            return
        with self.conn:
            self.conn.execute(
                "INSERT INTO passes (seen_at, head_id) VALUES (?, ?)", (seen_at, events[-1][0])
            )
            pass_id = self.conn.last_insert_rowid()
            self.conn.executemany(
                "INSERT INTO witnessed (id, hash, pass) VALUES (?, ?, ?)",
                [(event_id, bytes.fromhex(digest), pass_id) for event_id, digest in events],
            )

    def reset_after(self, event_id: int, reason: str, at: str) -> None:
        """Forget the events after `event_id`, saying why."""
        with self.conn:
            self.conn.execute("DELETE FROM witnessed WHERE id > ?", (event_id,))
            self.conn.execute(
                "INSERT INTO resets (at, after_id, reason) VALUES (?, ?, ?)",
                (at, event_id, reason),
            )


@dataclass(frozen=True)
class MirrorPass:
    """What one pass did: events recorded, the last logged event after it, the reason it
    could not follow the witness (if it could not), and whether it waited for an append in
    flight (the witness named an event not committed yet)."""

    recorded: int
    last_id: int
    problem: str | None = None
    waiting: bool = False


def last_agreement(upto: int, agrees: Callable[[int], bool]) -> int:
    """The largest k in 0..upto where `agrees(k)`, for a chain that agrees up to some point and
    no further (hash links make it so); `agrees(0)` is taken as true."""
    if upto == 0 or agrees(upto):
        return upto
    low, high = 0, upto  # agrees(low), not agrees(high)
    while high - low > 1:
        middle = (low + high) // 2
        if agrees(middle):
            low = middle
        else:
            high = middle
    return low


def mirror_once(
    reader: apsw.Connection, witness_file: WitnessFile, log: WitnessLog, now: str
) -> MirrorPass:
    """One pass: log the events the witness vouches for that the log does not hold yet."""
    last_id, _ = log.last()
    try:
        witness = witness_file.read()
    except SqlgateError as exc:
        return MirrorPass(0, last_id, f"the witness cannot be read: {exc}")
    if witness is None or witness.head_id == 0:
        return MirrorPass(0, last_id)
    reader.execute("BEGIN")  # one snapshot of the chain for the whole pass
    try:
        head = chain_hash_at(reader, witness.head_id)
        if head is None:
            return MirrorPass(0, last_id, waiting=True)  # an append in flight
        if head != witness.head_hash:
            return MirrorPass(
                0,
                last_id,
                f"the database disagrees with its witness at event {witness.head_id} (rewritten "
                f"behind the server?); the witness log stays at event {last_id} until `sqlgate "
                "verify` passes",
            )
        agreed = last_agreement(
            min(last_id, witness.head_id),
            lambda k: log.hash_at(k) == chain_hash_at(reader, k),
        )
        if agreed < last_id:
            if agreed == witness.head_id:
                reason = f"the witness now names event {agreed} as the head"
            else:
                reason = f"the chain no longer matches the log after event {agreed}"
            log.reset_after(agreed, reason, now)
        return _follow(reader, log, agreed, witness.head_id, now)
    finally:
        reader.execute("COMMIT")


def _follow(
    reader: apsw.Connection, log: WitnessLog, after: int, head: int, now: str
) -> MirrorPass:
    """Log events after..head from the chain, batch by batch, while their links hold."""
    recorded = 0
    prev_hash = log.hash_at(after) or GENESIS
    expected = after + 1
    while expected <= head:
        batch = stored_links(reader, expected, head, BATCH)
        events: list[tuple[int, str]] = []
        for event_id, stored_prev, digest in batch:
            if event_id != expected or stored_prev != prev_hash or not _is_hash(digest):
                log.record(events, now)
                return MirrorPass(
                    recorded + len(events),
                    expected - 1,
                    f"the chain's links break at event {expected}; the witness log stays at "
                    f"event {expected - 1} until `sqlgate verify` passes",
                )
            events.append((expected, digest))
            prev_hash, expected = digest, expected + 1
        if not batch:
            break
        log.record(events, now)
        recorded += len(events)
    return MirrorPass(recorded, expected - 1)


def _is_hash(value: object) -> TypeGuard[str]:
    return (
        isinstance(value, str)
        and len(value) == 64
        and value == value.lower()
        and all(c in "0123456789abcdef" for c in value)
    )
