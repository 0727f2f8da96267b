"""What a restored copy's chain can be proven to be: its events held against the witness log
that came with the replica, and against a witness kept elsewhere (`restore --witness FILE`).

The chain's own hashes and links are checked by `verify_chain` afterwards; this module only
says which events a witness vouches for:

- `witnessed_id`: events 1..witnessed_id are vouched for: the witness holds the stored hash
  of that event, and the hash links tie every earlier event to it (verify checks the links);
- `mismatch`: the earliest event whose stored hash differs from what a witness holds: the
  chain was rewritten (hashes recomputed) after the witness saw it;
- `lost`: events a witness names that the restored copy does not hold, and when the log saw
  them: written in the last moments before replication stopped.

Events after `witnessed_id` and up to the head were replicated before their witness entry
was: they verify by their hash links only, and the verdict says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import apsw

from sqlgate.service import Witness, chain_hash_at, counted, stored_head
from sqlgate.surfaces.replication.witness_log import WitnessLog, last_agreement

__all__ = ["WitnessVerdict", "judge"]

LOG = "the replica's witness log"


@dataclass(frozen=True)
class WitnessVerdict:
    head_id: int
    head_hash: str
    witnessed_id: int
    witnessed_hash: str
    sources: tuple[str, ...]  # what vouched (the log, a kept witness)
    mismatch: tuple[int, str] | None = None
    lost: tuple[int, int] | None = None
    lost_seen: tuple[str | None, str | None] = (None, None)
    resets: tuple[tuple[str, int, str], ...] = ()

    @property
    def witnessed(self) -> bool:
        """Every event of the copy is vouched for by a witness (trivially so when none)."""
        return self.mismatch is None and self.witnessed_id == self.head_id

    def lines(self) -> list[str]:
        """The verdict in sentences, for a person."""
        vouchers = " and ".join(self.sources) or "no witness"
        said: list[str] = []
        if self.mismatch is not None:
            said.append(f"witness MISMATCH at event {self.mismatch[0]}: {self.mismatch[1]}")
        elif self.head_id == 0:
            said.append("witnessed: the chain is empty, there is nothing to vouch for")
        elif self.witnessed:
            said.append(f"witnessed: events 1 to {self.head_id} match {vouchers}")
        elif not self.sources:
            said.append(
                f"NOT witnessed: no witness log in the replica and no --witness file; events 1 "
                f"to {self.head_id} verify by their hash links only"
            )
        else:
            first = self.witnessed_id + 1
            covered = (
                f"events 1 to {self.witnessed_id} match {vouchers}; " if self.witnessed_id else ""
            )
            said.append(
                f"partly witnessed: {covered}events {first} to {self.head_id} "
                f"({self.head_id - first + 1}) reached the replica before their witness entry "
                "did, and verify by their hash links only"
            )
        if self.lost is not None:
            seen = ""
            if self.lost_seen[0] is not None:
                seen = f", witnessed {self.lost_seen[0]} to {self.lost_seen[1]}"
            said.append(
                f"lost: events {self.lost[0]} to {self.lost[1]} ({self.lost[1] - self.lost[0] + 1})"
                f" were witnessed but are not in the replica{seen} (written in the last moments "
                "before replication stopped)"
            )
        if self.resets:
            at, after, reason = self.resets[-1]
            said.append(
                f"note: the witness log was reset {counted(len(self.resets), 'time')}, last at "
                f"{at} after event {after} ({reason}): a snapshot restore, or a rewrite of both "
                "the database and its witness on the old host"
            )
        return said

    def as_dict(self) -> dict[str, Any]:
        lost = None
        if self.lost is not None:
            lost = {"first_id": self.lost[0], "last_id": self.lost[1],
                    "first_seen": self.lost_seen[0], "last_seen": self.lost_seen[1]}  # fmt: skip
        return {
            "witnessed": self.witnessed,
            "head_id": self.head_id,
            "witnessed_id": self.witnessed_id,
            "sources": list(self.sources),
            "mismatch": None
            if self.mismatch is None
            else {"event_id": self.mismatch[0], "reason": self.mismatch[1]},
            "lost": lost,
            "resets": [
                {"at": at, "after_id": after, "reason": why} for at, after, why in self.resets
            ],
            "lines": self.lines(),
        }


def judge(
    reader: apsw.Connection,
    log: WitnessLog | None,
    kept: Witness | None,
    kept_name: str = "--witness",
) -> WitnessVerdict:
    """Hold the restored chain read by `reader` against `log` and a witness `kept` elsewhere."""
    head_id, head_hash = stored_head(reader)
    witnessed = 0
    sources: list[str] = []
    mismatches: list[tuple[int, str]] = []
    lost: tuple[int, int] | None = None
    seen: tuple[str | None, str | None] = (None, None)
    resets: tuple[tuple[str, int, str], ...] = ()
    if log is not None:
        sources.append(LOG)
        resets = tuple(log.resets())
        log_last, _ = log.last()
        shared = min(head_id, log_last)
        agreed = last_agreement(shared, lambda k: log.hash_at(k) == chain_hash_at(reader, k))
        if agreed < shared:
            mismatches.append((
                agreed + 1,
                f"event {agreed + 1} differs from {LOG} (rewritten, hashes recomputed)",
            ))  # fmt: skip
        witnessed = agreed
        if log_last > head_id:
            lost = (head_id + 1, log_last)
            seen = (log.seen_at(head_id + 1), log.seen_at(log_last))
    if kept is not None:
        sources.append(kept_name)
        for event_id, digest, what in (
            (kept.head_id, kept.head_hash, "its head"),
            (kept.verified_id, kept.verified_hash, "its last verified event"),
        ):
            if not 0 < event_id <= head_id:
                continue
            if chain_hash_at(reader, event_id) != digest:
                mismatches.append((
                    event_id,
                    f"event {event_id} differs from {kept_name} ({what}; rewritten, hashes "
                    "recomputed)",
                ))  # fmt: skip
            else:
                witnessed = max(witnessed, event_id)
        if kept.head_id > head_id and (lost is None or kept.head_id > lost[1]):
            lost = (head_id + 1, kept.head_id)
            seen = (None, None) if log is None else seen
    mismatch = min(mismatches) if mismatches else None
    if mismatch is not None:
        witnessed = min(witnessed, mismatch[0] - 1)
    witnessed_hash = chain_hash_at(reader, witnessed) or ""
    return WitnessVerdict(
        head_id, head_hash, witnessed, witnessed_hash, tuple(sources), mismatch, lost, seen,
        resets,
    )  # fmt: skip
