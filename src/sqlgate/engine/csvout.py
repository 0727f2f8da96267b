"""Results as CSV: the format agents read most cheaply.

Header row, RFC 4180 quoting (only where needed), NULL as an empty cell and the empty
string as `""`, blobs as `x'hex'`, long cells cut with `…[+K chars]`, then one trailer
line: `# N rows`, or `# N rows (truncated: row limit L)` / `(truncated: B bytes)`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from sqlgate.engine.limits import ResultCaps

__all__ = ["CsvResult", "csv_cell", "csv_line", "render_csv"]

_NEEDS_QUOTES = frozenset(',"\r\n')
# value types whose cell is `str(value)` (None: empty) unless it needs quotes or a cut
_PLAIN_TYPES = frozenset({int, float, str, type(None)})


def _cut(text: str, limit: int, unit: str = "chars") -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}…[+{len(text) - limit} {unit}]"


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
        return '"' + text.replace('"', '""') + '"'
    return text


def csv_line(values: Iterable[Any], cell_chars: int) -> str:
    return ",".join(csv_cell(value, cell_chars) for value in values) + "\n"


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
    ):
        return line + "\n"
    cells = [
        '"' + t.replace('"', '""') + '"'
        if "," in t or '"' in t or "\n" in t or "\r" in t or t[:1] == " " or t[-1:] == " "
        else t
        for t in texts
    ]  # the same test as csv_cell's, spelt out: `in` on a str is the cheapest check there is
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
    return CsvResult("".join(parts) + trailer, count, truncated)
