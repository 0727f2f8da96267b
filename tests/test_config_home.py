"""Settings find the project's database (issue 33): walking up to a `.sqlgate/` home when no
option nor environment variable names one, `--project-db` from a subfolder, and how the
database was chosen (`Settings.db_source`)."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import pytest

import sqlgate.home as home_module
from sqlgate.config import (
    FLAGS,
    PROJECT_DB,
    Settings,
    default_db_path,
    load_settings,
    project_folder,
)
from sqlgate.errors import InvalidArgument
from sqlgate.home import HOME_DIR, Home, HomeRefused, note_guarded


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No SQLGATE_* of the developer's; a home folder and per-user data folder of the test's."""
    for flag in FLAGS:
        monkeypatch.delenv(flag.env_var, raising=False)
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    data = tmp_path / "data"
    monkeypatch.setattr(home_module, "user_data_folder", lambda: data)


def a_project(tmp_path: Path, *, agent_db: bool = True, git: bool = False) -> Path:
    """tmp_path/app with `.sqlgate/` (and its agent.db) and a deep subfolder `src/pkg`."""
    project = tmp_path / "app"
    (project / "src" / "pkg").mkdir(parents=True, exist_ok=True)
    (project / HOME_DIR).mkdir(exist_ok=True)
    if agent_db:
        (project / PROJECT_DB).write_bytes(b"")
    if git:
        (project / ".git").mkdir(exist_ok=True)
    return project.resolve()


def guard(project: Path, *names: str) -> list[Path]:
    home = Home(project / HOME_DIR, project)
    found = []
    for name in names:
        db = project / name
        db.parent.mkdir(parents=True, exist_ok=True)
        db.write_bytes(b"")
        note_guarded(db, home)
        found.append(db)
    return found


@pytest.mark.parametrize("where", [".", "src", "src/pkg"])
def test_the_projects_own_database_is_found_from_any_subfolder(tmp_path: Path, where: str) -> None:
    project = a_project(tmp_path)
    settings = load_settings(env={}, cwd=project / where)
    assert settings.db == project / PROJECT_DB
    assert settings.db_source == "home"
    assert settings.project_db is False


def test_one_guarded_database_is_found(tmp_path: Path) -> None:
    project = a_project(tmp_path, agent_db=False)
    [db] = guard(project, "data/db.sqlite3")
    settings = load_settings(env={}, cwd=project / "src" / "pkg")
    assert (settings.db, settings.db_source) == (db, "home")


@pytest.mark.parametrize(
    "names",
    [
        pytest.param(("db.sqlite3",), id="agent-db-and-one-more"),
        pytest.param(("my app/db.sqlite3", "it's.db"), id="names-that-need-quotes"),
    ],
)
def test_several_guarded_databases_are_a_usage_error_naming_each(
    tmp_path: Path, names: tuple[str, ...]
) -> None:
    project = a_project(tmp_path)
    dbs = [project / PROJECT_DB, *guard(project, *names)]
    with pytest.raises(InvalidArgument) as caught:
        load_settings(env={}, cwd=project / "src")
    message = str(caught.value)
    assert caught.value.exit_code == 2
    assert "\n" not in message
    assert str(project / HOME_DIR) in message
    for db in dbs:
        assert f"--db {shlex.quote(str(db))}" in message
        assert shlex.split(f"x --db {shlex.quote(str(db))}")[2] == str(db)


@pytest.mark.parametrize(
    "shape",
    [
        pytest.param("no-project", id="no-project"),
        pytest.param("git-only", id="a-bare-git-chooses-nothing"),
        pytest.param("empty-home", id="a-home-guarding-nothing"),
        pytest.param("stale-note", id="a-home-whose-database-is-gone"),
    ],
)
def test_otherwise_the_per_user_default(tmp_path: Path, shape: str) -> None:
    project = tmp_path / "app"
    (project / "src").mkdir(parents=True)
    if shape == "git-only":
        (project / ".git").mkdir()
    elif shape == "empty-home":
        a_project(tmp_path, agent_db=False)
    elif shape == "stale-note":
        [db] = guard(a_project(tmp_path, agent_db=False), "db.sqlite3")
        db.unlink()
    settings = load_settings(env={}, cwd=project / "src")
    assert (settings.db, settings.db_source) == (default_db_path(), "default")


@pytest.mark.parametrize(
    ("explicit", "env", "source"),
    [
        pytest.param({"db": Path("/x.db")}, {}, "option", id="db-option"),
        pytest.param({}, {"SQLGATE_DB": "/x.db"}, "env", id="db-env"),
        pytest.param({"project_db": True}, {}, "project", id="project-db-option"),
        pytest.param({}, {"SQLGATE_PROJECT_DB": "1"}, "project", id="project-db-env"),
        pytest.param({"project_db": True}, {"SQLGATE_DB": "/x.db"}, "project",
                     id="explicit-project-db-beats-env-db"),
        pytest.param({"db": Path("/x.db")}, {"SQLGATE_PROJECT_DB": "1"}, "option",
                     id="explicit-db-beats-env-project-db"),
    ],
)  # fmt: skip
def test_a_named_database_beats_the_walk(
    tmp_path: Path, explicit: dict[str, Any], env: dict[str, str], source: str
) -> None:
    project = a_project(tmp_path)
    guard(project, "db.sqlite3")  # two guarded: the walk alone would be a usage error
    settings = load_settings(explicit, env=env, cwd=project / "src")
    assert settings.db_source == source
    expected = project / PROJECT_DB if source == "project" else Path("/x.db")
    assert settings.db == expected


def test_the_walk_can_be_left_out(tmp_path: Path) -> None:
    """`serve` and `capture` (and `install`, `tools`) keep the per-user default."""
    project = a_project(tmp_path)
    settings = load_settings(env={}, cwd=project / "src", find_home=False)
    assert (settings.db, settings.db_source) == (default_db_path(), "default")


def test_settings_made_by_hand_name_their_database() -> None:
    assert Settings(db=Path("x.db")).db_source == "option"
    with pytest.raises(InvalidArgument, match="db_source"):
        Settings(db=Path("x.db"), db_source="guess")


# -- --project-db from a subfolder --------------------------------------------------------------
@pytest.mark.parametrize(
    ("marker", "expected"),
    [
        pytest.param("sqlgate", "project", id="a-home-further-up"),
        pytest.param("git", "project", id="the-repository-root"),
        pytest.param(None, "cwd", id="no-project-the-working-folder"),
    ],
)
def test_project_db_in_a_subfolder_uses_the_projects_home(
    tmp_path: Path, marker: str | None, expected: str
) -> None:
    project = tmp_path / "app"
    cwd = project / "src" / "pkg"
    cwd.mkdir(parents=True)
    if marker == "sqlgate":
        (project / HOME_DIR).mkdir()
    elif marker == "git":
        (project / ".git").write_text("gitdir: elsewhere\n")
    settings = load_settings({"project_db": True}, env={}, cwd=cwd)
    folder = project.resolve() if expected == "project" else cwd
    assert settings.db == folder / PROJECT_DB
    assert not (cwd / HOME_DIR).exists()  # no second, empty home is made
    assert project_folder({}, cwd) == folder


def test_claude_project_dir_still_names_the_project(tmp_path: Path) -> None:
    project, other = a_project(tmp_path), tmp_path / "other"
    other.mkdir()
    settings = load_settings({"project_db": True}, env={"CLAUDE_PROJECT_DIR": str(other)},
                             cwd=project / "src")  # fmt: skip
    assert settings.db == other / PROJECT_DB


@pytest.mark.parametrize("marker", [".sqlgate", ".git"])
def test_claude_project_dir_in_a_subfolder_names_the_project_above(
    tmp_path: Path, marker: str
) -> None:
    """Claude Code started in a subfolder sets $CLAUDE_PROJECT_DIR to it: the project's own
    home above it is used, no second `.sqlgate/` is made there."""
    project = tmp_path / "app"
    (project / "src" / "deep").mkdir(parents=True)
    (project / marker).mkdir()
    start = project / "src" / "deep"
    settings = load_settings(
        {"project_db": True}, env={"CLAUDE_PROJECT_DIR": str(start)}, cwd=tmp_path
    )
    assert settings.db == project / PROJECT_DB
    assert not (start / HOME_DIR).exists()


@pytest.mark.parametrize("shape", ["file", "link-to-a-folder"])
def test_project_db_refuses_a_sqlgate_that_is_no_real_folder(tmp_path: Path, shape: str) -> None:
    """A cloned repository's `.sqlgate` link must not send the agent's database elsewhere."""
    project = tmp_path / "app"
    (project / "src").mkdir(parents=True)
    (project / ".git").mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    if shape == "file":
        (project / HOME_DIR).write_text("x")
    else:
        (project / HOME_DIR).symlink_to(elsewhere)
    with pytest.raises(HomeRefused, match="real folder") as caught:
        load_settings({"project_db": True}, env={}, cwd=project / "src")
    assert caught.value.exit_code == 8
    assert list(elsewhere.iterdir()) == []


def test_project_db_in_the_home_folder_uses_the_home_folder(tmp_path: Path) -> None:
    """The home folder is never a project found by walking, but a session started there
    with --project-db keeps its own `~/.sqlgate/agent.db`, as before."""
    home = tmp_path / "home"
    (home / ".git").mkdir()  # a dotfiles repository
    (home / "notes").mkdir()
    assert load_settings({"project_db": True}, env={}, cwd=home).db == home / PROJECT_DB
    inside = load_settings({"project_db": True}, env={}, cwd=home / "notes")
    assert inside.db == home / "notes" / PROJECT_DB
