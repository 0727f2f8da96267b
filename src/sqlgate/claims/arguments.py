"""A claim's arguments, checked and cleaned before `claims.store` writes them.

kind, volatility   one of KINDS, one of HALF_LIFE_DAYS's keys
confidence         a number from 0 to 1 (so is an evaluation's threshold)
rank               priority claims only: a whole number from 1 to MAX_RANK
entity, claim      one line of text, whitespace folded, within a fixed limit, no secret
confirmed_at       a moment no later than now (CLOCK_SKEW allowed); default now
evidence           ids of memory events that exist
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlgate.claims.model import HALF_LIFE_DAYS, KINDS, parse_timestamp
from sqlgate.engine.database import Database
from sqlgate.engine.framing import counted
from sqlgate.engine.records import utc_timestamp
from sqlgate.errors import InvalidArgument, NotFound
from sqlgate.memory.inputs import event_ids, moment, text_field
from sqlgate.memory.privacy import Redactor
from sqlgate.memory.reading import event_times

__all__ = [
    "CLOCK_SKEW",
    "MAX_CLAIM_CHARS",
    "MAX_ENTITY_CHARS",
    "MAX_RANK",
    "ClaimArguments",
    "NewClaim",
    "checked_confidence",
    "checked_threshold",
]

MAX_ENTITY_CHARS = 200
MAX_CLAIM_CHARS = 2000
MAX_RANK = 1_000_000
CLOCK_SKEW = timedelta(minutes=1)


@dataclass(frozen=True)
class NewClaim:
    """A claim's arguments, checked and cleaned, ready to be written."""

    entity: str
    kind: str
    claim: str
    volatility: str
    confidence: float
    rank: int | None
    confirmed: str
    evidence: list[int]
    now: datetime


def _choice(value: object, name: str, allowed: Sequence[str]) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise InvalidArgument(f"{name} {value!r} is not one of: {', '.join(allowed)}")
    return value


def _unit_interval(value: object, name: str) -> float:
    # compared before any float() conversion: a huge int would overflow it; NaN fails the test
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise InvalidArgument(f"{name} {value!r} must be a number from 0 to 1")
    return float(value)


def checked_confidence(value: object) -> float:
    return _unit_interval(value, "confidence")


def checked_threshold(value: object) -> float:
    return _unit_interval(value, "threshold")


def _rank(value: object, kind: str) -> int | None:
    if value is None:
        return None
    if kind != "priority":
        raise InvalidArgument(f"rank is only for priority claims, not {kind}")
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_RANK:
        raise InvalidArgument(f"rank {value!r} must be a whole number from 1 to {MAX_RANK}")
    return value


def _confirmed_at(value: object, now: datetime) -> str:
    """The stored text of `confirmed_at` (default: now); never later than now."""
    text = moment(value, "confirmed_at")
    if text is None:
        return utc_timestamp(now.timestamp())
    if parse_timestamp(text) > now + CLOCK_SKEW:
        raise InvalidArgument(
            f"confirmed_at={value!r} is in the future; pass when it was last confirmed"
        )
    return text


class ClaimArguments:
    """Checks what an add is given: the texts against the redactor, evidence against the
    memory events of `db`."""

    def __init__(self, db: Database, redactor: Redactor) -> None:
        self.db = db
        self.redactor = redactor

    def text(self, value: object, name: str, limit: int) -> str:
        if isinstance(value, str) and len(value) > limit:  # a fixed limit, not --max-event-chars
            raise InvalidArgument(
                f"{name} is {counted(len(value), 'character')}, over the limit of {limit} for "
                "claims; say it shorter and keep the detail in a memory event (evidence)"
            )
        text = " ".join(text_field(value, name, limit).split())
        redacted = self.redactor.redact(text)
        if redacted.counts:
            raise InvalidArgument(
                f"{name} looks like it holds a secret ({', '.join(redacted.counts)}); claims "
                "are shown everywhere, so leave secrets out"
            )
        return text

    def evidence(self, value: object) -> list[int]:
        if value is None:
            return []
        ids = event_ids(value)
        with self.db.reading_records() as conn:
            known = {int(event_id) for event_id in event_times(conn, ids)}
        missing = [i for i in ids if i not in known]
        if missing:
            raise NotFound(f"evidence names no memory event {', '.join(map(str, missing))}")
        return ids

    def new_claim(
        self,
        clock: Callable[[], datetime],
        entity: object,
        kind: object,
        claim: object,
        volatility: object,
        confidence: object,
        rank: object,
        confirmed_at: object,
        evidence: object = None,
    ) -> NewClaim:
        """The arguments of an add, checked in the order their refusals are given; the
        moment of the add is read from `clock` once the texts are good."""
        clean_kind = _choice(kind, "kind", KINDS)
        clean_volatility = _choice(volatility, "volatility", tuple(HALF_LIFE_DAYS))
        clean_confidence = checked_confidence(confidence)
        clean_rank = _rank(rank, clean_kind)
        clean_entity = self.text(entity, "entity", MAX_ENTITY_CHARS)
        clean_claim = self.text(claim, "claim", MAX_CLAIM_CHARS)
        now = clock()
        confirmed_text = _confirmed_at(confirmed_at, now)
        proof = self.evidence(evidence)
        return NewClaim(
            clean_entity, clean_kind, clean_claim, clean_volatility, clean_confidence,
            clean_rank, confirmed_text, proof, now,
        )  # fmt: skip
