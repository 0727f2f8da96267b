"""Reading an import source: opened read-only, its tables checked by column name, and
what every reader hands on (events and checkpoints of a verified chain, or claims).

Nothing here writes: a source file stays byte for byte as it was.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import apsw

from sqlgate.errors import InvalidArgument, NotFound
from sqlgate.service import fold_name, quote_identifier

__all__ = [
    "BrokenSource",
    "ChainSource",
    "SourceCheckpoint",
    "SourceClaim",
    "SourceEvent",
    "columns_of",
    "digest_of",
    "open_source",
    "select_sql",
]


class BrokenSource(InvalidArgument):
    """The source's own hash chain does not hold; nothing is taken from it."""

    def __init__(self, message: str, first_broken: int | None) -> None:
        super().__init__(message)
        self.first_broken = first_broken


@dataclass(frozen=True)
class SourceEvent:
    ref: int  # the source's seq or id
    hash: str  # the source's hash of this link
    content: str
    tags: tuple[str, ...] = ()
    kind: str | None = None
    ts: object = None  # as stored in the source; normalised when imported
    session: str | None = None


@dataclass(frozen=True)
class SourceCheckpoint:
    ref: int
    summary: str
    anchor: int  # the source event it was taken after (0: before any)
    ts: object = None
    session: str | None = None


@dataclass(frozen=True)
class ChainSource:
    """A verified chain: events in order, checkpoints, and each link's hash by ref."""

    importer: str
    path: Path
    events: tuple[SourceEvent, ...]
    checkpoints: tuple[SourceCheckpoint, ...] = ()
    hashes: dict[int, str] = field(default_factory=dict)

    @property
    def head_ref(self) -> int:
        return self.events[-1].ref if self.events else 0

    @property
    def head_hash(self) -> str | None:
        return self.events[-1].hash if self.events else None

    @property
    def last_checkpoint(self) -> int:
        return max((c.ref for c in self.checkpoints), default=0)


@dataclass(frozen=True)
class SourceClaim:
    ref: str
    entity: object
    kind: object
    claim: object
    volatility: object
    confidence: object
    rank: object
    confirmed_at: object
    state: object


@contextmanager
def open_source(path: Path) -> Iterator[apsw.Connection]:
    """The source opened read-only, inside one read transaction (a consistent snapshot)."""
    if not path.is_file():
        raise NotFound(f"no source file at {path}; nothing was imported")
    try:
        conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    except apsw.Error as exc:
        raise InvalidArgument(
            f"cannot open {path} as SQLite ({exc}); nothing was imported"
        ) from None
    try:
        conn.set_busy_timeout(5000)
        try:
            conn.execute("BEGIN")
            conn.execute("SELECT count(*) FROM sqlite_schema").fetchall()
        except apsw.Error as exc:
            raise InvalidArgument(
                f"{path} is not a SQLite database ({exc}); nothing was imported"
            ) from None
        try:
            yield conn
        finally:
            if conn.in_transaction:
                conn.execute("COMMIT")
    finally:
        conn.close()


def columns_of(conn: apsw.Connection, table: str) -> frozenset[str]:
    """The table's column names, folded as SQLite folds them (`fold_name`); empty when
    there is no such table."""
    rows = conn.execute("SELECT name FROM pragma_table_info(?)", (table,)).fetchall()
    return frozenset(fold_name(str(name)) for (name,) in rows)


def require_columns(
    conn: apsw.Connection, path: Path, source: str, table: str, needed: tuple[str, ...]
) -> frozenset[str]:
    """Refuse a file without `table` or any of the `needed` columns, naming what is missing."""
    present = columns_of(conn, table)
    if not present:
        raise InvalidArgument(
            f"{path} has no table {table}: it is not a {source} file; nothing was imported"
        )
    missing = [name for name in needed if name not in present]
    if missing:
        raise InvalidArgument(
            f"{path}: table {table} lacks the columns {', '.join(missing)} that a {source} "
            f"file has (it has {', '.join(sorted(present))}); nothing was imported"
        )
    return present


def select_sql(table: str, columns: tuple[str, ...], order_by: str) -> str:
    """A SELECT of known column names (ours, checked present), each quoted."""
    names = ", ".join(quote_identifier(name) for name in columns)
    return f"SELECT {names} FROM {quote_identifier(table)} ORDER BY {quote_identifier(order_by)}"


def digest_of(rows: list[Any]) -> str:
    """A stable hash of rows (for sources without a chain of their own)."""
    text = json.dumps(rows, ensure_ascii=False, separators=(",", ":"), default=repr)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
