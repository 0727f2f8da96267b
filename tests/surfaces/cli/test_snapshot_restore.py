"""`sqlgate snapshots restore`: the listing first, consent (a terminal's answer or --yes),
then a restore of the user's file that leaves sqlgate's records (in its home) as they are,
records itself in them and says which file it changed."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from sqlgate.config import FLAGS, Settings
from sqlgate.service import Service
from sqlgate.surfaces.cli import snapshot_restore
from sqlgate.surfaces.cli.app import main
from tests.records import records_path
from tests.surfaces.cli.helpers import error_line, read, succeeded


@pytest.fixture(autouse=True)
def no_sqlgate_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for flag in FLAGS:
        monkeypatch.delenv(flag.env_var, raising=False)


def invoke(*args: str, stdin: str | None = None) -> Result:
    return CliRunner().invoke(main, list(args), input=stdin, prog_name="sqlgate")


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def history(make_service: Callable[..., Service], db_path: Path) -> dict[str, Any]:
    """2 notes and 1 event in the snapshot; 3 events, a claim, a checkpoint, audit rows and
    a note written after it (one call with undo data)."""
    service = make_service()
    service.write_query("CREATE TABLE notes (body TEXT)")
    service.write_query("INSERT INTO notes VALUES ('a'), ('b')")
    service.append_event("in the snapshot")
    snapshot = service.sql.snapshot()
    for text in ("one", "two", "three"):
        service.append_event(f"after the snapshot: {text}")
    service.claim_add("api", "fact", "uses REST", "slow", 0.8)
    service.checkpoint("after the snapshot")
    service.write_query("INSERT INTO notes VALUES ('c')")
    service.close()
    return {"name": snapshot.name, "snapshot": snapshot}


def test_in_a_pipe_without_yes_it_lists_and_exits_2_changing_nothing(
    db_path: Path, history: dict[str, Any]
) -> None:
    digest = sha256(db_path)
    result = invoke("snapshots", "restore", history["name"], "--db", str(db_path))
    assert "pass --yes to restore" in error_line(result, 2)
    assert f"--db {db_path.absolute()} --yes" in result.stderr
    out = result.stdout
    assert f"restore {db_path.absolute()} to snapshot {history['name']}" in out
    assert "notes  3 -> 2  (+1 row)" in out
    assert "calls made after the snapshot, marked undone by the restore: 1;" in out
    assert "sqlgate's records (audit log, memory, claims, members) are not in the database" in out
    assert sha256(db_path) == digest
    assert not (Settings(db=db_path).snapshot_dir / "restored").exists()


def test_json_prints_the_plan_as_one_object(db_path: Path, history: dict[str, Any]) -> None:
    result = invoke("snapshots", "restore", history["name"], "--db", str(db_path), "--json")
    assert result.exit_code == 2
    plan = json.loads(result.stdout)["plan"]
    assert plan["db"] == str(db_path.absolute())
    assert plan["tables"] == [{"name": "notes", "rows_now": 3, "rows_in_snapshot": 2}]
    assert plan["calls_rolled_back"] == 1
    assert plan["left_out"] == []


@pytest.mark.parametrize(
    ("answer", "restored"),
    [pytest.param("y\n", True, id="yes"), pytest.param("n\n", False, id="no"),
     pytest.param("\n", False, id="default-no")],
)  # fmt: skip
def test_on_a_terminal_it_asks(
    db_path: Path, history: dict[str, Any], monkeypatch: pytest.MonkeyPatch, answer: str,
    restored: bool,
) -> None:  # fmt: skip
    monkeypatch.setattr(snapshot_restore, "on_terminal", lambda: True)
    digest = sha256(db_path)
    result = invoke("snapshots", "restore", history["name"], "--db", str(db_path), stdin=answer)
    assert "restore? [y/N]" in result.stdout
    if restored:
        succeeded(result)
        assert read(db_path, "SELECT count(*) FROM notes") == [(2,)]
    else:
        assert "declined; nothing changed" in error_line(result, 2)
        assert sha256(db_path) == digest


def test_with_yes_it_restores_names_the_file_and_verify_names_the_restore(
    db_path: Path, history: dict[str, Any]
) -> None:
    records = records_path(db_path)
    events = read(records, "SELECT * FROM memory_events ORDER BY id")
    claims = read(records, "SELECT * FROM claims ORDER BY id")
    checkpoints = read(records, "SELECT * FROM memory_checkpoints ORDER BY id")
    audit = read(records, "SELECT * FROM query_log ORDER BY id")
    out = succeeded(invoke("snapshots", "restore", history["name"], "--db", str(db_path), "--yes"))
    assert f"restored {db_path.absolute()} from snapshot {history['name']}" in out
    assert "calls made after the snapshot, marked undone: 1" in out
    kept = Settings(db=db_path).snapshot_dir.absolute() / "restored"
    (before,) = kept.iterdir()
    assert f"the previous content is kept at {before}" in out
    assert f"sqlgate snapshots restore restored/{before.name} --db {db_path.absolute()}" in out
    assert read(db_path, "SELECT body FROM notes ORDER BY rowid") == [("a",), ("b",)]
    # the records were never in the file: every row stays, the restore adds itself
    assert read(records, "SELECT * FROM memory_events ORDER BY id")[: len(events)] == events
    assert read(records, "SELECT * FROM claims ORDER BY id") == claims
    assert read(records, "SELECT * FROM memory_checkpoints ORDER BY id") == checkpoints
    assert read(records, "SELECT * FROM query_log ORDER BY id")[: len(audit)] == audit
    (restore_row,) = read(records, f"SELECT tool FROM query_log WHERE id > {len(audit)}")
    assert restore_row == ("snapshots restore",)
    verified = succeeded(invoke("verify", "--db", str(db_path)))
    head = len(events) + 1
    assert verified.startswith(f"chain ok: {head} events, head {head} ")
    assert f"1 restore recorded (latest: event {head} at " in verified
    assert f"rolled back to snapshot {history['name']}" in verified
    assert "no events yet" not in verified


def test_the_copy_of_before_outlives_more_snapshots_than_kept_and_undoes_the_restore(
    db_path: Path, history: dict[str, Any], make_service: Callable[..., Service]
) -> None:
    succeeded(invoke("snapshots", "restore", history["name"], "--db", str(db_path), "--yes"))
    service = make_service(snapshots_keep=2)
    for _ in range(4):
        service.sql.snapshot()
    service.close()
    listed = succeeded(invoke("snapshots", "list", "--db", str(db_path), "--json"))
    names = [json.loads(line)["name"] for line in listed.splitlines()]
    (kept,) = [name for name in names if name.startswith("restored/")]
    assert len(names) == 3
    succeeded(invoke("snapshots", "restore", kept, "--db", str(db_path), "--yes"))
    assert read(db_path, "SELECT body FROM notes ORDER BY rowid") == [("a",), ("b",), ("c",)]
    verified = succeeded(invoke("verify", "--db", str(db_path)))
    assert "2 restores recorded" in verified


def test_a_snapshot_of_another_database_is_refused(
    db_path: Path, history: dict[str, Any], tmp_path: Path
) -> None:
    # a snapshot is this database's when it lies in this database's snapshots folder: the
    # user's file holds no database id any more (issue 33), so another database's
    # snapshot is named by a path out of the folder, and that is refused
    other = Service.open(Settings(db=tmp_path / "other.db"), session="s-other")
    foreign = other.sql.snapshot()
    other.close()
    ours = Settings(db=db_path).snapshot_dir
    digest = sha256(db_path)
    for name in (
        str(foreign),
        f"../../{foreign.parent.parent.name}/snapshots/{foreign.name}",
        f"restored/../../{foreign.parent.parent.name}/snapshots/{foreign.name}",
    ):
        result = invoke("snapshots", "restore", name, "--db", str(db_path), "--yes")
        assert "is not a snapshot name" in error_line(result, 3)
    assert not (ours / foreign.name).exists()
    assert sha256(db_path) == digest


HOLDER = """
import sys, apsw
conn = apsw.Connection(sys.argv[1])
conn.execute("SELECT count(*) FROM notes").fetchall()
print("ready", flush=True)
sys.stdin.readline()
"""


def test_through_a_pipe_a_database_another_process_holds_is_refused_naming_it(
    db_path: Path, history: dict[str, Any]
) -> None:
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(db_path)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert holder.stdout is not None
        assert holder.stdin is not None
        assert holder.stdout.readline().strip() == "ready"
        digest = sha256(db_path)
        done = subprocess.run(
            [sys.executable, "-m", "sqlgate", "snapshots", "restore", history["name"],
             "--db", str(db_path), "--yes"],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 7, done.stderr
        (line,) = done.stderr.splitlines()
        if sys.platform.startswith("linux"):
            assert f"pid {holder.pid}: " in line
        assert (
            f"then run: sqlgate snapshots restore {history['name']} --db {db_path.absolute()} "
            "--yes" in line
        )
        assert sha256(db_path) == digest
        holder.stdin.write("done\n")
        holder.stdin.flush()
        assert holder.wait(timeout=30) == 0
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()


def test_through_a_pipe_without_yes_a_real_process_exits_2(
    db_path: Path, history: dict[str, Any]
) -> None:
    digest = sha256(db_path)
    done = subprocess.run(
        [sys.executable, "-m", "sqlgate", "snapshots", "restore", history["name"],
         "--db", str(db_path)],
        input="y\n", capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2
    assert "pass --yes to restore" in done.stderr
    assert "calls made after the snapshot, marked undone by the restore: 1;" in done.stdout
    assert sha256(db_path) == digest
