"""Which user database a records file belongs to: moved, replaced, copied (issue 33)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import apsw
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sqlgate.config import Settings
from sqlgate.engine.database.file import Database
from sqlgate.engine.records.binding import Binding, decide_binding, newest_binding
from sqlgate.errors import StartupError
from tests.app_database import folder_state

HERE = Binding("/p/db.sqlite3", 1, 10)

CASES = [
    pytest.param(None, HERE, "first open", None, id="first-open"),
    pytest.param(HERE, HERE, None, None, id="same-file"),
    pytest.param(HERE, Binding("/q/db.sqlite3", 1, 10), "moved from /p/db.sqlite3", None,
                 id="moved"),
    pytest.param(HERE, Binding("/p/db.sqlite3", 1, 11), "file replaced", None, id="replaced"),
    pytest.param(HERE, Binding("/p/db.sqlite3", 2, 10), "file replaced", None,
                 id="other-device"),
    pytest.param(HERE, Binding("/q/db.sqlite3", 1, 11), None, "belong to /p/db.sqlite3",
                 id="copied-records"),
]  # fmt: skip


@pytest.mark.parametrize(("newest", "now", "reason", "refusal"), CASES)
def test_the_verdict_table(
    newest: Binding | None, now: Binding, reason: str | None, refusal: str | None
) -> None:
    verdict = decide_binding(newest, now, "/p/.sqlgate/dbs/x")
    assert verdict.reason == reason
    if refusal is None:
        assert verdict.refusal is None
    else:
        assert verdict.refusal is not None
        assert refusal in verdict.refusal
        assert now.path in verdict.refusal
        assert "/p/.sqlgate/dbs/x" in verdict.refusal
        assert "\n" not in verdict.refusal


paths = st.sampled_from(["/a/db", "/b/db"])
numbers = st.integers(1, 3)


@given(paths, numbers, numbers, paths, numbers, numbers)
def test_refused_exactly_when_both_the_path_and_the_file_differ(
    p1: str, d1: int, i1: int, p2: str, d2: int, i2: int
) -> None:
    old, now = Binding(p1, d1, i1), Binding(p2, d2, i2)
    verdict = decide_binding(old, now, "R")
    refused = p1 != p2 and (d1, i1) != (d2, i2)
    assert (verdict.refusal is not None) == refused
    assert (verdict.reason is None) == (refused or old == now)


def make(path: Path) -> Path:
    conn = apsw.Connection(str(path))
    conn.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES (1, 'a')")
    conn.close()
    return path


def bindings(db: Database) -> list[str]:
    return [
        str(row[0])
        for row in db.server.execute(
            "SELECT json_extract(value, '$.reason') FROM server_info "
            "WHERE key LIKE 'binding.%' ORDER BY CAST(substr(key, 9) AS INTEGER)"
        )
    ]


def test_an_open_binds_once_and_a_replaced_file_is_noted(tmp_path: Path) -> None:
    path = make(tmp_path / "db.sqlite3")
    db = Database.open(Settings(db=path))
    assert db.binding_note == "first open"
    db.close()
    db = Database.open(Settings(db=path))
    assert db.binding_note is None
    db.close()
    # the app deletes and re-creates its database; the old file is held open meanwhile, so
    # that the new one cannot get its inode number (ext4 reuses a freed one at once, and
    # that replacement cannot be seen: docs/decisions.md)
    held = os.open(path, os.O_RDONLY)
    path.unlink()
    make(path)
    os.close(held)
    db = Database.open(Settings(db=path))
    try:
        assert db.binding_note == "file replaced"
        assert bindings(db) == ["first open", "file replaced"]
        _, newest = newest_binding(db.server)
        assert newest == Binding.of(path)
    finally:
        db.close()


def records_rows(project: Path) -> list[tuple[object, ...]]:
    conn = apsw.Connection(str(Settings(db=project / "db.sqlite3").records.records))
    try:
        return [tuple(r) for r in conn.execute("SELECT key, value FROM server_info ORDER BY 1")]
    finally:
        conn.close()


def test_a_copied_home_is_refused_and_both_files_stay_as_they_were(tmp_path: Path) -> None:
    """`cp -r project copy`: the copy's database would find the copied records by its
    relative path; they are the other file's history, so nothing opens."""
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    Database.open(Settings(db=make(project / "db.sqlite3"))).close()
    copy = tmp_path / "copy"
    shutil.copytree(project, copy)
    before = folder_state(copy, keep=lambda p: not p.name.endswith(("-wal", "-shm")))
    before_records = records_rows(copy)
    with pytest.raises(StartupError, match="belong to") as caught:
        Database.open(Settings(db=copy / "db.sqlite3"))
    assert str(project / "db.sqlite3") in str(caught.value)
    with pytest.raises(StartupError, match="belong to"):
        Database.open(Settings(db=copy / "db.sqlite3"), read_only=True)
    assert folder_state(copy, keep=lambda p: not p.name.endswith(("-wal", "-shm"))) == before
    assert records_rows(copy) == before_records
    Database.open(Settings(db=project / "db.sqlite3")).close()  # the original still opens


def test_a_moved_project_keeps_its_history(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    db = Database.open(Settings(db=make(project / "db.sqlite3")))
    db_id = db.database_id
    db.close()
    moved = tmp_path / "renamed"
    os.rename(project, moved)
    db = Database.open(Settings(db=moved / "db.sqlite3"))
    try:
        assert db.database_id == db_id
        assert db.binding_note == f"moved from {(project / 'db.sqlite3').resolve()}"
    finally:
        db.close()


def test_a_deleted_records_folder_is_reported_as_history_gone(tmp_path: Path) -> None:
    """A `.sqlgate/` deleted beside a database that had history: the new records say the
    history is gone, and `verify` says so; never "no events yet"."""
    from sqlgate.service import Service

    path = make(tmp_path / "db.sqlite3")
    with Service.open(Settings(db=path)) as service:
        service.append_event("remember this")
    folder = Settings(db=path).records.folder
    shutil.rmtree(folder)
    with Service.open(Settings(db=path)) as service:
        status = service.memory.chain.verify()
    assert status.ok
    assert status.lost is not None
    assert "is gone" in status.lost
    assert str(folder) in status.lost
    assert status.as_dict()["history_lost"] == status.lost


def test_a_new_database_has_no_history_gone(tmp_path: Path) -> None:
    from sqlgate.service import Service

    with Service.open(Settings(db=make(tmp_path / "db.sqlite3"))) as service:
        assert service.memory.chain.verify().lost is None


def _server_info() -> apsw.Connection:
    conn = apsw.Connection(":memory:")
    conn.execute("CREATE TABLE server_info(key TEXT PRIMARY KEY, value TEXT)")
    return conn


def test_history_lost_is_kept_under_its_documented_key_once_and_said() -> None:
    from sqlgate.engine.records.binding import history_lost, note_history_lost

    conn = _server_info()
    assert history_lost(conn) is None
    before = {"records": "/p/.sqlgate/dbs/x", "since": "2026-01-01T00:00:00Z"}
    note_history_lost(conn, before, "2026-02-02T00:00:00Z")
    note_history_lost(conn, {"records": "/else", "since": "later"}, "2026-03-03T00:00:00Z")
    rows = conn.execute("SELECT key, value FROM server_info").fetchall()
    assert rows == [
        (
            "history_lost",  # the key `sqlgate verify` and the docs name
            '{"noticed": "2026-02-02T00:00:00Z", "records": "/p/.sqlgate/dbs/x", '
            '"since": "2026-01-01T00:00:00Z"}',  # sorted keys, the first note kept
        )
    ]
    assert history_lost(conn) == (
        "the history before 2026-02-02T00:00:00Z is gone: the records kept since "
        "2026-01-01T00:00:00Z were at /p/.sqlgate/dbs/x, which was deleted or moved"
    )


def test_rebind_binds_the_records_to_the_copy_with_why_and_when(tmp_path: Path) -> None:
    from sqlgate.engine.records.binding import rebind

    conn = _server_info()
    first, copy = make(tmp_path / "first.db"), make(tmp_path / "copy.db")
    rebind(conn, first, "restored from file:///a", "2026-01-01T00:00:00Z")
    rebind(conn, copy, "restored from file:///b", "2026-02-02T00:00:00Z")
    number, newest = newest_binding(conn)
    assert number == 2
    assert newest == Binding.of(copy)
    value = conn.execute("SELECT value FROM server_info WHERE key = 'binding.2'").fetchone()[0]
    stored = json.loads(value)
    assert stored["seen"] == "2026-02-02T00:00:00Z"
    assert stored["reason"] == "restored from file:///b"
    assert value == json.dumps(stored, sort_keys=True)


@pytest.mark.parametrize("stored", ["not json", '{"noticed": "x"}', "[1, 2]"])
def test_a_history_lost_note_that_cannot_be_read_still_says_the_history_is_gone(
    stored: str,
) -> None:
    from sqlgate.engine.records.binding import history_lost

    conn = _server_info()
    conn.execute("INSERT INTO server_info VALUES ('history_lost', ?)", (stored,))
    assert history_lost(conn) == (
        "an earlier history of this database is gone (its records were deleted)"
    )


def test_the_newest_binding_is_the_highest_number_not_the_last_row_or_text_order() -> None:
    conn = _server_info()
    for key, path in [("binding.3", "/three"), ("binding.12", "/twelve"), ("binding.x", "/x"),
                      ("binding.2", "/two")]:  # fmt: skip
        value = json.dumps({"path": path, "device": 1, "inode": 1})
        conn.execute("INSERT INTO server_info VALUES (?, ?)", (key, value))
    assert newest_binding(conn) == (12, Binding("/twelve", 1, 1))


def test_check_binding_appends_when_and_why_in_sorted_json(tmp_path: Path) -> None:
    from sqlgate.engine.records.binding import check_binding

    conn = _server_info()
    db = make(tmp_path / "a.db")
    assert check_binding(conn, db, tmp_path / "r", "2026-01-01T00:00:00Z") == "first open"
    value = conn.execute("SELECT value FROM server_info WHERE key = 'binding.1'").fetchone()[0]
    stored = json.loads(value)
    assert (stored["seen"], stored["reason"]) == ("2026-01-01T00:00:00Z", "first open")
    assert value == json.dumps(stored, sort_keys=True)
    assert check_binding(conn, db, tmp_path / "r", "later") is None  # nothing new to bind


@pytest.mark.parametrize("meanwhile", ["other file", "this file"])
def test_under_the_lock_the_binding_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, meanwhile: str
) -> None:
    """Another server bound the records between the lock-free read and the lock: to another
    file (this open is refused), or to this one (nothing is appended twice)."""
    import sqlgate.engine.records.binding as binding

    conn = _server_info()
    db = make(tmp_path / "db.db")
    binding.rebind(conn, make(tmp_path / "other.db") if meanwhile == "other file" else db,
                   "bound meanwhile", "t1")  # fmt: skip
    real = binding.newest_binding
    reads: list[int] = []

    def stale_first(c: apsw.Connection) -> tuple[int, Binding | None]:
        reads.append(1)
        return (0, None) if len(reads) == 1 else real(c)

    monkeypatch.setattr(binding, "newest_binding", stale_first)
    if meanwhile == "other file":
        with pytest.raises(StartupError, match="belong to"):
            binding.check_binding(conn, db, tmp_path / "r", "t2")
    else:
        assert binding.check_binding(conn, db, tmp_path / "r", "t2") is None
    assert len(reads) == 2
    assert conn.execute("SELECT count(*) FROM server_info").fetchone()[0] == 1
