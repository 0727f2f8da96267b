"""HTML built by the server, every value escaped unless it is `Markup` the server built.

    Markup          a str subclass: HTML this module (or the server's own constants) made
    escape(v)       any value as HTML text: `& < > " '` escaped; control, bidi and other
                    unsafe characters shown as `\\u202e`-style escapes (surfaces/terminal.py)
    el(tag, ...)    one element: tag and attribute names are the server's constants (checked),
                    attribute values are escaped; children are escaped unless Markup
    href(path, q)   a link inside the console: always a path starting with `/`, its query
                    built with urlencode, so no `javascript:` or foreign URL can be formed
    bounded(v, n)   text cut at n characters with a note of how much was cut

Nothing here trusts a value read from the database: agents (and anyone with the file) wrote
it. A template engine is not needed for a dozen pages (DESIGN.md, "Dependencies").
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping
from urllib.parse import urlencode

from sqlgate.surfaces.terminal import visible, visible_lines

__all__ = ["Child", "Markup", "bounded", "el", "escape", "href", "join", "text_block"]

_NAME = re.compile(r"^[a-zA-Z][a-zA-Z0-9-]*$")
_VOID = frozenset({"br", "hr", "img", "input", "link", "meta", "col"})
_URL_ATTRIBUTES = frozenset({"href", "src", "action"})


class Markup(str):
    """HTML the server built; `escape` and `el` pass it through unchanged."""

    __slots__ = ()


Child = object  # a value (escaped), Markup, None (nothing) or an iterable of children


def escape(value: object) -> Markup:
    """`value` as HTML text; Markup passes through, None is empty."""
    if isinstance(value, Markup):
        return value
    if value is None:
        return Markup("")
    return Markup(html.escape(visible(str(value)), quote=True))


def text_block(value: object) -> Markup:
    """Multi-line text (SQL, event content) for a <pre>: line feeds kept, the rest escaped."""
    if value is None:
        return Markup("")
    return Markup(html.escape(visible_lines(str(value)), quote=True))


def join(children: Iterable[Child]) -> Markup:
    return Markup("".join(_render(child) for child in children))


def _render(child: Child) -> str:
    if child is None:
        return ""
    if isinstance(child, (str, int, float)):
        return escape(child)
    if isinstance(child, Iterable):
        return join(child)
    return escape(child)


def _attribute(name: str, value: object) -> str:
    if not _NAME.match(name):
        raise ValueError(f"attribute name {name!r} is not one the console uses")
    if value is None or value is False:
        return ""
    if value is True:
        return f" {name}"
    text = str(value)
    if name in _URL_ATTRIBUTES and not (text.startswith("/") and not text.startswith("//")):
        raise ValueError(f"{name} must be a path inside the console, not {text[:40]!r}")
    if name.startswith("on") or name == "style":
        raise ValueError(f"{name} is not allowed: scripts and styles come from /static only")
    return f' {name}="{html.escape(text, quote=True)}"'


def el(tag: str, attrs: Mapping[str, object] | None = None, *children: Child) -> Markup:
    """`<tag attrs>children</tag>`; `class_` may be written as `class` in attrs."""
    if not _NAME.match(tag):
        raise ValueError(f"tag {tag!r} is not one the console uses")
    shown = "".join(_attribute(name, value) for name, value in (attrs or {}).items())
    if tag in _VOID:
        return Markup(f"<{tag}{shown}>")
    return Markup(f"<{tag}{shown}>{join(children)}</{tag}>")


def href(path: str, query: Mapping[str, object] | None = None) -> str:
    """A console URL: `path` (which must start with one `/`) and its query, empty values
    left out."""
    if not path.startswith("/") or path.startswith("//"):
        raise ValueError(f"console paths start with one '/': {path!r}")
    kept = {k: str(v) for k, v in (query or {}).items() if v is not None and v != ""}
    return f"{path}?{urlencode(kept)}" if kept else path


def bounded(value: object, limit: int) -> tuple[str, int]:
    """(the first `limit` characters of `value` as text, how many characters were cut)."""
    text = "" if value is None else _as_text(value)
    if len(text) <= limit:
        return text, 0
    return text[:limit], len(text) - limit


def _as_text(value: object) -> str:
    if isinstance(value, bytes):
        return "x'" + value.hex() + "'"
    return str(value)
