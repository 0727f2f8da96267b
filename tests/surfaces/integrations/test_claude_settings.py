"""Claude Code's settings file as install edits it (claude_settings.py, capture_hooks.py):
async capture hooks and their upgrade, hooks that follow the server to another database,
and permission rules merged in and taken out exactly."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from sqlgate.surfaces.integrations import install_records
from sqlgate.surfaces.integrations.capture_hooks import hook_database
from sqlgate.surfaces.integrations.install import (
    CAPTURE_EVENTS,
    PER_PROJECT,
    Launcher,
    SettingsEdit,
    Where,
    apply,
    capture_command,
    plan_settings,
    settings_path,
)

NOW = datetime(2026, 5, 4, 3, 2, 1, tzinfo=timezone.utc)
NEW = "/opt/bin/sqlgate capture --db /data/new.db"
OLD = "/opt/bin/sqlgate capture --db /data/old.db"


@pytest.fixture
def where(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Where:
    for name in ("home", "project"):
        (tmp_path / name).mkdir()
    monkeypatch.setattr(install_records, "data_dir", lambda: tmp_path / "sqlgate-data")
    return Where("linux", tmp_path / "home", tmp_path / "project", {})


def write(where: Where, settings: dict[str, Any]) -> Path:
    path = settings_path("user", where)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(settings, indent=2) + "\n")
    return path


def read(where: Where) -> dict[str, Any]:
    data = json.loads(settings_path("user", where).read_text())
    assert isinstance(data, dict)
    return data


def run(where: Where, **edit: Any) -> str:
    change = plan_settings(SettingsEdit(**edit), "user", where)
    apply(change, NOW)
    return change.summary


def ours(hooks: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Per event, the sqlgate hooks in it."""
    return {
        event: [h for g in hooks.get(event, []) for h in g.get("hooks", [])
                if "sqlgate" in h.get("command", "")]
        for event in CAPTURE_EVENTS
    }  # fmt: skip


# -- async hooks ------------------------------------------------------------------------------
def test_every_capture_hook_but_session_start_is_async(where: Where) -> None:
    summary = run(where, hooks="register", command=NEW)
    found = ours(read(where)["hooks"])
    assert found["SessionStart"] == [{"type": "command", "command": NEW}]
    for event in ("UserPromptSubmit", "PostToolUse", "Stop"):
        assert found[event] == [{"type": "command", "command": NEW, "async": True}]
    assert "async but SessionStart" in summary


def test_a_reinstall_upgrades_old_hooks_of_ours_and_keeps_everyone_elses(where: Where) -> None:
    theirs = {"type": "command", "command": "notify.sh", "async": True}
    write(where, {"hooks": {
        "SessionStart": [{"hooks": [{"type": "command", "command": NEW, "async": True}]}],
        "PostToolUse": [{"matcher": "*", "hooks": [
            {"type": "command", "command": NEW, "timeout": 9}, theirs]}],
        "Stop": [{"hooks": [{"type": "command", "command": NEW}]},
                 {"hooks": [{"type": "command", "command": NEW}]}],
    }})  # fmt: skip

    summary = run(where, hooks="register", command=NEW)

    hooks = read(where)["hooks"]
    assert hooks["SessionStart"] == [{"hooks": [{"type": "command", "command": NEW}]}]
    assert hooks["PostToolUse"] == [{"matcher": "*", "hooks": [
        {"type": "command", "command": NEW, "timeout": 9, "async": True}, theirs]}]  # fmt: skip
    assert hooks["Stop"] == [{"hooks": [{"type": "command", "command": NEW, "async": True}]}]
    assert hooks["UserPromptSubmit"] == [{"hooks": [
        {"type": "command", "command": NEW, "async": True}]}]  # fmt: skip
    assert summary.startswith("brought the capture hooks up to date")


def test_uninstall_removes_our_hooks_whatever_their_form(where: Where) -> None:
    theirs = {"hooks": [{"type": "command", "command": "say hi", "async": True}]}
    write(where, {"hooks": {
        "Stop": [{"hooks": [{"type": "command", "command": OLD, "async": True}]}, theirs],
        "PostToolUse": [{"hooks": [{"type": "command", "command": OLD}]}],
        "UserPromptSubmit": [{"hooks": [
            {"type": "command", "command": "/usr/bin/python3 -m sqlgate capture --project-db"}]}],
    }})  # fmt: skip
    run(where, hooks="remove")
    assert read(where) == {"hooks": {"Stop": [theirs]}}


# -- hooks follow the server ------------------------------------------------------------------
def test_follow_moves_our_hooks_to_the_new_database_and_says_from_where(where: Where) -> None:
    write(where, {"hooks": {event: [{"hooks": [{"type": "command", "command": OLD}]}]
                            for event in CAPTURE_EVENTS}})  # fmt: skip

    summary = run(where, hooks="follow", command=NEW)

    assert {h["command"] for hs in ours(read(where)["hooks"]).values() for h in hs} == {NEW}
    assert summary == "moved the capture hooks with the server: /data/old.db → /data/new.db"


def test_follow_without_our_hooks_registers_none(where: Where) -> None:
    write(where, {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say hi"}]}]}})
    change = plan_settings(SettingsEdit("follow", NEW), "user", where)
    assert not change.needed


@pytest.mark.parametrize(
    ("command", "shown"),
    [
        pytest.param(OLD, "/data/old.db", id="db"),
        pytest.param("/opt/bin/sqlgate capture --project-db", PER_PROJECT, id="per-project"),
        pytest.param('sqlgate capture --db "${CLAUDE_PROJECT_DIR:-.}/.sqlgate/agent.db"',
                     "${CLAUDE_PROJECT_DIR:-.}/.sqlgate/agent.db", id="project-scope"),
        pytest.param("/opt/bin/sqlgate capture", "(the default)", id="default"),
    ],
)  # fmt: skip
def test_the_database_a_hook_names(command: str, shown: str) -> None:
    assert hook_database(command) == shown


def test_a_per_project_capture_command_names_no_database() -> None:
    command = capture_command(Launcher("/opt/my tools/sqlgate"), None, "linux")
    assert command == "'/opt/my tools/sqlgate' capture --project-db"
    assert capture_command(Launcher("C:\\t\\sqlgate.exe"), None, "win32") == (
        "C:/t/sqlgate.exe capture --project-db"
    )


# -- permissions ------------------------------------------------------------------------------
def test_permissions_are_added_after_the_persons_own_and_removed_exactly(where: Where) -> None:
    mine = {"model": "opus", "permissions": {
        "allow": ["Bash(ls)", "mcp__sqlgate__read_query"], "deny": ["WebFetch"]}}  # fmt: skip
    path = write(where, mine)
    before = path.read_text()

    summary = run(where, permissions="add", server="sqlgate")

    permissions = read(where)["permissions"]
    assert permissions["allow"][:2] == ["Bash(ls)", "mcp__sqlgate__read_query"]
    assert permissions["allow"].count("mcp__sqlgate__read_query") == 1
    assert len(permissions["allow"]) == 2 + 20  # the person's 2, then our 21 less theirs
    assert permissions["ask"] == ["mcp__sqlgate__destructive_query", "mcp__sqlgate__undo_call"]
    assert permissions["deny"] == ["WebFetch"]
    assert summary == (
        "added Claude Code permissions: allow 20 of sqlgate's tools; "
        "ask before destructive_query, undo_call"
    )

    run(where, permissions="remove", server="sqlgate")

    assert path.read_text() == before  # their read_query rule stays; the ask list goes


def test_a_rule_the_person_moved_from_ask_to_allow_is_theirs(where: Where) -> None:
    path = write(where, {})
    run(where, permissions="add", server="sqlgate")
    data = read(where)
    data["permissions"]["ask"].remove("mcp__sqlgate__undo_call")
    data["permissions"]["allow"].append("mcp__sqlgate__undo_call")
    path.write_text(json.dumps(data))

    assert not plan_settings(SettingsEdit(permissions="add"), "user", where).needed
    run(where, permissions="remove", server="sqlgate")

    assert read(where) == {"permissions": {"allow": ["mcp__sqlgate__undo_call"]}}


def test_install_then_uninstall_of_a_settings_file_it_created_removes_it(where: Where) -> None:
    run(where, hooks="register", command=NEW, permissions="add")
    assert sorted(read(where)) == ["hooks", "permissions"]
    change = plan_settings(SettingsEdit("remove", permissions="remove"), "user", where)
    assert change.delete
    assert change.summary.endswith("and the file sqlgate had created")
    apply(change, NOW)
    assert not settings_path("user", where).exists()
