"""Reaching sqlgate's records from a test: the records file of a database, and one connection
that sees a database and its records together (the records attached as `sqlgate`, writable:
a test may tamper with them as an attacker with file access could)."""

from __future__ import annotations

from pathlib import Path

import apsw

from sqlgate.home import record_files

__all__ = ["connect_both", "records_path"]


def records_path(db: Path | str) -> Path:
    """The records file kept for the database at `db`."""
    return record_files(Path(db)).records


def connect_both(db: Path | str, flags: int | None = None) -> apsw.Connection:
    """A connection to the database at `db` with its records attached as `sqlgate`: server
    tables read by their plain names (none of the test's tables shares one)."""
    conn = apsw.Connection(str(db)) if flags is None else apsw.Connection(str(db), flags=flags)
    records = records_path(db)
    if records.is_file():
        conn.execute("ATTACH ? AS sqlgate", (str(records),))
    return conn
