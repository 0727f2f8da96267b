"""`sqlgate doctor`'s `scopes` check of Gemini CLI entries (surfaces/integrations/health.py,
gemini_scopes.py): an entry that shadows, or is shadowed by, the other scope's entry of the
same name, each with its exact fix; consistent with Codex's (test_health_codex.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from sqlgate.surfaces.integrations.client_paths import Where
from sqlgate.surfaces.integrations.health import Check, Doctor, examine
from sqlgate.surfaces.integrations.server_probe import Answer
from tests.surfaces.integrations.layouts import gemini_layout as lay_out
from tests.surfaces.integrations.layouts import gemini_settings, write

USER = {"command": "/opt/bin/sqlgate", "args": ["serve", "--db", "/d/u.db"]}
PROJECT = {"command": "sqlgate", "args": ["serve", "--db", ".sqlgate/agent.db"]}
OTHER_SERVER = {"command": "node", "args": ["server.js"]}


def answered(argv: Sequence[str], env: Mapping[str, str], cwd: Path, timeout: float) -> Answer:
    return Answer(True, "answered initialize", "sqlgate", "1")


def checks_of(where: Where, scope: str, check: str) -> list[Check]:
    doctor = Doctor(where, ask=answered, which=lambda *a, **k: "/bin/sqlgate")
    found = examine(doctor, ["gemini"])
    return [c for c in found if c.check == check and c.target == f'gemini {scope} "sqlgate"']


def one(where: Where, scope: str) -> Check:
    (found,) = checks_of(where, scope, "scopes")
    return found


# (layout, scope checked, status, words of its detail and fix)
SCOPES = [
    pytest.param({"user": USER, "trusted": True}, "user", "ok", ["no other scope"],
                 id="user-alone"),
    pytest.param({"project": PROJECT, "trusted": True}, "project", "ok", ["no other scope"],
                 id="project-alone"),
    pytest.param({"user": USER, "project": PROJECT, "trusted": True}, "project", "warn",
                 ["shadows the user-scope 'sqlgate'", str(Path("home/.gemini/settings.json")),
                  "/opt/bin/sqlgate serve --db /d/u.db", "in place of",
                  "`sqlgate uninstall gemini --scope user`", "--name sqlgate-project"],
                 id="project-shadows-user"),
    pytest.param({"user": USER, "project": PROJECT, "trusted": True}, "user", "warn",
                 ["hidden: Gemini CLI runs the project-scope entry",
                  "sqlgate serve --db .sqlgate/agent.db",
                  " && sqlgate uninstall gemini --scope project`", "--name sqlgate-user"],
                 id="user-shadowed-by-project"),
    pytest.param({"user": PROJECT, "project": PROJECT, "trusted": True}, "user", "ok",
                 ["no other scope"], id="same-command-is-no-conflict"),
    pytest.param({"user": OTHER_SERVER, "project": PROJECT, "trusted": True}, "project", "warn",
                 ["shadows the user-scope 'sqlgate'", "node server.js"],
                 id="shadows-another-program-of-the-name"),
    pytest.param({"user": USER, "project": PROJECT}, "user", "ok",
                 ["not trusted", "once", "project-scope"], id="untrusted-folder"),
]  # fmt: skip


@pytest.mark.parametrize(("layout", "scope", "status", "says"), SCOPES)
def test_doctor_says_which_gemini_scope_wins(
    where: Where, layout: dict[str, Any], scope: str, status: str, says: list[str]
) -> None:
    lay_out(where, **layout)
    check = one(where, scope)
    assert check.status == status, check
    text = f"{check.detail} {check.fix or ''}"
    for words in says:
        assert words in text, text


def test_different_names_do_not_compete(where: Where) -> None:
    lay_out(where, user=USER, project=PROJECT, trusted=True, user_name="sqlgate-user")
    assert one(where, "project").status == "ok"


def test_an_untrusted_folder_s_project_entry_is_left_to_the_trust_check(where: Where) -> None:
    lay_out(where, user=USER, project=PROJECT)
    assert checks_of(where, "project", "scopes") == []
    (trust,) = checks_of(where, "project", "trust")
    assert trust.status == "fail"


def test_malformed_settings_of_the_other_scope_fail_with_the_file_named(where: Where) -> None:
    lay_out(where, user=USER, trusted=True)
    write(gemini_settings(where, "project"), "{oops")
    check = one(where, "user")
    assert check.status == "fail"
    assert str(gemini_settings(where, "project")) in check.detail
    assert check.fix == "fix that file by hand"
