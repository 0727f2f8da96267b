"""Activity: the audit log newest first (filters, keyset pages, each call expandable), calls
per hour by outcome, `query_errors`, and `query_patterns` with a ready `create_view` call.

Outcomes: ok, refused or error, as the audit log's reader decides them for every surface. Pages
go back with `before=<id>` (keyset on the primary key, never OFFSET), so the 1000th page
costs what the first does.

Each call shows its actor (who made it, issue 22; `-` for a row written before actors were
recorded). The actor filter takes an actor as recorded (the select lists them) and walks
the index `query_log_by_actor (actor, ts)`: its pages are newest first by time, then id,
and go back from the time of the `before` row, so a page of one actor's calls reads that
page and not all of the actor's calls.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from sqlgate.service import (
    AUDIT_COLUMNS,
    OUTCOMES,
    AuditFilter,
    call_outcome,
    counted,
    json_value,
    moment,
    parse_timestamp,
)
from sqlgate.surfaces.ui.console import Console
from sqlgate.surfaces.ui.html import Markup, el, href
from sqlgate.surfaces.ui.layout import (
    NOT_RECORDED,
    Page,
    actor_link,
    copy_button,
    long_text,
    pager,
    select,
    session_text,
    short_text,
    table,
    text_input,
    when,
)
from sqlgate.surfaces.ui.svg import HourBucket, calls_per_hour

__all__ = [
    "OUTCOMES",
    "activity_page",
    "audit_filter",
    "errors_page",
    "patterns_page",
    "suggested_view",
]

PAGE_ROWS = 50
CHART_HOURS = 48
_ERROR_COLUMNS = ("id", "ts", "actor", "session", "tool", "query", "error", "duration_ms")
FILTERS = ("actor", "session", "tool", "outcome", "since", "until")


def audit_filter(query: Mapping[str, str]) -> AuditFilter:
    """The calls the activity filters in `query` let by (an empty value lets every call by);
    bad values of `since`/`until` raise InvalidArgument, an unknown outcome is ignored. With
    an actor, pages go through its index (the module's docstring)."""
    actor = query.get("actor") or None
    outcome = query.get("outcome")
    before = query.get("before", "")
    return AuditFilter(
        actor=None if actor == NOT_RECORDED else actor, unrecorded=actor == NOT_RECORDED,
        by_actor_index=True, session=query.get("session") or None,
        tool=query.get("tool") or None, outcome=outcome if outcome in OUTCOMES else None,
        since=moment(query.get("since") or None, "since"),
        until=moment(query.get("until") or None, "until", end_of_day=True),
        before=int(before) if before.isdigit() else None,
    )  # fmt: skip


def activity_page(console: Console, query: Mapping[str, str]) -> Page:
    filters = audit_filter(query)
    with console.reading() as conn:
        rows = console.audit.rows(conn, filters, AUDIT_COLUMNS, PAGE_ROWS + 1)
        console.summary.refresh(conn)
    tools = console.summary.known_tools()
    actors = console.summary.known_actors()
    buckets = _hours(console)
    more = len(rows) > PAGE_ROWS
    rows = rows[:PAGE_ROWS]
    shown = {k: v for k, v in query.items() if k in FILTERS}
    form = el("form", {"method": "get", "action": "/", "class": "filters"},
              select("actor", query.get("actor"), actors, "any actor",
                     {NOT_RECORDED: "- (not recorded)"}),
              text_input("session", query.get("session"), "session"),
              select("tool", query.get("tool"), tools, "any tool"),
              select("outcome", query.get("outcome"), OUTCOMES, "any outcome"),
              text_input("since", query.get("since"), "since (2026-12-01)", 16),
              text_input("until", query.get("until"), "until", 16),
              el("button", {"type": "submit"}, "Filter"),
              el("a", {"href": "/", "class": "reset"}, "reset"))  # fmt: skip
    body = [
        el("p", {"class": "links"}, el("a", {"href": "/errors"}, "query_errors"), " · ",
           el("a", {"href": "/patterns"}, "query_patterns")),
        el("h2", None, f"Calls per hour, last {counted(CHART_HOURS, 'hour')} of activity (UTC)"),
        calls_per_hour(buckets),
        el("p", {"class": "legend"}, *(el("span", {"class": f"key-{o}"}, o) for o in OUTCOMES)),
        el("h2", None, "Audit log, newest first"),
        form,
        table(("id", "time (UTC)", "actor", "session", "tool", "outcome", "rows", "ms", "call"),
              (_call_row(row) for row in rows), empty="no calls match"),
        pager("/", shown | ({"before": query["before"]} if query.get("before") else {}),
              "before", rows[-1][0] if more and rows else None),
    ]  # fmt: skip
    return Page("Activity", "/", Markup("".join(body)))


def _call_row(row: tuple[Any, ...]) -> list[object]:
    call_id, ts, actor, session, tool, text, ok, count, error, ms, raw = row
    detail = json_value(raw)
    outcome = call_outcome(bool(ok), detail)
    summary = error if outcome != "ok" and error else text or _detail_line(detail)
    params = detail.get("params") if isinstance(detail, dict) else None
    parts = [
        el("summary", None, short_text(summary)),
        el("h4", None, "statement"), long_text(text if text else "(none)"),
        el("h4", None, "parameters"),
        long_text(params if params is not None else "(none recorded)"),
    ]  # fmt: skip
    if error:
        parts += [el("h4", None, "error"), long_text(error)]
    parts += [el("h4", None, "detail"), long_text(_pretty(detail))]
    return [
        call_id, when(ts), actor_link(actor),
        el("a", {"href": href("/", {"session": session})}, session_text(session)),
        tool, el("span", {"class": f"outcome {outcome}"}, outcome), count,
        None if ms is None else f"{ms:.1f}",
        el("details", None, *parts),
    ]  # fmt: skip


def _detail_line(detail: Any) -> str:
    if isinstance(detail, dict):
        return " ".join(f"{k}={v}" for k, v in detail.items() if v is not None and k != "params")
    return "" if detail is None else str(detail)


def _pretty(detail: Any) -> str:
    if detail is None:
        return "(none)"
    if isinstance(detail, (dict, list)):
        return json.dumps(detail, ensure_ascii=False, indent=2)
    return str(detail)


def _hours(console: Console) -> list[HourBucket]:
    """Calls per hour over the CHART_HOURS hours up to the newest call's hour."""
    newest = console.summary.newest_hour()
    if newest is None:
        return []
    last_hour = parse_timestamp(f"{newest}:00:00.000Z")
    labels = [
        (last_hour - timedelta(hours=CHART_HOURS - 1 - i)).strftime("%Y-%m-%dT%H")
        for i in range(CHART_HOURS)
    ]
    counts = console.summary.hour_counts(labels)
    return [HourBucket(label, *count) for label, count in zip(labels, counts, strict=True)]


def errors_page(console: Console, query: Mapping[str, str]) -> Page:
    """The server view query_errors, newest first, a page at a time."""
    before = query.get("before", "")
    filters = AuditFilter(failed=True, before=int(before) if before.isdigit() else None)
    with console.reading() as conn:
        rows = console.audit.rows(conn, filters, _ERROR_COLUMNS, PAGE_ROWS + 1)
    more = len(rows) > PAGE_ROWS
    rows = rows[:PAGE_ROWS]
    shown = [
        [i, when(ts), actor_link(actor), session_text(s), tool,
         el("details", None, el("summary", None, short_text(err)), long_text(q or "(none)")),
         None if ms is None else f"{ms:.1f}"]
        for i, ts, actor, s, tool, q, err, ms in rows
    ]  # fmt: skip
    body = [
        el("p", None, "The server view ", el("code", None, "query_errors"),
           ": every failed call (refused or failed), newest first."),
        table(("id", "time (UTC)", "actor", "session", "tool", "error (statement inside)", "ms"),
              shown,
              empty="no failed calls"),
        pager("/errors", {"before": before} if before else {}, "before",
              rows[-1][0] if more and rows else None),
    ]  # fmt: skip
    return Page("query_errors", "/", Markup("".join(body)))


_VIEW_NAME = re.compile(r"[^a-z0-9]+")


def suggested_view(fingerprint: str, example: str) -> str:
    """A `create_view` call an agent (or a person) can paste: the example as the view."""
    words = _VIEW_NAME.sub("_", fingerprint.lower()).strip("_").split("_")
    name = "_".join(w for w in words if w and not w.isdigit())[:40].strip("_") or "saved_query"
    return (
        f"create_view(name={json.dumps('v_' + name)}, select_sql={json.dumps(example)}, "
        f"description={json.dumps('saved from query_patterns: ' + fingerprint[:80])})"
    )


def patterns_page(console: Console, query: Mapping[str, str]) -> Page:
    """The server view query_patterns: repeated statement shapes, each with a view to save."""
    with console.reading() as conn:
        console.summary.refresh(conn)
    shown = []
    for found in console.summary.repeated(100):
        fingerprint, calls, failures = found.fingerprint, found.calls, found.failures
        last, example = found.last_used, found.example
        select_like = str(example or "").lstrip().lower().startswith(("select", "with"))
        suggestion = suggested_view(str(fingerprint), str(example or "")) if select_like else None
        shown.append([
            el("details", None, el("summary", None, short_text(fingerprint)),
               long_text(example or "")),
            calls, failures, when(last), short_text(", ".join(found.actors_sorted()) or "-"),
            None if suggestion is None else el("div", {"class": "copy"},
                                               el("code", None, short_text(suggestion, 400)),
                                               copy_button(suggestion)),
        ])  # fmt: skip
    body = [
        el("p", None, "The server view ", el("code", None, "query_patterns"),
           " (the console keeps its figures up to date as calls arrive): statement shapes "
           "the agent ran more than once. A repeated SELECT is a view waiting to be saved."),
        table(("shape (example inside)", "calls", "failures", "last used", "actors",
               "save it as a view"),
              shown, empty="no statement shape was repeated yet"),
    ]  # fmt: skip
    return Page("query_patterns", "/", Markup("".join(body)))
