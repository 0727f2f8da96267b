"""Codex's two scopes for one server name (surfaces/integrations/codex_scopes.py): which entry
Codex runs in a project, and the warning `install codex` gives when a project entry is
ignored (untrusted project), shadows a user entry, or is shadowed."""

from __future__ import annotations

from typing import Any

import pytest

from sqlgate.surfaces.integrations.client_paths import Where
from sqlgate.surfaces.integrations.codex_scopes import (
    codex_connected,
    codex_entries,
    codex_warning,
)
from sqlgate.surfaces.integrations.codex_trust import codex_trust
from sqlgate.surfaces.integrations.scopes import ScopedEntry
from tests.surfaces.integrations.layouts import codex_layout

USER = {"command": "/opt/bin/sqlgate", "args": ["serve", "--db", "/d/u.db"]}
PROJECT = {"command": "sqlgate", "args": ["serve", "--db", ".sqlgate/agent.db"]}


def lay_out(where: Where, user: Any = None, project: Any = None, trusted: bool = False) -> None:
    codex_layout(where, user, project, "trusted" if trusted else None)


# Codex 0.171.0 (`codex mcp list` in a fake HOME): a trusted project's table is merged over
# the user's one, so the project's command runs; an untrusted project's file is not read
RUNS = [
    pytest.param({"user": USER}, False, "user", id="user-alone"),
    pytest.param({"project": PROJECT}, True, "project", id="trusted-project-alone"),
    pytest.param({"project": PROJECT}, False, None, id="untrusted-project-alone"),
    pytest.param({"user": USER, "project": PROJECT}, True, "project", id="project-shadows-user"),
    pytest.param({"user": USER, "project": PROJECT}, False, "user", id="untrusted-user-runs"),
]


@pytest.mark.parametrize(("present", "trusted", "expected"), RUNS)
def test_the_entry_codex_runs(
    where: Where, present: dict[str, Any], trusted: bool, expected: str | None
) -> None:
    lay_out(where, trusted=trusted, **present)
    entries = codex_entries("sqlgate", where)
    chosen = codex_connected(entries, codex_trust(where))
    assert (chosen.scope if chosen else None) == expected


def installed(scope: str, entry: dict[str, Any], where: Where) -> ScopedEntry:
    base = where.cwd if scope == "project" else where.home
    return ScopedEntry(scope, base / ".codex" / "config.toml", entry)


WARNINGS = [
    pytest.param("project", PROJECT, {}, False,
                 ["is not trusted", "ignores", "printf '%s\\n' ", 'trust_level = "trusted"',
                  "Trust and continue"], id="project-untrusted"),
    pytest.param("project", PROJECT, {"user": USER}, False,
                 ["is not trusted", "runs the user-scope 'sqlgate'", "/d/u.db", "printf '%s\\n' "],
                 id="project-untrusted-user-runs-instead"),
    pytest.param("project", PROJECT, {"user": USER}, True,
                 ["shadows the user-scope", "`sqlgate uninstall codex --scope user`",
                  "--name sqlgate-project"], id="project-shadows-user"),
    pytest.param("user", USER, {"project": PROJECT}, True,
                 ["project-scope", "shadows this user-scope",
                  " && sqlgate uninstall codex --scope project`", "--name sqlgate-user"],
                 id="user-shadowed-by-trusted-project"),
]  # fmt: skip


@pytest.mark.parametrize(("scope", "entry", "others", "trusted", "says"), WARNINGS)
def test_install_warns_when_codex_will_not_run_the_entry_it_wrote(
    where: Where, scope: str, entry: dict[str, Any], others: dict[str, Any], trusted: bool,
    says: list[str],
) -> None:  # fmt: skip
    lay_out(where, trusted=trusted, **others)
    if scope == "project":
        lay_out(where, trusted=trusted, project=entry, **others)
    warning = codex_warning("sqlgate", installed(scope, entry, where), where)
    assert warning is not None
    assert "\n" not in warning
    assert warning.startswith("warning: ")
    for words in says:
        assert words in warning, warning


@pytest.mark.parametrize(
    ("scope", "entry", "others", "trusted"),
    [
        pytest.param("project", PROJECT, {}, True, id="trusted-alone"),
        pytest.param("project", PROJECT, {"user": PROJECT}, True, id="same-command"),
        pytest.param("user", USER, {}, False, id="user-alone"),
        pytest.param("user", USER, {"project": PROJECT}, False, id="untrusted-project-ignored"),
    ],
)
def test_install_says_nothing_when_codex_runs_the_entry(
    where: Where, scope: str, entry: dict[str, Any], others: dict[str, Any], trusted: bool
) -> None:
    lay_out(where, trusted=trusted, **others)
    if scope == "project":
        lay_out(where, trusted=trusted, project=entry, **others)
    assert codex_warning("sqlgate", installed(scope, entry, where), where) is None


def test_a_project_install_in_the_home_folder_is_the_user_file(where: Where) -> None:
    at_home = Where(where.platform, where.home, where.home, where.env)
    lay_out(at_home, user=PROJECT)
    entry = ScopedEntry("project", where.home / ".codex" / "config.toml", PROJECT)
    assert codex_warning("sqlgate", entry, at_home) is None
