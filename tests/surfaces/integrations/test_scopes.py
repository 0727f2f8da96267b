"""Claude Code's scopes for one server name (surfaces/integrations/scopes.py): which entry
it connects, when it reports "Conflicting scopes", and the warning `install` gives."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sqlgate.surfaces.integrations.client_paths import Where
from sqlgate.surfaces.integrations.config_files import ConfigMalformed
from sqlgate.surfaces.integrations.scopes import (
    ScopedEntry,
    connected_entry,
    entries_named,
    install_warning,
    scope_conflict,
)
from tests.surfaces.integrations.fake_home import fake_home

USER = {"type": "stdio", "command": "/opt/bin/sqlgate", "args": ["serve", "--db", "/d/u.db"]}
PROJECT = {"type": "stdio", "command": "sqlgate", "args": ["serve", "--db", ".sqlgate/agent.db"]}
LOCAL = {"type": "stdio", "command": "/opt/bin/sqlgate", "args": ["serve", "--db", "/d/l.db"]}


@pytest.fixture
def where(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Where:
    fake_home(tmp_path, monkeypatch)
    return Where.here()


def write(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")


def lay_out(where: Where, user: Any = None, project: Any = None, local: Any = None,
            approved: bool = False) -> None:  # fmt: skip
    claude: dict[str, Any] = {}
    if user is not None:
        claude["mcpServers"] = {"sqlgate": user}
    if local is not None or approved:
        claude["projects"] = {str(where.cwd): {
            "mcpServers": {"sqlgate": local} if local is not None else {},
            "enabledMcpjsonServers": ["sqlgate"] if approved else [],
        }}  # fmt: skip
    if claude:
        write(where.home / ".claude.json", claude)
    if project is not None:
        write(where.cwd / ".mcp.json", {"mcpServers": {"sqlgate": project}})


def test_entries_are_read_from_each_scope_s_file(where: Where) -> None:
    lay_out(where, user=USER, project=PROJECT, local=LOCAL)
    found = {entry.scope: entry for entry in entries_named("sqlgate", where)}
    assert set(found) == {"user", "local", "project"}
    assert found["user"].path == found["local"].path == where.home / ".claude.json"
    assert found["project"].path == where.cwd / ".mcp.json"
    assert found["local"].entry == LOCAL


def test_a_local_entry_is_found_under_the_git_root_from_a_subfolder(
    where: Where, monkeypatch: pytest.MonkeyPatch
) -> None:
    lay_out(where, local=LOCAL)
    (where.cwd / ".git").mkdir()
    (where.cwd / "src").mkdir()
    inner = Where(where.platform, where.home, where.cwd / "src", where.env)
    assert [entry.scope for entry in entries_named("sqlgate", inner)] == ["local"]


# Claude Code 2.1.197 (see scopes.py): local, then an approved project entry, then user;
# a project entry not approved yet is left out while another scope has the name
PRECEDENCE = [
    pytest.param({"user": USER}, False, "user", id="user-alone"),
    pytest.param({"project": PROJECT}, True, "project", id="project-approved-alone"),
    pytest.param({"project": PROJECT}, False, None, id="project-pending-alone"),
    pytest.param({"user": USER, "project": PROJECT}, False, "user", id="pending-project-hidden"),
    pytest.param({"user": USER, "project": PROJECT}, True, "project", id="approved-project-wins"),
    pytest.param({"user": USER, "local": LOCAL}, False, "local", id="local-beats-user"),
    pytest.param({"project": PROJECT, "local": LOCAL}, True, "local", id="local-beats-project"),
]


@pytest.mark.parametrize(("present", "approved", "expected"), PRECEDENCE)
def test_the_entry_claude_code_connects(
    where: Where, present: dict[str, Any], approved: bool, expected: str | None
) -> None:
    lay_out(where, approved=approved, **present)
    chosen = connected_entry("sqlgate", entries_named("sqlgate", where), where)
    assert (chosen.scope if chosen else None) == expected


CONFLICTS = [
    pytest.param({"user": USER}, None, id="one-scope"),
    pytest.param({"user": USER, "project": USER}, None, id="same-command-no-conflict"),
    pytest.param({"user": USER, "project": {**USER, "env": {"A": "1"}}}, None, id="env-ignored"),
    pytest.param({"user": USER, "project": PROJECT}, ("user", "project"), id="user-project"),
    pytest.param({"user": USER, "local": LOCAL}, ("user", "local"), id="user-local"),
]


@pytest.mark.parametrize(("present", "scopes"), CONFLICTS)
def test_a_conflict_is_the_same_name_with_another_command(
    where: Where, present: dict[str, Any], scopes: tuple[str, ...] | None
) -> None:
    lay_out(where, **present)
    conflict = scope_conflict("sqlgate", where)
    if scopes is None:
        assert conflict is None
    else:
        assert conflict is not None
        assert {entry.scope for entry in conflict.entries} == set(scopes)


def test_a_malformed_claude_json_is_reported_not_guessed(where: Where) -> None:
    (where.home / ".claude.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ConfigMalformed, match=r"claude\.json"):
        entries_named("sqlgate", where)


def installed(scope: str, entry: dict[str, Any], where: Where) -> ScopedEntry:
    path = where.cwd / ".mcp.json" if scope == "project" else where.home / ".claude.json"
    return ScopedEntry(scope, path, entry)


WARNINGS = [
    pytest.param("project", PROJECT, {"user": USER}, False,
                 ["user-scope", "Conflicting scopes", "connects the user-scope",
                  "`sqlgate uninstall claude-code --scope user`", "--name"],
                 id="project-over-user"),
    pytest.param("project", PROJECT, {"local": LOCAL}, False,
                 ["local-scope", " && claude mcp remove sqlgate -s local`"],
                 id="project-under-local"),
    pytest.param("user", USER, {"project": PROJECT}, False,
                 ["project-scope", "hides", " && sqlgate uninstall claude-code --scope project`"],
                 id="user-over-pending-project"),
    pytest.param("user", USER, {"project": PROJECT}, True,
                 ["project-scope", "connects the project-scope"], id="user-under-approved"),
    pytest.param("user", USER, {"local": LOCAL}, False,
                 ["local-scope", " && claude mcp remove sqlgate -s local`"], id="user-under-local"),
]  # fmt: skip


@pytest.mark.parametrize(("scope", "entry", "others", "approved", "says"), WARNINGS)
def test_install_warns_of_an_entry_of_the_same_name_at_another_scope(
    where: Where, scope: str, entry: dict[str, Any], others: dict[str, Any], approved: bool,
    says: list[str],
) -> None:  # fmt: skip
    lay_out(where, approved=approved, **others)
    warning = install_warning("sqlgate", installed(scope, entry, where), where)
    assert warning is not None
    assert "\n" not in warning
    assert warning.startswith("warning: ")
    for words in says:
        assert words in warning
    if " && " in warning:  # a project's scope is its folder's: the command says which
        assert f"`cd {where.cwd} && " in warning


@pytest.mark.parametrize(
    "others",
    [
        pytest.param({}, id="alone"),
        pytest.param({"user": PROJECT}, id="same-command-elsewhere"),
    ],
)
def test_install_says_nothing_when_no_other_scope_disagrees(
    where: Where, others: dict[str, Any]
) -> None:
    lay_out(where, **others)
    assert install_warning("sqlgate", installed("project", PROJECT, where), where) is None


def test_install_names_the_entry_it_was_given_in_the_fix(where: Where) -> None:
    write(where.home / ".claude.json", {"mcpServers": {"mem": USER}})
    found = install_warning("mem", installed("project", PROJECT, where), where)
    assert found is not None
    assert "`sqlgate uninstall claude-code --scope user --name mem`" in found
