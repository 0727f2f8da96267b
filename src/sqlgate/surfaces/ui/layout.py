"""The page every view shares: head (CSS and the one script from /static), the nav bar,
and small building blocks (tables, a pager, cut-text notes, filter forms)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from sqlgate.surfaces.ui.html import Child, Markup, bounded, el, escape, href, text_block

__all__ = [
    "NAV",
    "Page",
    "copy_button",
    "cut_note",
    "long_text",
    "page",
    "pager",
    "select",
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
    return el("span", {"class": "cut"}, f"…[+{cut:,} chars not shown]")


def short_text(value: object, limit: int = SHORT_CHARS) -> Markup:
    """One line of a list cell: folded whitespace, cut at `limit` with a note."""
    text, cut = bounded(value, limit)
    return Markup(escape(" ".join(text.split())) + cut_note(cut))


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


def select(name: str, value: str | None, choices: Sequence[str], blank: str) -> Markup:
    options = [el("option", {"value": ""}, blank)]
    options += [el("option", {"value": c, "selected": c == value}, c) for c in choices]
    return el("select", {"name": name}, *options)


def copy_button(text: str) -> Markup:
    """A button /static/console.js wires to copy `text` (a data attribute, escaped)."""
    return el("button", {"type": "button", "class": "copy-button", "data-copy": text}, "copy")


def when(ts: object) -> Markup:
    """A stored timestamp, shorter (`2026-12-01 10:02:03`), the full text as its tooltip."""
    text = "" if ts is None else str(ts)
    return el("span", {"class": "ts", "title": text}, text[:19].replace("T", " "))
