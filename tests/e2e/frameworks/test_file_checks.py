"""The file checks the framework sessions rely on, on files SQLite made (no framework needed:
part of the unit run): the header reader reads each field at its offset, the folder check
names what nothing explains, the home check wants a `.sqlgate/` that git ignores."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from tests.e2e.frameworks.checks import Baseline, assert_home, left_in_folder
from tests.e2e.frameworks.projects import git_init, run
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


@pytest.mark.parametrize(
    ("ignore", "error"),
    [
        pytest.param("*\n", None, id="ignores-itself"),
        pytest.param("# sqlgate\n*\n", None, id="with-a-comment"),
        pytest.param(None, "has no .gitignore", id="no-gitignore"),
        pytest.param("*.sqlite\n", "assert '*' in", id="ignores-some"),
    ],
)
def test_the_home_check_wants_a_home_git_ignores(
    tmp_path: Path, ignore: str | None, error: str | None
) -> None:
    git_init(tmp_path)
    db = make(tmp_path / "app.db", [])
    home = tmp_path / ".sqlgate"
    home.mkdir()
    (home / "records.sqlite").write_bytes(b"")
    if ignore is not None:
        (home / ".gitignore").write_text(ignore, encoding="utf-8")
    if error is None:
        assert_home(db)
    else:
        with pytest.raises(AssertionError, match=re.escape(error)):
            assert_home(db)


def test_the_home_check_asks_git_itself(tmp_path: Path) -> None:
    """A .gitignore holding `*` does not keep out a file git already tracks (added with
    -f): git's own status is what counts."""
    git_init(tmp_path)
    db = make(tmp_path / "app.db", [])
    home = tmp_path / ".sqlgate"
    home.mkdir()
    (home / ".gitignore").write_text("*\n", encoding="utf-8")
    (home / "records.sqlite").write_bytes(b"")
    run(["git", "add", "-f", ".sqlgate/records.sqlite"], cwd=tmp_path)
    with pytest.raises(AssertionError, match="git would commit"):
        assert_home(db)
