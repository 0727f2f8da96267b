"""`--project-db` on every command that takes `--db` (issue 20): the database is
PROJECT/.sqlgate/agent.db, PROJECT being $CLAUDE_PROJECT_DIR or the working folder."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from sqlgate.config import FLAGS, PROJECT_DB
from sqlgate.surfaces.cli.app import main
from tests.surfaces.cli.helpers import error_line, read, succeeded


@pytest.fixture(autouse=True)
def in_a_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The working folder is tmp_path/cwd; no SQLGATE_* nor CLAUDE_PROJECT_DIR is set."""
    for flag in FLAGS:
        monkeypatch.delenv(flag.env_var, raising=False)
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    return tmp_path


def invoke(*args: str, stdin: bytes | None = None, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, list(args), input=stdin, env=env, prog_name="sqlgate")


def leaves(group: click.Group = main, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command, through list_commands/get_command (a group may load them lazily)."""
    found: list[tuple[str, ...]] = []
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if isinstance(command, click.Group):
            found += leaves(command, (*path, name))
        else:
            found.append((*path, name))
    return found


def command_at(path: tuple[str, ...]) -> click.Command:
    command: click.Command | None = main
    for name in path:
        assert isinstance(command, click.Group)
        command = command.get_command(click.Context(command), name)
    assert command is not None, path
    return command


def takes(path: tuple[str, ...], option: str) -> bool:
    return any(option in getattr(p, "opts", ()) for p in command_at(path).params)


DB_COMMANDS = [path for path in leaves() if takes(path, "--db") and path[0] != "install"]


def test_the_commands_with_db_include_serve_capture_stats_and_log() -> None:
    assert {("serve",), ("capture",), ("stats",), ("log",)} <= set(DB_COMMANDS)


@pytest.mark.parametrize("path", DB_COMMANDS, ids=" ".join)
def test_every_command_that_takes_db_takes_project_db(path: tuple[str, ...]) -> None:
    assert takes(path, "--project-db")


# the smallest arguments that reach the settings (as in tests/test_docs.py's DB_RUNS)
ARGUMENTS: dict[tuple[str, ...], tuple[str, ...]] = {
    ("claims", "add"): ("acme", "fact", "slow", "0.8", "acme ships weekly"),
    ("claims", "confirm"): ("1",),
    ("claims", "retract"): ("1",),
    ("claims", "search"): ("acme",),
    ("members", "add"): ("alice", "--tier", "read"),
    ("members", "remove"): ("alice",),
    ("members", "revoke"): ("alice",),
    ("members", "rotate"): ("alice",),
    ("members", "set"): ("alice", "--tier", "write"),
    ("replicate",): ("file:///nonexistent-replica",),
    ("snapshots", "restore"): ("20260101T000000000000Z-000000.sqlite",),
    ("undo",): ("1",),
}


@pytest.mark.parametrize("path", [p for p in DB_COMMANDS if p != ("capture",)], ids=" ".join)
def test_db_and_project_db_together_exit_2_with_one_line(
    path: tuple[str, ...], in_a_project: Path
) -> None:
    source = in_a_project / "source.json"
    source.write_text("[]")
    arguments = ARGUMENTS.get(path, (str(source),) if path[0] == "import" else ())
    result = invoke(*path, *arguments, "--db", str(in_a_project / "x.db"), "--project-db")
    assert "--db and --project-db both choose the database" in error_line(result, 2)
    assert not (in_a_project / "x.db").exists()
    assert not (in_a_project / "cwd" / ".sqlgate").exists()


def prompt(text: str, session: str = "s1") -> bytes:
    return json.dumps({"session_id": session, "hook_event_name": "UserPromptSubmit",
                       "prompt": text, "cwd": "/x"}).encode()  # fmt: skip


def test_capture_with_project_db_writes_into_claude_project_dir(in_a_project: Path) -> None:
    project = in_a_project / "app"
    project.mkdir()
    result = invoke("capture", "--project-db", stdin=prompt("hello app"),
                    env={"CLAUDE_PROJECT_DIR": str(project)})  # fmt: skip
    assert succeeded(result) == ""
    db = project / PROJECT_DB
    assert read(db, "SELECT kind, content FROM memory_events") == [("prompt", "hello app")]
    assert not (in_a_project / "cwd" / ".sqlgate").exists()


def test_capture_with_project_db_and_no_project_dir_uses_the_working_folder(
    in_a_project: Path,
) -> None:
    assert succeeded(invoke("capture", "--project-db", stdin=prompt("hi"))) == ""
    rows = read(in_a_project / "cwd" / PROJECT_DB, "SELECT content FROM memory_events")
    assert rows == [("hi",)]


def test_capture_with_db_and_project_db_logs_the_problem_and_exits_0(in_a_project: Path) -> None:
    other = in_a_project / "other.db"
    result = invoke("capture", "--db", str(other), "--project-db", stdin=prompt("hi"))
    assert result.exit_code == 0
    assert result.stdout == ""
    assert not other.exists()
    log = other.with_name(other.name + ".capture.log")
    assert "--db and --project-db both choose the database" in log.read_text()


def test_capture_logs_beside_the_project_db(in_a_project: Path) -> None:
    project = in_a_project / "app"
    project.mkdir()
    result = invoke("capture", "--project-db", stdin=b"not json",
                    env={"CLAUDE_PROJECT_DIR": str(project)})  # fmt: skip
    assert result.exit_code == 0
    assert (project / ".sqlgate" / "agent.db.capture.log").is_file()


def test_stats_reads_the_project_database(in_a_project: Path) -> None:
    project = in_a_project / "app"
    project.mkdir()
    env = {"CLAUDE_PROJECT_DIR": str(project)}
    succeeded(invoke("capture", "--project-db", stdin=prompt("one"), env=env))
    result = invoke("stats", "--project-db", "--json", env=env)
    assert str(project / PROJECT_DB) in succeeded(result)


def test_project_db_from_the_environment(in_a_project: Path) -> None:
    result = invoke("capture", stdin=prompt("env"), env={"SQLGATE_PROJECT_DB": "1"})
    assert succeeded(result) == ""
    assert read(in_a_project / "cwd" / PROJECT_DB, "SELECT content FROM memory_events") == [
        ("env",)
    ]
