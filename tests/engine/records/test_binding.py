"""Which user database a records file belongs to: moved, replaced, copied (issue 33)."""

from __future__ import annotations

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
    path.unlink()  # the app deletes and re-creates its database
    make(path)
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
