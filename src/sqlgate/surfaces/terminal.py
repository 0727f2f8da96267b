r"""How text read from the database (or another program's file) is shown to a person.

Agents write table names, SQL, reasons, claims, memory, error texts...; a program with the
file can write anything. None of it may reach a terminal as a control sequence (erase a
line, move the cursor, retitle the window, reverse the text that follows), so every CLI
command prints such text through this module:

| function        | for                                  | line feed | tab     | other unsafe |
|-----------------|--------------------------------------|-----------|---------|--------------|
| `visible`       | names, ids, paths, one-line replies  | `\n`      | `\t`    | `\x1b` ...   |
| `one_line`      | SQL, errors, previews in table rows  | a space   | a space | `\x1b` ...   |
| `visible_lines` | a block a person reads (confirm)     | kept      | spaces  | `\x1b` ...   |
| `cell`          | a rich table cell (never markup)     | `\n`      | `\t`    | `\x1b` ...   |
| `json_dumps`    | `--json` output, export lines        | `\n`      | `\t`    | `\u001b` ... |

Unsafe is every character Unicode classes as a control (Cc: C0, DEL, and C1 such as the
one-byte CSI 0x9b), a format character (Cf: bidi overrides and isolates, zero-width
characters, the byte-order mark, tag characters), a line or paragraph separator (Zl, Zp) or
a lone surrogate (Cs). Each is shown as a Python-style escape: `\x1b`, `\u202e`,
`\U000e0041`, and `\n`, `\t`, `\r`. A backslash is shown as itself, so the rendering is for
reading, not a lossless encoding (`--json` is that): every unsafe character is shown, and
nothing else changes. The JSON form escapes the same characters as `\uXXXX`, so it parses to
the same values.
"""

from __future__ import annotations

import json
import os
import re
import sys
import unicodedata
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # rich is imported when a table is printed, not at start-up
    from rich.console import Console
    from rich.text import Text

__all__ = [
    "UNSAFE_CATEGORIES",
    "cell",
    "console",
    "is_terminal",
    "is_unsafe",
    "json_dumps",
    "json_text",
    "one_line",
    "visible",
    "visible_lines",
]

UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
TAB_SIZE = 4  # visible_lines: a tab becomes spaces up to the next multiple of this
_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}
# every character that may be unsafe: the unsafe ones of the Basic Multilingual Plane in
# Unicode 14 (with room around them) and the whole of the other planes (tag characters,
# format controls added later). Each match is then asked of unicodedata: this class only
# makes common text fast (tests/surfaces/test_terminal.py checks it on every code point).
_CANDIDATE = re.compile(
    "[\x00-\x1f\x7f-\x9f\xad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2"
    "\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ud800-\udfff\ufeff\ufff0-\ufffb"
    "\U00010000-\U0010ffff]"
)
_FOLDED = re.compile(r"[ \t\r\n]+")


def is_unsafe(char: str) -> bool:
    """Whether one character must not reach a terminal as itself."""
    return unicodedata.category(char) in UNSAFE_CATEGORIES


def _escape(char: str) -> str:
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _shown(found: re.Match[str]) -> str:
    char = found.group()
    return _escape(char) if is_unsafe(char) else char


def _shown_but_lines(found: re.Match[str]) -> str:
    char = found.group()
    return char if char in "\n\t" or not is_unsafe(char) else _escape(char)


def visible(text: str) -> str:
    """`text` on one line, every unsafe character (line breaks too) as its escape."""
    return _CANDIDATE.sub(_shown, text)


def one_line(text: str, width: int | None = None) -> str:
    """Runs of spaces, tabs and line breaks folded to one space, then `visible`; longer
    than `width` it is cut, never inside an escape, and ends with `…`."""
    folded = _FOLDED.sub(" ", text).strip(" ")
    shown = visible(folded)
    if width is None or len(shown) <= width:
        return shown
    kept: list[str] = []
    room = width - 1
    for char in folded:
        piece = visible(char)
        if len(piece) > room:
            break
        kept.append(piece)
        room -= len(piece)
    return "".join(kept) + "…"


def visible_lines(text: str) -> str:
    """`text` with its line feeds kept as line breaks, tabs as spaces, and every other
    unsafe character (a carriage return too) as its escape."""
    return _CANDIDATE.sub(_shown_but_lines, text).expandtabs(TAB_SIZE)


def _json_escape(char: str) -> str:
    code = ord(char)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000  # a UTF-16 surrogate pair, as JSON spells characters past the BMP
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def json_text(text: str) -> str:
    """JSON text with every unsafe character inside its strings as a `\\uXXXX` escape.

    json.dumps escapes C0 controls but passes DEL, C1 controls and format characters
    through (with ensure_ascii=False); any of them in JSON text is inside a string, where
    the escape stands for the same character. Raw line feeds, tabs and carriage returns
    can only be the layout of indented JSON, and are kept.
    """
    return _CANDIDATE.sub(_json_escaped, text)


def _json_escaped(found: re.Match[str]) -> str:
    char = found.group()
    return char if char in "\n\t\r" or not is_unsafe(char) else _json_escape(char)


def json_dumps(value: Any, **options: Any) -> str:
    """json.dumps (UTF-8 text, not ASCII escapes) made safe for a terminal by `json_text`."""
    return json_text(json.dumps(value, ensure_ascii=False, **options))


def cell(value: object) -> Text:
    """A rich table cell (or title) showing `value` as typed: `visible`, and no markup."""
    from rich.text import Text

    return Text("" if value is None else visible(str(value)))


def console(stderr: bool = False) -> Console:
    """The console tables are printed on: no highlighting of numbers or paths in them."""
    from rich.console import Console

    return Console(stderr=stderr, highlight=False)


def is_terminal(stderr: bool = False) -> bool:
    """Whether stdout (or stderr) is a terminal, as rich decides it: `TTY_COMPATIBLE=1` or
    `0` (or `FORCE_COLOR`) in the environment overrides what it detects.

    A stream that is plainly no terminal (no override, `isatty()` false) is answered without
    importing rich, so a command in a pipe never pays for it; rich decides the rest."""
    if "TTY_COMPATIBLE" not in os.environ and "FORCE_COLOR" not in os.environ:
        isatty = getattr(sys.stderr if stderr else sys.stdout, "isatty", None)
        try:
            if isatty is None or not isatty():
                return False
        except ValueError:  # a closed stream
            return False
    return console(stderr).is_terminal
