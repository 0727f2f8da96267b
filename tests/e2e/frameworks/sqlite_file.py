"""What of an SQLite file must stay the app's: its header fields, its schema, its folder.

Read from the bytes, and with an immutable connection when no -wal is beside the file, so
looking changes nothing (the test itself creates no -wal, -shm or journal).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

# (name, offset, size) of the header fields an app chose or a tool could change behind its
# back (https://www.sqlite.org/fileformat2.html#the_database_header); big-endian integers
HEADER_FIELDS: tuple[tuple[str, int, int], ...] = (
    ("page_size", 16, 2),
    ("write_version", 18, 1),  # 1: rollback journal, 2: WAL
    ("read_version", 19, 1),
    ("largest_root_page", 52, 4),  # non-zero: auto-vacuum
    ("text_encoding", 56, 4),
    ("user_version", 60, 4),
    ("incremental_vacuum", 64, 4),
    ("application_id", 68, 4),
)
SQLGATE_APPLICATION_ID = 0x53514754  # "SQGT": what sqlgate 0.1.0 wrote into files it adopted


def header(path: Path) -> dict[str, int]:
    """The header fields of the database file at `path`, by name."""
    with path.open("rb") as handle:
        raw = handle.read(100)
    assert raw[:16] == b"SQLite format 3\x00", f"{path} is not an SQLite database"
    return {
        name: int.from_bytes(raw[offset : offset + size], "big")
        for name, offset, size in HEADER_FIELDS
    }


def journal(fields: dict[str, int]) -> str:
    """The file's lasting journal mode, as its header says: `wal` or `delete` (rollback)."""
    versions = (fields["write_version"], fields["read_version"])
    assert versions in ((1, 1), (2, 2)), f"unexpected file format versions {versions}"
    return "wal" if versions == (2, 2) else "delete"


def _connect(path: Path) -> sqlite3.Connection:
    """A read-only connection; immutable (creating nothing) unless a -wal may hold pages."""
    wal = path.with_name(path.name + "-wal")
    mode = "mode=ro" if wal.exists() else "immutable=1"
    return sqlite3.connect(f"{path.as_uri()}?{mode}", uri=True)


def schema(path: Path) -> set[tuple[str, str, str, str]]:
    """(type, name, table, sql) of every object in the file's `sqlite_schema`."""
    conn = _connect(path)
    try:
        rows = conn.execute("SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_schema")
        return {(str(a), str(b), str(c), str(d)) for a, b, c, d in rows}
    finally:
        conn.close()


def rows(path: Path, sql: str) -> list[tuple[object, ...]]:
    """The rows of a read on the file (no writer may be running)."""
    conn = _connect(path)
    try:
        return [tuple(row) for row in conn.execute(sql)]
    finally:
        conn.close()


def listing(folder: Path) -> set[str]:
    """The names directly in `folder`."""
    return {entry.name for entry in folder.iterdir()}
