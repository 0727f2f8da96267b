"""The real Codex CLI (npm, pinned in tests/e2e/codex/ for test_codex_client.py too) agrees
with codex_trust.py and codex_scopes.py: for each layout of a fake HOME (trust in the user's
config, git roots, worktrees, CODEX_HOME, an entry at each scope), the `sqlgate` entry
`codex mcp list --json` shows is the one sqlgate says Codex runs, and none where sqlgate says
Codex ignores it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sqlgate.surfaces.integrations.client_paths import Where, current_platform
from sqlgate.surfaces.integrations.codex_scopes import codex_connected, codex_entries
from sqlgate.surfaces.integrations.codex_trust import codex_trust
from sqlgate.surfaces.integrations.toml_config import toml_table
from tests.surfaces.integrations.real_clients import CODEX, install_client

pytestmark = [pytest.mark.e2e]

USER = {"command": "sqlgate-user", "args": ["serve"]}
PROJECT = {"command": "sqlgate-project", "args": ["serve", "--db", ".sqlgate/agent.db"]}


@pytest.fixture(scope="session")
def codex() -> list[str]:
    """The pinned Codex CLI (node and its script), installed with `npm ci` when needed."""
    return install_client(CODEX)


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as out:
        out.write(text)


def servers(entry: dict[str, Any]) -> str:
    return toml_table(("mcp_servers", "sqlgate"), entry) + "\n"


def trusts(path: Path, level: str = "trusted") -> str:
    return f'\n[projects."{path}"]\ntrust_level = "{level}"\n'


def git_repo(folder: Path) -> None:
    write(folder / ".git" / "HEAD", "ref: refs/heads/main\n")


Layout = Callable[[Path, Path], "tuple[Path, dict[str, str]]"]  # (home, project) -> cwd, env


def _untrusted(home: Path, project: Path) -> tuple[Path, dict[str, str]]:
    return project, {}


def _trusted(home: Path, project: Path) -> tuple[Path, dict[str, str]]:
    write(home / ".codex" / "config.toml", trusts(project))
    return project, {}


def _marked_untrusted(home: Path, project: Path) -> tuple[Path, dict[str, str]]:
    write(home / ".codex" / "config.toml", trusts(project, "untrusted"))
    return project, {}


def _git_root_trusted(home: Path, project: Path) -> tuple[Path, dict[str, str]]:
    git_repo(project.parent)
    write(home / ".codex" / "config.toml", trusts(project.parent))
    return project, {}


def _parent_trusted_no_git(home: Path, project: Path) -> tuple[Path, dict[str, str]]:
    write(home / ".codex" / "config.toml", trusts(project.parent))
    return project, {}


def _empty_git_folder(home: Path, project: Path) -> tuple[Path, dict[str, str]]:
    (project.parent / ".git").mkdir()
    write(home / ".codex" / "config.toml", trusts(project.parent))
    return project, {}


def _untrusted_folder_trusted_root(home: Path, project: Path) -> tuple[Path, dict[str, str]]:
    git_repo(project.parent)
    write(home / ".codex" / "config.toml", trusts(project.parent) + trusts(project, "untrusted"))
    return project, {}


def _worktree(home: Path, project: Path) -> tuple[Path, dict[str, str]]:
    main = home / "main"
    git_repo(main)
    write(main / ".git" / "worktrees" / "wt" / "gitdir", f"{project}/.git\n")
    write(main / ".git" / "worktrees" / "wt" / "commondir", "../..\n")
    write(project / ".git", f"gitdir: {main}/.git/worktrees/wt\n")
    write(home / ".codex" / "config.toml", trusts(main))
    return project, {}


def _worktree_not_named_back(home: Path, project: Path) -> tuple[Path, dict[str, str]]:
    main = home / "main"
    git_repo(main)
    (main / ".git" / "worktrees" / "wt").mkdir(parents=True)
    write(project / ".git", f"gitdir: {main}/.git/worktrees/wt\n")
    write(home / ".codex" / "config.toml", trusts(main))
    return project, {}


def _other_marker(home: Path, project: Path) -> tuple[Path, dict[str, str]]:
    (project.parent / ".hg").mkdir()
    write(
        home / ".codex" / "config.toml", 'project_root_markers = [".hg"]\n' + trusts(project.parent)
    )
    return project, {}


def _codex_home(home: Path, project: Path) -> tuple[Path, dict[str, str]]:
    other = home / "codex-home"
    if (home / ".codex").exists():
        shutil.move(home / ".codex", other)  # the user entry moves with it
    write(other / "config.toml", trusts(project))
    return project, {"CODEX_HOME": str(other)}


def _codex_home_trust_elsewhere(home: Path, project: Path) -> tuple[Path, dict[str, str]]:
    other = home / "codex-home"
    other.mkdir()
    if (home / ".codex").exists():
        shutil.copytree(home / ".codex", other, dirs_exist_ok=True)
    write(home / ".codex" / "config.toml", trusts(project))  # not read: CODEX_HOME wins
    return project, {"CODEX_HOME": str(other)}


def _home_is_the_project(home: Path, project: Path) -> tuple[Path, dict[str, str]]:
    return home, {}


LAYOUTS = [
    _untrusted, _trusted, _marked_untrusted, _git_root_trusted, _parent_trusted_no_git,
    _empty_git_folder, _untrusted_folder_trusted_root, _worktree, _worktree_not_named_back,
    _other_marker, _codex_home,
    _codex_home_trust_elsewhere, _home_is_the_project,
]  # fmt: skip
ENTRIES = {"both": (USER, PROJECT), "user-only": (USER, None), "project-only": (None, PROJECT)}


def codex_runs(codex: list[str], home: Path, cwd: Path, env: dict[str, str]) -> str | None:
    """The command of the `sqlgate` entry `codex mcp list --json` shows, if any."""
    environment = {k: v for k, v in os.environ.items() if k != "CODEX_HOME"}
    environment.update({"HOME": str(home), **env})
    done = subprocess.run([*codex, "mcp", "list", "--json"], cwd=cwd, env=environment,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    listed = {server["name"]: server for server in json.loads(done.stdout)}
    found = listed.get("sqlgate")
    return found["transport"]["command"] if found else None


@pytest.mark.parametrize("entries", list(ENTRIES), ids=list(ENTRIES))
@pytest.mark.parametrize("layout", LAYOUTS, ids=[f.__name__[1:] for f in LAYOUTS])
def test_sqlgate_says_what_the_real_codex_runs(
    codex: list[str], tmp_path: Path, layout: Layout, entries: str
) -> None:
    home = tmp_path / "home"
    project = home / "work" / "app"
    project.mkdir(parents=True)
    user, project_entry = ENTRIES[entries]
    if user is not None:
        write(home / ".codex" / "config.toml", servers(user))
    cwd, env = layout(home, project)
    if project_entry is not None and cwd != home:
        write(cwd / ".codex" / "config.toml", servers(project_entry))
    where = Where(current_platform(), home, cwd, env)
    chosen = codex_connected(codex_entries("sqlgate", where), codex_trust(where))
    expected = chosen.entry["command"] if chosen else None
    assert codex_runs(codex, home, cwd, env) == expected
