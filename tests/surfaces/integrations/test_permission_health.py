"""`sqlgate doctor`'s permissions check (issue 30 §6): Claude Code must still ask before each
destructive tool; a person who moved `destructive_query` from ask to allow, removed the ask
rule, allowed the server's tools wholesale or allowed `undo_call` is told that the second lock
is gone, with the settings file and the rule to put back.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sqlgate.surfaces.integrations.client_paths import Where
from sqlgate.surfaces.integrations.health import Doctor, examine
from sqlgate.surfaces.integrations.permission_health import (
    judge_permissions,
    matches,
    permission_facts,
)
from sqlgate.surfaces.integrations.server_probe import Answer
from tests.surfaces.integrations.fake_home import fake_home

DQ = "mcp__sqlgate__destructive_query"
UNDO = "mcp__sqlgate__undo_call"
INSTALLED = {"allow": ["mcp__sqlgate__read_query", "mcp__sqlgate__write_query"],
             "ask": [DQ, UNDO]}  # fmt: skip


@pytest.fixture
def where(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Where:
    fake_home(tmp_path, monkeypatch)
    return Where.here()


def write(path: Path, permissions: dict[str, Any] | None, **other: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {**other, **({} if permissions is None else {"permissions": permissions})}
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")


def user_file(where: Where) -> Path:
    return where.home / ".claude" / "settings.json"


def local_file(where: Where) -> Path:
    return where.cwd / ".claude" / "settings.local.json"


CASES = [
    pytest.param({"user": INSTALLED}, "ok", [], id="as-installed"),
    pytest.param({"user": {"allow": [*INSTALLED["allow"], DQ], "ask": [UNDO]}}, "warn",
                 ["destructive_query runs without asking", f'"{DQ}" in'], id="moved-to-allow"),
    pytest.param({"user": {"allow": INSTALLED["allow"], "ask": [UNDO]}}, "warn",
                 [f"no rule asks before {DQ}", "don't ask again"], id="ask-rule-removed"),
    pytest.param({"user": {"allow": ["mcp__sqlgate__*"]}}, "warn",
                 ['allowed by "mcp__sqlgate__*"', DQ, UNDO], id="server-wildcard"),
    pytest.param({"user": {"allow": ["mcp__sqlgate"]}}, "warn",
                 ['allowed by "mcp__sqlgate"'], id="server-name"),
    pytest.param({"user": {"allow": ["mcp__*"]}}, "warn", ['allowed by "mcp__*"'],
                 id="every-mcp-tool"),
    pytest.param({"user": {"allow": [*INSTALLED["allow"], UNDO], "ask": [DQ]}}, "warn",
                 ["undo_call runs without asking"], id="undo-call-allowed"),
    pytest.param({"user": INSTALLED, "local": {"allow": [DQ]}}, "ok", [],
                 id="ask-beats-a-local-allow"),
    pytest.param({"user": {"allow": [DQ, UNDO]}, "local": {"ask": ["mcp__sqlgate__*"]}}, "ok",
                 [], id="a-local-ask-wildcard-beats-allow"),
    pytest.param({"user": {"deny": [DQ], "allow": [UNDO]}, "project": {"ask": [UNDO]}}, "ok",
                 [], id="denied-and-asked-in-the-project"),
    pytest.param({"user": {"allow": [*INSTALLED["allow"], "mcp__sqlgate__undo*"],
                           "ask": [DQ]}},
                 "warn", ['"mcp__sqlgate__undo*"'], id="a-prefix-wildcard"),
    pytest.param({}, "warn", [f"no rule asks before {DQ}", f"no rule asks before {UNDO}"],
                 id="no-settings-at-all"),
    pytest.param({"user": {"allow": ["mcp__other__*", "mcp__sqlgate_x__destructive_query"],
                           "ask": [DQ, UNDO]}},
                 "ok", [], id="another-servers-rules"),
]  # fmt: skip


@pytest.mark.parametrize(("files", "status", "says"), CASES)
def test_the_check_says_whether_claude_code_still_asks(
    where: Where, files: dict[str, dict[str, Any]], status: str, says: list[str]
) -> None:
    paths = {"user": user_file(where), "project": where.cwd / ".claude" / "settings.json",
             "local": local_file(where)}  # fmt: skip
    for scope, permissions in files.items():
        write(paths[scope], permissions, model="opus")
    found, detail, fix = judge_permissions(permission_facts("sqlgate", "user", where))
    assert found == status, detail
    for words in says:
        assert words in detail
    if status == "warn":
        assert detail.startswith("the second lock is gone: ")
        assert fix is not None
        assert str(user_file(where)) in fix
        assert '"permissions": {"ask": [...]}' in fix
    else:
        assert fix is None


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        pytest.param(DQ, True, id="the-tool"),
        pytest.param("mcp__sqlgate", True, id="the-server"),
        pytest.param("mcp__sqlgate__*", True, id="server-wildcard"),
        pytest.param("mcp__*", True, id="all-mcp"),
        pytest.param("*", True, id="everything"),
        pytest.param("mcp__sqlgate__destructive_quer", False, id="a-prefix-of-the-name"),
        pytest.param("mcp__sqlgate2", False, id="another-server"),
        pytest.param("mcp__sqlgate__undo_call", False, id="another-tool"),
        pytest.param("Bash(rm:*)", False, id="a-bash-rule"),
        pytest.param("MCP__SQLGATE__DESTRUCTIVE_QUERY", False, id="another-case"),
    ],
)
def test_which_rules_match_a_tool(rule: str, expected: bool) -> None:
    assert matches(rule, "sqlgate", "destructive_query") is expected


def test_an_entry_of_another_name_is_judged_by_its_own_rules(where: Where) -> None:
    write(user_file(where), {"ask": [DQ, UNDO], "allow": ["mcp__db__destructive_query"]})
    status, detail, fix = judge_permissions(permission_facts("db", "user", where))
    assert status == "warn"
    assert "mcp__db__destructive_query runs without asking" in detail
    assert fix is not None
    assert '"mcp__db__undo_call"' in fix


def test_a_project_entry_is_told_its_project_settings_file(where: Where) -> None:
    write(user_file(where), {"allow": [DQ, UNDO]})
    _, _, fix = judge_permissions(permission_facts("sqlgate", "project", where))
    assert fix is not None
    assert str(where.cwd / ".claude" / "settings.json") in fix


def test_an_unreadable_settings_file_is_a_warning(where: Where) -> None:
    write(user_file(where), INSTALLED)
    local_file(where).parent.mkdir(parents=True)
    local_file(where).write_text("{not json", encoding="utf-8")
    status, detail, fix = judge_permissions(permission_facts("sqlgate", "user", where))
    assert status == "warn"
    assert "settings.local.json is not valid JSON" in detail
    assert fix == "fix that file by hand"


def test_doctor_warns_that_the_second_lock_is_gone(where: Where, tmp_path: Path) -> None:
    """Through `examine`: the entry's checks hold a `permissions` warning naming the file."""
    db = str(tmp_path / "a.db")
    entry = {"type": "stdio", "command": "sqlgate", "args": ["serve", "--db", db]}
    write(where.home / ".claude.json", None, mcpServers={"sqlgate": entry})
    write(user_file(where), {"allow": [*INSTALLED["allow"], DQ], "ask": [UNDO]})
    doctor = Doctor(where, ask=lambda *_: Answer(True, "answered", "sqlgate", "0"),
                    which=lambda *_, **__: "/usr/bin/sqlgate")  # fmt: skip
    (check,) = [c for c in examine(doctor) if c.check == "permissions"]
    assert check.status == "warn"
    assert "the second lock is gone" in check.detail
    assert check.fix is not None
    assert str(user_file(where)) in check.fix
