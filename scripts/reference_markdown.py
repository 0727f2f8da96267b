"""Markdown for the generated reference pages (scripts/gen_reference.py): text escaped so
it renders as written, table cells, code spans, docstring paragraphs, headings' anchors."""

from __future__ import annotations

import inspect
import re
from collections.abc import Sequence

__all__ = ["anchor", "cell", "code", "header", "md_text", "paragraphs", "table"]

COMMAND = "python scripts/gen_reference.py"


def header(source: str) -> str:
    """The first line of a generated page: what it is made from, and how to remake it."""
    return f"<!-- generated from {source} by `{COMMAND}`: do not edit; run it again -->\n"


_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.DOTALL)


def md_text(text: str) -> str:
    """Plain text as Markdown: code spans kept, the rest escaped so it renders as written."""
    out: list[str] = []
    last = 0
    for found in _CODE_SPAN.finditer(text):
        out.append(_escape(text[last : found.start()]))
        out.append(found.group(0))
        last = found.end()
    out.append(_escape(text[last:]))
    return "".join(out)


def _escape(text: str) -> str:
    for char, escaped in (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ("*", "\\*"),
                          ("|", "\\|"), ("[", "\\["), ("]", "\\]")):  # fmt: skip
        text = text.replace(char, escaped)
    return text


def cell(text: str) -> str:
    """One table cell: one line, pipes escaped (inside code spans too: the table splits
    on them first)."""
    return " ".join(md_text(text).split()).replace("`|`", "`\\|`") or "—"


def code(value: str) -> str:
    return f"`` {value} ``" if "`" in value else f"`{value}`"


def paragraphs(text: str) -> str:
    """A docstring or description as Markdown paragraphs: a click `\\b` paragraph (kept as
    written) becomes a text block, every other paragraph is one line."""
    blocks = []
    for block in re.split(r"\n\s*\n", inspect.cleandoc(text).split("\f", 1)[0]):
        lines = block.splitlines()
        if lines and lines[0].strip() == "\b":
            blocks.append("```text\n" + "\n".join(lines[1:]) + "\n```")
        elif block.strip():
            blocks.append(md_text(" ".join(block.split())))
    return "\n\n".join(blocks)


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def anchor(title: str) -> str:
    """The id the toc extension gives a heading of this text (letters, digits, dashes)."""
    return re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", title).strip().lower())
