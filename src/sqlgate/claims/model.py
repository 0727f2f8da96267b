"""Claims: beliefs about entities whose confidence decays with time since confirmation.

    kind          priority (may carry a rank), status, fact, relationship
    volatility    stable: half-life 365 days · slow: 30 days · volatile: 7 days
    effective     confidence × 0.5 ** (days since last confirmation / half-life), never
                  below 0.05; a claim confirmed after the moment asked about counts as
                  freshly confirmed
    state         active · stale · contradicted · retired (retired is final)
    live          active or contradicted, and not below the staleness threshold; when
                  asking "as of" a moment, any claim not retired and not below it

Everything here is pure: the moment is always passed in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from datetime import datetime, timezone

__all__ = [
    "CLAIM_FIELDS",
    "FLOOR",
    "HALF_LIFE_DAYS",
    "KINDS",
    "STALE_THRESHOLD",
    "STATES",
    "Claim",
    "effective_confidence",
    "is_live",
    "parse_timestamp",
]

KINDS = ("priority", "status", "fact", "relationship")
HALF_LIFE_DAYS = {"stable": 365.0, "slow": 30.0, "volatile": 7.0}
STATES = ("active", "stale", "contradicted", "retired")
FLOOR = 0.05
STALE_THRESHOLD = 0.5  # what "live" means when no threshold is asked for
SECONDS_PER_DAY = 86_400.0


def parse_timestamp(text: str) -> datetime:
    """A stored timestamp (`2026-01-01T00:00:00.000Z`) as an aware UTC datetime."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(timezone.utc)


def effective_confidence(
    confidence: float, volatility: str, last_confirmed: datetime, at: datetime
) -> float:
    """Confidence halved once per half-life since the last confirmation, floored at 0.05."""
    days = max(0.0, (at - last_confirmed).total_seconds() / SECONDS_PER_DAY)
    decayed = confidence * math.pow(0.5, days / HALF_LIFE_DAYS[volatility])
    return max(FLOOR, decayed)


@dataclass(frozen=True)
class Claim:
    id: int
    entity: str
    kind: str
    claim: str
    volatility: str
    confidence: float
    rank: int | None
    state: str
    created_at: str
    last_confirmed: str
    evidence: tuple[int, ...]

    def effective(self, at: datetime) -> float:
        return effective_confidence(
            self.confidence, self.volatility, parse_timestamp(self.last_confirmed), at
        )

    def as_dict(self, at: datetime) -> dict[str, object]:
        """The claim's fields in order, the effective confidence (at `at`) after the stored
        one, evidence as a list: what JSON answers and history rows show."""
        shown: dict[str, object] = {}
        for name in CLAIM_FIELDS:
            shown[name] = getattr(self, name)
            if name == "confidence":
                shown["effective_confidence"] = round(self.effective(at), 4)
        shown["evidence"] = list(self.evidence)
        return shown


# the claim's fields, in the order of the dataclass: the one list the claims table's
# columns, the store's SQL, its row mapping and `as_dict` are built from
CLAIM_FIELDS = tuple(f.name for f in fields(Claim))


def is_live(claim: Claim, at: datetime, threshold: float, *, as_of: bool) -> bool:
    """Whether a claim counts for the rules at moment `at`.

    At the present, stored states matter (only active and contradicted claims are live);
    asked "as of" a moment, stored stale/contradicted states are ignored.
    """
    if claim.state == "retired":
        return False
    if not as_of and claim.state not in ("active", "contradicted"):
        return False
    return claim.effective(at) >= threshold
