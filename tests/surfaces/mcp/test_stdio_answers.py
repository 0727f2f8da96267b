"""`sqlgate serve` on stdio answers every line, on both of its transports.

"pipes" is the event-loop transport used when stdin and stdout are pipes (how MCP clients
start a server); "sdk" is the SDK's transport with sqlgate's line reader, used for
terminals, files and Windows (forced here by telling the server its pipes are not pipes).
Each bad line gets a JSON-RPC error carrying its id; the server keeps answering and its
peak RSS stays under 256 MB, whatever the line.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from typing import Any

import pytest

from tests.surfaces.mcp.test_stdio import PEAK_RSS_LIMIT_KB, _peak_rss_kb, child_env

pytestmark = [
    pytest.mark.stdio,
    pytest.mark.skipif(sys.platform == "win32", reason="drives the server through POSIX pipes"),
]

# the real CLI, after telling the transport that stdin and stdout are no pipes
_SERVE_THROUGH_THE_SDK = textwrap.dedent(
    """
    import sys
    from sqlgate.surfaces.mcp import stdio as stdio_transport
    stdio_transport._is_pipe = lambda fd: False
    from sqlgate.surfaces.cli.app import main
    main(["serve", "--db", sys.argv[1]], prog_name="sqlgate")
    """
)
MiB = 1024 * 1024


class Server:
    """A server process spoken to line by line; answers are collected by their id."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self.answers: dict[object, dict[str, Any]] = {}

    def send(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()

    def answer(self, request_id: object) -> dict[str, Any]:
        """The answer to `request_id`, reading lines until it comes (answers to other ids
        are kept for later). A server that stays silent fails the test by its timeout."""
        assert self.process.stdout is not None
        while request_id not in self.answers:
            line = self.process.stdout.readline()
            assert line, "the server closed stdout without answering"
            message = json.loads(line)
            self.answers.setdefault(message.get("id"), message)
        return self.answers.pop(request_id)


@pytest.fixture(scope="module", params=["pipes", "sdk"])
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    """One server per transport for the whole module: each bad line must leave it serving."""
    db = str(tmp_path_factory.mktemp("stdio") / "agent.db")
    if request.param == "pipes":
        command = [sys.executable, "-m", "sqlgate", "serve", "--db", db]
    else:
        command = [sys.executable, "-c", _SERVE_THROUGH_THE_SDK, db]
    process = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=child_env(),
    )
    served = Server(process)
    try:
        served.send(json.dumps({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "raw", "version": "0"}},
        }).encode())  # fmt: skip
        assert "result" in served.answer(0)
        served.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')
        yield served
    finally:
        if process.stdin is not None:
            process.stdin.close()
        try:
            process.wait(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
            if process.stdout is not None:
                process.stdout.close()


def call(request_id: object, tool: str, arguments: str, *, id_last: bool = False) -> bytes:
    """A tools/call line with `arguments` as raw JSON text (so it can be anything)."""
    params = f'{{"name": "{tool}", "arguments": {arguments}}}'
    rid = json.dumps(request_id)
    if id_last:  # the TypeScript SDK's order
        line = f'{{"method": "tools/call", "params": {params}, "jsonrpc": "2.0", "id": {rid}}}'
    else:
        line = f'{{"jsonrpc": "2.0", "id": {rid}, "method": "tools/call", "params": {params}}}'
    return line.encode()


DEEP = "[" * 1000 + "]" * 1000

# (line, the id its answer must carry, the JSON-RPC error code)
UNREADABLE = [
    pytest.param(call(2, "read_query", '{"query": "SELECT \'\\ud800\'"}'), 2, -32700,
                 id="lone-surrogate-in-an-argument"),
    pytest.param(call("s", "\\ud800", "{}"), "s", -32700, id="lone-surrogate-as-tool-name"),
    pytest.param(call(3, "read_query", '{"query": "SELECT 1", "params": ' + DEEP + "}"), 3,
                 -32700, id="1000-deep"),
    pytest.param(b'{"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "x"', None,
                 -32700, id="cut-short-without-an-id"),
    pytest.param(b'{"jsonrpc": "2.0", "id": 5, oops}', 5, -32700, id="not-json-with-an-id"),
    pytest.param(b"\x00\xff garbage", None, -32700, id="garbage"),
    pytest.param(b'[{"jsonrpc": "2.0", "id": 6, "method": "ping"}]', None, -32600, id="batch"),
    pytest.param(b'{"jsonrpc": "2.0", "id": 7, "method": "ping", "params": "x"}', 7, -32600,
                 id="params-not-an-object"),
    pytest.param(b'{"jsonrpc": "2.0", "id": 7.5, "method": "ping"}', None, -32600,
                 id="float-id"),
    pytest.param(call(8, "read_query", '{"query": "SELECT \'\\udfff\'"}', id_last=True), 8,
                 -32700, id="lone-surrogate-id-last"),
    pytest.param(call(9, "read_query", '{"query": "SELECT 1", "junk": [' +
                      ",".join(["[]"] * 300_000) + "]}"), 9, -32600, id="too-many-values"),
    pytest.param(call(10, "append_event", '{"content": "' + "x" * (5 * MiB) + '"}'), 10,
                 -32600, id="over-4-MiB"),
    pytest.param(call(11, "append_event", '{"content": "' + "x" * (5 * MiB) + '"}',
                      id_last=True), 11, -32600, id="over-4-MiB-id-last"),
]  # fmt: skip


@pytest.mark.parametrize(("line", "request_id", "code"), UNREADABLE)
def test_a_line_the_server_cannot_serve_is_answered_with_its_id(
    server: Server, line: bytes, request_id: object, code: int
) -> None:
    server.send(line)
    server.send(call(99, "read_query", '{"query": "SELECT 1 AS up"}'))
    answer = server.answer(request_id)
    assert answer["error"]["code"] == code
    assert "nothing was run" in answer["error"]["message"] or code == -32600
    up = server.answer(99)  # and the server goes on
    assert up["result"]["content"][0]["text"] == "up\n1\n# 1 row"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="peak RSS is read from /proc")
def test_oversized_and_value_heavy_lines_leave_the_server_small(server: Server) -> None:
    lines = {
        20: call(20, "memory_details", json.dumps({"ids": [1] * 3_000_000})),  # 9 MB
        21: call(21, "read_query", '{"query": "x", "junk": "' + "y" * (20 * MiB) + '"}'),
        # just under 4 MiB, and costly to parse: ~1.4 million empty lists, or strings
        22: call(22, "read_query", '{"junk": [' + ",".join(["[]"] * 1_390_000) + "]}"),
        23: call(23, "read_query", '{"junk": [' + ",".join(['"a"'] * 1_040_000) + "]}"),
    }
    for request_id, line in lines.items():
        server.send(line)
        assert server.answer(request_id)["error"]["code"] == -32600
    server.send(call(24, "memory_details", '{"ids": [1, 2, 3]}'))
    assert server.answer(24)["result"]["isError"]  # an answer: there is no event yet
    peak_kb = _peak_rss_kb(server.process.pid)
    assert peak_kb < PEAK_RSS_LIMIT_KB, f"server peak RSS {peak_kb / 1024:.0f} MB"
