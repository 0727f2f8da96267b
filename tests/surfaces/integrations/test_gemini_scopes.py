"""Gemini CLI's two scopes for one server name (surfaces/integrations/gemini_scopes.py): which
entry Gemini CLI starts in a folder, and the warning `install gemini` gives when a project
entry shadows a user entry of the same name, or the other way round."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sqlgate.surfaces.integrations.client_paths import Where
from sqlgate.surfaces.integrations.gemini_scopes import (
    gemini_connected,
    gemini_entries,
    gemini_warning,
)
from sqlgate.surfaces.integrations.gemini_trust import folder_trust
from sqlgate.surfaces.integrations.scopes import ScopedEntry
from tests.surfaces.integrations.layouts import gemini_layout, gemini_settings, write

USER = {"command": "/opt/bin/sqlgate", "args": ["serve", "--db", "/d/u.db"]}
PROJECT = {"command": "sqlgate", "args": ["serve", "--db", ".sqlgate/agent.db"]}


def lay_out(where: Where, user: Any = None, project: Any = None, trusted: bool = False,
            name: str = "sqlgate") -> None:  # fmt: skip
    gemini_layout(where, user, project, trusted, user_name=name, project_name=name)


def installed(scope: str, entry: dict[str, Any], where: Where) -> ScopedEntry:
    return ScopedEntry(scope, gemini_settings(where, scope), entry)


# Gemini CLI 0.61 (settings.ts mergeSettings, mcpServers SHALLOW_MERGE): a trusted folder's
# project entry replaces the user's entry of its name; an untrusted folder starts none
RUNS = [
    pytest.param({"user": USER}, True, "user", id="user-alone"),
    pytest.param({"project": PROJECT}, True, "project", id="project-alone"),
    pytest.param({"user": USER, "project": PROJECT}, True, "project", id="project-over-user"),
    pytest.param({"user": USER}, False, None, id="untrusted-starts-no-user-entry"),
    pytest.param({"user": USER, "project": PROJECT}, False, None, id="untrusted-starts-none"),
]


@pytest.mark.parametrize(("present", "trusted", "expected"), RUNS)
def test_the_entry_gemini_starts(
    where: Where, present: dict[str, Any], trusted: bool, expected: str | None
) -> None:
    lay_out(where, trusted=trusted, **present)
    chosen = gemini_connected(gemini_entries("sqlgate", where), folder_trust(where).trusted)
    assert (chosen.scope if chosen else None) == expected


def test_entries_are_read_from_each_scope_with_comments(where: Where) -> None:
    text = json.dumps({"mcpServers": {"sqlgate": USER}})
    write(gemini_settings(where, "user"), f"// mine\n{text}")
    lay_out(where, project=PROJECT)
    found = {entry.scope: entry for entry in gemini_entries("sqlgate", where)}
    assert found["user"] == ScopedEntry("user", gemini_settings(where, "user"), USER)
    assert found["project"] == ScopedEntry("project", gemini_settings(where, "project"), PROJECT)


def test_in_the_home_folder_the_project_file_is_the_user_file(where: Where) -> None:
    """Gemini CLI reads no workspace settings when the folder is its home
    (Storage.isWorkspaceHomeDir): one file, one entry."""
    at_home = Where(where.platform, where.home, where.home, where.env)
    lay_out(at_home, user=USER)
    assert [e.scope for e in gemini_entries("sqlgate", at_home)] == ["user"]
    assert gemini_warning("sqlgate", installed("project", USER, at_home), at_home) is None


WARNINGS = [
    pytest.param("project", PROJECT, {"user": USER}, True,
                 ["this project-scope 'sqlgate' entry", "shadows the user-scope one",
                  "`sqlgate serve --db .sqlgate/agent.db`", "`/opt/bin/sqlgate serve --db /d/u.db`",
                  "/d/u.db", "in place of", "`sqlgate uninstall gemini --scope user`",
                  "--name sqlgate-project"], id="project-shadows-user"),
    pytest.param("user", USER, {"project": PROJECT}, True,
                 ["project-scope 'sqlgate' entry", "shadows this user-scope one",
                  "`sqlgate serve --db .sqlgate/agent.db`", "`/opt/bin/sqlgate serve --db /d/u.db`",
                  " && sqlgate uninstall gemini --scope project`", "--name sqlgate-user"],
                 id="user-shadowed-by-project"),
    pytest.param("project", PROJECT, {"user": USER}, False,
                 ["shadows the user-scope one", "once Gemini CLI trusts",
                  "`sqlgate uninstall gemini --scope user`"], id="untrusted-project-over-user"),
    pytest.param("user", USER, {"project": PROJECT}, False,
                 ["shadows this user-scope one", "once Gemini CLI trusts",
                  " && sqlgate uninstall gemini --scope project`"],
                 id="untrusted-user-under-project"),
]  # fmt: skip


@pytest.mark.parametrize(("scope", "entry", "others", "trusted", "says"), WARNINGS)
def test_install_warns_when_one_scope_shadows_the_other(
    where: Where, scope: str, entry: dict[str, Any], others: dict[str, Any], trusted: bool,
    says: list[str],
) -> None:  # fmt: skip
    lay_out(where, trusted=trusted, **{scope: entry}, **others)
    warning = gemini_warning("sqlgate", installed(scope, entry, where), where)
    assert warning is not None
    assert "\n" not in warning
    assert warning.startswith("warning: ")
    for words in says:
        assert words in warning, warning
    other = "user" if scope == "project" else "project"
    assert str(gemini_settings(where, other)) in warning


SILENT = [
    pytest.param("user", USER, {}, "sqlgate", id="user-only"),
    pytest.param("project", PROJECT, {}, "sqlgate", id="project-only"),
    pytest.param("project", PROJECT, {"user": USER}, "other", id="different-names"),
    pytest.param("project", PROJECT, {"user": PROJECT}, "sqlgate", id="same-command"),
    pytest.param("user", PROJECT, {"project": PROJECT}, "sqlgate", id="same-command-user"),
]


@pytest.mark.parametrize(("scope", "entry", "others", "others_name"), SILENT)
def test_install_says_nothing_when_no_other_scope_competes(
    where: Where, scope: str, entry: dict[str, Any], others: dict[str, Any], others_name: str
) -> None:
    lay_out(where, trusted=True, name=others_name, **others)
    lay_out(where, trusted=True, **{scope: entry})
    assert gemini_warning("sqlgate", installed(scope, entry, where), where) is None


@pytest.mark.parametrize("broken", ["{oops", "[1, 2]", '{"mcpServers": []}'])
def test_another_scope_s_malformed_settings_are_named(where: Where, broken: str) -> None:
    write(gemini_settings(where, "user"), broken)
    lay_out(where, project=PROJECT, trusted=True)
    warning = gemini_warning("sqlgate", installed("project", PROJECT, where), where)
    assert warning is not None
    assert warning.startswith("warning: cannot tell which 'sqlgate' entry Gemini CLI starts: ")
    assert str(gemini_settings(where, "user")) in warning
