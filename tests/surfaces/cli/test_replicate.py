"""`serve --replicate`, `sqlgate restore`, `sqlgate replicate` and the replication line of
`sqlgate stats`, through click's CliRunner: every bad input stops with one line and the exit
code of its kind (2 bad argument, 3 nothing there, 8 cannot start). Litestream itself is a
stand-in here (tests/surfaces/replication/conftest.py) or absent."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest
from click.testing import CliRunner, Result

from sqlgate.config import FLAGS, Settings
from sqlgate.service import Service
from sqlgate.surfaces.cli.app import main
from sqlgate.surfaces.replication import litestream
from sqlgate.surfaces.replication.status import (
    ReplicationLock,
    replication_dir,
    write_status,
)
from tests.surfaces.cli.helpers import error_line
from tests.surfaces.replication.conftest import fake_litestream  # noqa: F401 - a fixture

RUNNING = {
    "state": "running", "url": "file:///srv/backups", "pid": 4242, "litestream_pid": 4343,
    "started_at": "2026-01-01T00:00:00.000Z", "updated_at": "2026-01-01T00:00:05.000Z",
    "restarts": 0, "last_error": None, "last_exit": None,
    "witness_log": {"last_id": 7, "problem": None},
}  # fmt: skip


@pytest.fixture(autouse=True)
def no_sqlgate_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for flag in FLAGS:
        monkeypatch.delenv(flag.env_var, raising=False)


def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, list(args), env={"COLUMNS": "250", **(env or {})},
                              prog_name="sqlgate")  # fmt: skip


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "agent.db"
    with Service.open(Settings(db=path)) as service:
        service.append_event("first")
    return path


@pytest.fixture
def no_litestream(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(litestream, "candidates", lambda: [])


@pytest.fixture
def stand_in(monkeypatch: pytest.MonkeyPatch, fake_litestream: Path) -> Path:  # noqa: F811
    monkeypatch.setattr(litestream, "candidates", lambda: [fake_litestream])
    return fake_litestream


# -- serve --replicate: refused at start ------------------------------------------------------


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_malformed_url_stops_serve_with_exit_2_before_anything_opens(
    tmp_path: Path, transport: str
) -> None:
    db = tmp_path / "new.db"
    result = invoke("serve", "--db", str(db), "--transport", transport,
                    "--replicate", "ftp://backups/agent")  # fmt: skip
    line = error_line(result, 2)
    assert "--replicate 'ftp://backups/agent': scheme ftp is not supported" in line
    assert "file:///absolute/folder or s3://bucket/prefix" in line
    assert not db.exists()


def test_the_environment_variable_is_checked_the_same_way(tmp_path: Path) -> None:
    result = invoke("serve", "--db", str(tmp_path / "a.db"),
                    env={"SQLGATE_REPLICATE": "s3://Not_A_Bucket/x"})  # fmt: skip
    assert "is not a valid bucket name" in error_line(result, 2)


def test_an_empty_url_is_a_bad_argument(tmp_path: Path) -> None:
    result = invoke("serve", "--db", str(tmp_path / "a.db"), env={"SQLGATE_REPLICATE": " "})
    assert "SQLGATE_REPLICATE" in error_line(result, 2)


def test_without_litestream_serve_stops_with_exit_8_saying_how_to_install_it(
    db: Path, no_litestream: None
) -> None:
    result = invoke("serve", "--db", str(db), "--replicate", (db.parent / "r").as_uri())
    line = error_line(result, 8)
    assert "pip install 'sqlgate[replicate]'" in line
    assert "litestream 0.5 binary on PATH" in line


def test_an_unwritable_folder_stops_serve_with_exit_8(db: Path, stand_in: Path) -> None:
    blocker = db.parent / "a-file"
    blocker.write_text("not a folder")
    result = invoke("serve", "--db", str(db), "--replicate", (blocker / "r").as_uri())
    assert "cannot write to the replica folder" in error_line(result, 8)


def test_a_store_that_refuses_writes_stops_serve_with_exit_8(
    db: Path, stand_in: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_LITESTREAM", "fail-write")
    result = invoke("serve", "--db", str(db), "--replicate", "s3://bkt1/agent")
    line = error_line(result, 8)
    assert "cannot replicate to s3://bkt1/agent" in line
    assert "the bucket does not exist: create it first" in line


# -- restore ----------------------------------------------------------------------------------


def test_restore_never_overwrites(db: Path, no_litestream: None) -> None:
    result = invoke("restore", (db.parent / "r").as_uri(), "--to", str(db))
    assert "restore never overwrites anything" in error_line(result, 2)


def test_restore_refuses_a_bad_url(tmp_path: Path) -> None:
    result = invoke("restore", "http://example.com/x", "--to", str(tmp_path / "n.db"))
    error_line(result, 2)


def test_restore_needs_litestream(tmp_path: Path, no_litestream: None) -> None:
    result = invoke("restore", (tmp_path / "r").as_uri(), "--to", str(tmp_path / "n.db"))
    assert "pip install 'sqlgate[replicate]'" in error_line(result, 8)
    assert not (tmp_path / "n.db").exists()


def test_restore_from_an_empty_target_is_not_found_and_leaves_nothing(
    tmp_path: Path, stand_in: Path
) -> None:
    target = tmp_path / "n.db"
    result = invoke("restore", (tmp_path / "r").as_uri(), "--to", str(target))
    assert "holds no database replica" in error_line(result, 3)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["bin"]


def test_restore_with_a_missing_witness_file_is_not_found(tmp_path: Path) -> None:
    result = invoke("restore", (tmp_path / "r").as_uri(), "--to", str(tmp_path / "n.db"),
                    "--witness", str(tmp_path / "kept.json"))  # fmt: skip
    assert "no such file" in error_line(result, 3)


# -- replicate ----------------------------------------------------------------------------------


def test_replicate_needs_a_url(db: Path) -> None:
    assert "give the replica URL" in error_line(invoke("replicate", "--db", str(db)), 2)


def test_replicate_needs_an_existing_database(tmp_path: Path) -> None:
    result = invoke("replicate", (tmp_path / "r").as_uri(), "--db", str(tmp_path / "none.db"))
    assert "no database at" in error_line(result, 3)


def _app_file(path: Path, *, wal: bool) -> Path:
    """A database of the user's: an application's tables, in either journal mode."""
    conn = apsw.Connection(str(path))
    if wal:
        conn.pragma("journal_mode", "wal")
    conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
    conn.close()
    return path


@pytest.mark.parametrize("wal", [False, True], ids=["rollback", "wal"])
def test_replicate_refuses_a_database_never_served_and_writes_nothing(
    tmp_path: Path, wal: bool
) -> None:
    db = _app_file(tmp_path / "app.db", wal=wal)
    before = sorted(path.name for path in tmp_path.iterdir())
    header = db.read_bytes()[:100]
    result = invoke("replicate", (tmp_path / "replica").as_uri(), "--db", str(db))
    line = error_line(result, 8)
    assert f"{db} is not a sqlgate database yet" in line
    assert "serve the database once" in line
    assert sorted(path.name for path in tmp_path.iterdir()) == before  # no replica, no folder
    assert db.read_bytes()[:100] == header
    assert not replication_dir(db).exists()


@pytest.mark.parametrize("wal", [False, True], ids=["rollback", "wal"])
def test_replicate_takes_a_served_database_holding_the_users_tables(
    tmp_path: Path, wal: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The user's file holds only the user's tables (sqlgate's are in its records): it is
    replicated, not refused as another program's."""
    import contextlib

    import sqlgate.surfaces.replication.supervisor as supervisor

    db = _app_file(tmp_path / "app.db", wal=wal)
    Service.open(Settings(db=db)).close()  # served once: its records exist
    import sqlgate.surfaces.cli.replicate as command

    started: list[Path] = []

    def replication(path: Path, target: object) -> contextlib.nullcontext[None]:
        started.append(path)
        return contextlib.nullcontext()

    monkeypatch.setattr(supervisor, "Replication", replication)

    monkeypatch.setattr(command, "stop_signals", _stopped_at_once)
    result = invoke("replicate", (tmp_path / "replica").as_uri(), "--db", str(db))
    assert result.exit_code == 0, result.output
    assert started == [db]


@contextlib.contextmanager
def _stopped_at_once() -> Iterator[object]:
    class Stops:
        def serving(self) -> contextlib.AbstractContextManager[None]:
            return contextlib.nullcontext()

        def wait(self) -> None:
            return None

    yield Stops()


# -- stats -------------------------------------------------------------------------------------


def stats(db: Path) -> dict[str, object]:
    result = invoke("stats", "--db", str(db), "--json")
    assert result.exit_code == 0, result.output
    report: dict[str, object] = json.loads(result.stdout)["replication"]
    return report


def test_stats_without_replication_says_not_configured(db: Path) -> None:
    assert stats(db) == {"state": "not configured"}
    assert "not configured (serve --replicate URL)" in invoke("stats", "--db", str(db)).stdout


def test_stats_shows_a_running_replication(db: Path) -> None:
    folder = replication_dir(db)
    folder.mkdir()
    write_status(folder, RUNNING)
    lock = ReplicationLock(folder / "lock")
    lock.acquire(wait=0)  # this process plays the server
    try:
        assert stats(db)["state"] == "running"
        text = invoke("stats", "--db", str(db)).stdout
        assert "running to file:///srv/backups (Litestream pid 4343" in text
    finally:
        lock.release()


def test_stats_shows_a_dead_litestream_and_its_last_error(db: Path) -> None:
    folder = replication_dir(db)
    folder.mkdir()
    died = {**RUNNING, "state": "restarting", "litestream_pid": None, "restarts": 2,
            "last_exit": {"at": "2026-01-01T00:01:00.000Z", "code": 1},
            "last_error": {"at": "2026-01-01T00:00:59.000Z", "message": "disk full"}}  # fmt: skip
    write_status(folder, died)
    lock = ReplicationLock(folder / "lock")
    lock.acquire(wait=0)
    try:
        report = stats(db)
        assert report["state"] == "restarting"
        assert report["last_error"] == {"at": "2026-01-01T00:00:59.000Z", "message": "disk full"}
        text = invoke("stats", "--db", str(db)).stdout
        assert "DIED: Litestream exited with code 1" in text
        assert "disk full" in text
    finally:
        lock.release()


def test_stats_tells_a_replication_whose_process_is_gone(db: Path) -> None:
    folder = replication_dir(db)
    folder.mkdir()
    write_status(folder, RUNNING)  # nobody holds the lock: the server was killed
    report = stats(db)
    assert (report["state"], report["recorded_state"]) == ("gone", "running")
    assert "NOT RUNNING: the process that replicated to" in invoke("stats", "--db", str(db)).stdout


def test_stats_shows_a_witness_log_that_cannot_follow_the_chain(db: Path) -> None:
    folder = replication_dir(db)
    folder.mkdir()
    stuck = {**RUNNING, "witness_log": {"last_id": 7, "problem": "the database disagrees"}}
    write_status(folder, stuck)
    lock = ReplicationLock(folder / "lock")
    lock.acquire(wait=0)
    try:
        text = invoke("stats", "--db", str(db)).stdout
        assert "WITNESS LOG STUCK: the database disagrees" in text
    finally:
        lock.release()


def test_a_ctrl_c_right_after_the_ready_line_stops_it_as_a_stop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first Ctrl-C a person can give (the line told them how) ends replication the
    normal way, with its last sync and the line that says so, never as a start cut short."""
    import contextlib
    import os
    import signal

    import sqlgate.surfaces.cli.replicate as command

    db = tmp_path / "agent.db"
    Service.open(Settings(db=db)).close()
    said: list[str] = []

    def echo(message: str, err: bool = False) -> None:
        said.append(message)
        if message.endswith("Ctrl-C stops"):
            os.kill(os.getpid(), signal.SIGINT)  # handled here, on the main thread, at once

    import sqlgate.surfaces.replication.supervisor as supervisor

    monkeypatch.setattr(supervisor, "Replication", lambda *args: contextlib.nullcontext())
    monkeypatch.setattr(command.click, "echo", echo)
    with pytest.raises(SystemExit) as ended:
        command.replicate.main(
            ["file://" + str(tmp_path / "replica"), "--db", str(db)], standalone_mode=False
        )
    assert ended.value.code == 130
    assert said[-1] == "stopped; Litestream synced what it had"
