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
    parts = [csv_line(columns, caps.cell_chars)]
    used = len(parts[0].encode())
    count = 0
    truncated: str | None = None
    for row in rows:
        if count >= limit:
            truncated = f"row limit {limit}"
            break
        line = csv_line(row, caps.cell_chars)
        size = len(line.encode())
        if used + size > caps.bytes:
            truncated = f"{caps.bytes} bytes"
            break
        parts.append(line)
        used += size
        count += 1
    trailer = f"# {count} rows" + (f" (truncated: {truncated})" if truncated else "")
    return CsvResult("".join(parts) + trailer, count, truncated)
