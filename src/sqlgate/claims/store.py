"""Claims in the database: add, confirm, retract, and evaluate decay and contradictions.

Every change (add, update, confirm, retract, state change) is written with a history row
and a memory chain event of kind `claim`, in one transaction, so the history of beliefs is
as tamper-evident as the rest of the memory. Evaluating "now" records state changes;
evaluating "as of" a moment writes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import apsw

from sqlgate.claims.arguments import ClaimArguments, NewClaim, checked_confidence, checked_threshold
from sqlgate.claims.model import (
    CLAIM_FIELDS,
    STALE_THRESHOLD,
    STATES,
    Claim,
    is_live,
    parse_timestamp,
)
from sqlgate.claims.rules import Finding, find_contradictions, parse_observed
from sqlgate.engine.commands import db_option
from sqlgate.engine.database import Database
from sqlgate.engine.records import utc_timestamp
from sqlgate.errors import InvalidArgument, NotFound, PolicyDenied
from sqlgate.memory.chain import ChainWriter, EventChain
from sqlgate.memory.inputs import MAX_ID, moment
from sqlgate.memory.privacy import Redactor

__all__ = ["ClaimStore", "Decayed", "Evaluation"]

# the claims table's columns are the claim's fields (CLAIM_FIELDS), constant identifiers:
# every value is bound
_COLUMNS = ", ".join(CLAIM_FIELDS)
_NEW_COLUMNS = CLAIM_FIELDS[1:]  # all but the id, which SQLite gives
_INSERT = (
    f"INSERT INTO claims ({', '.join(_NEW_COLUMNS)}) "
    f"VALUES ({', '.join('?' for _ in _NEW_COLUMNS)})"
)


@dataclass(frozen=True)
class Decayed:
    claim: Claim
    effective: float


@dataclass
class Evaluation:
    findings: list[Finding]
    state_changes: list[dict[str, Any]] = field(default_factory=list)


def _optional_int(value: Any) -> int | None:
    return None if value is None else int(value)


def _evidence_from_sql(value: Any) -> tuple[int, ...]:
    return tuple(int(v) for v in json.loads(value or "[]"))


# how a stored value becomes the field's value, by the field's type
_FROM_SQL: dict[str, Callable[[Any], Any]] = {
    "int": int,
    "str": str,
    "float": float,
    "int | None": _optional_int,
    "tuple[int, ...]": _evidence_from_sql,
}
_FIELDS = fields(Claim)


def _claim(row: Sequence[Any]) -> Claim:
    """A claim from a row of `SELECT {_COLUMNS}`."""
    return Claim(*(_FROM_SQL[str(f.type)](value) for f, value in zip(_FIELDS, row, strict=True)))


def _row_values(claim: Claim) -> tuple[Any, ...]:
    """The values of a claims row, in column order, for the fields in `_NEW_COLUMNS`."""
    return tuple(
        json.dumps(list(claim.evidence)) if name == "evidence" else getattr(claim, name)
        for name in _NEW_COLUMNS
    )


class ClaimStore:
    def __init__(
        self,
        db: Database,
        chain: EventChain,
        redactor: Redactor,
        wall_clock: Callable[[], float],
    ) -> None:
        self.db = db
        self.chain = chain
        self.redactor = redactor
        self.wall_clock = wall_clock
        self.arguments = ClaimArguments(db, redactor)

    # -- moments --------------------------------------------------------------------------
    def now(self) -> datetime:
        return datetime.fromtimestamp(self.wall_clock(), tz=timezone.utc)

    def _as_of(self, value: object) -> datetime | None:
        text = moment(value, "as_of")
        return None if text is None else parse_timestamp(text)

    # -- reading --------------------------------------------------------------------------
    def all(self) -> list[Claim]:
        with self.db.reading_records() as conn:
            return [
                _claim(row) for row in conn.execute(f"SELECT {_COLUMNS} FROM claims ORDER BY id")
            ]

    def get(self, claim_id: object, conn: apsw.Connection | None = None) -> Claim:
        if isinstance(claim_id, bool) or not isinstance(claim_id, int) or claim_id < 1:
            raise InvalidArgument(f"id {claim_id!r} is not a claim id (a whole number from 1)")
        if claim_id > MAX_ID:
            raise _no_claim(claim_id, self.db.path)
        if conn is None:
            with self.db.reading_records() as reader:
                row = reader.execute(
                    f"SELECT {_COLUMNS} FROM claims WHERE id = ?", (claim_id,)
                ).fetchone()
        else:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM claims WHERE id = ?", (claim_id,)
            ).fetchone()
        if row is None:
            raise _no_claim(claim_id, self.db.path)
        return _claim(row)

    def listing(self, state: str | None = None, entity: str | None = None) -> list[Claim]:
        """Every claim, oldest first; only those in recorded `state` and about `entity`
        (any case, whitespace folded) when given."""
        if state is not None and state not in STATES:
            raise InvalidArgument(f"state {state!r} is not one of: {', '.join(STATES)}")
        wanted = None if entity is None else " ".join(entity.split()).casefold()
        return [
            claim
            for claim in self.all()
            if (state is None or claim.state == state)
            and (wanted is None or claim.entity.casefold() == wanted)
        ]

    def search(self, query: object) -> list[Claim]:
        if not isinstance(query, str) or not query.strip():
            raise InvalidArgument(
                "query is empty: pass text found in the claim or its entity",
                cli="the text is empty: pass text found in the claim or its entity, or list "
                f"every claim with `sqlgate claims list {db_option(self.db.path)}`",
            )
        needle = " ".join(query.split()).casefold()  # stored text has its whitespace folded
        return [
            claim
            for claim in self.all()
            if needle in claim.claim.casefold() or needle in claim.entity.casefold()
        ]

    # -- writing --------------------------------------------------------------------------
    def _record(
        self, writer: ChainWriter, claim_id: int, action: str, changes: dict[str, Any]
    ) -> None:
        """A history row and a chain event for one change, inside the caller's transaction."""
        content = json.dumps(
            {"claim": claim_id, "action": action, "changes": changes},
            ensure_ascii=False,
            separators=(",", ":"),
        )
        event = writer.append("claim", content, ["claim"])
        writer.conn.execute(
            "INSERT INTO claims_history (claim_id, ts, session, action, detail, event_id) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (claim_id, event.ts, writer.session, action, content, event.id),
        )

    def add(
        self,
        entity: object,
        kind: object,
        claim: object,
        volatility: object = "slow",
        confidence: object = 0.8,
        rank: object = None,
        confirmed_at: object = None,
        evidence: object = None,
    ) -> tuple[Claim, bool]:
        """Add a claim, or update the one with the same (entity, kind, claim). -> (claim, new?)"""
        values = self.arguments.new_claim(
            self.now, entity, kind, claim, volatility, confidence, rank, confirmed_at, evidence
        )
        with self.chain.writing() as writer:
            return self._write(writer, values)

    def add_in(
        self,
        writer: ChainWriter,
        entity: object,
        kind: object,
        claim: object,
        volatility: object = "slow",
        confidence: object = 0.8,
        rank: object = None,
        confirmed_at: object = None,
    ) -> tuple[Claim, bool]:
        """`add` inside the caller's `chain.writing()` transaction, so that several claims
        (an import's) land together or not at all."""
        values = self.arguments.new_claim(
            self.now, entity, kind, claim, volatility, confidence, rank, confirmed_at
        )
        return self._write(writer, values)

    def _write(self, writer: ChainWriter, new: NewClaim) -> tuple[Claim, bool]:
        conn = writer.conn
        row = conn.execute(
            f"SELECT {_COLUMNS} FROM claims WHERE entity = ? AND kind = ? AND claim = ?",
            (new.entity, new.kind, new.claim),
        ).fetchone()
        if row is None:
            conn.execute(_INSERT, _row_values(_first_state(new)))
            added = self.get(int(conn.last_insert_rowid()), conn)
            self._record(writer, added.id, "add", added.as_dict(new.now))
            return added, True
        old = _claim(row)
        if old.state == "retired":
            raise PolicyDenied(
                f"claim {old.id} was retired, and retired claims stay retired; add a claim "
                "worded differently if the belief is back"
            )
        merged = sorted(set(old.evidence) | set(new.evidence))
        conn.execute(
            "UPDATE claims SET volatility = ?, confidence = ?, rank = ?, state = 'active', "
            "last_confirmed = ?, evidence = ? WHERE id = ?",
            # a re-add that names no rank keeps the one the claim has
            (new.volatility, new.confidence, old.rank if new.rank is None else new.rank,
             new.confirmed, json.dumps(merged), old.id),
        )  # fmt: skip
        updated = self.get(old.id, conn)
        self._record(writer, old.id, "update", _diff(old, updated))
        return updated, False

    def confirm(
        self, claim_id: object, confidence: object = None, evidence: object = None
    ) -> Claim:
        """Reset decay (now is the last confirmation) and make the claim active again."""
        new_confidence = None if confidence is None else checked_confidence(confidence)
        proof = self.arguments.evidence(evidence)
        with self.chain.writing() as writer:
            old = self.get(claim_id, writer.conn)
            if old.state == "retired":
                raise PolicyDenied(f"claim {old.id} is retired; retired claims stay retired")
            merged = sorted(set(old.evidence) | set(proof))
            writer.conn.execute(
                "UPDATE claims SET confidence = ?, state = 'active', last_confirmed = ?, "
                "evidence = ? WHERE id = ?",
                (old.confidence if new_confidence is None else new_confidence,
                 utc_timestamp(self.now().timestamp()), json.dumps(merged), old.id),
            )  # fmt: skip
            confirmed = self.get(old.id, writer.conn)
            self._record(writer, old.id, "confirm", _diff(old, confirmed))
            return confirmed

    def retract(self, claim_id: object) -> Claim:
        with self.chain.writing() as writer:
            old = self.get(claim_id, writer.conn)
            if old.state == "retired":
                return old  # already retired: nothing changes, nothing is recorded
            writer.conn.execute("UPDATE claims SET state = 'retired' WHERE id = ?", (old.id,))
            retired = replace(old, state="retired")
            self._record(writer, old.id, "retract", {"state": [old.state, "retired"]})
            return retired

    # -- evaluating -------------------------------------------------------------------------
    def _set_states(self, changes: dict[int, tuple[Claim, str, str]]) -> list[dict[str, Any]]:
        """Record state changes {id: (claim as evaluated, new state, reason)}, each with
        history and a chain event. A claim that changed in any way since it was evaluated
        (confirmed by another call meanwhile, say) is left alone: the verdict was about
        the claim as it was."""
        if not changes:
            return []
        recorded: list[dict[str, Any]] = []
        with self.chain.writing() as writer:
            for claim_id, (seen, new, reason) in sorted(changes.items()):
                old = seen.state
                if self.get(claim_id, writer.conn) != seen:
                    continue
                writer.conn.execute("UPDATE claims SET state = ? WHERE id = ?", (new, claim_id))
                self._record(writer, claim_id, "state", {"state": [old, new], "reason": reason})
                recorded.append({"id": claim_id, "from": old, "to": new, "reason": reason})
        return recorded

    def decayed(
        self, threshold: object = 0.5, as_of: object = None
    ) -> tuple[list[Decayed], list[dict[str, Any]]]:
        """Claims not retired below `threshold`, oldest confirmation first; now: marks the
        active and contradicted ones stale.

        A claim already stale is listed again (the reminder stays until claim_confirm or
        claim_retract acts on it) and not marked again: nothing is written for it.
        """
        limit = checked_threshold(threshold)
        at_moment = self._as_of(as_of)
        at = at_moment or self.now()
        below = [
            Decayed(claim, claim.effective(at))
            for claim in self.all()
            if claim.state != "retired" and claim.effective(at) < limit
        ]
        below.sort(key=lambda item: (item.claim.last_confirmed, item.claim.id))
        if at_moment is not None:
            return below, []
        reason = f"effective confidence below {limit:g}"
        live = [item for item in below if item.claim.state != "stale"]
        changes = self._set_states({item.claim.id: (item.claim, "stale", reason) for item in live})
        marked = {change["id"] for change in changes}
        shown = [
            replace(item, claim=replace(item.claim, state="stale"))
            if item.claim.id in marked
            else item
            for item in below
        ]
        return shown, changes

    def contradictions(self, observed: object = None, as_of: object = None) -> Evaluation:
        parsed = None if observed is None else parse_observed(observed)
        at_moment = self._as_of(as_of)
        at = at_moment or self.now()
        claims = self.all()
        live = [c for c in claims if is_live(c, at, STALE_THRESHOLD, as_of=at_moment is not None)]
        findings = find_contradictions(live, parsed)
        if at_moment is not None:
            return Evaluation(findings)
        rules_of: dict[int, set[str]] = {}
        for finding in findings:
            for claim_id in finding.claim_ids:
                rules_of.setdefault(claim_id, set()).add(finding.rule)
        live_ids = {claim.id for claim in live}
        changes: dict[int, tuple[Claim, str, str]] = {}
        for claim in claims:
            if claim.state in ("active", "contradicted") and claim.id not in live_ids:
                reason = f"effective confidence below {STALE_THRESHOLD:g}"
                changes[claim.id] = (claim, "stale", reason)
            elif claim.state == "active" and claim.id in rules_of:
                reason = f"in a finding: {', '.join(sorted(rules_of[claim.id]))}"
                changes[claim.id] = (claim, "contradicted", reason)
            elif claim.state == "contradicted" and claim.id not in rules_of:
                changes[claim.id] = (claim, "active", "no longer in any finding")
        return Evaluation(findings, self._set_states(changes))


def _first_state(new: NewClaim) -> Claim:
    """The claim an add writes first: active, created and confirmed as given (its id, 0
    here, is the one SQLite gives the row)."""
    return Claim(
        0, new.entity, new.kind, new.claim, new.volatility, new.confidence, new.rank, "active",
        utc_timestamp(new.now.timestamp()), new.confirmed, tuple(new.evidence),
    )  # fmt: skip


def _diff(old: Claim, new: Claim) -> dict[str, Any]:
    """{field: [before, after]} for the fields that changed (an update changes neither the
    id, the entity, the kind, the wording nor the creation time)."""
    return {
        name: [getattr(old, name), getattr(new, name)]
        for name in CLAIM_FIELDS
        if getattr(old, name) != getattr(new, name)
    }


def _no_claim(claim_id: int, db: Path) -> NotFound:
    return NotFound(
        f"no claim {claim_id}; claim_search finds ids",
        cli=f"no claim {claim_id}; `sqlgate claims list {db_option(db)}` shows every claim with "
        "its id",
    )
