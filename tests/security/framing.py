"""A reader of sqlgate's output grammar, written from docs/security-model.md, not from the code.

It reads a reply the way a careless agent might: every line break any reader knows
(`\\n`, `\\r`, `\\r\\n`, VT, FF, FS/GS/RS, NEL, U+2028, U+2029) ends a line, CSV quotes are
not tracked, and a line counts as the server's when what it starts with, once invisible,
space, control and combining characters and compatibility forms are set aside, is `#`,
`ok:` or a fence tag. Inside a fence (`<data-T>` … `</data-T>`, the same T) everything is data.
"""

from __future__ import annotations

import csv
import io
import json
import re
import unicodedata
from dataclasses import dataclass, field

__all__ = [
    "Reading",
    "csv_rows",
    "inline_value",
    "looks_like_server_line",
    "read_reply",
    "split_lines",
]

_BREAKS = re.compile("\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_OPEN = re.compile(r"<data-([0-9a-f]{8})>")


def split_lines(text: str) -> list[str]:
    return _BREAKS.split(text)


def looks_like_server_line(line: str) -> bool:
    """What a reader might take for a server line: `#`, `ok:` or a fence tag, first thing seen."""
    visible = unicodedata.normalize("NFKC", line)
    start = 0
    while start < len(visible) and (
        visible[start].isspace() or unicodedata.category(visible[start])[0] in "CMZ"
    ):
        start += 1
    return visible[start:].casefold().startswith(("#", "ok:", "<data-", "</data-"))


@dataclass
class Reading:
    """A reply as the grammar reads it.

    `blocks` is the reply in order: ("server", line) for each server line, ("data", text) for
    each fence (its data exactly) and for each run of other lines outside fences (the raw
    text of the run, its inner line breaks as they were).
    """

    server: list[str] = field(default_factory=list)
    fenced: list[str] = field(default_factory=list)
    tokens: list[str] = field(default_factory=list)
    blocks: list[tuple[str, str]] = field(default_factory=list)

    def data_after(self, prefix: str) -> str:
        """The data block right after the first server line starting with `prefix`."""
        for at, (kind, text) in enumerate(self.blocks):
            if kind == "server" and text.startswith(prefix):
                following = self.blocks[at + 1]
                assert following[0] == "data", f"no data after {prefix!r}: {self.blocks}"
                return following[1]
        raise AssertionError(f"no server line starting {prefix!r} in {self.blocks}")


def read_reply(text: str) -> Reading:
    """Split a reply into server lines and data blocks.

    A fence opens on a line that is exactly `<data-T>` (T: 8 hex digits) and closes on the
    next line that is exactly `</data-T>`; its data is the text between the line feed that
    ends the opening line and the line feed that starts the closing one. An unclosed fence
    is an error here.
    """
    reading = Reading()
    position = 0
    token: str | None = None
    data_start = 0
    run: tuple[int, int] | None = None  # span of the current run of other lines

    def close_run() -> None:
        nonlocal run
        if run is not None:
            reading.blocks.append(("data", text[run[0] : run[1]]))
            run = None

    for match in [*_BREAKS.finditer(text), None]:
        end = match.start() if match else len(text)
        line = text[position:end]
        after = match.end() if match else len(text)
        if token is None:
            opened = _OPEN.fullmatch(line)
            if opened:
                close_run()
                token = opened.group(1)
                reading.tokens.append(token)
                assert text[end : end + 1] == "\n", "a fence tag ends with a line feed"
                data_start = end + 1
            elif looks_like_server_line(line):
                close_run()
                reading.server.append(line)
                reading.blocks.append(("server", line))
            else:
                run = (position if run is None else run[0], end)
        elif line == f"</data-{token}>":
            assert text[position - 1] == "\n", "a closing tag starts after a line feed"
            reading.fenced.append(text[data_start : position - 1])
            reading.blocks.append(("data", reading.fenced[-1]))
            token = None
        position = after
    close_run()
    assert token is None, f"fence <data-{token}> is never closed"
    return reading


def csv_rows(body: str) -> list[list[str]]:
    """A CSV body (header and rows, no trailer) as Python's csv module reads it."""
    if not body.endswith("\n"):
        body += "\n"
    return [record or [""] for record in csv.reader(io.StringIO(body, newline=""))]


def inline_value(shown: str) -> str:
    """A stored name inside a server line: a JSON string, or a bare plain word."""
    return str(json.loads(shown)) if shown.startswith('"') else shown
