"""`sqlgate install claude-code` and issue 20: one database per project at user scope, hooks
that follow the server, async hooks, and Claude Code permissions (CliRunner, a fake HOME)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from sqlgate.surfaces.cli.app import main
from sqlgate.surfaces.integrations import install as setup
from tests.surfaces.integrations.fake_home import fake_home

ASK = ["mcp__sqlgate__destructive_query", "mcp__sqlgate__undo_call"]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    fake_home(tmp_path, monkeypatch)
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    return tmp_path


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), prog_name="sqlgate")


def ok(result: Result) -> str:
    assert result.exit_code == 0, (result.output, result.stderr)
    return result.output


def server(home: Path, name: str = "sqlgate") -> dict[str, Any]:
    entry = json.loads((home / "home" / ".claude.json").read_text())["mcpServers"][name]
    assert isinstance(entry, dict)
    return entry


def user_settings(home: Path) -> dict[str, Any]:
    data = json.loads((home / "home" / ".claude" / "settings.json").read_text())
    assert isinstance(data, dict)
    return data


def hook_commands(settings: dict[str, Any]) -> dict[str, list[str]]:
    """Per capture event, the commands of its sqlgate hooks."""
    return {
        event: [h["command"] for g in settings.get("hooks", {}).get(event, [])
                for h in g["hooks"] if setup.is_capture_command(h["command"])]
        for event in setup.CAPTURE_EVENTS
    }  # fmt: skip


def launcher() -> setup.Launcher:
    return setup.find_launcher(platform=setup.current_platform())


# -- one database per project at user scope -----------------------------------------------------
def test_user_scope_without_db_gives_each_project_its_own_database(home: Path) -> None:
    output = ok(invoke("install", "claude-code", "--capture"))

    assert server(home)["args"] == launcher().argv("serve", "--project-db")
    expected = setup.capture_command(launcher(), None, setup.current_platform())
    assert expected.endswith(" capture --project-db")
    assert hook_commands(user_settings(home)) == {e: [expected] for e in setup.CAPTURE_EVENTS}
    assert "each project gets its own database" in output


def test_user_scope_with_db_names_that_one_file_in_server_and_hooks(home: Path) -> None:
    shared = home / "shared.db"
    ok(invoke("install", "claude-code", "--capture", "--db", str(shared)))
    assert server(home)["args"] == launcher().argv("serve", "--db", str(shared))
    commands = {c for cs in hook_commands(user_settings(home)).values() for c in cs}
    assert len(commands) == 1
    assert shlex.split(commands.pop())[-2:] == ["--db", str(shared)]


def test_sqlgate_db_in_the_environment_is_a_chosen_file(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SQLGATE_DB", str(home / "env.db"))
    ok(invoke("install", "claude-code"))
    assert server(home)["args"][-2:] == ["--db", str(home / "env.db")]


def test_project_db_given_explicitly_beats_sqlgate_db(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SQLGATE_DB", str(home / "env.db"))
    ok(invoke("install", "claude-code", "--project-db"))
    assert server(home)["args"][-1] == "--project-db"


@pytest.mark.parametrize(
    ("args", "phrase"),
    [
        pytest.param(["claude-code", "--db", "a.db", "--project-db"],
                     "--db and --project-db both choose the database", id="both"),
        pytest.param(["cursor", "--project-db"],
                     "--project-db (or SQLGATE_PROJECT_DB) is for claude-code",
                     id="another-client"),
        pytest.param(["vscode", "--no-capture"], "only for claude-code", id="no-capture"),
    ],
)  # fmt: skip
def test_bad_choices_of_database_exit_2_and_write_nothing(
    home: Path, args: list[str], phrase: str
) -> None:
    result = invoke("install", *args)
    assert result.exit_code == 2
    assert phrase in result.stderr
    assert [p for p in home.rglob("*") if p.is_file()] == []


def test_other_clients_keep_the_per_user_database(home: Path) -> None:
    ok(invoke("install", "cursor"))
    entry = json.loads((home / "home" / ".cursor" / "mcp.json").read_text())["mcpServers"]
    assert entry["sqlgate"]["args"][-2] == "--db"


def test_project_scope_keeps_its_form(home: Path) -> None:
    ok(invoke("install", "claude-code", "--scope", "project", "--capture"))
    entry = json.loads((home / "project" / ".mcp.json").read_text())["mcpServers"]["sqlgate"]
    assert entry["args"] == ["serve", "--db", ".sqlgate/agent.db"]
    settings = json.loads((home / "project" / ".claude" / "settings.json").read_text())
    assert hook_commands(settings)["Stop"] == [
        'sqlgate capture --db "${CLAUDE_PROJECT_DIR:-.}/.sqlgate/agent.db"'
    ]


# -- hooks follow the server --------------------------------------------------------------------
def test_a_reinstall_with_another_db_moves_the_hooks_too(home: Path) -> None:
    """Issue 20 §5: the server moved, the four hooks stayed on the old database, silently."""
    ok(invoke("install", "claude-code", "--capture", "--db", str(home / "a.db")))

    output = ok(invoke("install", "claude-code", "--db", str(home / "b.db")))

    commands = {c for cs in hook_commands(user_settings(home)).values() for c in cs}
    assert [shlex.split(c)[-1] for c in commands] == [str(home / "b.db")]
    assert server(home)["args"][-1] == str(home / "b.db")
    assert f"moved the capture hooks with the server: {home / 'a.db'} → {home / 'b.db'}" in output


def test_switching_to_project_db_moves_server_and_hooks_and_says_where_the_old_db_is(
    home: Path,
) -> None:
    ok(invoke("install", "claude-code", "--capture", "--db", str(home / "a.db")))

    output = ok(invoke("install", "claude-code"))

    assert server(home)["args"][-1] == "--project-db"
    commands = {c for cs in hook_commands(user_settings(home)).values() for c in cs}
    assert len(commands) == 1
    assert commands.pop().endswith(" capture --project-db")
    assert f"--db {home / 'a.db'} → per project (--project-db)" in output
    assert f"({home / 'a.db'}) stays where it is" in output


def test_a_reinstall_without_capture_registers_no_hooks(home: Path) -> None:
    ok(invoke("install", "claude-code"))
    assert "hooks" not in user_settings(home)


def test_no_capture_takes_the_hooks_out_and_keeps_the_server(home: Path) -> None:
    ok(invoke("install", "claude-code", "--capture"))
    output = ok(invoke("install", "claude-code", "--no-capture"))
    assert "hooks" not in user_settings(home)
    assert "removed capture hooks" in output
    assert server(home)["args"][-1] == "--project-db"


def test_old_synchronous_hooks_become_async_on_reinstall(home: Path) -> None:
    command = setup.capture_command(launcher(), None, setup.current_platform())
    settings = home / "home" / ".claude" / "settings.json"
    settings.parent.mkdir()
    old = {"type": "command", "command": command}
    settings.write_text(
        json.dumps({"hooks": {e: [{"hooks": [old]}] for e in setup.CAPTURE_EVENTS}})
    )

    ok(invoke("install", "claude-code"))

    hooks = user_settings(home)["hooks"]
    assert hooks["SessionStart"] == [{"hooks": [{"type": "command", "command": command}]}]
    for event in ("UserPromptSubmit", "PostToolUse", "Stop"):
        assert hooks[event] == [{"hooks": [
            {"type": "command", "command": command, "async": True}]}]  # fmt: skip


# -- permissions ----------------------------------------------------------------------------------
def test_install_writes_permissions_with_or_without_capture(home: Path) -> None:
    ok(invoke("install", "claude-code"))
    permissions = user_settings(home)["permissions"]
    assert permissions["ask"] == ASK
    assert "mcp__sqlgate__read_query" in permissions["allow"]
    assert "mcp__sqlgate__write_query" in permissions["allow"]
    assert len(permissions["allow"]) == 21


def test_permissions_use_the_entry_name(home: Path) -> None:
    ok(invoke("install", "claude-code", "--name", "memory"))
    assert user_settings(home)["permissions"]["ask"] == [
        "mcp__memory__destructive_query", "mcp__memory__undo_call"
    ]  # fmt: skip


def test_uninstall_removes_exactly_the_rules_install_added(home: Path) -> None:
    settings = home / "home" / ".claude" / "settings.json"
    settings.parent.mkdir()
    mine = ('{\n  // my rules\n  "permissions": {\n    "allow": ["Bash(npm test)", '
            '"mcp__sqlgate__read_query"],\n    "ask": []\n  }\n}\n')  # fmt: skip
    settings.write_text(mine)

    ok(invoke("install", "claude-code", "--capture"))
    assert user_settings_text(home).count("mcp__sqlgate__read_query") == 1
    ok(invoke("uninstall", "claude-code"))

    assert settings.read_text() == mine


def user_settings_text(home: Path) -> str:
    return (home / "home" / ".claude" / "settings.json").read_text()


def test_dry_run_shows_the_permissions_and_writes_nothing(home: Path) -> None:
    output = ok(invoke("install", "claude-code", "--dry-run"))
    assert '+      "mcp__sqlgate__destructive_query",' in output
    assert "added Claude Code permissions" in output
    assert [p for p in home.rglob("*") if p.is_file()] == []


def test_project_scope_writes_the_permissions_into_the_projects_settings(home: Path) -> None:
    ok(invoke("install", "claude-code", "--scope", "project"))
    settings = json.loads((home / "project" / ".claude" / "settings.json").read_text())
    assert settings["permissions"]["ask"] == ASK
    assert not (home / "home" / ".claude").exists()
    ok(invoke("uninstall", "claude-code", "--scope", "project"))
    assert not (home / "project" / ".claude").exists()


# -- one project's memory never reaches another's session ---------------------------------------
def run_hook(command: str, project: Path, payload: dict[str, Any]) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SQLGATE_")}
    env["CLAUDE_PROJECT_DIR"] = str(project)
    done = subprocess.run(
        ["bash", "-c", command], input=json.dumps(payload).encode(), capture_output=True,
        cwd=project, env=env, timeout=60, check=True,
    )  # fmt: skip
    return done.stdout.decode()


@pytest.mark.skipif(sys.platform == "win32", reason="runs the hook line with bash")
def test_a_user_scope_session_start_reads_only_its_own_projects_memory(home: Path) -> None:
    ok(invoke("install", "claude-code", "--capture"))
    hooks = user_settings(home)["hooks"]
    prompt_hook = hooks["UserPromptSubmit"][0]["hooks"][0]["command"]
    start_hook = hooks["SessionStart"][0]["hooks"][0]["command"]
    a, b = home / "A", home / "B"
    a.mkdir()
    b.mkdir()

    run_hook(prompt_hook, a, {"session_id": "sa", "hook_event_name": "UserPromptSubmit",
                              "prompt": "the secret plan of project A"})  # fmt: skip
    in_b = run_hook(start_hook, b, {"session_id": "sb", "hook_event_name": "SessionStart",
                                    "source": "startup"})  # fmt: skip
    in_a = run_hook(start_hook, a, {"session_id": "sa2", "hook_event_name": "SessionStart",
                                    "source": "startup"})  # fmt: skip

    assert "the secret plan of project A" in in_a
    assert "the secret plan of project A" not in in_b
    assert (a / ".sqlgate" / "agent.db").is_file()
    assert (b / ".sqlgate" / "agent.db").is_file()
