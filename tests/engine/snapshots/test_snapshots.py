"""Snapshots: online copies of the user's file in its records folder (0700, files 0600),
written whole or not at all, rotation, listing and a guarded restore that keeps the file's
journal mode."""

from __future__ import annotations

import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path

import apsw
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sqlgate.config import Settings
from sqlgate.engine.snapshots import files
from sqlgate.engine.snapshots.files import (
    PARTIAL_SUFFIX,
    SNAPSHOT_SUFFIX,
    list_kept,
    list_snapshots,
    restore_snapshot,
    rotate_snapshots,
    take_snapshot,
)
from sqlgate.errors import NotFound, SnapshotError
from sqlgate.home import record_files
from sqlgate.service import Service

MOMENT = datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=timezone.utc)


def frozen(moment: datetime = MOMENT) -> Callable[[], datetime]:
    return lambda: moment


def make_wal_db(path: Path, values: list[str]) -> None:
    conn = apsw.Connection(str(path))
    try:
        conn.pragma("journal_mode", "wal")
        with conn:  # one transaction: one commit however many rows
            conn.execute("CREATE TABLE IF NOT EXISTS notes(body TEXT)")
            conn.execute("DELETE FROM notes")
            conn.executemany("INSERT INTO notes VALUES (?)", [(v,) for v in values])
    finally:
        conn.close()


def read_notes(path: Path) -> list[str]:
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return [str(v) for (v,) in conn.execute("SELECT body FROM notes ORDER BY rowid")]
    finally:
        conn.close()


def integrity(path: Path) -> str:
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return str(conn.pragma("integrity_check"))
    finally:
        conn.close()


@contextmanager
def opened(path: Path) -> Iterator[apsw.Connection]:
    conn = apsw.Connection(str(path))
    try:
        yield conn
    finally:
        conn.close()


def snapshot_of(db: Path, folder: Path, keep: int = 5, **kwargs: object) -> Path:
    with opened(db) as conn:
        return take_snapshot(conn, folder, keep, **kwargs)  # type: ignore[arg-type]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "agent.db"
    make_wal_db(path, ["first"])
    return path


@pytest.fixture
def folder(db: Path) -> Path:
    return Settings(db=db).snapshot_dir


# -- taking ------------------------------------------------------------------------------


def test_snapshot_lands_in_the_records_folder_readable_by_its_owner_only(db: Path) -> None:
    # issue 33: no longer `<db>.snapshots/` beside the user's file
    folder = Settings(db=db).snapshot_dir
    path = snapshot_of(db, folder)
    assert folder == record_files(db).snapshots
    assert not (db.parent / "agent.db.snapshots").exists()
    assert path.parent == folder
    assert path.name.endswith(SNAPSHOT_SUFFIX)
    assert read_notes(path) == ["first"]
    assert integrity(path) == "ok"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    before = restore_snapshot(db, folder, path.name, keep=5).before
    assert stat.S_IMODE(before.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(before.stat().st_mode) == 0o600
    assert sorted(p.name for p in folder.iterdir()) == sorted([path.name, "restored"])


def test_snapshot_is_a_plain_file_without_a_wal(db: Path, folder: Path) -> None:
    path = snapshot_of(db, folder)
    assert not Path(f"{path}-wal").exists()
    with opened(path) as conn:
        assert conn.pragma("journal_mode") == "delete"


def test_snapshot_reports_progress_up_to_all_pages(db: Path, folder: Path) -> None:
    seen: list[tuple[int, int]] = []
    snapshot_of(db, folder, progress=lambda done, total: seen.append((done, total)))
    assert seen
    assert seen[-1][0] == seen[-1][1] > 0


def test_many_snapshots_in_a_tight_loop_all_get_distinct_valid_files(
    db: Path, folder: Path
) -> None:
    with opened(db) as conn:
        paths = [take_snapshot(conn, folder, keep=100) for _ in range(50)]
    assert len(set(paths)) == 50
    for path in paths:
        assert read_notes(path) == ["first"]


def test_snapshots_taken_in_the_same_microsecond_stay_distinct_and_ordered(
    db: Path, folder: Path
) -> None:
    with opened(db) as conn:
        paths = [take_snapshot(conn, folder, keep=100, clock=frozen()) for _ in range(50)]
    assert len({p.name for p in paths}) == 50
    assert [info.path for info in list_snapshots(folder)] == paths[::-1]
    for path in paths:
        assert read_notes(path) == ["first"]


def test_rotation_with_a_stopped_clock_never_deletes_the_snapshot_just_taken(
    db: Path, folder: Path
) -> None:
    with opened(db) as conn:
        paths = [take_snapshot(conn, folder, keep=3, clock=frozen()) for _ in range(10)]
    assert paths[-1].exists()
    assert [info.path for info in list_snapshots(folder)] == paths[-1:-4:-1]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(min_value=-5_000_000, max_value=5_000_000), min_size=2, max_size=8))
def test_snapshot_names_sort_in_the_order_taken_even_when_the_clock_steps_back(
    tmp_path_factory: pytest.TempPathFactory, offsets: list[int]
) -> None:
    base = tmp_path_factory.mktemp("order")
    db = base / "agent.db"
    make_wal_db(db, ["x"])
    folder = base / "snaps"
    with opened(db) as conn:
        paths = [
            take_snapshot(conn, folder, keep=20, clock=frozen(MOMENT + timedelta(microseconds=o)))
            for o in offsets
        ]
    names = [p.name for p in paths]
    assert names == sorted(names)
    assert len(set(names)) == len(names)


def test_created_time_is_read_from_the_name(db: Path, folder: Path) -> None:
    snapshot_of(db, folder, clock=frozen())
    (info,) = list_snapshots(folder)
    assert info.created == "2026-01-02T03:04:05.678Z"
    assert info.size == info.path.stat().st_size > 0


def test_snapshot_into_an_unusable_folder_is_a_snapshot_error(db: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the folder should be")
    with pytest.raises(SnapshotError):
        snapshot_of(db, blocker / "snaps")


# -- rotation and listing -----------------------------------------------------------------


def test_rotation_keeps_the_newest_n(db: Path, folder: Path) -> None:
    with opened(db) as conn:
        paths = [take_snapshot(conn, folder, keep=100) for _ in range(7)]
    removed = rotate_snapshots(folder, 3)
    assert sorted(removed) == sorted(paths[:4])
    assert [info.path for info in list_snapshots(folder)] == paths[:3:-1]


def test_take_snapshot_rotates_to_keep(db: Path, folder: Path) -> None:
    with opened(db) as conn:
        paths = [take_snapshot(conn, folder, keep=2) for _ in range(5)]
    assert [info.path for info in list_snapshots(folder)] == [paths[4], paths[3]]
    assert not any(p.exists() for p in paths[:3])


def test_list_is_newest_first_and_ignores_other_files_and_empty_claims(
    db: Path, folder: Path
) -> None:
    first = snapshot_of(db, folder)
    second = snapshot_of(db, folder)
    (folder / "notes.txt").write_text("not a snapshot")
    (folder / "99990101T000000000000Z-abcdef.sqlite").touch()  # a claim still being written
    assert [info.path for info in list_snapshots(folder)] == [second, first]


def test_list_of_a_missing_folder_is_empty(tmp_path: Path) -> None:
    assert list_snapshots(tmp_path / "nothing-here") == []


# -- restore --------------------------------------------------------------------------------


def test_restore_brings_back_the_content_and_keeps_a_copy_of_before(db: Path, folder: Path) -> None:
    snap = snapshot_of(db, folder)
    make_wal_db(db, ["changed", "later"])
    result = restore_snapshot(db, folder, snap.name, keep=5)
    source, before = result.source, result.before
    assert source == snap
    assert read_notes(db) == ["first"]
    assert before.exists()
    assert read_notes(before) == ["changed", "later"]
    assert integrity(db) == "ok"


def test_restore_can_itself_be_undone_with_the_before_copy(db: Path, folder: Path) -> None:
    snap = snapshot_of(db, folder)
    make_wal_db(db, ["second"])
    result = restore_snapshot(db, folder, snap.name, keep=5)
    restore_snapshot(db, folder, result.before_name, keep=5)
    assert read_notes(db) == ["second"]


def test_restore_in_wal_mode_is_seen_by_a_fresh_connection(
    make_service: Callable[..., Service], db_path: Path
) -> None:
    service = make_service(undo="file")
    service.write_query("CREATE TABLE notes(body TEXT)")
    service.write_query("INSERT INTO notes VALUES ('kept')")
    out = service.destructive_query("DELETE FROM notes", reason="test the restore")
    snapshot = Path(out.split("snapshot: ", 1)[1].split("; restore: ")[0])
    service.write_query("INSERT INTO notes VALUES ('after'), ('more')")
    settings = service.settings
    service.close()
    with opened(db_path) as conn:
        assert conn.pragma("journal_mode") == "wal"
    before = restore_snapshot(db_path, settings.snapshot_dir, snapshot.name, keep=5).before
    assert read_notes(db_path) == ["kept"]
    assert read_notes(before) == ["after", "more"]
    assert integrity(db_path) == "ok"
    with opened(db_path) as conn:  # the user's file as it was: sqlgate never marks it
        assert conn.pragma("journal_mode") == "wal"
        assert conn.pragma("user_version") == 0
        assert conn.pragma("application_id") == 0
    # the server opens the restored file and sees the snapshot too
    reopened = make_service()
    assert reopened.read_query("SELECT body FROM notes") == "body\nkept\n# 1 row"


def test_restore_of_a_larger_database_into_a_smaller_snapshot_shrinks_it(
    db: Path, folder: Path
) -> None:
    snap = snapshot_of(db, folder)
    make_wal_db(db, [f"row {i} " + "x" * 500 for i in range(2000)])
    restore_snapshot(db, folder, snap.name, keep=5)
    assert read_notes(db) == ["first"]
    assert integrity(db) == "ok"


def test_restore_refuses_while_another_connection_has_the_database_open(
    db: Path, folder: Path
) -> None:
    snap = snapshot_of(db, folder)
    make_wal_db(db, ["changed"])
    with opened(db) as other:
        other.execute("SELECT count(*) FROM notes").fetchall()  # open and idle
        with pytest.raises(SnapshotError, match="open in another process"):
            restore_snapshot(db, folder, snap.name, keep=5)
    assert read_notes(db) == ["changed"]
    restore_snapshot(db, folder, snap.name, keep=5)
    assert read_notes(db) == ["first"]


def test_restore_refuses_while_a_service_is_open_on_the_database(
    make_service: Callable[..., Service], db_path: Path
) -> None:
    service = make_service()
    service.write_query("CREATE TABLE notes(body TEXT)")
    snap = service.sql.snapshot()
    with pytest.raises(SnapshotError):
        restore_snapshot(db_path, service.settings.snapshot_dir, snap.name, keep=5)


HOLDER = """
import sys, apsw
conn = apsw.Connection(sys.argv[1])
conn.execute("SELECT count(*) FROM notes").fetchall()
print("ready", flush=True)
sys.stdin.readline()
conn.close()
"""


def test_restore_refuses_while_another_process_holds_an_idle_connection(
    db: Path, folder: Path
) -> None:
    snap = snapshot_of(db, folder)
    make_wal_db(db, ["changed"])
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdin is not None
        assert holder.stdout.readline().strip() == "ready"
        with pytest.raises(SnapshotError, match="open in another process") as refused:
            restore_snapshot(db, folder, snap.name, keep=5)
        message = str(refused.value)
        if sys.platform.startswith("linux"):  # elsewhere: a generic message
            assert f"pid {holder.pid}: " in message
            assert "import sys, apsw" in message  # its command line, on one line
        assert f"sqlgate snapshots restore {snap.name} --db {db.absolute()} --yes" in message
        assert "\n" not in message
        assert read_notes(db) == ["changed"]
        holder.stdin.write("done\n")
        holder.stdin.flush()
        assert holder.wait(timeout=30) == 0
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
    restore_snapshot(db, folder, snap.name, keep=5)
    assert read_notes(db) == ["first"]


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("../agent.db", id="parent-traversal"),
        pytest.param("../x", id="parent-no-suffix"),
        pytest.param("sub/x.sqlite", id="subfolder"),
        pytest.param("/etc/passwd", id="absolute"),
        pytest.param("20990101T000000000000Z-000000.sqlite", id="unknown-name"),
        pytest.param("notes.txt", id="wrong-suffix"),
        pytest.param("", id="empty"),
    ],
)
def test_restore_refuses_names_that_are_not_snapshots_in_the_folder(
    db: Path, folder: Path, name: str
) -> None:
    snapshot_of(db, folder)
    (folder / "notes.txt").write_text("x")
    before = db.read_bytes()
    with pytest.raises(NotFound):
        restore_snapshot(db, folder, name, keep=5)
    assert db.read_bytes() == before


def test_restore_refuses_a_snapshot_that_is_not_sqlite(db: Path, folder: Path) -> None:
    folder.mkdir(parents=True)
    fake = folder / "20260101T000000000000Z-abcdef.sqlite"
    fake.write_bytes(b"definitely not a database" * 10)
    with pytest.raises(SnapshotError, match="not a SQLite database"):
        restore_snapshot(db, folder, fake.name, keep=5)
    assert read_notes(db) == ["first"]


def test_restore_into_a_missing_database_is_not_found(db: Path, folder: Path) -> None:
    snap = snapshot_of(db, folder)
    with pytest.raises(NotFound):
        restore_snapshot(db.with_name("gone.db"), folder, snap.name, keep=5)


def test_restore_keeps_the_restored_and_the_before_copy_apart_from_the_rotation(
    db: Path, folder: Path
) -> None:
    with opened(db) as conn:
        paths = [take_snapshot(conn, folder, keep=2) for _ in range(2)]
    result = restore_snapshot(db, folder, paths[0].name, keep=2)
    assert result.source.exists()
    assert result.before.exists()
    assert len(list_snapshots(folder)) == 2
    assert [info.name for info in list_kept(folder)] == [result.before_name]


def test_a_snapshot_with_another_page_size_is_restored_and_wal_stays_on(
    db: Path, folder: Path
) -> None:
    folder.mkdir(parents=True)
    odd = folder / "20260101T000000000000Z-abcdef.sqlite"
    conn = apsw.Connection(str(odd))
    conn.pragma("page_size", 1024)
    conn.execute("CREATE TABLE notes(body TEXT); INSERT INTO notes VALUES ('odd')")
    conn.close()
    make_wal_db(db, ["current"])
    restore_snapshot(db, folder, odd.name, keep=5)
    assert read_notes(db) == ["odd"]
    assert integrity(db) == "ok"
    with opened(db) as check:
        assert check.pragma("journal_mode") == "wal"
        assert check.pragma("page_size") == 1024


# -- a snapshot is complete or absent -------------------------------------------------------


class Killed(BaseException):
    """What a SIGKILL looks like from inside: nothing after it runs, no cleanup catches it."""


def big_db(path: Path) -> None:
    make_wal_db(path, [f"row {i} " + "x" * 300 for i in range(100)])


@pytest.mark.parametrize("written", [100, 4096, -1], ids=["header", "a-page", "all-but-end"])
@pytest.mark.parametrize("error", [Killed, apsw.IOError], ids=["killed", "io-error"])
def test_a_snapshot_interrupted_midway_is_never_listed(
    db: Path, folder: Path, monkeypatch: pytest.MonkeyPatch, written: int, error: type
) -> None:
    big_db(db)
    good = snapshot_of(db, folder)
    whole = good.read_bytes()

    def copy_then_stop(source: apsw.Connection, dest_path: Path, progress: object) -> None:
        """Write part of the copy where the copy goes, then stop as a kill would."""
        dest_path.write_bytes(whole[:written])
        raise error("interrupted")

    monkeypatch.setattr(files, "_copy", copy_then_stop)
    with pytest.raises((Killed, SnapshotError)):
        snapshot_of(db, folder)
    assert [info.path for info in list_snapshots(folder)] == [good]
    assert [info.path for info in list_kept(folder)] == []
    for path in folder.glob("*" + SNAPSHOT_SUFFIX):  # no snapshot name holds a part copy
        assert path == good or path.stat().st_size == 0
    # the next snapshot is whole, and the interrupted one's leftovers stay unlisted
    monkeypatch.undo()
    snapshot_of(db, folder, keep=1)
    (only,) = list_snapshots(folder)
    assert integrity(only.path) == "ok"
    assert read_notes(only.path) == read_notes(db)


def test_a_leftover_partial_copy_and_its_hot_journal_are_neither_listed_nor_restored(
    db: Path, folder: Path
) -> None:
    good = snapshot_of(db, folder)
    claim = folder / "29990101T000000000000Z-abcdef.sqlite"
    claim.touch()
    partial = Path(f"{claim}{PARTIAL_SUFFIX}")
    partial.write_bytes(good.read_bytes()[:4096])
    Path(f"{partial}-journal").write_bytes(b"\xd9\xd5\x05\xf9\x20\xa1\x63\xd7" + b"\0" * 504)
    assert [info.path for info in list_snapshots(folder)] == [good]
    for name in (claim.name, partial.name):
        with pytest.raises(NotFound):
            restore_snapshot(db, folder, name, keep=5)
    assert read_notes(db) == ["first"]


# -- restore keeps the file's journal mode; only this database's snapshots -------------------


def make_db(path: Path, mode: str, values: list[str], page_size: int = 4096) -> None:
    conn = apsw.Connection(str(path))
    try:
        conn.pragma("page_size", page_size)
        conn.pragma("journal_mode", mode)
        with conn:
            conn.execute("CREATE TABLE IF NOT EXISTS notes(body TEXT); DELETE FROM notes")
            conn.executemany("INSERT INTO notes VALUES (?)", [(v,) for v in values])
    finally:
        conn.close()


@pytest.mark.parametrize("mode", ["delete", "wal", "truncate"])
@pytest.mark.parametrize("snapshot_page_size", [1024, 4096, 8192])
def test_restore_keeps_the_journal_mode_of_the_users_file(
    tmp_path: Path, mode: str, snapshot_page_size: int
) -> None:
    db = tmp_path / "app.db"
    make_db(db, mode, ["now"])
    folder = Settings(db=db).snapshot_dir
    folder.mkdir(parents=True)
    snap = folder / "20260101T000000000000Z-abcdef.sqlite"
    make_db(snap, "delete", ["then"], snapshot_page_size)
    restore_snapshot(db, folder, snap.name, keep=5)
    assert read_notes(db) == ["then"]
    assert integrity(db) == "ok"
    header = db.read_bytes()[:100]
    persistent = "wal" if mode == "wal" else "delete"  # truncate is not kept in the file
    assert header[18:20] == (b"\x02\x02" if persistent == "wal" else b"\x01\x01")
    with opened(db) as conn:
        assert conn.pragma("journal_mode") == (mode if mode == "wal" else "delete")
    leftovers = {p.name for p in tmp_path.iterdir()} - {"app.db"}
    assert leftovers == set()


def test_a_snapshot_outside_this_databases_folder_is_refused(db: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    make_wal_db(other, ["other's"])
    theirs = snapshot_of(other, Settings(db=other).snapshot_dir)
    make_wal_db(db, ["mine"])
    before = db.read_bytes()
    with pytest.raises(SnapshotError, match="not the snapshots folder of") as refused:
        restore_snapshot(db, theirs.parent, theirs.name, keep=5)
    assert refused.value.exit_code == 7
    with pytest.raises(NotFound):
        restore_snapshot(db, Settings(db=db).snapshot_dir, f"../{theirs.name}", keep=5)
    assert db.read_bytes() == before
