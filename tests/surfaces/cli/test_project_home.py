"""Commands find the project's database from any subfolder (issue 33, part 7): the one
database its `.sqlgate/` home guards, a usage error naming each when it guards several, and
one stderr line on a terminal saying which database a command reads and why."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import sqlgate.home as home_module
from sqlgate.config import FLAGS, PROJECT_DB
from sqlgate.home import DBS_DIR, HOME_DIR, Home, note_guarded, record_files
from sqlgate.surfaces.cli.app import main
from sqlgate.surfaces.cli.options import settings_from
from tests.surfaces.cli.helpers import error_line, read, succeeded

TERMINAL = {"TTY_COMPATIBLE": "1"}
PIPED = {"TTY_COMPATIBLE": "0"}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """tmp_path/app, a project whose `.sqlgate/agent.db` holds one claim; the working folder
    is its subfolder src/pkg; the per-user data folder (tmp_path/data) holds no database."""
    for flag in FLAGS:
        monkeypatch.delenv(flag.env_var, raising=False)
    for name in ("CLAUDE_PROJECT_DIR", "TTY_COMPATIBLE", "FORCE_COLOR"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    data = tmp_path / "data"
    monkeypatch.setattr(home_module, "user_data_folder", lambda: data)
    root = (tmp_path / "app").resolve()
    (root / "src" / "pkg").mkdir(parents=True)
    (root / ".git").mkdir()
    db = root / PROJECT_DB
    added = invoke("claims", "add", "acme", "fact", "slow", "0.8", "acme ships weekly",
                   "--db", str(db))  # fmt: skip
    succeeded(added)
    monkeypatch.chdir(root / "src" / "pkg")
    return root


CLAIM = ("acme", "fact", "slow", "0.8", "acme ships weekly")


def records_of(db: Path) -> Path:
    """The records folder the line names: in the project's home, keyed by the real file."""
    return record_files(db).folder


def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, list(args), env=env, prog_name="sqlgate")


READERS = [
    pytest.param(("log",), id="log"),
    pytest.param(("stats",), id="stats"),
    pytest.param(("verify",), id="verify"),
    pytest.param(("export",), id="export"),
    pytest.param(("claims", "list"), id="claims-list"),
    pytest.param(("members", "list"), id="members-list"),
    pytest.param(("undo", "--list"), id="undo-list"),
    pytest.param(("snapshots", "list"), id="snapshots-list"),
    pytest.param(("policy", "show"), id="policy-show"),
    pytest.param(("policy", "check"), id="policy-check"),
]


@pytest.mark.parametrize("command", READERS)
def test_a_command_in_a_subfolder_reads_the_projects_database(
    project: Path, command: tuple[str, ...]
) -> None:
    result = invoke(*command, env=TERMINAL)
    succeeded(result)
    records = records_of(project / PROJECT_DB)
    assert records.parent == project / HOME_DIR / DBS_DIR  # the project's home keeps them
    line = (
        f"sqlgate: database {project / PROJECT_DB} (from {project / HOME_DIR}); records in "
        f"{records}"
    )
    assert result.stderr.splitlines()[0] == line


def test_log_reads_the_project_not_the_per_user_database(project: Path) -> None:
    log = invoke("log", env=PIPED)
    assert succeeded(log) == ""
    assert log.stderr == "no calls in the audit log\n"
    claims = json.loads(succeeded(invoke("claims", "list", "--json")).splitlines()[0])
    assert claims["claim"] == "acme ships weekly"
    # the per-user database was never made (the per-user folder holds only the note of which
    # records folder the project's database has: a deleted .sqlgate/ is then history gone)
    assert not (project.parent / "data" / "memory.db").exists()
    assert not (project.parent / "data" / "dbs").exists()


@pytest.mark.parametrize("command", READERS)
def test_no_line_when_stderr_is_piped(project: Path, command: tuple[str, ...]) -> None:
    result = invoke(*command, env=PIPED)
    succeeded(result)
    assert "sqlgate: database" not in result.stderr


def test_stdout_is_the_same_on_a_terminal_and_named_by_db(project: Path) -> None:
    found = invoke("claims", "list", "--json", env=TERMINAL)
    named = invoke("claims", "list", "--json", "--db", str(project / PROJECT_DB), env=TERMINAL)
    assert succeeded(found) == succeeded(named)
    assert named.stderr == ""  # named by --db: nothing to say


def test_no_line_for_a_database_named_by_its_variable(project: Path) -> None:
    env = {**TERMINAL, "SQLGATE_DB": str(project / PROJECT_DB)}
    assert invoke("log", env=env).stderr == ""


def test_the_line_says_project_db_and_the_project(project: Path) -> None:
    result = invoke("log", "--project-db", env=TERMINAL)
    succeeded(result)
    assert result.stderr.splitlines() == [
        f"sqlgate: database {project / PROJECT_DB} (--project-db: the project {project}); "
        f"records in {records_of(project / PROJECT_DB)}"
    ]


def test_the_line_says_the_per_user_default(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    monkeypatch.chdir(outside)
    missing = invoke("log", env=TERMINAL)
    assert missing.exit_code == 3
    default = tmp_path / "data" / "memory.db"
    assert missing.stderr.splitlines()[0] == (
        f"sqlgate: database {default} (the per-user default: above {outside.resolve()}, no "
        f"project's .sqlgate/ keeps one); records in {records_of(default)}"
    )


def test_the_line_is_said_once_per_command(project: Path) -> None:
    result = invoke("undo", "--list", env=TERMINAL)  # undo reads its settings twice
    succeeded(result)
    assert result.stderr.count("sqlgate: database") == 1


@pytest.mark.parametrize(
    "command",
    [
        *READERS,
        pytest.param(("ui",), id="ui"),
        pytest.param(("replicate", "file:///nonexistent-replica"), id="replicate"),
        pytest.param(("claims", "add", "acme", "fact", "slow", "0.8", "x"), id="claims-add"),
    ],
)
def test_two_guarded_databases_exit_2_naming_each(project: Path, command: tuple[str, ...]) -> None:
    other = project / "my data" / "db.sqlite3"
    other.parent.mkdir()
    other.write_bytes(b"")
    note_guarded(other, Home(project / HOME_DIR, project))
    result = invoke(*command)
    line = error_line(result, 2)
    for db in (project / PROJECT_DB, other):
        assert f"--db {shlex.quote(str(db))}" in line


def test_the_database_named_among_several_is_used(project: Path) -> None:
    other = project / "other.db"
    other.write_bytes(b"")
    note_guarded(other, Home(project / HOME_DIR, project))
    succeeded(invoke("log", "--db", str(project / PROJECT_DB)))


def test_a_bare_repository_does_not_choose_a_database(project: Path) -> None:
    (project / PROJECT_DB).unlink()
    result = invoke("log")
    assert "no database at" in error_line(result, 3)
    assert str(project.parent / "data" / "memory.db") in result.stderr


def test_capture_keeps_the_per_user_database_inside_a_project(
    project: Path, tmp_path: Path
) -> None:
    """Hooks of a user-scope install record where that install's server serves (`serve`
    and `capture` leave the walk out), never into the project's database unasked."""
    payload = json.dumps({"session_id": "s1", "hook_event_name": "UserPromptSubmit",
                          "prompt": "hello", "cwd": "/x"}).encode()  # fmt: skip
    count = "SELECT count(*) FROM memory_events"
    before = read(project / PROJECT_DB, count)
    result = CliRunner().invoke(main, ["capture"], input=payload, prog_name="sqlgate")
    assert result.exit_code == 0
    default = tmp_path / "data" / "memory.db"
    assert read(default, "SELECT content FROM memory_events") == [("hello",)]
    assert read(project / PROJECT_DB, count) == before


@pytest.mark.parametrize(
    ("walked", "why"),
    [
        pytest.param(True, "the per-user default: above ", id="walked"),
        pytest.param(False, "the per-user default)", id="serve-does-not-walk"),
    ],
)
def test_the_default_line_says_whether_a_project_was_looked_for(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    walked: bool, why: str,
) -> None:  # fmt: skip
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    monkeypatch.chdir(project.parent)
    settings = settings_from({}, find_home=walked)
    assert settings.db_source == "default"
    assert why in capsys.readouterr().err


def test_the_line_names_the_real_file_of_a_linked_database(project: Path) -> None:
    real = project / "data" / "app.db"
    real.parent.mkdir()
    (project / PROJECT_DB).rename(real)
    (project / PROJECT_DB).symlink_to(real)
    # the records go by the real file (a link and its target share them): the home now
    # guards the real file, and the line names it
    succeeded(invoke("claims", "add", *CLAIM, "--db", str(project / PROJECT_DB)))
    result = invoke("log", env=TERMINAL)
    succeeded(result)
    assert result.stderr.splitlines()[0] == (
        f"sqlgate: database {real} (from {project / HOME_DIR}); records in {records_of(real)}"
    )


def test_install_points_the_agent_at_the_apps_database_in_one_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`install claude-code --db db.sqlite3 --scope project` (issue 33, part 7): the entry
    serves the app's database as it is, its records go to the project's `.sqlgate/`, and
    every command in the project then reads that database without --db."""
    import subprocess
    import sys

    import apsw

    for flag in FLAGS:
        monkeypatch.delenv(flag.env_var, raising=False)
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    root = (tmp_path / "app").resolve()
    (root / "polls").mkdir(parents=True)
    (root / ".git").mkdir()
    db = root / "db.sqlite3"
    conn = apsw.Connection(str(db))
    conn.execute("CREATE TABLE auth_user (id INTEGER PRIMARY KEY, username TEXT);"
                 "INSERT INTO auth_user (username) VALUES ('ada')")  # fmt: skip
    conn.close()
    content = db.read_bytes()
    monkeypatch.chdir(root)
    succeeded(invoke("install", "claude-code", "--db", "db.sqlite3", "--scope", "project"))
    entry = json.loads((root / ".mcp.json").read_text(encoding="utf-8"))["mcpServers"]["sqlgate"]
    assert entry["args"] == ["serve", "--db", "db.sqlite3"]
    # what Claude Code starts, in the project folder: the app's database, served as it is
    served = subprocess.run(
        [sys.executable, "-m", "sqlgate", *entry["args"]], cwd=root, stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert served.returncode == 0, served.stderr
    assert db.read_bytes() == content
    records = record_files(db).folder
    assert records.parent == root / HOME_DIR / DBS_DIR
    monkeypatch.chdir(root / "polls")
    result = invoke("log", env=TERMINAL)
    succeeded(result)
    assert result.stderr.splitlines()[0] == (
        f"sqlgate: database {db} (from {root / HOME_DIR}); records in {records}"
    )
    assert db.read_bytes() == content
