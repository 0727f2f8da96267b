"""`sqlgate serve` as a real subprocess on stdio: the protocol, cancellation, start-up errors.

Also the memory bombs: hostile queries against the running server, which must answer each
with a tool error, keep answering, and stay under 256 MB peak RSS.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, TextIO

import anyio
import apsw
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types import CallToolResult

from sqlgate.surfaces.cli.options import ADOPT_GONE
from sqlgate.surfaces.mcp.server import CLAIMS_TOOLS, MEMORY_TOOLS, SQL_TOOLS
from tests.records import connect_both, records_path
from tests.surfaces.stdio_helpers import rpc

pytestmark = pytest.mark.stdio

SRC = Path(__file__).resolve().parents[3] / "src"
ENDLESS = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
PEAK_RSS_LIMIT_KB = 256 * 1024
LIMIT_FLAGS = ("--max-value-bytes", "--query-timeout", "--heap-limit-mb")

# (id, SQL, phrase the tool error must hold: one of these)
MEMORY_BOMBS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("printf-width", "SELECT printf('%.*c', 2000000000, 'x')", LIMIT_FLAGS),
    ("zeroblob", "SELECT zeroblob(2000000000)", LIMIT_FLAGS),
    ("randomblob", "SELECT randomblob(2000000000)", LIMIT_FLAGS),
    (
        "replace-growth",
        "SELECT replace(replace(replace(hex(zeroblob(450000)), '0', '00'), '0', '00'), '0', '00')",
        LIMIT_FLAGS,
    ),
    (
        "cross-join-order-by",
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000) "
        "SELECT a.i, b.i, hex(randomblob(64)) AS r FROM n a, n b ORDER BY r LIMIT 5",
        LIMIT_FLAGS,
    ),
    (
        "sort-without-limit",  # spills to temp files unless temp_store is memory
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000) "
        "SELECT a.i, hex(randomblob(64)) AS r FROM n a, n b ORDER BY r",
        LIMIT_FLAGS,
    ),
    (
        "group-concat",
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10000000) "
        "SELECT length(group_concat(printf('%020d', i))) FROM n",
        LIMIT_FLAGS,
    ),
    (
        "string-doubling",
        "WITH RECURSIVE d(s, k) AS (SELECT 'x', 0 UNION ALL SELECT s || s, k + 1 FROM d "
        "WHERE k < 40) SELECT max(length(s)) FROM d",
        LIMIT_FLAGS,
    ),
    (
        "deep-json",
        "SELECT json(printf('%.*c', 100000, '[') || printf('%.*c', 100000, ']'))",
        ("JSON", *LIMIT_FLAGS),
    ),
)


def child_env() -> dict[str, str]:
    """The test's environment without SQLGATE_* settings, with sqlgate importable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SQLGATE_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))
    return env


def serve_params(db: Path, *flags: str) -> StdioServerParameters:
    env = child_env()
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "sqlgate", "serve", "--db", str(db), *flags],
        # the client passes only a few variables on: the records' per-user folder too
        env={name: env[name] for name in ("PYTHONPATH", "XDG_DATA_HOME") if name in env},
    )


@pytest.fixture
def server_log(tmp_path: Path) -> Iterator[TextIO]:
    """The server's stderr goes to a file the test can read."""
    with (tmp_path / "server-stderr.txt").open("w+", encoding="utf-8") as handle:
        yield handle


def stdio_server(params: StdioServerParameters, errlog: TextIO) -> Client:
    """A client that starts the server as a subprocess, its stderr into `errlog`."""
    return Client(stdio_client(params, errlog=errlog))


def text(result: CallToolResult) -> str:
    first = result.content[0]
    assert first.type == "text"
    return first.text


@pytest.fixture
async def served(tmp_path: Path, server_log: TextIO) -> AsyncIterator[Client]:
    params = serve_params(tmp_path / "agent.db", "--query-timeout", "60")
    async with stdio_server(params, server_log) as client:
        yield client


# -- the protocol over a real pipe ------------------------------------------------------------


@pytest.mark.anyio
async def test_stdio_server_lists_the_22_tools_and_runs_a_query(served: Client) -> None:
    listed = await served.list_tools()
    assert sorted(tool.name for tool in listed.tools) == sorted(
        SQL_TOOLS + MEMORY_TOOLS + CLAIMS_TOOLS
    )
    created = await served.call_tool("write_query", {"query": "CREATE TABLE t (x INTEGER)"})
    assert not created.is_error, text(created)
    await served.call_tool("write_query", {"query": "INSERT INTO t VALUES (?)", "params": [7]})
    result = await served.call_tool("read_query", {"query": "SELECT x FROM t"})
    assert text(result) == "x\n7\n# 1 row"


@pytest.mark.anyio
async def test_stdio_cancelled_query_stops_and_the_server_answers_the_next_call(
    served: Client, server_log: TextIO
) -> None:
    with anyio.move_on_after(0.5) as scope:
        await served.call_tool("read_query", {"query": ENDLESS})
    assert scope.cancelled_caught
    # had the statement kept running, the read connection would stay busy for 60 s
    after = await served.call_tool(
        "read_query", {"query": "SELECT 6 * 7 AS answer"}, read_timeout_seconds=20
    )
    assert not after.is_error, text(after)
    assert "answer\n42\n" in text(after)
    server_log.seek(0)
    assert "Traceback" not in server_log.read()


def test_stdout_carries_only_protocol_messages(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "sqlgate", "serve", "--db", str(tmp_path / "agent.db")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        env=child_env(),
    )
    try:
        rpc(process, {
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "raw", "version": "0"}},
        })  # fmt: skip
        rpc(process, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        calls: list[dict[str, Any]] = [
            {"name": "read_query", "arguments": {"query": "SELECT * FROM missing"}},
            {"name": "write_query", "arguments": {"query": "DROP TABLE query_log"}},
            {"name": "read_query", "arguments": {"limit": "many"}},
            {"name": "no_such_tool", "arguments": {}},
            {"name": "read_query", "arguments": {"query": "SELECT 'ok' AS fine"}},
        ]
        results = []
        for number, params in enumerate(calls, start=2):
            message = {"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": params}
            response = rpc(process, message)
            assert response is not None
            results.append(response)
        assert [bool(r["result"]["isError"]) for r in results] == [True] * 4 + [False]
        stdout, stderr = process.communicate(timeout=30)  # EOF on stdin ends the server
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0
    for line in stdout.splitlines():
        assert json.loads(line)["jsonrpc"] == "2.0"
    assert "Traceback" not in stderr


# -- memory bombs ---------------------------------------------------------------------------


def _children_serving(db: Path) -> list[int]:
    """Pids of this process's children whose command line serves `db` (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        parent = int(status.rsplit(")", 1)[1].split()[1])
        if parent == os.getpid() and str(db).encode() in cmdline:
            found.append(int(entry.name))
    return found


def _peak_rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmHWM in /proc/{pid}/status")


@pytest.mark.anyio
async def test_memory_bombs_fail_cleanly_and_the_server_stays_small(
    tmp_path: Path, server_log: TextIO
) -> None:
    db = tmp_path / "agent.db"
    params = serve_params(db, "--query-timeout", "0.5")
    problems: list[str] = []
    async with stdio_server(params, server_log) as client:
        for name, sql, phrases in MEMORY_BOMBS:
            result = await client.call_tool("read_query", {"query": sql})
            message = text(result)
            if not result.is_error:
                problems.append(f"{name}: not an error: {message[:200]}")
            elif not any(phrase in message for phrase in phrases):
                problems.append(f"{name}: unexpected error: {message[:200]}")
            alive = await client.call_tool("read_query", {"query": "SELECT 1 AS up"})
            if alive.is_error or "up\n1\n" not in text(alive):
                problems.append(f"{name}: server did not answer SELECT 1 after it")
        peak_kb = None
        if sys.platform.startswith("linux"):
            pids = _children_serving(db)
            assert len(pids) == 1, pids
            peak_kb = _peak_rss_kb(pids[0])
    assert not problems, problems
    if peak_kb is None:
        pytest.skip("peak RSS is read from /proc (Linux only)")
    assert peak_kb < PEAK_RSS_LIMIT_KB, f"server peak RSS {peak_kb / 1024:.0f} MB"


# -- start-up errors --------------------------------------------------------------------------


def _serve_once(db: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sqlgate", "serve", "--db", str(db)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=60,
        check=False,
    )


def _assert_one_error_line(run: subprocess.CompletedProcess[str], phrase: str) -> None:
    assert run.returncode == 8, run.stderr
    assert run.stdout == ""
    lines = run.stderr.splitlines()
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith("sqlgate: error:")
    assert phrase in lines[0]
    assert "Traceback" not in run.stderr


def test_non_sqlite_file_is_refused_and_left_untouched(tmp_path: Path) -> None:
    db = tmp_path / "notes.txt"
    content = b"these are my notes, not a database\n" * 20
    db.write_bytes(content)
    run = _serve_once(db)
    _assert_one_error_line(run, "not a SQLite database")
    assert db.read_bytes() == content
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_missing_parent_folder_is_refused_and_not_created(tmp_path: Path) -> None:
    db = tmp_path / "missing" / "agent.db"
    run = _serve_once(db)
    _assert_one_error_line(run, "does not exist")
    assert not db.parent.exists()


def test_directory_as_db_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    run = _serve_once(folder)
    _assert_one_error_line(run, "is a directory")
    assert list(folder.iterdir()) == []


def _app_database(path: Path) -> Path:
    """An application's own database (an Alembic-managed app, rollback journal)."""
    conn = apsw.Connection(str(path))
    conn.execute(
        "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT);"
        "CREATE TABLE alembic_version (version_num TEXT PRIMARY KEY);"
        "CREATE INDEX users_by_name ON users (name);"
        "INSERT INTO alembic_version VALUES ('3f2a1b')"
    )
    conn.close()
    return path


def test_an_app_database_is_served_as_it_is_by_the_stdio_server(tmp_path: Path) -> None:
    """What an MCP client sees when its config points --db at an application's database:
    the server starts and stops without a word, and the file and its folder stay as they
    were (sqlgate's records go to its home, not beside the file)."""
    db = _app_database(tmp_path / "app.db")
    content = db.read_bytes()
    run = _serve_once(db)
    assert run.returncode == 0, run.stderr
    assert run.stdout == ""
    assert run.stderr == ""
    assert db.read_bytes() == content
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.db"]
    assert records_path(db).is_file()


def test_adopt_db_no_longer_changes_an_app_database(tmp_path: Path) -> None:
    db = _app_database(tmp_path / "app.db")
    content = db.read_bytes()
    run = subprocess.run(
        [sys.executable, "-m", "sqlgate", "serve", "--db", str(db)],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, check=False,
        env={**child_env(), "SQLGATE_ADOPT_DB": "1"},
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert run.stderr.splitlines() == [f"sqlgate: {ADOPT_GONE}"]
    assert db.read_bytes() == content
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        assert conn.execute("SELECT version_num FROM alembic_version").fetchall() == [("3f2a1b",)]
        assert conn.pragma("application_id") == 0
        assert conn.pragma("journal_mode") == "delete"
    finally:
        conn.close()


permission_bits_apply = pytest.mark.skipif(
    sys.platform == "win32" or (hasattr(os, "geteuid") and os.geteuid() == 0),
    reason="permission bits do not stop root, and Windows ignores them",
)


@permission_bits_apply
def test_unwritable_database_file_is_refused_and_left_untouched(tmp_path: Path) -> None:
    db = tmp_path / "agent.db"
    conn = connect_both(db)
    conn.execute("CREATE TABLE kept (x)")
    conn.close()
    content = db.read_bytes()
    db.chmod(stat.S_IRUSR)
    try:
        run = _serve_once(db)
        _assert_one_error_line(run, "not writable")
        assert db.read_bytes() == content
        assert sorted(p.name for p in tmp_path.iterdir()) == ["agent.db"]
    finally:
        db.chmod(stat.S_IRUSR | stat.S_IWUSR)


@permission_bits_apply
def test_unwritable_folder_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        run = _serve_once(folder / "agent.db")
        _assert_one_error_line(run, "not writable")
        assert list(folder.iterdir()) == []
    finally:
        folder.chmod(stat.S_IRWXU)


# -- python -m sqlgate -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argument", "expected"),
    [
        pytest.param("--version", "sqlgate, version ", id="version"),
        pytest.param("--help", "snapshots", id="help"),
    ],
)
def test_python_dash_m_sqlgate_runs_the_cli(argument: str, expected: str) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "sqlgate", argument],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=60,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert expected in run.stdout
    assert run.stderr == ""
