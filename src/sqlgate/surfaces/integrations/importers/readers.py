"""One reader per source format: check its tables, verify its own chain, hand on its items.

mycorrhiza   table `chain` (seq, ts, prev_hash, content, tags, hash): the first link's
             prev_hash is "genesis"; hash = sha256 hex of json.dumps({"seq", "ts",
             "prev_hash", "content", "tags"}, sort_keys=True, ensure_ascii=False), with
             tags the stored JSON array parsed (a list of strings).
mcp-sqlite-memory  tables `memory_events` (id, ts, session, kind, content, prev_hash,
             hash) and `memory_checkpoints` (id, ts, session, summary, last_event_id,
             head_hash), as github.com/Diankes/mcp-sqlite-memory creates them: ids run from
             1 without gaps, the first prev_hash is 64 zeros, hash = sha256 hex of
             json.dumps([id, ts, session, kind, content, prev_hash], separators=(",", ":"),
             ensure_ascii=False); a checkpoint's head_hash is the hash of its last_event_id
             (64 zeros for 0). A file that also has a `tags` column is hashed by sqlgate's
             own rule (memory/chain.py), so a sqlgate database imports the same way.
claims-mcp   table `claims` as github.com/dgonzap30/claims-mcp creates it (entity, kind,
             claim, volatility, confidence, asserted_rank, state, last_confirmed,
             created_at, ...); no chain of its own, so its "head hash" is a digest of the
             rows read.
Every format, with an example that builds a minimal valid source: docs/importers.md.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from sqlgate.service import GENESIS as ZEROS
from sqlgate.service import event_hash as sqlgate_event_hash
from sqlgate.service import stored_tags
from sqlgate.surfaces.integrations.importers.sources import (
    BrokenSource,
    ChainSource,
    SourceCheckpoint,
    SourceClaim,
    SourceEvent,
    digest_of,
    open_source,
    require_columns,
    select_sql,
)

__all__ = ["mycorrhiza_hash", "read_claims_mcp", "read_mycorrhiza", "read_sqlite_memory"]

MYCORRHIZA_GENESIS = "genesis"


def mycorrhiza_hash(
    seq: object, ts: object, prev_hash: object, content: object, tags: object
) -> str:
    text = json.dumps(
        {"seq": seq, "ts": ts, "prev_hash": prev_hash, "content": content, "tags": tags},
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sqlite_memory_hash(
    id: object, ts: object, session: object, kind: object, content: object, prev_hash: object
) -> str:
    text = json.dumps(
        [id, ts, session, kind, content, prev_hash], separators=(",", ":"), ensure_ascii=False
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _shown(value: object) -> str:
    """A source value in an error: its repr, cut to 80 characters."""
    text = repr(value)
    return text if len(text) <= 80 else text[:80] + "…"


def _broken(path: Path, source: str, unit: str, ref: object, reason: str) -> BrokenSource:
    return BrokenSource(
        f"{path}: the {source} chain is broken at {unit} {ref}: {reason}; nothing was imported",
        ref if isinstance(ref, int) else None,
    )


def read_mycorrhiza(path: Path) -> ChainSource:
    columns = ("seq", "ts", "prev_hash", "content", "tags", "hash")
    events: list[SourceEvent] = []
    with open_source(path) as conn:
        require_columns(conn, path, "mycorrhiza", "chain", columns)
        prev = MYCORRHIZA_GENESIS
        for seq, ts, prev_hash, content, raw_tags, digest in conn.execute(
            select_sql("chain", columns, "seq")
        ):

            def broken(reason: str, seq: object = seq) -> BrokenSource:
                return _broken(path, "mycorrhiza", "seq", seq, reason)

            if isinstance(seq, bool) or not isinstance(seq, int):
                raise broken("seq is not a whole number")
            tags = stored_tags(raw_tags)
            if tags is None:
                raise broken("tags is not a JSON array of strings")
            if prev_hash != prev and not events:
                raise broken(
                    f"the first link's prev_hash is {_shown(prev_hash)}; this importer expects "
                    f"{MYCORRHIZA_GENESIS!r} (mycorrhiza's genesis): see docs/importers.md"
                )
            if prev_hash != prev:
                raise broken(f"prev_hash is not the hash of seq {events[-1].ref}")
            if not isinstance(content, str):
                raise broken("content is not text")
            try:
                recomputed = mycorrhiza_hash(seq, ts, prev_hash, content, tags)
            except (TypeError, ValueError, UnicodeError):
                raise broken("its fields cannot be hashed (not JSON text)") from None
            if digest != recomputed:
                raise broken("hash does not match the link's content (edited after writing?)")
            events.append(SourceEvent(seq, digest, content, tuple(tags), None, ts))
            prev = digest
    return ChainSource("mycorrhiza", path, tuple(events), (), {e.ref: e.hash for e in events})


def read_sqlite_memory(path: Path) -> ChainSource:
    source = "mcp-sqlite-memory"
    base = ("id", "ts", "session", "kind", "content", "prev_hash", "hash")
    with open_source(path) as conn:
        present = require_columns(conn, path, source, "memory_events", base)
        with_tags = "tags" in present
        columns = (*base, "tags") if with_tags else base
        events: list[SourceEvent] = []
        prev = ZEROS
        for row in conn.execute(select_sql("memory_events", columns, "id")):
            event_id, ts, session, kind, content, prev_hash, digest = row[:7]

            def broken(reason: str, event_id: object = event_id) -> BrokenSource:
                return _broken(path, source, "event", event_id, reason)

            expected_id = len(events) + 1
            if event_id != expected_id:
                raise broken(f"expected event {expected_id} (events missing or renumbered)")
            tags: list[str] = []
            if with_tags:
                parsed = stored_tags(row[7])
                if parsed is None:
                    raise broken("tags is not a JSON array of strings")
                tags = parsed
            if prev_hash != prev and expected_id == 1:
                raise broken(
                    f"event 1's prev_hash is {_shown(prev_hash)}; this importer expects 64 "
                    "zeros (the genesis of mcp-sqlite-memory and of sqlgate): see "
                    "docs/importers.md"
                )
            if prev_hash != prev:
                raise broken(f"prev_hash is not the hash of event {expected_id - 1}")
            if not isinstance(content, str):
                raise broken("content is not text")
            try:
                recomputed = (
                    sqlgate_event_hash(event_id, ts, session, kind, content, tags, prev_hash)
                    if with_tags
                    else sqlite_memory_hash(event_id, ts, session, kind, content, prev_hash)
                )
            except (TypeError, ValueError, UnicodeError):
                raise broken("its fields cannot be hashed (not JSON text)") from None
            if digest != recomputed:
                raise broken("hash does not match the event (edited after writing?)")
            events.append(
                SourceEvent(
                    event_id, digest, content, tuple(tags), _text_or_none(kind), ts,
                    _text_or_none(session),
                )
            )  # fmt: skip
            prev = digest
        hashes = {e.ref: e.hash for e in events}
        checkpoints = _checkpoints(conn, path, hashes)
    return ChainSource(source, path, tuple(events), checkpoints, hashes)


def _checkpoints(conn: Any, path: Path, hashes: dict[int, str]) -> tuple[SourceCheckpoint, ...]:
    """The checkpoints, each still anchored to the event hash it was written against."""
    columns = ("id", "ts", "session", "summary", "last_event_id", "head_hash")
    source = "mcp-sqlite-memory"
    require_columns(conn, path, source, "memory_checkpoints", columns)
    found: list[SourceCheckpoint] = []
    for ref, ts, session, summary, anchor, head_hash in conn.execute(
        select_sql("memory_checkpoints", columns, "id")
    ):
        expected = ZEROS if anchor == 0 else hashes.get(anchor) if isinstance(anchor, int) else None
        if expected is None or head_hash != expected or not isinstance(summary, str):
            raise BrokenSource(
                f"{path}: checkpoint {ref} is not anchored to the chain (its head_hash is not "
                f"the hash of event {anchor}); nothing was imported",
                ref if isinstance(ref, int) else None,
            )
        found.append(SourceCheckpoint(int(ref), summary, int(anchor), ts, _text_or_none(session)))
    return tuple(found)


def _text_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


# claims-mcp names its rank `asserted_rank`; a file that says `rank` means the same
_CLAIM_REQUIRED = ("id", "entity", "kind", "claim", "volatility", "confidence")
_CLAIM_OPTIONAL = (("asserted_rank", "rank"), ("last_confirmed",), ("updated_at",),
                   ("created_at",), ("state",))  # fmt: skip


def read_claims_mcp(path: Path) -> tuple[list[SourceClaim], str]:
    """The source's claims (oldest first) and a digest of everything read."""
    with open_source(path) as conn:
        present = require_columns(conn, path, "claims-mcp", "claims", _CLAIM_REQUIRED)
        chosen = [next((n for n in names if n in present), None) for names in _CLAIM_OPTIONAL]
        columns = (*_CLAIM_REQUIRED, *(name for name in chosen if name is not None))
        order = "created_at" if "created_at" in present else "id"
        rows = [list(row) for row in conn.execute(select_sql("claims", columns, order))]
    claims: list[SourceClaim] = []
    for row in rows:
        record = dict(zip(columns, row, strict=True))
        rank = record.get(chosen[0]) if chosen[0] else None
        confirmed = next(
            (record[name] for name in ("last_confirmed", "updated_at", "created_at")
             if record.get(name) is not None),
            None,
        )  # fmt: skip
        claims.append(
            SourceClaim(
                str(record["id"]), record["entity"], record["kind"], record["claim"],
                record["volatility"], record["confidence"], rank, confirmed,
                record.get("state", "active"),
            )
        )  # fmt: skip
    return claims, digest_of([list(columns), *rows])
