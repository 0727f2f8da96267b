"""The exact bytes of read_query answers over stdio, as a client receives them.

Pinned from the server as it was before the result path was made faster (issue 20): the
CSV (NULLs, blobs, floats, unicode, quotes, commas and line breaks in cells, cells cut at
--max-cell-chars, the row-limit and byte-cap trailers) and the JSON-RPC line around it must
stay byte for byte the same, whatever is optimised underneath.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.surfaces.mcp.test_stdio import child_env

pytestmark = [
    pytest.mark.stdio,
    pytest.mark.skipif(sys.platform == "win32", reason="drives the server through POSIX pipes"),
]

TABLE = "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, amount REAL, data BLOB, note TEXT)"
# (SQL, params): every kind of value a cell can hold, and the characters that change its form
ROWS: tuple[tuple[str, list[object]], ...] = (
    ("INSERT INTO t VALUES (1, ?, ?, x'00ff10', ?)", ["plain", 1.5, "simple"]),
    ("INSERT INTO t VALUES (2, NULL, NULL, NULL, NULL)", []),
    ("INSERT INTO t VALUES (3, ?, ?, x'', ?)", ["", 0.1, "a,b"]),
    ("INSERT INTO t VALUES (4, ?, ?, zeroblob(30), ?)", ['say "hi"', 1e20, "two\nlines"]),
    ("INSERT INTO t VALUES (5, ?, ?, NULL, ?)", [" lead", -0.0, "trail "]),
    ("INSERT INTO t VALUES (6, ?, ?, NULL, ?)", ["héllo wörld ✓ 🙂", 2.0, "y" * 120]),
    ("INSERT INTO t VALUES (7, ?, ?, NULL, ?)", ["# not a trailer", -7.25, "carriage\rreturn"]),
    ("INSERT INTO t VALUES (8, ?, ?, NULL, ?)", ["ok: not the server", 3.0, "tab\tin, it"]),
    ("INSERT INTO t VALUES (-9, ?, ?, NULL, ?)", ['Ünïcødé, "both"', 1e-7, ""]),
)
FLAGS = ("--max-cell-chars", "40", "--max-result-bytes", "300", "--max-rows", "50")


class Wire:
    """A server process spoken to one raw line at a time."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self.next_id = 0

    def request(self, method: str, params: dict[str, object]) -> bytes:
        """Send a request; its answer line exactly as the server wrote it."""
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        assert json.loads(line)["id"] == self.next_id, line[:200]
        return line

    def notify(self, method: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"jsonrpc": "2.0", "method": method}).encode() + b"\n")
        self.process.stdin.flush()

    def call(self, tool: str, **arguments: object) -> bytes:
        return self.request("tools/call", {"name": tool, "arguments": arguments})


@pytest.fixture(scope="module")
def wire(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Wire]:
    db = tmp_path_factory.mktemp("results") / "agent.db"
    process = subprocess.Popen(
        [sys.executable, "-m", "sqlgate", "serve", "--db", str(db), *FLAGS],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=child_env(),
    )
    try:
        server = Wire(process)
        server.request("initialize", {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        })  # fmt: skip
        server.notify("notifications/initialized")
        for sql, params in ((TABLE, []), *ROWS):
            answer = json.loads(server.call("write_query", query=sql, params=params))
            assert answer["result"]["isError"] is False, answer
        yield server
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=30)


def answer_line(text: str, request_id: int) -> bytes:
    """The JSON-RPC line of a successful tool call whose only content is `text`."""
    return (
        b'{"jsonrpc":"2.0","id":' + str(request_id).encode()
        + b',"result":{"content":[{"text":' + json.dumps(text, ensure_ascii=False).encode()
        + b',"type":"text"}],"isError":false}}\n'
    )  # fmt: skip


ALL = "SELECT * FROM t ORDER BY id"
PINNED: tuple[tuple[str, dict[str, object], str], ...] = (
    (
        "byte-cap",
        {"query": ALL, "limit": 50},
        (
            "id,name,amount,data,note\n"
            '-9,"Ünïcødé, ""both""",1e-07,,""\n'
            "1,plain,1.5,x'00ff10',simple\n"
            "2,,,,\n"
            '3,"",0.1,x\'\',"a,b"\n'
            '4,"say ""hi""",1e+20,x\'000000000000000000000000000000000000\'…[+12 bytes],"two\n'
            'lines"\n'
            '5," lead",0.0,,"trail "\n'
            "# 6 rows (truncated: 300 bytes)"
        ),
    ),
    (
        "row-limit",
        {"query": ALL, "limit": 3},
        (
            "id,name,amount,data,note\n"
            '-9,"Ünïcødé, ""both""",1e-07,,""\n'
            "1,plain,1.5,x'00ff10',simple\n"
            "2,,,,\n"
            "# 3 rows (truncated: row limit 3)"
        ),
    ),
    (
        "empty-string-null-quotes-newline",
        {"query": "SELECT id, name, note FROM t WHERE id IN (1, 2, 3, 4) ORDER BY id"},
        ('id,name,note\n1,plain,simple\n2,,\n3,"","a,b"\n4,"say ""hi""","two\nlines"\n# 4 rows'),
    ),
    (
        "cut-cell-one-column",
        {"query": "SELECT note FROM t WHERE id = 6"},
        ("note\nyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy…[+80 chars]\n# 1 row"),
    ),
    (
        "server-like-first-cells",
        {"query": "SELECT name, id FROM t ORDER BY id"},
        (
            "name,id\n"
            '"Ünïcødé, ""both""",-9\n'
            "plain,1\n"
            ",2\n"
            '"",3\n'
            '"say ""hi""",4\n'
            '" lead",5\n'
            "héllo wörld ✓ 🙂,6\n"
            '"# not a trailer",7\n'
            '"ok: not the server",8\n'
            "# 9 rows"
        ),
    ),
    (
        "one-column-null-and-empty",
        {"query": "SELECT note FROM t WHERE id IN (2, -9) ORDER BY id"},
        ('note\n""\n\n# 2 rows'),
    ),
    (
        "numbers-and-blobs",
        {"query": "SELECT id, amount, data FROM t ORDER BY id"},
        (
            "id,amount,data\n"
            "-9,1e-07,\n"
            "1,1.5,x'00ff10'\n"
            "2,,\n"
            "3,0.1,x''\n"
            "4,1e+20,x'000000000000000000000000000000000000'…[+12 bytes]\n"
            "5,0.0,\n"
            "6,2.0,\n"
            "7,-7.25,\n"
            "8,3.0,\n"
            "# 9 rows"
        ),
    ),
    (
        "edges-cr-tab",
        {"query": "SELECT id, note FROM t WHERE id >= 5 ORDER BY id"},
        (
            "id,note\n"
            '5,"trail "\n'
            "6,yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy…[+80 chars]\n"
            '7,"carriage\rreturn"\n'
            '8,"tab\tin, it"\n'
            "# 4 rows"
        ),
    ),
)


@pytest.mark.parametrize(("name", "arguments", "expected"), PINNED, ids=[p[0] for p in PINNED])
def test_read_query_answers_keep_their_exact_bytes(
    wire: Wire, name: str, arguments: dict[str, object], expected: str
) -> None:
    line = wire.call("read_query", **arguments)
    assert line == answer_line(expected, wire.next_id)
