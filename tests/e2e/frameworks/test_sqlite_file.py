"""The header reader the framework sessions rely on reads each field at its offset: files
made by SQLite with each field set differently (no framework needed: part of the unit run)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.e2e.frameworks.checks import Baseline, left_in_folder
from tests.e2e.frameworks.sqlite_file import header, journal, listing, schema

DEFAULTS = {
    "page_size": 4096, "write_version": 1, "read_version": 1, "largest_root_page": 0,
    "text_encoding": 1, "user_version": 0, "incremental_vacuum": 0, "application_id": 0,
}  # fmt: skip


def make(path: Path, pragmas: list[str]) -> Path:
    """A file with one table, after `pragmas` (those that must precede the first table
    first); closed, so a WAL file has no -wal left."""
    conn = sqlite3.connect(path)
    try:
        for pragma in pragmas:
            conn.execute(f"PRAGMA {pragma}")
        conn.execute("CREATE TABLE t (x INTEGER)")
        conn.commit()
    finally:
        conn.close()
    return path


@pytest.mark.parametrize(
    ("pragmas", "changed"),
    [
        pytest.param([], {}, id="defaults"),
        pytest.param(["page_size = 8192"], {"page_size": 8192}, id="page-size"),
        pytest.param(["page_size = 65536"], {"page_size": 1}, id="page-size-64k"),  # stored as 1
        pytest.param(["journal_mode = wal"], {"write_version": 2, "read_version": 2}, id="wal"),
        # page 2 is the pointer map, 3 the table's root
        pytest.param(["auto_vacuum = full"], {"largest_root_page": 3}, id="auto-vacuum-full"),
        pytest.param(
            ["auto_vacuum = incremental"],
            {"largest_root_page": 3, "incremental_vacuum": 1},
            id="auto-vacuum-incremental",
        ),
        pytest.param(["encoding = 'UTF-16le'"], {"text_encoding": 2}, id="utf16le"),
        pytest.param(["user_version = 41"], {"user_version": 41}, id="user-version"),
        pytest.param(
            ["application_id = 1397835604"], {"application_id": 0x53514754}, id="sqlgate-010-id"
        ),
    ],
)
def test_header_reads_each_field_at_its_offset(
    tmp_path: Path, pragmas: list[str], changed: dict[str, int]
) -> None:
    fields = header(make(tmp_path / "app.db", pragmas))
    assert fields == DEFAULTS | changed
    assert journal(fields) == ("wal" if "journal_mode = wal" in pragmas else "delete")


def test_reading_the_file_leaves_nothing_beside_it(tmp_path: Path) -> None:
    db = make(tmp_path / "app.db", ["journal_mode = wal"])
    before = Baseline.of(db)
    assert ("table", "t", "t", "CREATE TABLE t (x INTEGER)") in schema(db)
    assert listing(tmp_path) == {"app.db"}
    assert left_in_folder(db, before, "delete") == set()


@pytest.mark.parametrize(
    ("journal_mode", "extra", "left"),
    [
        pytest.param("delete", ".sqlgate", set(), id="home"),
        pytest.param("wal", "app.db-wal", set(), id="wal-kept-by-the-app"),
        pytest.param("delete", "app.db-wal", {"app.db-wal"}, id="wal-of-a-rollback-file"),
        pytest.param("delete", "app.db.snapshots", {"app.db.snapshots"}, id="snapshots-beside"),
        pytest.param("delete", "app.db-journal", {"app.db-journal"}, id="hot-journal"),
        pytest.param("wal", "app.db-mj0123", {"app.db-mj0123"}, id="super-journal"),
    ],
)
def test_left_in_folder_names_only_what_nothing_explains(
    tmp_path: Path, journal_mode: str, extra: str, left: set[str]
) -> None:
    db = make(tmp_path / "app.db", [])
    before = Baseline.of(db)
    (tmp_path / extra).mkdir()
    assert left_in_folder(db, before, journal_mode) == left
