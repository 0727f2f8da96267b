"""The hash contract of the event chain, and the answer a verification gives.

docs/hash-contract.md is the reference: `hash = sha256_hex(canonical)`, where canonical is
the UTF-8 of `json.dumps([id, ts, session, kind, content, tags, prev_hash],
ensure_ascii=False, separators=(",", ":"))`; `tags` is the sorted, unique list of strings
(stored as JSON array text); the first event's prev_hash is 64 zeros (`GENESIS`).

Appending (chain.py), verifying (verification.py, witness_check.py), importing and restoring
all build on this module; it imports nothing of theirs, so none of them imports in a circle.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from json.encoder import encode_basestring
from typing import Any

import apsw

__all__ = [
    "EVENT_COLUMNS",
    "GENESIS",
    "ChainStatus",
    "canonical",
    "event_hash",
    "head_of",
    "stored_tags",
]

GENESIS = "0" * 64
# the columns of memory_events, in the order every chain statement reads and writes them
EVENT_COLUMNS = "id, ts, session, kind, content, tags, prev_hash, hash"
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
    # the history before these records that is gone (their records folder was deleted)
    lost: str | None = None

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
            if self.lost:
                answer["history_lost"] = self.lost
            return answer
        return {"ok": False, "first_broken_id": self.first_broken_id, "reason": self.reason}

    def as_json(self) -> str:
        return json.dumps(self.as_dict(), separators=(", ", ": "))


def head_of(conn: apsw.Connection) -> tuple[int, str]:
    """(id, hash) of the newest event; (0, GENESIS) for an empty chain."""
    row = conn.execute("SELECT id, hash FROM memory_events ORDER BY id DESC LIMIT 1").fetchone()
    return (0, GENESIS) if row is None else (int(row[0]), str(row[1]))
