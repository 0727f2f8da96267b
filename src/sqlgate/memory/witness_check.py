"""Holding a verified chain against its witness file: the checks of `verify_chain`'s
judgement (see verification.py for when each runs, and docs/concurrency-model.md for the
judgement made while another connection holds the write lock)."""

from __future__ import annotations

import apsw

from sqlgate.engine.framing import counted
from sqlgate.memory.contract import ChainStatus
from sqlgate.memory.witness import Witness, WitnessFile

__all__ = ["broken", "check_visible", "check_witness", "record_verified", "stored_hash"]


def broken(event_id: int | None, reason: str) -> ChainStatus:
    return ChainStatus(False, first_broken_id=event_id, reason=reason)


def record_verified(
    witness_file: WitnessFile, current: Witness, verified_id: int, verified_hash: str
) -> None:
    """Called inside the write transaction, so witness writes stay ordered."""
    if current.verified_id == verified_id and current.verified_hash == verified_hash:
        return
    witness_file.write(Witness(current.head_id, current.head_hash, verified_id, verified_hash))


def check_visible(conn: apsw.Connection, witness: Witness, count: int) -> ChainStatus | None:
    """The witnessed head and last verified events among 1..count must keep their hashes;
    the earliest one rewritten, if any."""
    problems = _rewritten(conn, witness, count)
    if not problems:
        return None
    event_id, reason = min(problems, key=lambda problem: problem[0])
    return broken(event_id, reason)


def _rewritten(conn: apsw.Connection, witness: Witness, count: int) -> list[tuple[int, str]]:
    return [
        (
            event_id,
            f"witness mismatch: the witnessed {what} event {event_id} was rewritten "
            "(hashes recomputed)",
        )
        for event_id, expected, what in (
            (witness.head_id, witness.head_hash, "head"),
            (witness.verified_id, witness.verified_hash, "last verified"),
        )
        if 0 < event_id <= count and stored_hash(conn, event_id) != expected
    ]


def check_witness(conn: apsw.Connection, witness: Witness | None, count: int) -> ChainStatus | None:
    """The earliest way in which the chain 1..count disagrees with its witness, if any."""
    if witness is None:
        if count == 0:
            return None  # a new database
        return broken(
            None,
            f"witness mismatch: the witness file is missing but the chain has "
            f"{counted(count, 'event')}; nothing vouches that the chain was not rewritten (the "
            "next append starts a new one)",
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
    problems.extend(_rewritten(conn, witness, count))
    if witness.verified_id > count:
        problems.append(
            (count + 1, f"witness mismatch: the last verified event {witness.verified_id} is gone")
        )
    if not problems:
        return None
    event_id, reason = min(problems, key=lambda problem: problem[0])
    return broken(event_id, reason)


def stored_hash(conn: apsw.Connection, event_id: int) -> object:
    row = conn.execute("SELECT hash FROM memory_events WHERE id = ?", (event_id,)).fetchone()
    return None if row is None else row[0]
