"""Results as CSV: the format agents read most cheaply.

Header row, RFC 4180 quoting (only where needed), NULL as an empty cell and the empty
string as `""`, blobs as `x'hex'`, long cells cut with `…[+K chars]`, then one trailer
line: `# N rows`, or `# N rows (truncated: row limit L)` / `(truncated: B bytes)`.

Framing (engine/framing.py): a row's first cell is quoted when it would start like a server
line (`#`, `ok:`, a fence tag), so no row starts like one; when a line that starts inside a
cell would (after any line break a reader may know: LF, CR, VT, FF, FS, GS, RS, NEL, U+2028,
U+2029), the rows are fenced between `<data-T>` lines.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from sqlgate.engine.framing import (
    FramedReply,
    fence,
    fence_token,
    looks_like_server_line,
    needs_fence,
)
from sqlgate.engine.limits import ResultCaps

__all__ = ["CsvResult", "csv_cell", "csv_line", "csv_reply", "render_csv"]

_NEEDS_QUOTES = frozenset(',"\r\n')
# what no server line starts with, even past unseen characters: most first cells
_PLAIN_START = frozenset(string.ascii_letters + string.digits + "-.") - frozenset("oO")
_ASCII_RARE_BREAKS = "\x0b\x0c\x1c\x1d\x1e"
_RARE_BREAKS = re.compile(f"[{_ASCII_RARE_BREAKS}\x85\u2028\u2029]")
# value types whose cell is `str(value)` (None: empty) unless it needs quotes or a cut
_PLAIN_TYPES = frozenset({int, float, str, type(None)})


def _cut(text: str, limit: int, unit: str = "chars") -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}…[+{len(text) - limit} {unit}]"


def _quoted(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def _starts_like_server(cell: str) -> bool:
    """A row's first cell, as printed, would make the row start like a server line."""
    return cell[:1] not in _PLAIN_START and looks_like_server_line(cell)


def csv_cell(value: Any, cell_chars: int) -> str:
    """One value as a CSV cell, quoted only when it must be."""
    if value is None:
        return ""
    if isinstance(value, bytes):
        shown = max(0, (cell_chars - 3) // 2)
        head = value[:shown].hex()
        rest = len(value) - min(len(value), shown)
        return f"x'{head}'" + (f"…[+{rest} bytes]" if rest else "")
    text = repr(value) if isinstance(value, float) else str(value)
    if text == "":
        return '""'
    text = _cut(text, cell_chars)
    if _NEEDS_QUOTES.intersection(text) or text != text.strip(" "):
        return _quoted(text)
    return text


def csv_line(values: Iterable[Any], cell_chars: int) -> str:
    """One row; its first cell is quoted too when it would start like a server line."""
    cells = [csv_cell(value, cell_chars) for value in values]
    if cells and _starts_like_server(cells[0]):
        cells[0] = _quoted(cells[0])
    return ",".join(cells) + "\n"


def _row_line(row: Sequence[Any], cell_chars: int) -> str:
    """`csv_line(row)`, with less work per cell for the common rows.

    A row of numbers, NULLs and text that needs no cut is joined as it is when nothing in
    it asks for quotes (checked once on the whole line), else quoted cell by cell with one
    plain test each. A row with a blob, an empty string or a long cell goes through
    `csv_cell`. All three ways give the same line.
    """
    if not row or not _PLAIN_TYPES.issuperset(map(type, row)) or "" in row:
        return csv_line(row, cell_chars)
    texts = list(map(str, row)) if None not in row else ["" if v is None else str(v) for v in row]
    if max(map(len, texts)) > cell_chars:
        return csv_line(row, cell_chars)
    line = ",".join(texts)
    if (
        line.count(",") == len(texts) - 1
        and '"' not in line
        and "\n" not in line
        and "\r" not in line
        and line[:1] != " "
        and line[-1:] != " "
        and " ," not in line
        and ", " not in line
        and (line[:1] in _PLAIN_START or not looks_like_server_line(line))
    ):
        return line + "\n"
    cells = [
        _quoted(t)
        if "," in t or '"' in t or "\n" in t or "\r" in t or t[:1] == " " or t[-1:] == " "
        else t
        for t in texts
    ]  # the same test as csv_cell's, spelt out: `in` on a str is the cheapest check there is
    if cells[0][:1] not in _PLAIN_START and looks_like_server_line(cells[0]):
        cells[0] = _quoted(cells[0])
    return ",".join(cells) + "\n"


@dataclass(frozen=True)
class CsvResult:
    text: str
    rows: int
    truncated: str | None  # "row limit N" or "N bytes", None when complete


def render_csv(
    columns: Sequence[str],
    rows: Iterator[Sequence[Any]],
    caps: ResultCaps,
    limit: int,
) -> CsvResult:
    """Render up to `limit` rows; reads at most `limit + 1` rows from `rows`."""
    limit = min(limit, caps.rows)
    parts = [_row_line(columns, caps.cell_chars)]
    used = len(parts[0].encode())
    count = 0
    truncated: str | None = None
    for row in rows:
        if count >= limit:
            truncated = f"row limit {limit}"
            break
        line = _row_line(row, caps.cell_chars)
        size = len(line) if line.isascii() else len(line.encode())
        if used + size > caps.bytes:
            truncated = f"{caps.bytes} bytes"
            break
        parts.append(line)
        used += size
        count += 1
    trailer = f"# {count} rows" + (f" (truncated: {truncated})" if truncated else "")
    body = "".join(parts)
    if _has_inner_lines(body, count + 1) and needs_fence(body):
        return CsvResult(f"{fence(body[:-1], fence_token(body))}\n{trailer}", count, truncated)
    return CsvResult(body + trailer, count, truncated)


def _has_inner_lines(body: str, rows: int) -> bool:
    """Whether a line of `body` starts inside a cell. When none does, every line starts a
    row, which csv_line already made safe, and the body needs no fence."""
    if body.count("\n") != rows or "\r" in body:
        return True
    if body.isascii():
        return any(char in body for char in _ASCII_RARE_BREAKS)
    return _RARE_BREAKS.search(body) is not None


def csv_reply(lines: Sequence[str], *server: str) -> str:
    """CSV lines (each ending in a line feed), then the server's line(s) after them."""
    reply = FramedReply().data("".join(lines).removesuffix("\n"))
    for line in server:
        reply.server(line)
    return reply.render()
