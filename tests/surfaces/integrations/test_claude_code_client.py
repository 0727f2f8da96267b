"""The real Claude Code CLI (npm @anthropic-ai/claude-code, pinned in tests/e2e/claude-code/)
with a `sqlgate install claude-code` entry, in a fake HOME.

- `claude mcp list` starts the server and shows it connected (no model, no account).
- `claude -p` (print mode) makes a real tool call: its model is a fake Anthropic Messages
  API on loopback (fake_models.MessagesModel), reached through `ANTHROPIC_BASE_URL` (Claude
  Code adds `/v1/messages`) with a dummy `ANTHROPIC_API_KEY`. Nobody answers a prompt in
  print mode: the call runs because of the `permissions.allow` rules install wrote, and a
  tool install put in `permissions.ask` is refused. Print mode starts the first turn without
  waiting for MCP servers unless `MCP_CONNECTION_NONBLOCKING` is false (it then waits up to
  `MCP_CONNECT_TIMEOUT_MS`, 5 s by default), so the test sets both.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.surfaces.integrations.fake_models import Call, MessagesModel
from tests.surfaces.integrations.real_clients import (
    ALL_TOOLS,
    CLAUDE_CODE,
    RUN_TIMEOUT_S,
    ClientHome,
    install_client,
)

pytestmark = [pytest.mark.stdio, pytest.mark.e2e]


@pytest.fixture(scope="session")
def claude() -> list[str]:
    return install_client(CLAUDE_CODE)


def approve_project_servers(home: ClientHome) -> None:
    """What answering Claude Code's prompts for the folder and its .mcp.json servers records
    in ~/.claude.json: the folder trusted, the project's `sqlgate` approved."""
    path = home.home / ".claude.json"
    state = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    project = state.setdefault("projects", {}).setdefault(str(home.project), {})
    project.update(hasTrustDialogAccepted=True, enabledMcpjsonServers=["sqlgate"])
    path.write_text(json.dumps(state), encoding="utf-8")


@pytest.mark.parametrize(
    ("scope", "approved", "status"),
    [
        ("user", False, "✔ Connected"),
        ("project", False, "⏸ Pending approval (run `claude` to approve)"),
        ("project", True, "✔ Connected"),
    ],
    ids=["user", "project-unapproved", "project-approved"],
)
def test_mcp_list_shows_sqlgate_connected(
    claude: list[str],
    tmp_path_factory: pytest.TempPathFactory,
    scope: str,
    approved: bool,
    status: str,
) -> None:
    home = ClientHome.make(tmp_path_factory.mktemp("claude-code"))
    home.sqlgate("install", "claude-code", "--scope", scope, "--db", str(home.db))
    if approved:
        approve_project_servers(home)

    done = home.run([*claude, "mcp", "list"])

    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    (line,) = [line for line in output.splitlines() if line.startswith("sqlgate:")]
    assert line.rstrip().endswith(f"- {status}"), output


def print_mode(claude: list[str], home: ClientHome, model: MessagesModel) -> str:
    """`claude -p` in `home` against the fake `model`; its output (it must succeed)."""
    done = home.run(
        [*claude, "-p", "use sqlgate"],
        ANTHROPIC_BASE_URL=f"http://127.0.0.1:{model.port}",
        ANTHROPIC_API_KEY="not-a-key",
        MCP_CONNECTION_NONBLOCKING="false",  # the first turn waits for sqlgate's tools
        MCP_CONNECT_TIMEOUT_MS=str(RUN_TIMEOUT_S * 1000 // 2),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


QUERY = "SELECT 40 + 2 AS answer"
CALLS = [
    pytest.param("read_query", {"query": QUERY}, "answer\n42\n# 1 row", "ok", id="allowed"),
    pytest.param(
        "destructive_query",
        {"query": "DROP TABLE IF EXISTS notes", "reason": "a test"},
        "Claude requested permissions to use mcp__sqlgate__destructive_query",
        None,
        id="asked-refused",
    ),
]


@pytest.mark.parametrize(("tool", "arguments", "result", "outcome"), CALLS)
def test_print_mode_calls_a_tool_through_a_fake_model(
    claude: list[str],
    tmp_path_factory: pytest.TempPathFactory,
    tool: str,
    arguments: dict[str, Any],
    result: str,
    outcome: str | None,
) -> None:
    home = ClientHome.make(tmp_path_factory.mktemp("claude-code"))
    home.install("claude-code")

    with MessagesModel(Call(f"mcp__sqlgate__{tool}", arguments, call_id="toolu_1")) as model:
        output = print_mode(claude, home, model)

    offered = [name for name in model.tools_offered() if name.startswith("mcp__sqlgate__")]
    assert sorted(offered) == [f"mcp__sqlgate__{name}" for name in ALL_TOOLS]
    results = [model.tool_result(request.body) for request in model.requests]
    assert results[:1] == [None], results  # the first request: the user's prompt
    assert len(results) == 2, results  # the second: the tool's result, then the final text
    assert result in str(results[1])
    assert output.strip() == "done"
    logged = [(entry["tool"], entry["query"], entry["outcome"]) for entry in home.audit_log()]
    assert logged == ([] if outcome is None else [(tool, arguments["query"], outcome)])
