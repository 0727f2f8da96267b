"""Claims: every claim with its effective confidence now and a plot of its confidence over
time (confirmations from `claims_history`, the decay since, the projection and its
half-life), and the contradictions the rules find now, each with the rule that found it.

Nothing is recorded: the rules run on the claims as stored (`find_contradictions` over the
live ones, as `claims_contradictions` does before it writes state changes), so the page
shows what the tool would find without changing any state.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlgate.service import (
    STALE_THRESHOLD,
    Claim,
    claim_history,
    find_contradictions,
    is_live,
    parse_timestamp,
)
from sqlgate.surfaces.ui.console import Console
from sqlgate.surfaces.ui.html import Markup, el
from sqlgate.surfaces.ui.layout import Page, select, short_text, table
from sqlgate.surfaces.ui.svg import Anchor, confidence_curve

__all__ = ["anchors_of", "claims_page"]

MAX_SHOWN = 200
STATES = ("active", "stale", "contradicted", "retired")


def anchors_of(claim: Claim, history: list[tuple[str, str]]) -> list[Anchor]:
    """The confirmations of `claim` from its history rows (action, detail JSON), oldest
    first; the claim as stored is always the last one."""
    anchors: list[Anchor] = []
    state: dict[str, Any] = {}
    for action, text in history:
        try:
            changes = json.loads(text).get("changes", {})
        except (ValueError, AttributeError):
            continue
        if not isinstance(changes, dict):
            continue
        for name in ("confidence", "volatility", "last_confirmed"):
            value = changes.get(name)
            if action == "add":
                state[name] = value
            elif isinstance(value, list) and len(value) == 2:
                state[name] = value[1]
        anchor = _anchor(state)
        if anchor is not None and anchor not in anchors:
            anchors = [a for a in anchors if a.at != anchor.at] + [anchor]
    current = _anchor({"confidence": claim.confidence, "volatility": claim.volatility,
                       "last_confirmed": claim.last_confirmed})  # fmt: skip
    if current is not None and (not anchors or anchors[-1] != current):
        anchors = [a for a in anchors if a.at < current.at] + [current]
    return sorted(anchors, key=lambda a: a.at)


def _anchor(state: Mapping[str, Any]) -> Anchor | None:
    try:
        return Anchor(parse_timestamp(str(state["last_confirmed"])), float(state["confidence"]),
                      str(state["volatility"]))  # fmt: skip
    except (KeyError, ValueError, TypeError):
        return None


def claims_page(console: Console, query: Mapping[str, str]) -> Page:
    now = console.now()
    claims = console.service.claims.all()  # takes the reader itself
    live = [c for c in claims if is_live(c, now, STALE_THRESHOLD, as_of=False)]
    findings = find_contradictions(live, None)
    wanted_state = query.get("state") if query.get("state") in STATES else None
    shown = [c for c in claims if wanted_state is None or c.state == wanted_state]
    shown.sort(key=lambda c: c.effective(now))
    cut = max(0, len(shown) - MAX_SHOWN)
    shown = shown[:MAX_SHOWN]
    with console.reading() as conn:
        history = claim_history(conn, [c.id for c in shown])
    rows = [_claim_row(c, history[c.id], now) for c in shown]
    form = el("form", {"method": "get", "action": "/claims", "class": "filters"},
              select("state", wanted_state, STATES, "any state"),
              el("button", {"type": "submit"}, "Filter"))  # fmt: skip
    body = [
        el("h2", None, "Contradictions found now"),
        table(("rule", "entities", "claims", "detail"),
              ([f.rule, ", ".join(f.entities), ", ".join(map(str, f.claim_ids)), f.detail]
               for f in findings), empty="no contradictions among the live claims"),
        el("h2", None, "Claims, least confident first"),
        el("p", {"class": "note"},
           f"Effective confidence at {now:%Y-%m-%d %H:%M} UTC. In each plot: dots are "
           "confirmations, the solid line the decay since, the dashed line the projection; "
           "the dotted lines mark half the confirmed confidence and when it gets there "
           "(one half-life)."),
        form,
        table(("id", "entity", "kind", "claim", "state", "effective", "confidence over time"),
              rows, empty="no claims"),
        el("p", {"class": "note"}, f"{cut} more not shown") if cut else None,
    ]  # fmt: skip
    return Page("Claims", "/claims", Markup("".join(x for x in body if x is not None)))


def _claim_row(claim: Claim, history: list[tuple[str, str]], now: datetime) -> list[object]:
    effective = claim.effective(now)
    return [
        claim.id, short_text(claim.entity, 60), claim.kind,
        short_text(claim.claim, 300) if claim.rank is None
        else Markup(short_text(claim.claim, 300) + f" (rank {claim.rank})"),
        el("span", {"class": f"state {claim.state}"}, claim.state),
        el("span", {"class": "low" if effective < STALE_THRESHOLD else "high"},
           f"{effective:.2f}"),
        confidence_curve(anchors_of(claim, history), now),
    ]  # fmt: skip
