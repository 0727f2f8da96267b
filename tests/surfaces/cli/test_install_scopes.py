"""`sqlgate install claude-code` warns, on stderr, of an entry of the same name at another
Claude Code scope (surfaces/integrations/scopes.py has the cases)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from sqlgate.surfaces.cli.app import main
from tests.surfaces.integrations.fake_home import fake_home

OTHER = {"type": "stdio", "command": "/elsewhere/sqlgate", "args": ["serve", "--db", "/x.db"]}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return fake_home(tmp_path, monkeypatch)


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), prog_name="sqlgate")


def test_project_install_warns_of_a_user_scope_entry_and_still_installs(home: Path) -> None:
    (home / "home" / ".claude.json").write_text(json.dumps({"mcpServers": {"sqlgate": OTHER}}))
    result = invoke("install", "claude-code", "--scope", "project")
    assert result.exit_code == 0, result.output
    (line,) = result.stderr.splitlines()
    assert line.startswith("warning: ")
    assert "`sqlgate uninstall claude-code --scope user`" in line
    assert "sqlgate" in json.loads((home / "project" / ".mcp.json").read_text())["mcpServers"]


def test_a_dry_run_warns_too(home: Path) -> None:
    (home / "home" / ".claude.json").write_text(json.dumps({"mcpServers": {"sqlgate": OTHER}}))
    result = invoke("install", "claude-code", "--scope", "project", "--dry-run")
    assert result.exit_code == 0, result.output
    assert "Conflicting scopes" in result.stderr
    assert not (home / "project" / ".mcp.json").exists()


def test_user_install_warns_of_the_project_s_entry(home: Path) -> None:
    (home / "project" / ".mcp.json").write_text(json.dumps({"mcpServers": {"sqlgate": OTHER}}))
    result = invoke("install", "claude-code", "--db", str(home / "agent.db"))
    assert result.exit_code == 0, result.output
    project = home / "project"  # the command runs there, wherever it is pasted
    assert f"`cd {project} && sqlgate uninstall claude-code --scope project`" in result.stderr


def test_no_warning_without_another_scope(home: Path) -> None:
    result = invoke("install", "claude-code", "--scope", "project")
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
