"""Output framing: stored text never produces a line the agent could take for the server's.

The grammar (docs/security-model.md, "Output framing"): the server's own lines start with
`#` (trailers, section and event headers, the resume context's status lines), or are the
`ok:` line that opens a write's reply, or are fence tags. Data (cells, names, memory
content, summaries, stored SQL) is printed so that no line of it *looks like* one of those:

- a CSV row's first cell is quoted when it would start like a server line (csvout), so a
  row never does;
- a block of data in which some line still would (a multi-line cell, memory content, a
  checkpoint summary, stored SQL) is fenced between `<data-T>` and `</data-T>` lines, where T
  is random and absent from the data, so the data cannot close the fence early;
- a stored name or id inside a server line is shown bare only when it is a plain word, else
  as a JSON string on one line (`inline`).

"Line" means what any reader may split on: `\\n`, `\\r`, VT, FF, FS, GS, RS, NEL, U+2028,
U+2029. "Looks like" ignores what a reader may not see or may skip: leading whitespace,
control, format (zero-width) and combining characters, and compatibility forms (`＃`, `ｏｋ：`).

Every count a server line, message or console shows reads as English: `counted` gives the
number with its noun in the number the count takes (`# 1 row`, `# 0 rows`, `ok: 2 rows
affected`); machine-readable output (JSON, TSV keys) never holds these words.
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from typing import Any

__all__ = [
    "FENCE_BYTES",
    "LINE_BREAKS",
    "FramedReply",
    "counted",
    "data_bytes",
    "fence",
    "fence_token",
    "inline",
    "looks_like_server_line",
    "needs_fence",
    "one_line",
    "one_line_json",
]

# every character str.splitlines() breaks on; `\r\n` is one break
LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
_BREAK = re.compile(f"[{LINE_BREAKS}]")
_MARKS = ("#", "ok:", "<data-", "</data-")
_ASCII_SKIP = "".join(map(chr, range(33))) + "\x7f"  # space and the ASCII control characters
_PLAIN_WORD = re.compile(r"[\w.:+/@-]+")
# every line break as an escape a reader sees (`\n`, `\u2028`), for text kept on one line
_ESCAPED_BREAKS = str.maketrans(
    {"\n": "\\n", "\r": "\\r", "\u2028": "\\u2028", "\u2029": "\\u2029"}
    | {char: f"\\x{ord(char):02x}" for char in "\x0b\x0c\x1c\x1d\x1e\x85"}
)
# the line breaks json.dumps(ensure_ascii=False) leaves raw
_JSON_BREAKS = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})
TOKEN_HEX = 8
FENCE_BYTES = len(f"<data-{'0' * TOKEN_HEX}>\n\n</data-{'0' * TOKEN_HEX}>")


def _new_token() -> str:
    return os.urandom(TOKEN_HEX // 2).hex()  # as secrets.token_hex, without importing it


def looks_like_server_line(line: str) -> bool:
    """Whether `line`, read by eye, starts like a server line: `#`, `ok:` or a fence tag."""
    head = line.lstrip(_ASCII_SKIP)
    if head[:8].isascii():  # NFKC leaves ASCII as it is (a combining mark after it aside)
        return head[:7].lower().startswith(_MARKS)
    # a non-ASCII start: compare the compatibility form, past what a reader may not see
    visible = unicodedata.normalize("NFKC", head)
    start = 0
    while start < len(visible) and (
        visible[start].isspace() or unicodedata.category(visible[start])[0] in "CMZ"
    ):
        start += 1
    return visible[start : start + 7].casefold().startswith(_MARKS)


def needs_fence(text: str) -> bool:
    """Whether some line of `text` looks like a server line."""
    return any(looks_like_server_line(line) for line in _BREAK.split(text))


def fence_token(*texts: str) -> str:
    """A random token that occurs in none of `texts`: the data cannot spell the closing tag."""
    while True:
        token = _new_token()
        if not any(token in text for text in texts):
            return token


def fence(text: str, token: str) -> str:
    """`text` between `<data-T>` and `</data-T>` lines; the data is exactly `text`."""
    return f"<data-{token}>\n{text}\n</data-{token}>"


def data_bytes(text: str) -> int:
    """UTF-8 bytes `text` takes in a reply, its fence included when it needs one."""
    return len(text.encode()) + (FENCE_BYTES if needs_fence(text) else 0)


def inline(text: str) -> str:
    """A stored name or id inside a server line: bare when a plain word, else a JSON string."""
    if _PLAIN_WORD.fullmatch(text):
        return text
    return json.dumps(text, ensure_ascii=False).translate(_JSON_BREAKS)


def one_line(text: str) -> str:
    """`text` with its line breaks written as escapes: a message that quotes stored text."""
    return text.translate(_ESCAPED_BREAKS)


def counted(count: float, noun: str, plural: str | None = None, *, spec: str = "") -> str:
    """`count` and `noun`, the noun singular when the count is one (or minus one) and plural
    otherwise: `1 row`, `0 rows`, `2 rows`. The plural is `noun` + "s" unless `plural` says
    it (`counted(n, "match", "matches")`, `counted(n, "row was", "rows were")`); `spec`
    formats the number (`","` for `1,024 bytes`, `"+d"` for `+1 row`)."""
    word = noun if abs(count) == 1 else noun + "s" if plural is None else plural
    return f"{count:{spec}} {word}"


def abridged(text: str, most: int = 60, keep: int = 40) -> str:
    """`text` if at most `most` characters, else its first `keep` and its length: a message
    that quotes an agent's text back does not cost it that text again."""
    return text if len(text) <= most else f"{text[:keep]}… ({counted(len(text), 'character')})"


def one_line_json(value: Any) -> str:
    """`value` as JSON on one line, whatever line separators its strings hold."""
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": ")).translate(_JSON_BREAKS)


class FramedReply:
    """A reply built from server text and data blocks, joined by line breaks.

    Data blocks that need it are fenced, all with one token, chosen when rendering.
    """

    def __init__(self) -> None:
        self._parts: list[tuple[str, bool]] = []

    def server(self, text: str) -> FramedReply:
        """The server's own line(s), as they are (a stored value in them goes through inline)."""
        self._parts.append((text, False))
        return self

    def data(self, text: str) -> FramedReply:
        """Stored text, fenced if a line of it looks like a server line."""
        self._parts.append((text, True))
        return self

    def render(self) -> str:
        parts = [(text, is_data and needs_fence(text)) for text, is_data in self._parts]
        fenced = [text for text, must in parts if must]
        if not fenced:
            return "\n".join(text for text, _ in parts)
        token = fence_token(*fenced)
        return "\n".join(fence(text, token) if must else text for text, must in parts)
