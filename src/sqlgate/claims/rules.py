"""Contradictions among live claims, found by three rules. Pure functions of their input.

    duplicate-rank   two or more entities hold live priority claims with the same rank
    status-conflict  one entity holds more than one live status claim
    rank-drop        an entity's observed rank is worse than its claimed rank + 2 in every
                     signal that names it, over the 3 most recent valid periods (invalid
                     periods are skipped; fewer than 3 valid periods never triggers)

`observed` is `{"signals": [{"<entity>": [rank_now, rank_1_period_ago, ...]}, ...],
"validPeriods": [true, ...]}`: every list of ranks as long as `validPeriods`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sqlgate.claims.model import Claim
from sqlgate.engine.framing import counted
from sqlgate.errors import InvalidArgument

__all__ = ["Finding", "Observed", "find_contradictions", "parse_observed"]

RANK_DROP_MARGIN = 2
RANK_DROP_PERIODS = 3


@dataclass(frozen=True)
class Observed:
    signals: tuple[Mapping[str, tuple[int, ...]], ...]
    valid_periods: tuple[bool, ...]


@dataclass(frozen=True)
class Finding:
    rule: str
    entities: tuple[str, ...]
    claim_ids: tuple[int, ...]
    detail: str = ""

    def as_dict(self) -> dict[str, object]:
        return {
            "rule": self.rule,
            "entities": list(self.entities),
            "claim_ids": list(self.claim_ids),
            "detail": self.detail,
        }


_SHAPE = (
    'observed must look like {"signals": [{"acme": [3, 4, 5]}], "validPeriods": [true, true, '
    "true]}: every list of ranks as long as validPeriods"
)


def parse_observed(raw: object) -> Observed:
    """Validate the `observed` argument; InvalidArgument names what is wrong."""
    if not isinstance(raw, Mapping) or set(raw) != {"signals", "validPeriods"}:
        raise InvalidArgument(f"{_SHAPE} (it needs exactly the keys signals and validPeriods)")
    periods = raw["validPeriods"]
    if not isinstance(periods, Sequence) or isinstance(periods, str):
        raise InvalidArgument(f"{_SHAPE} (validPeriods must be a list of true/false)")
    if not all(isinstance(flag, bool) for flag in periods):
        raise InvalidArgument(f"{_SHAPE} (validPeriods must hold only true or false)")
    signals = raw["signals"]
    if not isinstance(signals, Sequence) or isinstance(signals, str):
        raise InvalidArgument(f"{_SHAPE} (signals must be a list of objects)")
    parsed: list[Mapping[str, tuple[int, ...]]] = []
    for index, signal in enumerate(signals):
        if not isinstance(signal, Mapping) or not signal:
            raise InvalidArgument(f"{_SHAPE} (signals[{index}] must be a non-empty object)")
        ranks: dict[str, tuple[int, ...]] = {}
        for entity, values in signal.items():
            where = f"signals[{index}][{entity!r}]"
            if not isinstance(entity, str) or not entity.strip():
                raise InvalidArgument(f"{_SHAPE} (entity names must be text)")
            name = " ".join(entity.split())  # as claims store their entities
            if name in ranks:
                raise InvalidArgument(f"{_SHAPE} (signals[{index}] names {name!r} twice)")
            if not isinstance(values, Sequence) or isinstance(values, str):
                raise InvalidArgument(f"{_SHAPE} ({where} must be a list of ranks)")
            if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in values):
                raise InvalidArgument(f"{_SHAPE} ({where} must hold whole-number ranks from 1)")
            if len(values) != len(periods):
                raise InvalidArgument(
                    f"{_SHAPE} ({where} has {counted(len(values), 'rank')} for "
                    f"{counted(len(periods), 'period')})"
                )
            ranks[name] = tuple(values)
        parsed.append(ranks)
    return Observed(tuple(parsed), tuple(periods))


def _duplicate_ranks(claims: Sequence[Claim]) -> list[Finding]:
    by_rank: dict[int, list[Claim]] = defaultdict(list)
    for claim in claims:
        if claim.kind == "priority" and claim.rank is not None:
            by_rank[claim.rank].append(claim)
    findings = []
    for rank in sorted(by_rank):
        holders = by_rank[rank]
        entities = tuple(sorted({claim.entity for claim in holders}))
        if len(entities) >= 2:
            ids = tuple(sorted(claim.id for claim in holders))
            detail = f"{counted(len(entities), 'entity', 'entities')} claim priority rank {rank}"
            findings.append(Finding("duplicate-rank", entities, ids, detail))
    return findings


def _status_conflicts(claims: Sequence[Claim]) -> list[Finding]:
    by_entity: dict[str, list[Claim]] = defaultdict(list)
    for claim in claims:
        if claim.kind == "status":
            by_entity[claim.entity].append(claim)
    return [
        Finding(
            "status-conflict",
            (entity,),
            tuple(sorted(claim.id for claim in held)),
            f"{entity} has {counted(len(held), 'live status claim')}",
        )
        for entity, held in sorted(by_entity.items())
        if len(held) > 1
    ]


def _rank_drops(claims: Sequence[Claim], observed: Observed) -> list[Finding]:
    recent = [i for i, valid in enumerate(observed.valid_periods) if valid][:RANK_DROP_PERIODS]
    if len(recent) < RANK_DROP_PERIODS:
        return []
    findings = []
    for claim in claims:
        if claim.kind != "priority" or claim.rank is None:
            continue
        series = [signal[claim.entity] for signal in observed.signals if claim.entity in signal]
        if not series:
            continue
        limit = claim.rank + RANK_DROP_MARGIN
        if all(ranks[i] > limit for ranks in series for i in recent):
            seen = "; ".join(", ".join(str(ranks[i]) for i in recent) for ranks in series)
            detail = (
                f"claimed rank {claim.rank}; observed {seen} over the "
                f"{counted(RANK_DROP_PERIODS, 'most recent valid period')} (worse than {limit} "
                "in every signal)"
            )
            findings.append(Finding("rank-drop", (claim.entity,), (claim.id,), detail))
    return findings


def find_contradictions(live: Sequence[Claim], observed: Observed | None) -> list[Finding]:
    """Every finding among `live` claims (the caller decides which claims are live)."""
    findings = _duplicate_ranks(live) + _status_conflicts(live)
    if observed is not None:
        findings += _rank_drops(live, observed)
    return findings
