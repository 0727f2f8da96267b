"""Results as CSV: the format agents read most cheaply.

Header row, RFC 4180 quoting (only where needed), NULL as an empty cell and the empty
string as `""`, blobs as `x'hex'`, TEXT that is not UTF-8 as `CAST(x'hex' AS TEXT)`, long
cells cut with `…[+K chars]` (`…[+K bytes]` for those two), then one trailer line:
`# N rows`, or `# N rows (truncated: row limit L)` / `(truncated: B bytes)`, the noun
singular for one (`# 1 row`, `…[+1 char]`: framing.counted).

Framing (engine/framing.py): a row's first cell is quoted when it would start like a server
line (`#`, `ok:`, a fence tag), so no row starts like one; when a line that starts inside a
cell would (after any line break a reader may know: LF, CR, VT, FF, FS, GS, RS, NEL, U+2028,
U+2029), the rows are fenced between `<data-T>` lines.

Rows are read and rendered a batch at a time, column by column (`render_csv`); the text is
exactly `csv_line` of each row, which stays the definition.
"""

from __future__ import annotations

import marshal
import re
import string
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Any, cast

from sqlgate.engine.framing import (
    FramedReply,
    counted,
    fence,
    fence_token,
    looks_like_server_line,
    needs_fence,
)
from sqlgate.engine.limits import ResultCaps
from sqlgate.engine.raw_text import RawText

__all__ = [
    "BATCH_ROWS",
    "BATCH_VALUE_BYTES",
    "CsvResult",
    "csv_cell",
    "csv_line",
    "csv_reply",
    "render_csv",
    "take_rows",
]

_NEEDS_QUOTES = frozenset(',"\r\n')
# what no server line starts with, even past unseen characters: most first cells
_PLAIN_START = frozenset(string.ascii_letters + string.digits + "-.") - frozenset("oO")
_ASCII_RARE_BREAKS = "\x0b\x0c\x1c\x1d\x1e"
_RARE_BREAKS = re.compile(f"[{_ASCII_RARE_BREAKS}\x85\u2028\u2029]")
# value types whose cell is `str(value)` (None: empty) unless it needs quotes or a cut
_NONE = type(None)
_TEXT = frozenset({str})
_PLAIN_TYPES = frozenset({int, float, str, _NONE})
_NUMBERS = frozenset({int, float, _NONE})
# a row's values as bytes: their size, cheaply (rows from SQLite hold only what marshal writes)
_marshal = cast("Callable[[object], bytes]", marshal.dumps)
# rows read and rendered at a time: at most this many, and values of about this many bytes
BATCH_ROWS = 256
BATCH_VALUE_BYTES = 1 << 20


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}…[+{counted(len(text) - limit, 'char')}]"


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
        return f"x'{head}'" + (f"…[+{counted(rest, 'byte')}]" if rest else "")
    if isinstance(value, RawText):  # TEXT that is not UTF-8: the SQL that makes it
        return value.cell(cell_chars)
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


def take_rows(rows: Iterator[Sequence[Any]], most: int) -> tuple[list[Sequence[Any]], bool]:
    """Up to `most` rows, fewer once their values reach BATCH_VALUE_BYTES (measured with
    marshal, about their size), and whether `rows` ended. A batch so holds at most that
    budget plus one row, however long its cells are before they are cut."""
    batch: list[Sequence[Any]] = []
    held = 0
    for row in rows:
        batch.append(row)
        try:
            held += len(_marshal(row))
        except ValueError:  # a value marshal cannot write (not from SQLite): end the batch
            held = BATCH_VALUE_BYTES
        if len(batch) >= most or held >= BATCH_VALUE_BYTES:
            return batch, False
    return batch, True


def _column_cells(values: Sequence[Any], cell_chars: int) -> list[str]:
    """The cells of one column of a batch, each exactly `csv_cell(value)`.

    The checks run once over the whole column: a column of numbers and NULLs is only
    converted; a text column is quoted cell by cell only when something in it needs quotes
    (a separator, a quote, a line break, an edge space). Blobs, other types, empty strings
    and cells to cut go through `csv_cell`.
    """
    kinds = set(map(type, values))
    has_text = str in kinds
    if not kinds <= _PLAIN_TYPES or (has_text and "" in values):
        return [csv_cell(value, cell_chars) for value in values]
    if kinds == _TEXT:
        cells = list(values)
    elif _NONE in kinds:
        cells = ["" if value is None else str(value) for value in values]
    else:
        cells = list(map(str, values))  # str(float) is repr(float)
    if max(map(len, cells)) > cell_chars:
        return [csv_cell(value, cell_chars) for value in values]
    if not has_text:
        return cells  # numbers and NULLs never need quotes, nor start like a server line
    # one pass over the column; a \x00 in a cell can only send it the slower way below
    joined = "\x00".join(cells)
    if not (
        "," in joined
        or '"' in joined
        or "\n" in joined
        or "\r" in joined
        or joined[:1] == " "
        or joined[-1:] == " "
        or " \x00" in joined
        or "\x00 " in joined
    ):
        return cells
    return [
        _quoted(t)
        if "," in t or '"' in t or "\n" in t or "\r" in t or t[:1] == " " or t[-1:] == " "
        else t
        for t in cells
    ]  # csv_cell's test, spelt out: `in` on a str is the cheapest check there is


def _batch_lines(batch: Sequence[Sequence[Any]], width: int, cell_chars: int) -> list[str]:
    """Each row of `batch` as `csv_line(row)` without its line feed, built column by column."""
    if width == 0 or set(map(len, batch)) != {width}:
        return [csv_line(row, cell_chars)[:-1] for row in batch]
    values = list(zip(*batch, strict=True))
    columns = [_column_cells(column, cell_chars) for column in values]
    if not _NUMBERS.issuperset(map(type, values[0])):  # a number never starts like one
        first = columns[0]
        for i, cell in enumerate(first):
            if cell[:1] not in _PLAIN_START and looks_like_server_line(cell):
                first[i] = _quoted(cell)
    return list(map(",".join, zip(*columns, strict=True)))


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
    """Render up to `limit` rows; reads at most `limit + 1` rows from `rows`.

    Rows are read and rendered in batches (`take_rows`), each sized from the longest line so
    far to what the byte cap still has room for: with rows alike, the last row read is the
    one that no longer fits, as when they were read one at a time.
    """
    limit = min(limit, caps.rows)
    header = csv_line(columns, caps.cell_chars)
    lines = [header[:-1]]
    room = caps.bytes - len(header.encode())
    longest = count = 0
    truncated: str | None = None
    ended = False
    while truncated is None and not ended:
        most = min(BATCH_ROWS, room // longest + 1) if longest else 1
        batch, ended = take_rows(rows, min(most, limit + 1 - count))
        shown = batch[: limit - count]
        batch_lines = _batch_lines(shown, len(columns), caps.cell_chars)
        if "".join(batch_lines).isascii():
            sizes = list(map(len, batch_lines))
        else:
            sizes = list(map(len, map(str.encode, batch_lines)))
        fits = len(sizes)
        if fits and sum(sizes) + fits > room:  # the first line (and its line feed) too many
            fits = next(i for i, end in enumerate(accumulate(s + 1 for s in sizes)) if end > room)
            truncated = counted(caps.bytes, "byte")
        if fits:
            lines += batch_lines[:fits]
            room -= sum(sizes[:fits]) + fits
            longest = max(longest, max(sizes[:fits]) + 1)
        count = len(lines) - 1
        if truncated is None and len(batch) > len(shown):
            truncated = f"row limit {limit}"
    body = "\n".join(lines) + "\n"
    trailer = f"# {counted(count, 'row')}" + (f" (truncated: {truncated})" if truncated else "")
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
