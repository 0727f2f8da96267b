"""`sqlgate doctor`'s Codex checks (surfaces/integrations/health.py): `trust`, a project
entry Codex ignores because the project is not trusted, and `scopes`, an entry shadowed by
or shadowing another scope's entry of the same name; each with its exact fix."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from sqlgate.surfaces.integrations.client_paths import Where
from sqlgate.surfaces.integrations.health import Check, Doctor, examine
from sqlgate.surfaces.integrations.server_probe import Answer
from tests.surfaces.integrations.layouts import codex_layout as lay_out

USER = {"command": "/opt/bin/sqlgate", "args": ["serve", "--db", "/d/u.db"]}
PROJECT = {"command": "sqlgate", "args": ["serve", "--db", ".sqlgate/agent.db"]}


def answered(argv: Sequence[str], env: Mapping[str, str], cwd: Path, timeout: float) -> Answer:
    return Answer(True, "answered initialize", "sqlgate", "1")


def checks_of(where: Where, scope: str, check: str) -> list[Check]:
    found = examine(Doctor(where, ask=answered, which=lambda *a, **k: "/bin/sqlgate"), ["codex"])
    return [c for c in found if c.check == check and c.target == f'codex {scope} "sqlgate"']


def one(where: Where, scope: str, check: str) -> Check:
    (found,) = checks_of(where, scope, check)
    return found


# (layout, status of the project entry's trust check, words of its detail and fix)
TRUST = [
    pytest.param({"project": PROJECT, "trust": "trusted"}, "ok", ["trusts"], id="trusted"),
    pytest.param({"project": PROJECT}, "fail", ["ignores", "not trusted", "printf '%s\\n' "],
                 id="not-trusted"),
    pytest.param({"project": PROJECT, "trust": "untrusted"}, "fail",
                 ["marked untrusted", 'to trust_level = "trusted"'], id="marked-untrusted"),
    pytest.param({"project": PROJECT, "user": USER}, "fail",
                 ["runs the user-scope 'sqlgate'", "/d/u.db"], id="user-runs-instead"),
]  # fmt: skip


@pytest.mark.parametrize(("layout", "status", "says"), TRUST)
def test_doctor_says_when_codex_ignores_a_project_entry(
    where: Where, layout: dict[str, Any], status: str, says: list[str]
) -> None:
    lay_out(where, **layout)
    check = one(where, "project", "trust")
    assert check.status == status, check
    text = f"{check.detail} {check.fix or ''}"
    for words in says:
        assert words in text, text


def test_the_trust_fix_doctor_prints_makes_the_check_pass(where: Where) -> None:
    lay_out(where, project=PROJECT, user=USER)
    fix = one(where, "project", "trust").fix
    assert fix is not None
    subprocess.run(["bash", "-c", fix.split("`")[1]], check=True)
    assert one(where, "project", "trust").status == "ok"


def test_a_malformed_user_config_is_named_in_the_trust_check(where: Where) -> None:
    lay_out(where, project=PROJECT, extra="[broken\n")
    check = one(where, "project", "trust")
    assert check.status == "fail"
    assert "not valid TOML" in check.detail
    assert str(where.home / ".codex" / "config.toml") in check.detail


def test_user_scope_entries_have_no_trust_check(where: Where) -> None:
    lay_out(where, user=USER)
    assert checks_of(where, "user", "trust") == []


# (layout, scope checked, status, words)
SCOPES = [
    pytest.param({"user": USER}, "user", "ok", ["no other scope"], id="user-alone"),
    pytest.param({"user": USER, "project": PROJECT, "trust": "trusted"}, "project", "warn",
                 ["shadows the user-scope", "`sqlgate uninstall codex --scope user`"],
                 id="project-shadows-user"),
    pytest.param({"user": USER, "project": PROJECT, "trust": "trusted"}, "user", "warn",
                 ["hidden", "project-scope", " && sqlgate uninstall codex --scope project`",
                  "--name sqlgate-user"], id="user-shadowed-by-project"),
    pytest.param({"user": USER, "project": PROJECT}, "user", "ok", ["not trusted"],
                 id="untrusted-project-shadows-nothing"),
    pytest.param({"user": PROJECT, "project": PROJECT, "trust": "trusted"}, "user", "ok",
                 ["no other scope"], id="same-command-is-no-conflict"),
]  # fmt: skip


@pytest.mark.parametrize(("layout", "scope", "status", "says"), SCOPES)
def test_doctor_says_which_codex_scope_wins(
    where: Where, layout: dict[str, Any], scope: str, status: str, says: list[str]
) -> None:
    lay_out(where, **layout)
    check = one(where, scope, "scopes")
    assert check.status == status, check
    text = f"{check.detail} {check.fix or ''}"
    for words in says:
        assert words in text, text
