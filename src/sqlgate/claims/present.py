"""Claims as the agent reads them: CSV for lists, JSON for single answers and findings."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlgate.claims.model import Claim
from sqlgate.claims.store import Decayed, Evaluation
from sqlgate.engine.csvout import csv_line, csv_reply
from sqlgate.engine.framing import counted, one_line_json

__all__ = ["claim_json", "claims_csv", "decayed_csv", "evaluation_json"]


def _json(value: Any) -> str:
    return one_line_json(value)


def claim_json(claim: Claim, at: datetime, **extra: Any) -> str:
    shown = claim.as_dict(at)
    shown["effective_confidence"] = round(claim.effective(at), 2)
    return _json({**extra, **shown})


def claims_csv(claims: Sequence[Claim], at: datetime, cell_chars: int) -> str:
    header = ("id", "entity", "kind", "claim", "rank", "volatility", "confidence", "effective",
              "state", "last_confirmed")  # fmt: skip
    lines = [csv_line(header, cell_chars)]
    for c in claims:
        row = (c.id, c.entity, c.kind, c.claim, c.rank, c.volatility, f"{c.confidence:.2f}",
               f"{c.effective(at):.2f}", c.state, c.last_confirmed)  # fmt: skip
        lines.append(csv_line(row, cell_chars))
    return csv_reply(lines, f"# {counted(len(claims), 'claim')}")


def decayed_csv(
    items: Sequence[Decayed], changes: Sequence[dict[str, Any]], threshold: float, cell_chars: int
) -> str:
    header = ("id", "entity", "kind", "claim", "effective", "last_confirmed", "state")
    lines = [csv_line(header, cell_chars)]
    for item in items:
        c = item.claim
        row = (c.id, c.entity, c.kind, c.claim, f"{item.effective:.2f}", c.last_confirmed,
               c.state)  # fmt: skip
        lines.append(csv_line(row, cell_chars))
    trailer = f"# {counted(len(items), 'claim')} below {threshold:g}, oldest confirmation first"
    marked = [change["id"] for change in changes]
    if marked:
        trailer += f"; marked stale: {', '.join(map(str, marked))}"
    already = [item.claim.id for item in items
               if item.claim.state == "stale" and item.claim.id not in marked]  # fmt: skip
    if already:
        trailer += f"; already stale: {', '.join(map(str, already))}"
    if items:
        trailer += "; claim_confirm(id) if still true, claim_retract(id) if not"
    return csv_reply(lines, trailer)


def evaluation_json(evaluation: Evaluation, as_of: str | None) -> str:
    return _json(
        {
            "findings": [finding.as_dict() for finding in evaluation.findings],
            "state_changes": evaluation.state_changes,
            "evaluated_at": as_of or "now",
        }
    )
