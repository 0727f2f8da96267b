"""The real Codex CLI (npm @openai/codex, pinned in tests/e2e/codex/) with a `sqlgate install
codex` entry, in a fake HOME.

- `codex app-server` (JSON-RPC, one object a line on stdio) reports the server: a started
  thread gets `mcpServer/startupStatus/updated` with status `ready` for `sqlgate`, and
  `mcpServerStatus/list` gives its tools (method names from the protocol's own schema,
  `codex app-server generate-json-schema`: ClientRequest, ServerNotification).
- `codex exec` makes a real tool call: its model is a fake Responses endpoint on loopback
  (fake_models.ResponsesModel), set with `-c` overrides (`model_providers.<id>` with
  `base_url`, `wire_api = "responses"` and `env_key`), so the installed config is the user's.
  `codex exec` runs with approval policy `never`: MCP tool calls run without asking.
"""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Iterator
from typing import IO, Any

import pytest

from tests.surfaces.integrations.fake_models import Call, ResponsesModel
from tests.surfaces.integrations.real_clients import (
    ALL_TOOLS,
    CODEX,
    RUN_TIMEOUT_S,
    ClientHome,
    install_client,
)

pytestmark = [pytest.mark.stdio, pytest.mark.e2e]

KEY_VARIABLE = "SQLGATE_TEST_MODEL_KEY"  # Codex sends it as the bearer; the fake ignores it


@pytest.fixture(scope="session")
def codex() -> list[str]:
    return install_client(CODEX)


@pytest.fixture
def client_home(tmp_path_factory: pytest.TempPathFactory) -> ClientHome:
    return ClientHome.make(tmp_path_factory.mktemp("codex"))


def install(home: ClientHome, scope: str) -> None:
    """`sqlgate install codex --scope SCOPE`; a project entry in a project the user trusted
    (Codex reads a project's .codex/config.toml only then, and records the trust so)."""
    if scope == "user":
        home.install("codex")
        return
    home.sqlgate("install", "codex", "--scope", "project")
    trusted = f'[projects."{home.project}"]\ntrust_level = "trusted"\n'
    (home.home / ".codex").mkdir(exist_ok=True)
    (home.home / ".codex" / "config.toml").write_text(trusted, encoding="utf-8")


def provider(port: int) -> list[str]:
    """`-c` overrides that make the fake on `port` Codex's model for this run only."""
    table = (
        f'{{name = "fake", base_url = "http://127.0.0.1:{port}/v1", '
        f'wire_api = "responses", env_key = "{KEY_VARIABLE}"}}'
    )
    return [
        *("-c", f"model_providers.fake={table}"),
        *("-c", 'model_provider="fake"'),
        *("-c", 'model="fake-model"'),
        *("-c", "check_for_update_on_startup=false"),
        # Without it `codex exec` may send the first turn before sqlgate is ready, without
        # its tools: only a required server holds the first turn (openai/codex#10902, #21318).
        *("-c", "mcp_servers.sqlgate.required=true"),
    ]


class AppServer:
    """`codex app-server` on pipes: requests out, responses and notifications in."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self.notifications: list[dict[str, Any]] = []
        self._ids = iter(range(1, 1_000))

    def _stdin(self) -> IO[str]:
        assert self.process.stdin is not None
        return self.process.stdin

    def _next(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line, f"codex app-server ended or was stopped after {RUN_TIMEOUT_S} s"
        message: dict[str, Any] = json.loads(line)
        return message

    def notify(self, method: str) -> None:
        self._stdin().write(json.dumps({"method": method}) + "\n")
        self._stdin().flush()

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send a request; its result (notifications on the way are kept)."""
        ident = next(self._ids)
        self._stdin().write(json.dumps({"id": ident, "method": method, "params": params}) + "\n")
        self._stdin().flush()
        while True:
            message = self._next()
            if message.get("id") == ident:
                assert "error" not in message, message
                result: dict[str, Any] = message["result"]
                return result
            if "method" in message and "id" not in message:
                self.notifications.append(message)

    def startup(self, server: str) -> dict[str, Any]:
        """The first startup status of `server` other than `starting` (kept ones first)."""
        while True:
            for note in self.notifications:
                params = note.get("params", {})
                if note["method"] == "mcpServer/startupStatus/updated" and (
                    params.get("name") == server and params.get("status") != "starting"
                ):
                    return note
            self.notifications.append(self._next())


@pytest.fixture
def app_server(codex: list[str], client_home: ClientHome, scope: str) -> Iterator[AppServer]:
    install(client_home, scope)
    with ResponsesModel(Call("read_query", {})) as model:
        process = subprocess.Popen(
            [*codex, "app-server", *provider(model.port)],
            cwd=client_home.project,
            env=client_home.env(**{KEY_VARIABLE: "not-a-key"}),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            encoding="utf-8",
        )
        watchdog = threading.Timer(RUN_TIMEOUT_S, process.kill)  # a read then ends, and fails
        watchdog.start()
        try:
            yield AppServer(process)
        finally:
            watchdog.cancel()
            if process.stdin is not None:
                process.stdin.close()
            try:
                process.wait(timeout=RUN_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        assert model.requests == [], "starting a thread asked the model nothing"


@pytest.mark.parametrize("scope", ["user", "project"])
def test_app_server_reports_sqlgate_ready_with_every_tool(
    client_home: ClientHome, scope: str, app_server: AppServer
) -> None:
    app_server.request("initialize", {"clientInfo": {"name": "sqlgate-e2e", "version": "1"}})
    app_server.notify("initialized")
    thread = app_server.request("thread/start", {"cwd": str(client_home.project)})["thread"]

    startup = app_server.startup("sqlgate")
    listed = app_server.request("mcpServerStatus/list", {"threadId": thread["id"]})

    assert startup["params"]["status"] == "ready", startup
    (server,) = [entry for entry in listed["data"] if entry["name"] == "sqlgate"]
    assert server["serverInfo"]["name"] == "sqlgate"
    assert server["toolsError"] is None
    assert sorted(server["tools"]) == ALL_TOOLS


CALLS = [
    pytest.param(
        Call("read_query", {"query": "SELECT 40 + 2 AS answer"}, "mcp__sqlgate"),
        "answer\n42\n# 1 row",
        id="read",
    ),
    pytest.param(
        Call("write_query", {"query": "CREATE TABLE notes(body TEXT)"}, "mcp__sqlgate"),
        "ok: CREATE TABLE done",
        id="write",
    ),
]


@pytest.mark.parametrize(("call", "result"), CALLS)
def test_exec_calls_a_tool_through_a_fake_model(
    codex: list[str], client_home: ClientHome, call: Call, result: str
) -> None:
    install(client_home, "user")
    with ResponsesModel(call) as model:
        done = client_home.run(
            [*codex, "exec", "--skip-git-repo-check", *provider(model.port), "use sqlgate"],
            **{KEY_VARIABLE: "not-a-key"},
        )

    assert done.returncode == 0, done.stdout + done.stderr
    offered = model.tools_offered()
    assert sorted(offered.get("mcp__sqlgate", [])) == ALL_TOOLS, (sorted(offered), done.stderr)
    outputs = [model.call_output(request.body) for request in model.requests]
    assert outputs[:1] == [None], outputs  # the first request: the user's prompt
    assert len(outputs) == 2, outputs  # the second: the tool's output, then the final text
    assert result in str(outputs[1])
    assert "done" in done.stdout
    # Codex starts its MCP servers with HOME but without XDG_DATA_HOME: the server kept the
    # records of this database (outside any project) in HOME's default per-user data folder
    (logged,) = client_home.audit_log(XDG_DATA_HOME=str(client_home.home / ".local" / "share"))
    assert (logged["tool"], logged["query"], logged["outcome"]) == (
        call.tool,
        call.arguments["query"],
        "ok",
    )
