"""The actor in every audit row (issue 22), on one database file through each surface:
the agent of a real `sqlgate serve` on stdio (`local`), a person's `sqlgate undo` (`cli`),
then HTTP members, the admin --token and a refused request (`(unknown)`).
"""

from __future__ import annotations

import re
import subprocess
import sys
from contextlib import closing
from pathlib import Path
from typing import TextIO

import anyio
import httpx2
import pytest

from tests.records import connect_both
from tests.surfaces.mcp.team_server import audit_rows, member_client, with_members
from tests.surfaces.mcp.test_http import CALL_SECONDS, child_env, start_server
from tests.surfaces.mcp.test_stdio import serve_params, server_log, stdio_server, text

pytestmark = [pytest.mark.stdio, pytest.mark.anyio]
__all__ = ["server_log"]  # the fixture, used here

UNDO_HINT = re.compile(r"sqlgate undo (\d+@[0-9a-f]+)")


async def test_every_surface_names_its_actor_in_each_row(
    tmp_path: Path, server_log: TextIO
) -> None:
    db = tmp_path / "team.db"
    tokens = with_members(db, {"grace": "write"})
    # the agent on stdio
    with anyio.fail_after(CALL_SECONDS * 2):
        async with stdio_server(serve_params(db), server_log) as agent:
            await agent.call_tool("write_query", {"query": "CREATE TABLE t (x)"})
            inserted = text(await agent.call_tool(
                "write_query", {"query": "INSERT INTO t VALUES (1), (2)"}
            ))  # fmt: skip
            await agent.call_tool("append_event", {"content": "from the stdio agent"})
    (call,) = UNDO_HINT.findall(inserted)
    # a person at the command line
    undone = subprocess.run(
        [sys.executable, "-m", "sqlgate", "undo", call, "--db", str(db)],
        capture_output=True, text=True, env=child_env(), timeout=CALL_SECONDS, check=False,
    )  # fmt: skip
    assert undone.returncode == 0, undone.stderr
    # HTTP: a member, the admin --token, and a request that names no one
    admin = "admin-t0k3n-of-the-actor-test-0123"
    server = start_server(db, "--token", admin)
    try:
        with anyio.fail_after(CALL_SECONDS * 2):
            for token in (tokens["grace"], admin):
                async with member_client(server.url, token, "auto") as client:
                    await client.call_tool("read_query", {"query": "SELECT count(*) FROM t"})
        bad = httpx2.post(server.url, json={}, headers={"Authorization": "Bearer nobody"})
        assert bad.status_code == 401
    finally:
        server.stop()
    rows = [(row.actor, row.tool, row.ok) for row in audit_rows(db)]
    assert rows == [
        ("local", "write_query", True),
        ("local", "write_query", True),
        ("local", "append_event", True),
        ("cli", "undo", True),
        ("grace", "read_query", True),
        ("admin", "read_query", True),
        ("(unknown)", "http_request", False),
    ]
    sessions = {row.actor: row.session for row in audit_rows(db)}
    assert "/" not in sessions["local"]  # the server's own session
    assert "/" not in sessions["cli"]  # the command's own
    assert sessions["grace"].endswith("/grace")  # 2026-07-28: no Mcp-Session-Id
    assert sessions["admin"].endswith("/admin")
    with closing(connect_both(db)) as conn:
        (event_session,) = conn.execute("SELECT session FROM memory_events").fetchone()
    assert event_session == sessions["local"]
