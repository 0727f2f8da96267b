"""The page every view shares: head (CSS and the one script from /static), the nav bar,
and small building blocks (tables, a pager, cut-text notes, filter forms)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from sqlgate.service import counted
from sqlgate.surfaces.sessions import short_session
from sqlgate.surfaces.ui.html import Child, Markup, bounded, el, escape, href, text_block

__all__ = [
    "NAV",
    "NOT_RECORDED",
    "Page",
    "actor_link",
    "copy_button",
    "cut_note",
    "long_text",
    "page",
    "pager",
    "select",
    "session_label",
    "session_text",
    "short_text",
    "table",
    "text_input",
    "when",
]

NAV = (
    ("/", "Activity"),
    ("/destructive", "Destructive calls"),
    ("/memory", "Memory"),
    ("/claims", "Claims"),
    ("/tables", "Tables"),
)
SHORT_CHARS = 140  # a cell in a list: one line, cut
SESSION_CHARS = 40  # a session in a list: whole up to this, else without its start time
TITLE_CHARS = 400  # a tooltip's text: cut past this
NOT_RECORDED = "-"  # the actor of a row that names none (written before migration 9)
LONG_CHARS = 20_000  # a statement, error or event in full: cut past this


@dataclass(frozen=True)
class Page:
    title: str
    path: str  # the nav entry that is current
    body: Markup


def page(view: Page, db_name: str) -> str:
    nav = el("nav", None,
             el("span", {"class": "brand"}, "sqlgate"),
             *(el("a", {"href": path, "class": "current" if path == view.path else None}, name)
               for path, name in NAV),
             el("span", {"class": "db", "title": db_name}, db_name))  # fmt: skip
    head = el("head", None,
              Markup('<meta charset="utf-8">'),
              el("meta", {"name": "viewport", "content": "width=device-width, initial-scale=1"}),
              el("meta", {"name": "referrer", "content": "no-referrer"}),
              el("title", None, f"{view.title} · sqlgate"),
              el("link", {"rel": "icon", "href": "/static/favicon.svg", "type": "image/svg+xml"}),
              el("link", {"rel": "stylesheet", "href": "/static/console.css"}),
              el("script", {"src": "/static/console.js", "defer": True}))  # fmt: skip
    body = el("body", None, nav, el("main", None, el("h1", None, view.title), view.body))
    return "<!doctype html>\n" + el("html", {"lang": "en"}, head, body)


def cut_note(cut: int) -> Markup:
    if not cut:
        return Markup("")
    return el("span", {"class": "cut"}, f"…[+{counted(cut, 'char', spec=',')} not shown]")


def short_text(value: object, limit: int = SHORT_CHARS) -> Markup:
    """One line of a list cell: folded whitespace, cut at `limit` with a note."""
    text, cut = bounded(value, limit)
    return Markup(escape(" ".join(text.split())) + cut_note(cut))


def actor_link(actor: object) -> Markup:
    """An actor, a link to the activity of its calls; `-` (the filter's own value for
    them) when none was recorded, never someone's name."""
    name = NOT_RECORDED if actor is None else str(actor)
    return el("a", {"href": href("/", {"actor": name})}, short_text(name, 80))


def session_label(session: object, limit: int = SESSION_CHARS) -> str:
    """A session as a list shows it: whole when it has at most `limit` characters, else
    without sqlgate's start time, its actor and connection kept (`surfaces.sessions`)."""
    text = "" if session is None else str(session)
    return text if len(text) <= limit else short_session(text)


def session_text(session: object, limit: int = SESSION_CHARS) -> Markup:
    """A session in a list cell (`session_label`), the whole session as its tooltip. An
    actor is at most 64 characters, so a shortened sqlgate session is never cut; any other
    long text is, with a note."""
    text = "" if session is None else str(session)
    title, _ = bounded(text, TITLE_CHARS)
    return el("span", {"class": "session", "title": title},
              short_text(session_label(text, limit), limit + 64))  # fmt: skip


def long_text(value: object, limit: int = LONG_CHARS) -> Markup:
    """A block (statement, event content) in a <pre>, cut at `limit` with a note."""
    text, cut = bounded(value, limit)
    return el("pre", None, text_block(text), cut_note(cut))


def table(
    headers: Sequence[str], rows: Iterable[Sequence[Child]], *, empty: str = "nothing here"
) -> Markup:
    body = [el("tr", None, *(el("td", None, cell) for cell in row)) for row in rows]
    if not body:
        return el("p", {"class": "empty"}, empty)
    head = el("thead", None, el("tr", None, *(el("th", None, h) for h in headers)))
    return el("table", None, head, el("tbody", None, *body))


def pager(path: str, query: Mapping[str, object], key: str, next_value: object | None) -> Markup:
    """`newer` back to the first page, `older` on to the page after `next_value`."""
    links: list[Markup] = []
    if query.get(key):
        first = {k: v for k, v in query.items() if k != key}
        links.append(el("a", {"href": href(path, first)}, "« newest"))
    if next_value is not None:
        links.append(el("a", {"href": href(path, {**query, key: next_value})}, "older »"))
    return el("p", {"class": "pager"}, *links)


def text_input(name: str, value: str | None, placeholder: str, size: int = 18) -> Markup:
    return el("input", {"type": "search", "name": name, "value": value or "",
                        "placeholder": placeholder, "size": size})  # fmt: skip


def select(
    name: str, value: str | None, choices: Sequence[str], blank: str,
    labels: Mapping[str, str] | None = None,
) -> Markup:  # fmt: skip
    """A filter's select: `blank` for none, then each choice (shown as its label, if any)."""
    options = [el("option", {"value": ""}, blank)]
    options += [el("option", {"value": c, "selected": c == value}, (labels or {}).get(c, c))
                for c in choices]  # fmt: skip
    return el("select", {"name": name}, *options)


def copy_button(text: str) -> Markup:
    """A button /static/console.js wires to copy `text` (a data attribute, escaped)."""
    return el("button", {"type": "button", "class": "copy-button", "data-copy": text}, "copy")


def when(ts: object) -> Markup:
    """A stored timestamp, shorter (`2026-12-01 10:02:03`), the full text as its tooltip."""
    text = "" if ts is None else str(ts)
    return el("span", {"class": "ts", "title": text}, text[:19].replace("T", " "))
