"""Planning a claims import: which source claims to add or refresh, each checked first.

A claim already present with the same or a later confirmation is left alone, so a re-run
changes nothing. A claim sqlgate cannot hold (a kind, volatility, confidence, rank, text or
time it would refuse) is found before anything is written: by default it refuses the whole
import, with every such claim listed (the first SHOWN_BAD_CLAIMS, then a count); with
`skip_bad` the others are imported and these listed in the report.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlgate.errors import InvalidArgument
from sqlgate.service import (
    HALF_LIFE_DAYS,
    KINDS,
    MAX_CLAIM_CHARS,
    MAX_ENTITY_CHARS,
    MAX_RANK,
    ClaimPlan,
    Redactor,
    counted,
    parse_timestamp,
    utc_timestamp,
)
from sqlgate.surfaces.integrations.importers.landing import (
    CLOCK_SKEW,
    ImportReport,
    epoch_seconds,
    redacted_text,
)
from sqlgate.surfaces.integrations.importers.sources import SourceClaim

__all__ = [
    "SHOWN_BAD_CLAIMS",
    "BadClaim",
    "bad_claims_text",
    "plan_claims",
]


_NOTHING_IMPORTED = "; nothing was imported"
# how many bad claims an error or a report lists one by one; the rest are counted
SHOWN_BAD_CLAIMS = 20


@dataclass(frozen=True)
class BadClaim:
    """A source claim sqlgate cannot hold, and why."""

    ref: str
    problem: str


def _one_of(value: object, name: str, allowed: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise InvalidArgument(f"{name} {value!r} is not one of {', '.join(allowed)}")
    return value


def _claim_text(
    value: object, name: str, limit: int, redactor: Redactor, report: ImportReport
) -> str | None:
    if isinstance(value, str) and len(value) > limit:  # a fixed limit, not --max-event-chars
        raise InvalidArgument(
            f"{name} is {counted(len(value), 'character')}, over the limit of {limit}"
        )
    text = redacted_text(value, name, limit, redactor, report)
    return None if text is None else " ".join(text.split())


def _checked_claim(
    source: SourceClaim, redactor: Redactor, now: datetime, report: ImportReport
) -> ClaimPlan | None:
    """The claim as sqlgate would hold it; None when it is skipped (retired, or nothing
    left once private parts go); InvalidArgument naming the first problem otherwise.

    Counts go to `report` only for a claim that is good (the caller passes a scratch report
    first), so a bad claim leaves no trace in the counts."""
    kind = _one_of(source.kind, "kind", KINDS)
    volatility = _one_of(source.volatility, "volatility", tuple(HALF_LIFE_DAYS))
    confidence = source.confidence
    if (
        isinstance(confidence, bool)
        or not isinstance(confidence, (int, float))
        or not (0 <= confidence <= 1)
    ):
        raise InvalidArgument(f"confidence {confidence!r} is not a number from 0 to 1")
    rank = source.rank if kind == "priority" else None
    if rank is not None and (
        isinstance(rank, bool) or not isinstance(rank, int) or not 1 <= rank <= MAX_RANK
    ):
        raise InvalidArgument(f"rank {rank!r} is not a whole number from 1 to {MAX_RANK}")
    if source.state == "retired":
        report.count(report.skipped, "retired")
        return None
    entity = _claim_text(source.entity, "entity", MAX_ENTITY_CHARS, redactor, report)
    text = _claim_text(source.claim, "claim", MAX_CLAIM_CHARS, redactor, report)
    if entity is None or text is None:
        return None
    confirmed: str | None = None
    if source.confirmed_at is not None:
        try:
            epoch = epoch_seconds(source.confirmed_at, "its confirmation time")
        except InvalidArgument as exc:
            raise InvalidArgument(str(exc).removesuffix(_NOTHING_IMPORTED)) from None
        confirmed = utc_timestamp(epoch)
        if parse_timestamp(confirmed) > now + CLOCK_SKEW:
            report.count(report.skipped, "confirmed_in_future_set_to_now")
            confirmed = None
    return ClaimPlan(entity, kind, text, volatility, float(confidence), rank, confirmed)


def _merge(into: ImportReport, scratch: ImportReport) -> None:
    for name, count in scratch.skipped.items():
        into.count(into.skipped, name, count)
    for name, count in scratch.redacted.items():
        into.count(into.redacted, name, count)


def bad_claims_text(bad: list[BadClaim], total: int) -> str:
    """`claim 7: kind 'x' is not one of ...; claim 9: ...; and 3 more`."""
    shown = "; ".join(f"claim {b.ref}: {b.problem}" for b in bad[:SHOWN_BAD_CLAIMS])
    more = len(bad) - SHOWN_BAD_CLAIMS
    return f"{len(bad)} of {counted(total, 'claim')} cannot be imported: {shown}" + (
        f"; and {more} more" if more > 0 else ""
    )


def plan_claims(
    claims: list[SourceClaim],
    present: dict[tuple[str, str, str], tuple[str, str]],
    redactor: Redactor,
    now: datetime,
    report: ImportReport,
    skip_bad: bool = False,
) -> list[ClaimPlan]:
    """The source claims to add or refresh here, every one checked before anything is
    written. A claim sqlgate cannot hold refuses the whole import, listing every such claim
    (the first SHOWN_BAD_CLAIMS, then a count); with `skip_bad` they are left out and
    listed in `report.bad` instead."""
    chosen: dict[tuple[str, str, str], ClaimPlan] = {}
    bad: list[BadClaim] = []
    for source in claims:
        scratch = ImportReport(report.source, report.path, None)
        try:
            checked = _checked_claim(source, redactor, now, scratch)
        except InvalidArgument as exc:
            bad.append(BadClaim(source.ref, str(exc)))
            continue
        _merge(report, scratch)
        if checked is None:
            continue
        key = (checked.entity, checked.kind, checked.claim)
        here = present.get(key)
        if here is not None and here[0] == "retired":
            report.count(report.skipped, "retired_here")
            continue
        if here is not None and (checked.confirmed_at is None or here[1] >= checked.confirmed_at):
            report.count(report.skipped, "already_here")
            continue
        chosen[key] = checked
    if bad and not skip_bad:
        raise InvalidArgument(
            f"{report.path}: {bad_claims_text(bad, len(claims))}; nothing was imported. Fix "
            "them in the source, or pass --skip-bad to import the other claims and list these"
        )
    if bad:
        report.count(report.skipped, "bad", len(bad))
        report.bad = [{"ref": b.ref, "problem": b.problem} for b in bad]
    return list(chosen.values())
