"""The README's "Guard your app's database" example, run as written in a Django project.

The block after `<!-- e2e: django -->` runs in bash, in the folder that holds the project
`mysite` (with `sqlgate` on PATH); then the server its `.mcp.json` entry names, with the
`--hide-column` the prose tells to add, is started as Claude Code starts it (in the project
folder) and an agent uses it. Django's checks and the file checks hold afterwards.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.frameworks.agent import agent_session, server_env
from tests.e2e.frameworks.checks import Baseline, assert_home, assert_still_the_apps
from tests.e2e.frameworks.projects import DjangoProject, framework_env

pytestmark = [pytest.mark.e2e, pytest.mark.stdio]

ROOT = Path(__file__).resolve().parents[3]
BLOCK = re.compile(r"^<!-- e2e: django -->\n```sh\n(.*?)```", re.M | re.S)
SECTION = "## Guard your app's database"
HIDE = ["--hide-column", "auth_user.password"]


def readme_example() -> tuple[str, str]:
    """(the section's prose, its one marked block)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split(f"\n{SECTION}\n", 1)[1].split("\n## ", 1)[0]
    (block,) = BLOCK.findall(section)
    return section, block


def run_as_written(block: str, folder: Path, home: Path) -> str:
    """The block in bash, stopping at the first failing line; what it printed."""
    shims = home / "bin"
    shims.mkdir(parents=True)
    (shims / "sqlgate").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m sqlgate "$@"\n')
    (shims / "sqlgate").chmod(0o755)
    env = framework_env() | server_env(home)
    env["PATH"] = f"{shims}{os.pathsep}{env['PATH']}"
    done = subprocess.run(["bash", "-e", "-c", block], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, f"the README's block exited {done.returncode}: {done.stderr}"
    return done.stdout


def test_the_readme_shows_the_django_example() -> None:
    section, block = readme_example()
    assert "cd mysite" in block
    assert "--db db.sqlite3" in block
    assert '`"--hide-column", "auth_user.password"`' in section


@pytest.mark.anyio
@pytest.mark.parametrize("django_built", ["delete"], indirect=True)
async def test_the_readme_example_guards_a_django_database_as_written(
    django_project: DjangoProject, tmp_path: Path
) -> None:
    _, block = readme_example()
    assert django_project.folder == tmp_path / "mysite"
    run_as_written(block, tmp_path, tmp_path / "home")
    entry = json.loads((django_project.folder / ".mcp.json").read_text(encoding="utf-8"))
    server = entry["mcpServers"]["sqlgate"]
    db = django_project.db
    before = Baseline.of(db)
    argv = [server["command"], *server["args"], *HIDE]
    async with agent_session(argv, cwd=django_project.folder, home=tmp_path / "home") as agent:
        listed = await agent.call("list_tables")
        assert "shop_order" in {line.split(",")[0] for line in listed.splitlines()}
        users = await agent.call("read_query", query="SELECT username, password FROM auth_user")
        assert users.splitlines()[1] == "admin,"
        written = await agent.call(
            "write_query", query="UPDATE auth_user SET first_name = 'Ada' WHERE username = 'admin'"
        )
        await agent.undo(written, "only trying the undo")
    django_project.manage("makemigrations", "--check", "--dry-run")
    django_project.manage("migrate", "--check")
    assert_still_the_apps(db, before, django_project.journal)
    assert_home(db)
