"""Memory: the chain's status (verified up to, witnessed, broken at), sessions as a
timeline, search through the same code as the `memory_search` tool, the newest events a
page at a time, and one event in full with its hash and its link to the one before."""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from typing import Any

from sqlgate.errors import SqlgateError
from sqlgate.service import (
    GENESIS,
    counted,
    event_and_neighbours,
    event_times,
    events_by_id,
    head_event,
    newest_events,
)
from sqlgate.surfaces.ui.console import Console
from sqlgate.surfaces.ui.html import Markup, el, href
from sqlgate.surfaces.ui.layout import (
    Page,
    long_text,
    pager,
    session_label,
    session_text,
    short_text,
    table,
    text_input,
    when,
)

__all__ = ["event_page", "memory_page", "search_ids"]

PAGE_ROWS = 50
SESSIONS = 20
LABEL_CHARS = 36  # a session on the timeline: whole up to this, else without its start time
SEARCH_TOP_K = 20


def search_ids(console: Console, words: str) -> tuple[list[tuple[int, str]], str]:
    """(id, score) of the events `memory_search` ranks for `words`, and its trailer or error."""
    try:
        reply = console.service.memory.search(words, SEARCH_TOP_K, None, None, None, None, None)
    except SqlgateError as exc:
        return [], str(exc)
    lines = [line for line in reply.text.splitlines() if line and not line.startswith("#")]
    notes = [line[1:].strip() for line in reply.text.splitlines() if line.startswith("#")]
    found: list[tuple[int, str]] = []
    for record in csv.DictReader(io.StringIO("\n".join(lines))):
        if (record.get("id") or "").isdigit():
            found.append((int(record["id"]), record.get("score") or ""))
    return found, " ".join(notes[:1])


def _chain_card(console: Console, head: int | None) -> Markup:
    watched = console.chain.current(head)
    status = watched.status
    items: list[Markup] = []
    if status is None:
        items.append(el("p", {"class": "state checking"}, "verifying the chain…"))
    elif status.ok:
        items.append(el("p", {"class": "state ok"},
                        f"chain ok: verified up to event {status.head_id or 0} "
                        f"({counted(status.events, 'event')})"))  # fmt: skip
        if status.unconfirmed:
            items.append(el("p", {"class": "note"}, status.unconfirmed))
    else:
        where = "" if status.first_broken_id is None else f" at event {status.first_broken_id}"
        items.append(el("p", {"class": "state broken"}, f"chain BROKEN{where}"))
        items.append(el("p", {"class": "note"}, status.reason or ""))
    try:
        witness = console.service.memory.witness.read()
    except SqlgateError as exc:
        items.append(el("p", {"class": "note"}, f"witness unreadable: {exc}"))
    else:
        if witness is None:
            items.append(el("p", {"class": "note"}, "no witness file yet"))
        else:
            items.append(el("p", None, f"witnessed head: event {witness.head_id} "
                                       f"(hash {witness.head_hash[:16]}…); last verified by a "
                                       f"server: event {witness.verified_id}"))  # fmt: skip
    when = f"checked {watched.checked_at}" if watched.checked_at else ""
    if watched.checking:
        when = (when + "; " if when else "") + "a newer check is running (reload)"
    items.append(el("p", {"class": "note"}, f"newest event {head or 0}; {when}"))
    return el("section", {"class": "card"}, *items)


def _sessions(console: Console, conn: Any) -> list[tuple[str, int, str, str]]:
    """The sessions with the newest events: (session, events, first ts, last ts)."""
    console.sessions.refresh(conn)
    out = []
    for session, count, first, last in console.sessions.newest(SESSIONS):
        ts = event_times(conn, (first, last))
        out.append((session, count, str(ts.get(first, "")), str(ts.get(last, ""))))
    return out


def _timeline(sessions: list[tuple[str, int, str, str]]) -> Markup:
    if not sessions:
        return el("p", {"class": "empty"}, "no sessions yet")
    from sqlgate.service import parse_timestamp

    starts = [parse_timestamp(s[2]) for s in sessions]
    ends = [parse_timestamp(s[3]) for s in sessions]
    lo, hi = min(starts), max(ends)
    span = (hi - lo).total_seconds() or 1.0
    # a shortened sqlgate session keeps its actor (at most 64 characters); other text is cut
    most = LABEL_CHARS + 64
    labels = [f"{session_label(s[0], LABEL_CHARS)[:most]} ({s[1]})" for s in sessions]
    # 10px monospace is about 6px a character: room for the longest label, within bounds
    width, row_h = 960, 18
    label_w = min(480, max(300, 12 + 6 * max(len(label) for label in labels)))
    parts: list[Markup] = [el("title", None, "sessions over time, newest on top")]
    for i, (session, count, first, last) in enumerate(sessions):
        y = 4 + i * row_h
        x0 = label_w + (width - label_w - 8) * (starts[i] - lo).total_seconds() / span
        x1 = label_w + (width - label_w - 8) * (ends[i] - lo).total_seconds() / span
        label = el("text", {"x": 4, "y": y + 12, "class": "label"}, labels[i])
        parts.append(el("a", {"href": href("/memory", {"session": session})}, label))
        bar = {"x": f"{x0:.1f}", "y": y + 3, "width": f"{max(3.0, x1 - x0):.1f}",
               "height": row_h - 6, "class": "span"}  # fmt: skip
        tip = el("title", None, f"{session}: {counted(count, 'event')}, {first} to {last}")
        parts.append(el("rect", bar, tip))
    height = 8 + len(sessions) * row_h
    return el("svg", {"class": "timeline", "viewBox": f"0 0 {width} {height}", "role": "img"},
              *parts)  # fmt: skip


def memory_page(console: Console, query: Mapping[str, str]) -> Page:
    words = (query.get("q") or "").strip()
    session = query.get("session") or ""
    before = query.get("before", "")
    found: list[tuple[int, str]] = []
    note = ""
    if words:
        found, note = search_ids(console, words)
    scores = dict(found)
    with console.reading() as conn:
        head = head_event(conn)
        sessions = _sessions(console, conn)
        if words:
            rows = events_by_id(conn, [i for i, _ in found])
        else:
            below = int(before) if before.isdigit() else None
            rows = newest_events(conn, session, below, PAGE_ROWS + 1)
    more = not words and len(rows) > PAGE_ROWS
    rows = rows[:PAGE_ROWS]
    shown = [
        [el("a", {"href": f"/memory/event/{int(i)}"}, i), when(ts), session_text(s), kind,
         scores.get(int(i), ""), short_text(content, 200)]
        for i, ts, s, kind, content in rows
    ]  # fmt: skip
    form = el("form", {"method": "get", "action": "/memory", "class": "filters"},
              text_input("q", words, "search memory (like memory_search)", 40),
              el("button", {"type": "submit"}, "Search"),
              el("a", {"href": "/memory", "class": "reset"}, "reset"))  # fmt: skip
    title = (f"Search results for {words!r}" if words
             else f"Events of session {session}" if session else "Newest events")  # fmt: skip
    body = [
        _chain_card(console, head),
        el("h2", None, "Sessions (newest 20)"),
        _timeline(sessions),
        el("h2", None, "Events"),
        form,
        el("h3", None, title),
        el("p", {"class": "note"}, note) if note else None,
        table(("id", "time (UTC)", "session", "kind", "score", "content"), shown,
              empty="no events match" if words or session else "no events yet"),
        None if words else pager("/memory", {k: v for k, v in
                                             (("session", session), ("before", before)) if v},
                                 "before", rows[-1][0] if more and rows else None),
    ]  # fmt: skip
    return Page("Memory", "/memory", Markup("".join(x for x in body if x is not None)))


def event_page(console: Console, event_id: int) -> Page | None:
    with console.reading() as conn:
        found = event_and_neighbours(conn, event_id)
    if found is None:
        return None
    row, previous, following = found
    _, ts, session, kind, content, tags, prev_hash, digest = row
    expected = GENESIS if previous is None else previous[1]
    link = (
        "links to the event before"
        if prev_hash == expected
        else "LINK BROKEN: prev_hash is not the hash of the event before"
    )
    facts = [
        ["time (UTC)", ts], ["session", session], ["kind", kind], ["tags", tags],
        ["hash", el("code", None, digest)], ["prev_hash", el("code", None, prev_hash)],
        ["link", link],
    ]  # fmt: skip
    nav = [
        el("a", {"href": f"/memory/event/{int(previous[0])}"}, "« previous") if previous else None,
        el("a", {"href": f"/memory/event/{following}"}, "next »")
        if following is not None else None,
        el("a", {"href": "/memory"}, "all events"),
    ]  # fmt: skip
    body = [
        el("p", {"class": "pager"}, *nav),
        table(("field", "value"), facts),
        el("h2", None, "content"),
        long_text(content),
        el("p", {"class": "note"}, "The hash is recomputed by `sqlgate verify` (the chain "
                                   "status on the Memory page), not by this page."),
    ]  # fmt: skip
    return Page(f"Event {event_id}", "/memory", Markup("".join(x for x in body if x is not None)))
