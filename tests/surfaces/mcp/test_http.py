"""`sqlgate serve --transport http`: --insecure-no-token, the DNS-rebinding check, the bearer
gate alone, the JSON-RPC guard, and the real server on 127.0.0.1 shared by several SDK
clients (which host needs which token: tests/surfaces/web/test_access.py).

Readiness without sleeps: the server prints its URL on stderr only once it accepts requests,
so the tests wait (bounded) for that line instead of polling or sleeping.
"""

from __future__ import annotations

import hmac
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from click.testing import CliRunner, Result
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from sqlgate.config import FLAGS
from sqlgate.errors import InvalidArgument
from sqlgate.surfaces.cli.app import main
from sqlgate.surfaces.mcp import http as http_surface
from sqlgate.surfaces.mcp import http_access, http_identity
from sqlgate.surfaces.mcp.http import MCP_PATH
from sqlgate.surfaces.mcp.http_access import check_tokenless, rebinding_protection
from sqlgate.surfaces.mcp.http_identity import BearerTokenGate
from sqlgate.surfaces.mcp.server import CLAIMS_TOOLS, MEMORY_TOOLS, SQL_TOOLS
from sqlgate.surfaces.web.asgi import Message, Receive, Scope, Send

SRC = Path(__file__).resolve().parents[3] / "src"
TOKEN = "t0k3n-for-the-tests-0123456789"
STARTUP_SECONDS = 30.0
CALL_SECONDS = 30.0


# -- --insecure-no-token: loopback only, never with a token ------------------------------------


@pytest.mark.parametrize("host", ["127.0.0.1", "127.8.9.10", "::1", "[::1]", "localhost"])
def test_tokenless_mode_is_allowed_on_loopback(host: str) -> None:
    check_tokenless(host, None)


@pytest.mark.parametrize(
    "host", ["0.0.0.0", "::", "192.168.1.20", "db.example.com", "localhost.example.com"]
)
def test_tokenless_mode_is_refused_off_loopback(host: str) -> None:
    with pytest.raises(InvalidArgument, match="only on a loopback address"):
        check_tokenless(host, None)


def test_tokenless_mode_with_a_token_is_refused() -> None:
    with pytest.raises(InvalidArgument, match="drop one"):
        check_tokenless("127.0.0.1", TOKEN)


@dataclass
class FakeSocket:
    address: tuple[str, int]

    def getsockname(self) -> tuple[str, int]:
        return self.address


@pytest.mark.parametrize(
    ("address", "loopback"),
    [
        pytest.param(("127.0.0.1", 8765), True, id="ipv4"),
        pytest.param(("::1", 8765), True, id="ipv6"),
        pytest.param(("192.168.1.20", 8765), False, id="lan"),
        pytest.param(("0.0.0.0", 8765), False, id="all"),
    ],
)
def test_tokenless_mode_checks_the_address_actually_bound(
    address: tuple[str, int], loopback: bool
) -> None:
    """`localhost` is looked up when binding: a hosts file could point it elsewhere."""
    sock = FakeSocket(address)
    if loopback:
        http_access.require_loopback_socket(sock)  # type: ignore[arg-type]
    else:
        with pytest.raises(InvalidArgument, match="only on a loopback address"):
            http_access.require_loopback_socket(sock)  # type: ignore[arg-type]


def security_answer(host: str, headers: dict[str, str]) -> int | None:
    """The status the SDK's DNS-rebinding check gives a GET with `headers` (None: passes)."""
    from mcp.server.transport_security import TransportSecurityMiddleware
    from starlette.requests import Request

    settings = rebinding_protection(host)
    assert settings is not None
    raw = [(k.lower().encode(), v.encode()) for k, v in headers.items()]
    request = Request({"type": "http", "method": "GET", "path": MCP_PATH, "headers": raw})
    response = anyio.run(TransportSecurityMiddleware(settings).validate_request, request)
    return None if response is None else response.status_code


@pytest.mark.parametrize("host", ["127.0.0.1", "127.8.9.10", "::1", "[::1]", "localhost"])
@pytest.mark.parametrize(
    ("headers", "status"),
    [
        pytest.param({"Host": "evil.example:8765"}, 421, id="foreign-host"),
        pytest.param({"Host": "evil.example"}, 421, id="foreign-host-no-port"),
        pytest.param({"Host": "127.0.0.1:8765", "Origin": "http://evil.example"}, 403,
                     id="foreign-origin"),
        pytest.param({"Host": "localhost:8765", "Origin": "http://localhost.evil.example:80"},
                     403, id="lookalike-origin"),
        pytest.param({"Host": "127.0.0.1:8765"}, None, id="own-ipv4"),
        pytest.param({"Host": "localhost:8765", "Origin": "http://localhost:8765"}, None,
                     id="own-name-and-origin"),
        pytest.param({"Host": "[::1]:8765"}, None, id="own-ipv6"),
    ],
)  # fmt: skip
def test_every_loopback_host_refuses_other_hosts_and_origins(
    host: str, headers: dict[str, str], status: int | None
) -> None:
    assert security_answer(host, headers) == status


@pytest.mark.parametrize("host", ["127.8.9.10", "::1", "[::1]"])
def test_rebinding_protection_accepts_the_host_it_listens_on(host: str) -> None:
    shown = f"[{host.strip('[]')}]" if ":" in host else host
    assert (
        security_answer(host, {"Host": f"{shown}:8765", "Origin": f"http://{shown}:8765"}) is None
    )


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.20", "db.example.com"])
def test_no_rebinding_protection_off_loopback(host: str) -> None:
    """Behind a reverse proxy the Host varies; the bearer token protects those servers."""
    assert rebinding_protection(host) is None


# -- the bearer gate alone, through httpx2's ASGI transport ------------------------------------


@dataclass
class Recorder:
    """An ASGI app that answers 200 and remembers the scopes that reached it."""

    scopes: list[Scope] = field(default_factory=list)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.scopes.append(scope)
        if scope["type"] == "lifespan":
            return
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"inner"})


@asynccontextmanager
async def gated(inner: Recorder, token: str = TOKEN) -> AsyncIterator[httpx2.AsyncClient]:
    transport = httpx2.ASGITransport(app=BearerTokenGate(inner, token))
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        yield client


def assert_no_cors(response: httpx2.Response) -> None:
    cors = [name for name in response.headers if name.lower().startswith("access-control-")]
    assert cors == []


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("headers", "challenge"),
    [
        pytest.param({}, 'Bearer realm="sqlgate"', id="no-header"),
        pytest.param(
            {"Authorization": "Bearer wrong-token-0123456789"},
            'Bearer realm="sqlgate", error="invalid_token"',
            id="wrong-token",
        ),
        pytest.param(
            {"Authorization": f"Bearer {TOKEN}x"},
            'Bearer realm="sqlgate", error="invalid_token"',
            id="token-with-suffix",
        ),
        pytest.param(
            {"Authorization": f"Bearer {TOKEN[:-1]}"},
            'Bearer realm="sqlgate", error="invalid_token"',
            id="token-prefix",
        ),
        pytest.param(
            {"Authorization": f"Basic {TOKEN}"},
            'Bearer realm="sqlgate", error="invalid_request"',
            id="basic",
        ),
        pytest.param(
            {"Authorization": TOKEN},
            'Bearer realm="sqlgate", error="invalid_request"',
            id="no-scheme",
        ),
        pytest.param(
            {"Authorization": "Bearer "},
            'Bearer realm="sqlgate", error="invalid_request"',
            id="empty-bearer",
        ),
    ],
)
async def test_gate_answers_401_with_a_bearer_challenge(
    headers: dict[str, str], challenge: str
) -> None:
    inner = Recorder()
    async with gated(inner) as client:
        response = await client.post("/mcp", headers=headers, json={})
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == challenge
    assert "Authorization: Bearer <token>" in response.json()["message"]
    assert inner.scopes == []


@pytest.mark.anyio
@pytest.mark.parametrize(
    "value",
    [
        pytest.param(f"Bearer {TOKEN}", id="canonical"),
        pytest.param(f"bearer {TOKEN}", id="scheme-any-case"),
        pytest.param(f"  Bearer   {TOKEN}  ", id="extra-spaces"),
    ],
)
async def test_gate_passes_requests_with_the_token(value: str) -> None:
    inner = Recorder()
    async with gated(inner) as client:
        response = await client.get("/mcp", headers={"Authorization": value})
    assert (response.status_code, response.text) == (200, "inner")
    assert [scope["path"] for scope in inner.scopes] == ["/mcp"]


@pytest.mark.anyio
async def test_gate_compares_in_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    compared: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(http_identity.hmac, "compare_digest", spy)
    async with gated(Recorder()) as client:
        await client.get("/mcp", headers={"Authorization": "Bearer guess-0123456789abcdef"})
    assert compared == [(b"guess-0123456789abcdef", TOKEN.encode())]


@pytest.mark.anyio
async def test_cors_preflight_gets_401_and_no_allow_headers() -> None:
    inner = Recorder()
    preflight = {
        "Origin": "https://evil.example",
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type",
    }
    async with gated(inner) as client:
        response = await client.options("/mcp", headers=preflight)
    assert response.status_code == 401
    assert_no_cors(response)
    assert inner.scopes == []


@pytest.mark.anyio
async def test_gate_lets_lifespan_through_and_closes_websockets_without_token() -> None:
    inner = Recorder()
    gate = BearerTokenGate(inner, TOKEN)
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "websocket.connect"}

    async def send(message: Message) -> None:
        sent.append(message)

    await gate({"type": "lifespan"}, receive, send)
    await gate({"type": "websocket", "path": "/mcp", "headers": []}, receive, send)
    assert [scope["type"] for scope in inner.scopes] == ["lifespan"]
    assert sent == [{"type": "websocket.close", "code": 1008}]


@pytest.mark.anyio
@settings(max_examples=100, deadline=None)
@given(presented=st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126)))
async def test_gate_admits_no_other_token(presented: str) -> None:
    inner = Recorder()
    async with gated(inner) as client:
        response = await client.get("/mcp", headers={"Authorization": f"Bearer {presented}"})
    assert (response.status_code == 200) is (presented == TOKEN)


# -- the CLI refuses before it opens anything ---------------------------------------------------


@pytest.fixture
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [flag.env_var for flag in FLAGS] + ["SQLGATE_HOST", "SQLGATE_PORT"]:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("SQLGATE_TOKEN", raising=False)


def serve_cli(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(
        main, ["serve", "--transport", "http", *args], env=env, prog_name="sqlgate"
    )


def one_error_line(result: Result) -> str:
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("sqlgate: error: ")
    return lines[0]


@pytest.mark.usefixtures("clean_environment")
@pytest.mark.parametrize(
    ("args", "env", "phrase"),
    [
        pytest.param(("--host", "0.0.0.0"), None, "not a loopback address", id="public-no-token"),
        pytest.param((), {"SQLGATE_HOST": "::"}, "not a loopback address", id="public-by-env"),
        pytest.param(("--token", "short"), None, "at least", id="short-token"),
        pytest.param((), {"SQLGATE_TOKEN": "short"}, "at least", id="short-token-by-env"),
        pytest.param(("--insecure-no-token", "--host", "0.0.0.0"), None,
                     "only on a loopback address", id="tokenless-public"),
        pytest.param(("--insecure-no-token", "--host", "192.168.1.20"), None,
                     "only on a loopback address", id="tokenless-lan"),
        pytest.param(("--insecure-no-token",), {"SQLGATE_HOST": "::"},
                     "only on a loopback address", id="tokenless-public-by-env"),
        pytest.param(("--insecure-no-token", "--token", TOKEN), None, "drop one",
                     id="tokenless-with-token"),
        pytest.param(("--insecure-no-token",), {"SQLGATE_TOKEN": TOKEN}, "drop one",
                     id="tokenless-with-token-by-env"),
    ],
)  # fmt: skip
def test_serve_http_refuses_with_exit_2_and_writes_nothing(
    tmp_path: Path, args: tuple[str, ...], env: dict[str, str] | None, phrase: str
) -> None:
    db = tmp_path / "agent.db"
    result = serve_cli("--db", str(db), *args, env=env)
    assert result.exit_code == 2
    assert phrase in one_error_line(result)
    assert result.stdout == ""
    assert list(tmp_path.iterdir()) == []


@pytest.mark.usefixtures("clean_environment")
def test_serve_http_on_a_port_in_use_fails_with_one_line(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        result = serve_cli("--db", str(tmp_path / "agent.db"), "--port", str(port))
    assert result.exit_code == 8
    assert f"cannot listen on 127.0.0.1:{port}" in one_error_line(result)
    assert list(tmp_path.iterdir()) == []


# -- the real server, shared by SDK clients --------------------------------------------------


def child_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SQLGATE_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))
    env.update(extra)
    return env


def left(deadline: float) -> float:
    return max(0.0, deadline - time.monotonic())


@dataclass
class RunningServer:
    process: subprocess.Popen[str]
    url: str
    token: str
    lines: list[str]
    _pending: queue.Queue[str | None]

    def stderr_until_exit(self, timeout: float) -> str:
        """Wait (bounded) for the process to end, then return everything it wrote on stderr."""
        self.process.wait(timeout=timeout)
        deadline = time.monotonic() + timeout
        while (line := self._pending.get(timeout=left(deadline))) is not None:
            self.lines.append(line)
        return "".join(self.lines)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=STARTUP_SECONDS)


def start_server(db: Path, *flags: str, env: dict[str, str] | None = None) -> RunningServer:
    """Start `sqlgate serve --transport http` on a free loopback port; return once it listens."""
    process = subprocess.Popen(
        [sys.executable, "-m", "sqlgate", "serve", "--transport", "http", "--db", str(db),
         "--host", "127.0.0.1", "--port", "0", *flags],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True, encoding="utf-8", env=env or child_env(),
    )  # fmt: skip
    pending: queue.Queue[str | None] = queue.Queue()

    def drain() -> None:  # keeps the pipe from filling while the server runs
        assert process.stderr is not None
        for line in process.stderr:
            pending.put(line)
        pending.put(None)

    threading.Thread(target=drain, daemon=True).start()
    lines: list[str] = []
    deadline = time.monotonic() + STARTUP_SECONDS
    url = token = None
    tokenless, warned = "--insecure-no-token" in flags, False
    wants_token = "--token" not in flags and not tokenless and env is None
    while url is None or (token is None and wants_token) or (tokenless and not warned):
        line = pending.get(timeout=left(deadline))
        if line is None:
            process.wait(timeout=STARTUP_SECONDS)
            pytest.fail(f"server exited {process.returncode}: {''.join(lines)}")
        lines.append(line)
        if found := re.search(r"at (http://127\.0\.0\.1:\d+/mcp)$", line.strip()):
            url = found.group(1)
        if found := re.search(r"Authorization: Bearer (\S+)$", line.strip()):
            token = found.group(1)
        warned = warned or "WARNING" in line
    return RunningServer(process, url, token or "", lines, pending)


@pytest.fixture(scope="module")
def shared_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """One server with a generated token, for tests that only talk to it."""
    server = start_server(tmp_path_factory.mktemp("http") / "team.db")
    try:
        yield server
    finally:
        server.stop()


@asynccontextmanager
async def connected(url: str, token: str | None) -> AsyncIterator[Client]:
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=CALL_SECONDS) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client


def text(result: CallToolResult) -> str:
    first = result.content[0]
    assert first.type == "text"
    return first.text


async def call(client: Client, tool: str, **arguments: Any) -> str:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, text(result)
    return text(result)


@pytest.mark.stdio
@pytest.mark.anyio
async def test_http_client_lists_the_tools_and_runs_a_query(shared_server: RunningServer) -> None:
    with anyio.fail_after(CALL_SECONDS):
        async with connected(shared_server.url, shared_server.token) as client:
            listed = await client.list_tools()
            answer = await call(client, "read_query", query="SELECT 6 * 7 AS answer")
    assert sorted(tool.name for tool in listed.tools) == sorted(
        SQL_TOOLS + MEMORY_TOOLS + CLAIMS_TOOLS
    )
    assert answer == "answer\n42\n# 1 row"


@pytest.mark.stdio
@pytest.mark.anyio
async def test_two_clients_share_one_database(shared_server: RunningServer) -> None:
    url, token = shared_server.url, shared_server.token
    with anyio.fail_after(CALL_SECONDS * 2):
        async with connected(url, token) as writer, connected(url, token) as reader:
            await call(writer, "write_query", query="CREATE TABLE notes (body TEXT)")
            await call(writer, "write_query", query="INSERT INTO notes VALUES (?)",
                       params=["from the writer"])  # fmt: skip
            seen = await call(reader, "read_query", query="SELECT body FROM notes")
        # both sessions ended; the shared database must still be open for the next one
        async with connected(url, token) as later:
            again = await call(later, "read_query", query="SELECT count(*) AS n FROM notes")
    assert seen == "body\nfrom the writer\n# 1 row"
    assert again == "n\n1\n# 1 row"


@pytest.mark.stdio
@pytest.mark.parametrize(
    ("authorization", "challenge"),
    [
        pytest.param(None, 'Bearer realm="sqlgate"', id="no-token"),
        pytest.param("Bearer not-the-token-0123456789", 'error="invalid_token"', id="wrong"),
    ],
)
def test_http_server_answers_401_without_the_token(
    shared_server: RunningServer, authorization: str | None, challenge: str
) -> None:
    headers = {"Accept": "application/json, text/event-stream"}
    if authorization is not None:
        headers["Authorization"] = authorization
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    response = httpx2.post(shared_server.url, json=initialize, headers=headers,
                           timeout=CALL_SECONDS)  # fmt: skip
    assert response.status_code == 401
    assert challenge in response.headers["www-authenticate"]
    assert response.headers["www-authenticate"].startswith("Bearer ")


@pytest.mark.stdio
@pytest.mark.parametrize("with_token", [False, True], ids=["without-token", "with-token"])
def test_http_server_sends_no_cors_headers(shared_server: RunningServer, with_token: bool) -> None:
    headers = {
        "Origin": "https://evil.example",
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization",
    }
    if with_token:
        headers["Authorization"] = f"Bearer {shared_server.token}"
    response = httpx2.options(shared_server.url, headers=headers, timeout=CALL_SECONDS)
    assert response.status_code >= 400
    assert_no_cors(response)


@pytest.mark.stdio
@pytest.mark.anyio
@pytest.mark.skipif(sys.platform == "win32", reason="SIGTERM is not a signal on Windows")
async def test_explicit_token_is_not_printed_and_sigterm_closes_the_database(
    tmp_path: Path,
) -> None:
    server = start_server(tmp_path / "team.db", env=child_env(SQLGATE_TOKEN=TOKEN))
    try:
        with anyio.fail_after(CALL_SECONDS):
            async with connected(server.url, TOKEN) as client:
                await call(client, "append_event", kind="note", content="before the stop")
        server.process.send_signal(signal.SIGTERM)
        stderr = server.stderr_until_exit(timeout=STARTUP_SECONDS)
    finally:
        server.stop()
    assert server.process.returncode == 0, stderr
    assert TOKEN not in stderr
    assert "Bearer" not in stderr
    assert stderr.rstrip().endswith("sqlgate: stopped; database closed")
    assert "Traceback" not in stderr


# -- the real server with --insecure-no-token -------------------------------------------------

INITIALIZE = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "test", "version": "0"}},
}  # fmt: skip
STREAMABLE = {"Accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def tokenless_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    server = start_server(tmp_path_factory.mktemp("http") / "tests.db", "--insecure-no-token")
    try:
        yield server
    finally:
        server.stop()


@pytest.mark.stdio
@pytest.mark.anyio
async def test_tokenless_server_serves_clients_that_send_no_token(
    tokenless_server: RunningServer,
) -> None:
    with anyio.fail_after(CALL_SECONDS):
        async with connected(tokenless_server.url, None) as client:
            answer = await call(client, "read_query", query="SELECT 6 * 7 AS answer")
    assert answer == "answer\n42\n# 1 row"


@pytest.mark.stdio
def test_tokenless_server_says_so_on_stderr(tokenless_server: RunningServer) -> None:
    said = "".join(tokenless_server.lines)
    assert "--insecure-no-token" in said
    assert "any program or user on this machine" in said
    assert "Bearer" not in said


@pytest.mark.stdio
@pytest.mark.parametrize(
    ("headers", "status"),
    [
        pytest.param({"Host": "evil.example"}, 421, id="foreign-host"),
        pytest.param({"Origin": "http://evil.example"}, 403, id="foreign-origin"),
    ],
)
def test_tokenless_server_refuses_dns_rebinding(
    tokenless_server: RunningServer, headers: dict[str, str], status: int
) -> None:
    response = httpx2.post(tokenless_server.url, json=INITIALIZE,
                           headers={**STREAMABLE, **headers}, timeout=CALL_SECONDS)  # fmt: skip
    assert response.status_code == status


@pytest.mark.stdio
def test_no_environment_variable_turns_the_token_off(tmp_path: Path) -> None:
    """Only the explicit flag serves without a token: an inherited variable cannot."""
    env = child_env(SQLGATE_INSECURE_NO_TOKEN="1", SQLGATE_NO_TOKEN="1")
    server = start_server(tmp_path / "team.db", env=env)
    try:
        response = httpx2.post(server.url, json=INITIALIZE, headers=STREAMABLE,
                               timeout=CALL_SECONDS)  # fmt: skip
    finally:
        server.stop()
    assert response.status_code == 401


# -- every POSTed message gets an answer: the JSON-RPC guard -----------------------------------


@dataclass
class BodyRecorder:
    """An ASGI app that reads each request's whole body, remembers it, and answers 200."""

    bodies: list[bytes] = field(default_factory=list)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        self.bodies.append(body)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"inner"})


@asynccontextmanager
async def guarded(inner: BodyRecorder) -> AsyncIterator[httpx2.AsyncClient]:
    transport = httpx2.ASGITransport(app=http_surface.JsonRpcGuard(inner))
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        yield client


DEEP = "[" * 1000 + "]" * 1000
CALL = '{"jsonrpc": "2.0", "id": %s, "method": "tools/call", "params": %s}'
TOOL = '{"name": "read_query", "arguments": {"query": %s}}'

# (body, HTTP status, JSON-RPC code, the id the answer must carry)
UNSERVABLE = [
    pytest.param(CALL % ("7", TOOL % '"\\ud800"'), 400, -32700, 7, id="lone-surrogate"),
    pytest.param(CALL % ('"a"', TOOL % '"\\udc00 x"'), 400, -32700, "a", id="lone-low-surrogate"),
    pytest.param(CALL % ("8", TOOL % DEEP), 400, -32700, 8, id="1000-deep"),
    pytest.param('{"jsonrpc": "2.0", "id": 9, "method": ', 400, -32700, 9, id="cut-short"),
    pytest.param("not json at all", 400, -32700, None, id="not-json"),
    pytest.param("", 400, -32700, None, id="empty"),
    pytest.param("[" + CALL % ("3", "{}") + "]", 400, -32600, None, id="batch"),
    pytest.param('"just a string"', 400, -32600, None, id="not-an-object"),
    pytest.param('{"jsonrpc": "2.0", "id": 4, "method": "x", "params": 5}', 400, -32600, 4,
                 id="params-not-an-object"),
    pytest.param('{"jsonrpc": "1.0", "id": 5, "method": "ping"}', 400, -32600, 5, id="version"),
    pytest.param('{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}', 400, -32600, None,
                 id="float-id"),
    pytest.param('{"params": {}, "method": "ping", "jsonrpc": "2.0", "id": 11, "x": 1e999999}',
                 None, None, None, id="id-last-and-huge-number-still-served"),
    pytest.param(CALL % ("12", '{"junk": [' + ",".join(["[]"] * 200_000) + "]}"), 400, -32600,
                 12, id="too-many-values"),
    pytest.param(CALL % ("13", '{"x": "' + "y" * (4 * 1024 * 1024) + '"}'), 413, -32600, 13,
                 id="over-4-MiB"),
]  # fmt: skip


@pytest.mark.anyio
@pytest.mark.parametrize(("body", "status", "code", "request_id"), UNSERVABLE)
async def test_the_guard_answers_what_the_sdk_could_not_serve_with_its_id(
    body: str, status: int | None, code: int | None, request_id: object
) -> None:
    inner = BodyRecorder()
    async with guarded(inner) as client:
        response = await client.post(MCP_PATH, content=body.encode("utf-8", "surrogatepass"))
    if status is None:  # servable: it reaches the app untouched
        assert response.status_code == 200
        assert inner.bodies == [body.encode()]
        return
    assert response.status_code == status
    assert inner.bodies == []
    answer = response.json()
    assert answer["jsonrpc"] == "2.0"
    assert answer["id"] == request_id
    assert answer["error"]["code"] == code
    assert "nothing was run" in answer["error"]["message"] or code == -32600


@pytest.mark.anyio
async def test_the_guard_refuses_a_declared_oversized_body_after_its_first_piece() -> None:
    inner = BodyRecorder()
    sent: list[Message] = []
    pieces = [{"type": "http.request", "body": b'{"jsonrpc": "2.0", "id": 31, "method": "x", '
               b'"params": {"a": "', "more_body": True}]  # fmt: skip

    async def receive() -> Message:
        assert pieces, "more of the body was read than its first piece"
        return pieces.pop()

    async def send(message: Message) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": MCP_PATH,
             "headers": [(b"content-length", str(64 * 1024 * 1024).encode())]}  # fmt: skip
    await http_surface.JsonRpcGuard(inner)(scope, receive, send)
    assert sent[0]["status"] == 413
    assert b'"id":31' in sent[1]["body"]
    assert b'"code":-32600' in sent[1]["body"]
    assert inner.bodies == []


@pytest.mark.anyio
async def test_the_guard_lets_other_methods_and_paths_through() -> None:
    inner = BodyRecorder()
    async with guarded(inner) as client:
        assert (await client.get(MCP_PATH)).status_code == 200
        assert (await client.post("/elsewhere", content=b"not json")).status_code == 200
    assert inner.bodies == [b"", b"not json"]


@pytest.mark.stdio
@pytest.mark.anyio
async def test_http_server_answers_unservable_messages_and_keeps_serving(
    shared_server: RunningServer,
) -> None:
    headers = {
        "Authorization": f"Bearer {shared_server.token}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
    }
    bodies = [
        (CALL % ("21", TOOL % '"\\ud800"'), 400, 21),
        (CALL % ("22", TOOL % DEEP), 400, 22),
        (CALL % ("23", '{"x": "' + "y" * (5 * 1024 * 1024) + '"}'), 413, 23),
    ]
    async with httpx2.AsyncClient(headers=headers, timeout=CALL_SECONDS) as http:
        for body, status, request_id in bodies:
            response = await http.post(shared_server.url, content=body.encode())
            assert response.status_code == status
            assert response.json()["id"] == request_id
    with anyio.fail_after(CALL_SECONDS):
        async with connected(shared_server.url, shared_server.token) as client:
            answer = await call(client, "read_query", query="SELECT 6 * 7 AS answer")
    assert answer == "answer\n42\n# 1 row"
