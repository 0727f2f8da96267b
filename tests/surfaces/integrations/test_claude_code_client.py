"""The real Claude Code CLI (npm @anthropic-ai/claude-code, pinned in tests/e2e/claude-code/)
with a `sqlgate install claude-code` entry, in a fake HOME: `claude mcp list` starts the
server and shows it connected. Listing needs no model and no account."""

from __future__ import annotations

import json

import pytest

from tests.surfaces.integrations.real_clients import CLAUDE_CODE, ClientHome, install_client

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
