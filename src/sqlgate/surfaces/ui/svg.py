"""Charts as inline SVG built on the server: no script, every label escaped (`html.el`).

calls_per_hour     stacked bars (ok / refused / error) for consecutive hours
confidence_curve   one claim's effective confidence over time: the past, a marker at
                   now, the projection, and where it reaches half its confidence
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlgate.service import FLOOR, HALF_LIFE_DAYS, OUTCOMES, counted, effective_confidence
from sqlgate.surfaces.ui.html import Markup, el

__all__ = ["Anchor", "HourBucket", "calls_per_hour", "confidence_curve"]


@dataclass(frozen=True)
class HourBucket:
    hour: str  # "2026-12-01T10" (UTC)
    ok: int
    refused: int
    error: int


def calls_per_hour(buckets: Sequence[HourBucket], width: int = 960, height: int = 160) -> Markup:
    """Bars per hour, oldest left; an empty chart says so."""
    title = el("title", None, "calls per hour, by outcome (UTC)")
    if not buckets:
        return el("svg", {"class": "chart", "viewBox": f"0 0 {width} 40", "role": "img"}, title,
                  el("text", {"x": 8, "y": 24, "class": "axis"}, "no calls yet"))  # fmt: skip
    top = max(b.ok + b.refused + b.error for b in buckets) or 1
    plot_h = height - 30
    step = (width - 40) / len(buckets)
    bar_w = max(1.0, step * 0.8)
    parts: list[Markup] = [title]
    for i, bucket in enumerate(buckets):
        x = 36 + i * step
        y = float(plot_h)
        for outcome in OUTCOMES:
            count = getattr(bucket, outcome)
            if not count:
                continue
            h = (plot_h - 14) * count / top
            y -= h
            parts.append(
                el("rect", {"x": f"{x:.1f}", "y": f"{y:.1f}", "width": f"{bar_w:.1f}",
                            "height": f"{h:.1f}", "class": f"bar-{outcome}"},
                   el("title", None, f"{bucket.hour}:00 {outcome}: {count}"))
            )  # fmt: skip
    labels = _hour_labels(buckets, step)
    parts += [
        el("text", {"x": 2, "y": 22, "class": "axis"}, str(top)),
        el("text", {"x": 2, "y": plot_h, "class": "axis"}, "0"),
        el("line", {"x1": 34, "y1": plot_h, "x2": width, "y2": plot_h, "class": "baseline"}),
        *labels,
    ]
    return el("svg", {"class": "chart", "viewBox": f"0 0 {width} {height}", "role": "img"},
              *parts)  # fmt: skip


def _hour_labels(buckets: Sequence[HourBucket], step: float) -> list[Markup]:
    every = max(1, len(buckets) // 8)
    return [
        el("text", {"x": f"{36 + i * step:.1f}", "y": 150, "class": "axis"},
           bucket.hour.replace("T", " ") + "h")
        for i, bucket in enumerate(buckets) if i % every == 0
    ]  # fmt: skip


@dataclass(frozen=True)
class Anchor:
    """A confirmation: from `at`, confidence `confidence` decays at `volatility`'s pace."""

    at: datetime
    confidence: float
    volatility: str


def confidence_curve(
    anchors: Sequence[Anchor], now: datetime, width: int = 320, height: int = 90
) -> Markup:
    """Effective confidence from the first anchor to now (solid) and on to two half-lives
    after now (dashed); the dotted line is half the last confirmed confidence."""
    if not anchors:
        return Markup("")
    last = anchors[-1]
    half_life = timedelta(days=HALF_LIFE_DAYS[last.volatility])
    start = min(anchors[0].at, now)
    end = max(now, last.at) + 2 * half_life
    span = (end - start).total_seconds() or 1.0
    plot_h = height - 14

    def x(moment: datetime) -> float:
        return 4 + (width - 8) * (moment - start).total_seconds() / span

    def y(value: float) -> float:
        return 4 + (plot_h - 4) * (1 - value)

    def value_at(moment: datetime) -> float:
        anchor = anchors[0]
        for candidate in anchors:
            if candidate.at <= moment:
                anchor = candidate
        return effective_confidence(anchor.confidence, anchor.volatility, anchor.at, moment)

    samples = 80
    points = [start + (end - start) * i / samples for i in range(samples + 1)]
    points = sorted({*points, *(a.at for a in anchors), now})
    past = [p for p in points if p <= now]
    future = [p for p in points if p >= now]
    half = max(FLOOR, last.confidence / 2)
    half_at = last.at + half_life
    parts: list[Markup] = [
        el("title", None, "confidence over time; half-life "
                          f"{counted(HALF_LIFE_DAYS[last.volatility], 'day', spec='g')} "
                          f"({last.volatility}); reaches {half:.2f} on {half_at:%Y-%m-%d}"),
        el("line", {"x1": 4, "y1": f"{y(half):.1f}", "x2": width - 4, "y2": f"{y(half):.1f}",
                    "class": "half"}),
        el("line", {"x1": f"{x(half_at):.1f}", "y1": 4, "x2": f"{x(half_at):.1f}",
                    "y2": plot_h, "class": "half"}),
        el("polyline", {"points": _points(past, x, y, value_at), "class": "past"}),
        el("polyline", {"points": _points(future, x, y, value_at), "class": "projected"}),
        el("circle", {"cx": f"{x(now):.1f}", "cy": f"{y(value_at(now)):.1f}", "r": 3,
                      "class": "now"}),
        el("text", {"x": 4, "y": height - 2, "class": "axis"}, f"{start:%Y-%m-%d}"),
        el("text", {"x": width - 70, "y": height - 2, "class": "axis"}, f"{end:%Y-%m-%d}"),
    ]  # fmt: skip
    parts += [
        el("circle", {"cx": f"{x(a.at):.1f}", "cy": f"{y(a.confidence):.1f}", "r": 2,
                      "class": "confirmed"})
        for a in anchors
    ]  # fmt: skip
    return el("svg", {"class": "curve", "viewBox": f"0 0 {width} {height}", "role": "img"},
              *parts)  # fmt: skip


def _points(moments: Sequence[datetime], x: object, y: object, value_at: object) -> str:
    fx, fy, fv = x, y, value_at
    return " ".join(f"{fx(m):.1f},{fy(fv(m)):.1f}" for m in moments)  # type: ignore[operator]
