"""The real Gemini CLI (npm @google/gemini-cli, pinned in tests/e2e/gemini/) with sqlgate in
~/.gemini/settings.json (`mcpServers.sqlgate`: command and args), in a fake HOME.

- `gemini mcp list` shows the entry `Connected` once the project folder is trusted
  (~/.gemini/trustedFolders.json) and `Disabled` while it is not; with a project entry of the
  same name it lists the project's alone, the one `sqlgate install` and `doctor` say wins.
- `gemini -p` makes a real tool call: its model is a fake Gemini API on loopback
  (fake_models.GeminiModel), reached through `GOOGLE_GEMINI_BASE_URL` (documented in the
  package's bundle/docs/reference/configuration.md: a base URL for `gemini-api-key`
  authentication, HTTP allowed for 127.0.0.1) with a dummy `GEMINI_API_KEY`. Headless
  Gemini offers the model only tools that need no confirmation, so the call runs with
  `--approval-mode yolo`. Gemini adds `wait_for_previous` to every MCP tool's schema and
  passes it on to the server when the model sets it; the call is made with and without it,
  and Gemini's schema validator (ajv, strict) must not warn about the tool's schema.

The entry is written by `sqlgate install gemini`, after the settings the test needs (install
keeps them).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from tests.surfaces.integrations.fake_models import Call, GeminiModel
from tests.surfaces.integrations.real_clients import (
    ALL_TOOLS,
    GEMINI,
    ClientHome,
    install_client,
)

pytestmark = [pytest.mark.stdio, pytest.mark.e2e]

MODEL = "gemini-2.5-flash"  # named, so Gemini asks no routing model first
SETTINGS = {  # what the test needs of Gemini besides sqlgate's entry
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
}


@pytest.fixture(scope="session")
def gemini() -> list[str]:
    return install_client(GEMINI)


def settings_file(home: ClientHome) -> str:
    return str(home.home / ".gemini" / "settings.json")


def trust(home: ClientHome) -> None:
    """Trust the project folder, as Gemini's own trust prompt does."""
    trusted = {str(home.project): "TRUST_FOLDER"}
    (home.home / ".gemini" / "trustedFolders.json").write_text(json.dumps(trusted), "utf-8")


@pytest.fixture
def client_home(tmp_path_factory: pytest.TempPathFactory) -> ClientHome:
    home = ClientHome.make(tmp_path_factory.mktemp("gemini"))
    (home.home / ".gemini").mkdir()
    (home.home / ".gemini" / "settings.json").write_text(json.dumps(SETTINGS), "utf-8")
    home.install("gemini")
    return home


@pytest.mark.parametrize(
    ("trusted", "status"), [(True, "Connected"), (False, "Disabled")], ids=["trusted", "untrusted"]
)
def test_mcp_list_shows_sqlgate_connected_in_a_trusted_folder(
    gemini: list[str], client_home: ClientHome, trusted: bool, status: str
) -> None:
    if trusted:
        trust(client_home)

    done = client_home.run([*gemini, "mcp", "list"])

    output = done.stdout + done.stderr  # Gemini prints the list on stderr
    assert done.returncode == 0, output
    (line,) = [line for line in output.splitlines() if "sqlgate:" in line]
    assert f"serve --db {client_home.db}" in line
    assert line.rstrip().endswith(f"- {status}"), output


def test_mcp_list_shows_the_entry_sqlgate_says_wins(
    gemini: list[str], client_home: ClientHome
) -> None:
    """A project entry over the user entry of its name (gemini_scopes.py): Gemini lists one
    `sqlgate`, the project's, as install's warning and doctor's `scopes` check say."""
    trust(client_home)

    said = client_home.sqlgate("install", "gemini", "--scope", "project").stderr
    done = client_home.run([*gemini, "mcp", "list"])

    assert said.startswith("warning: this project-scope 'sqlgate' entry"), said
    assert "shadows the user-scope one" in said
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    (line,) = [line for line in output.splitlines() if "sqlgate:" in line]
    assert "sqlgate serve --db .sqlgate/agent.db" in line, output
    assert str(client_home.db) not in line
    doctor = client_home.run([sys.executable, "-m", "sqlgate", "doctor", "--client", "gemini",
                              "--json"])  # fmt: skip
    verdicts = {(c["target"], c["status"]) for c in map(json.loads, doctor.stdout.splitlines())
                if c["check"] == "scopes"}  # fmt: skip
    assert verdicts == {('gemini project "sqlgate"', "warn"), ('gemini user "sqlgate"', "warn")}


QUERY = "SELECT 40 + 2 AS answer"
CALLS = [
    pytest.param({"query": QUERY}, id="plain"),
    pytest.param({"query": QUERY, "wait_for_previous": True}, id="wait_for_previous"),
]


@pytest.mark.parametrize("arguments", CALLS)
def test_a_tool_call_through_a_fake_model_gets_the_rows(
    gemini: list[str], client_home: ClientHome, arguments: dict[str, Any]
) -> None:
    trust(client_home)
    prompt = [*gemini, "-p", "use sqlgate", "-m", MODEL, "--approval-mode", "yolo"]

    with GeminiModel(Call("mcp_sqlgate_read_query", arguments)) as model:
        done = client_home.run(
            [*prompt, "--output-format", "json"],
            GEMINI_API_KEY="not-a-key",
            GOOGLE_GEMINI_BASE_URL=f"http://127.0.0.1:{model.port}",
        )

    assert done.returncode == 0, done.stdout + done.stderr
    offered = [name for name in model.tools_offered() if name.startswith("mcp_sqlgate_")]
    assert sorted(offered) == [f"mcp_sqlgate_{name}" for name in ALL_TOOLS]
    declared = model.declaration("mcp_sqlgate_read_query")["parametersJsonSchema"]
    assert "wait_for_previous" in declared["properties"]  # Gemini's own argument
    answers = [model.function_response(request.body) for request in model.requests]
    assert answers[:1] == [None], answers  # the first request: the user's prompt
    assert len(answers) == 2, answers  # the second: the tool's answer, then the final text
    answer = answers[1]
    assert answer is not None
    assert "error" not in answer, answer
    assert "answer\n42\n# 1 row" in answer["output"]
    assert "strict mode" not in done.stderr  # Gemini's schema validator (ajv) had no warning
    assert json.loads(done.stdout)["response"] == "done"
    (logged,) = client_home.audit_log()
    assert (logged["tool"], logged["query"], logged["outcome"]) == ("read_query", QUERY, "ok")
