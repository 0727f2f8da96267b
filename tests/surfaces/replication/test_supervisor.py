"""Supervision of Litestream beside a server, with a stand-in binary (conftest.py): start-up
checks that stop a bad target, one replicating process per database, a death that is
reported (stderr, status.json, `stats`) and followed by a restart, and a clean stop."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from sqlgate.config import Settings
from sqlgate.errors import StartupError
from sqlgate.service import Service
from sqlgate.surfaces.replication.litestream import find_litestream
from sqlgate.surfaces.replication.status import read_status, replication_dir, replication_report
from sqlgate.surfaces.replication.supervisor import CHANGES, Replication
from sqlgate.surfaces.replication.target import parse_target
from tests.records import records_path
from tests.surfaces.replication.conftest import eventually


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "agent.db"
    with Service.open(Settings(db=path)) as service:
        service.append_event("first")
    return path


@pytest.fixture
def lines() -> list[str]:
    return []


@pytest.fixture
def make(
    db: Path, tmp_path: Path, fake_litestream: Path, lines: list[str]
) -> Iterator[type[Replication]]:
    made: list[Replication] = []

    def build(url: str | None = None, mode: str = "run", **options: object) -> Replication:
        replication = Replication(
            db, parse_target(url or (tmp_path / "replica").as_uri()),
            binary=find_litestream([fake_litestream]), emit=lines.append,
            environ={"FAKE_LITESTREAM": mode}, **options,  # type: ignore[arg-type]
        )  # fmt: skip
        made.append(replication)
        return replication

    yield build  # type: ignore[misc]
    for replication in made:
        replication.stop()


def status(db: Path) -> dict[str, object]:
    found = read_status(replication_dir(db))
    assert found is not None
    return found


def test_start_runs_litestream_and_says_so(
    db: Path, tmp_path: Path, make: type[Replication], lines: list[str]
) -> None:
    replication = make()
    replication.start()
    assert status(db)["state"] == "running"
    assert isinstance(status(db)["litestream_pid"], int)
    assert status(db)["witness_log"] == {"last_id": 1, "problem": None}
    assert any(line.startswith("sqlgate: replicating ") for line in lines)
    eventually(lambda: "sqlgate: litestream: slow store: elapsed=2s" in lines)
    config = json.loads((replication_dir(db) / "litestream.json").read_text())
    assert [entry["path"] for entry in config["dbs"]] == [
        str(db),
        str(records_path(db)),
        str(replication_dir(db) / "witness-log"),
    ]
    replicas = [entry["replicas"][0]["path"] for entry in config["dbs"]]
    assert replicas == [str(tmp_path / "replica" / name) for name in ("db", "records", "witness")]


def test_nothing_is_written_beside_the_users_file(
    db: Path, tmp_path: Path, make: type[Replication]
) -> None:
    before = sorted(path.name for path in tmp_path.iterdir())
    make().start()
    assert replication_dir(db).parent == records_path(db).parent
    assert (replication_dir(db) / "status.json").is_file()
    after = sorted(path.name for path in tmp_path.iterdir())
    assert set(after) - set(before) <= {"replica"}


def test_a_database_without_records_is_refused(tmp_path: Path, fake_litestream: Path) -> None:
    never = tmp_path / "never-served.db"
    never.write_bytes(b"")
    replication = Replication(
        never, parse_target((tmp_path / "replica").as_uri()),
        binary=find_litestream([fake_litestream]), emit=lambda _: None,
    )  # fmt: skip
    with pytest.raises(StartupError) as caught:
        replication.start()
    assert "serve the database once" in str(caught.value)
    assert not replication_dir(never).exists()


def test_stop_lets_litestream_finish_and_records_it(db: Path, make: type[Replication]) -> None:
    replication = make()
    replication.start()
    replication.stop()
    assert status(db)["state"] == "stopped"
    assert replication_report(db)["state"] == "stopped"


def test_a_second_replicator_on_the_same_database_is_refused(make: type[Replication]) -> None:
    make().start()
    with pytest.raises(StartupError) as caught:
        make(lock_wait=0.0).start()
    assert "already replicated by another process" in str(caught.value)


def test_litestream_dying_is_reported_and_it_is_restarted(
    db: Path, tmp_path: Path, make: type[Replication], lines: list[str]
) -> None:
    replication = make(mode=f"die-once:{tmp_path / 'died'}", backoff=(0.0,))
    replication.start()
    eventually(lambda: status(db)["restarts"] == 1 and status(db)["state"] == "running")
    found = status(db)
    assert found["last_exit"] is not None
    assert found["last_exit"]["code"] == 3  # type: ignore[index]
    assert "disk full" in found["last_error"]["message"]  # type: ignore[index]
    assert any("Litestream exited with code 3" in line and "disk full" in line for line in lines)
    assert any("sqlgate: litestream: sync error" in line for line in lines)


def test_a_litestream_that_cannot_start_stops_start_up(db: Path, make: type[Replication]) -> None:
    with pytest.raises(StartupError) as caught:
        make(mode="fail-start").start()
    assert str(caught.value) == "Litestream did not start: cannot open store: boom"
    assert status(db)["state"] == "stopped"
    assert "boom" in status(db)["last_error"]["message"]  # type: ignore[index]


def test_a_store_that_refuses_the_write_probe_stops_start_up(make: type[Replication]) -> None:
    with pytest.raises(StartupError) as caught:
        make("s3://bkt1/p", mode="fail-write").start()
    message = str(caught.value)
    assert message.startswith("cannot replicate to s3://bkt1/p: sync database: NoSuchBucket")
    assert "(the bucket does not exist: create it first)" in message


def test_an_unwritable_folder_stops_start_up(tmp_path: Path, make: type[Replication]) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(StartupError) as caught:
        make((blocker / "replica").as_uri()).start()
    assert "cannot write to the replica folder" in str(caught.value)
    assert "choose a folder you can write to" in str(caught.value)


def test_an_endpoint_nobody_listens_on_stops_start_up_at_once(make: type[Replication]) -> None:
    import socket

    with socket.socket() as spare:
        spare.bind(("127.0.0.1", 0))
        port = spare.getsockname()[1]
    with pytest.raises(StartupError) as caught:
        make(f"s3://bkt1/p?endpoint=http://127.0.0.1:{port}").start()
    assert f"cannot reach the S3 endpoint http://127.0.0.1:{port}" in str(caught.value)


def test_the_lock_is_released_after_a_failed_start(db: Path, make: type[Replication]) -> None:
    with pytest.raises(StartupError):
        make(mode="fail-start").start()
    make().start()  # not refused as "already replicated"
    assert status(db)["state"] == "running"


def test_the_first_replication_says_what_litestream_changes_in_the_file(
    db: Path, make: type[Replication], lines: list[str]
) -> None:
    notice = f"sqlgate: replication: {CHANGES.format(db=db)}"
    first = make()
    first.start()
    first.stop()
    assert lines.count(notice) == 1
    assert "WAL mode" in notice
    assert "_litestream_seq" in notice
    make().start()  # replicated before: said once is enough
    assert lines.count(notice) == 1
