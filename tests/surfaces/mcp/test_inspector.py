"""A real third-party client: the MCP Inspector CLI (npm, pinned) drives `sqlgate serve` on stdio.

The pinned version lives in tests/e2e/inspector/package.json + package-lock.json. The session
fixture installs it with `npm ci` (skipped when npm is missing or the registry is unreachable) and
reuses an existing install of the pinned version.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sqlgate.surfaces.mcp.server import CLAIMS_TOOLS, MEMORY_TOOLS, SQL_TOOLS
from tests.npm_pins import npm_ci
from tests.surfaces.mcp.test_stdio import child_env

pytestmark = [pytest.mark.stdio, pytest.mark.e2e]

PACKAGE = "@modelcontextprotocol/inspector"
INSPECTOR_DIR = Path(__file__).resolve().parents[2] / "e2e" / "inspector"
RUN_TIMEOUT_S = 60


def inspector_binary() -> str | None:
    return shutil.which("mcp-inspector", path=str(INSPECTOR_DIR / "node_modules" / ".bin"))


@pytest.fixture(scope="session")
def inspector() -> str:
    """Path of the pinned inspector's CLI binary, installed with `npm ci` when needed."""
    npm_ci(INSPECTOR_DIR)
    binary = inspector_binary()
    assert binary is not None, f"npm ci did not install the mcp-inspector binary in {INSPECTOR_DIR}"
    return binary


def run_inspector(inspector: str, db: Path, *method: str) -> Any:
    """One inspector CLI call against a fresh `sqlgate serve` process; its JSON answer."""
    server = [sys.executable, "-m", "sqlgate", "serve", "--db", str(db)]
    done = subprocess.run(
        [inspector, "--cli", *server, *method],
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="replace",
        timeout=RUN_TIMEOUT_S,
        env=child_env(),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def test_inspector_lists_every_announced_tool(inspector: str, tmp_path: Path) -> None:
    answer = run_inspector(inspector, tmp_path / "e2e.db", "--method", "tools/list")

    names = [tool["name"] for tool in answer["tools"]]
    assert sorted(names) == sorted(SQL_TOOLS + MEMORY_TOOLS + CLAIMS_TOOLS)
    assert len(names) == 23
    read_query = next(tool for tool in answer["tools"] if tool["name"] == "read_query")
    assert "query" in read_query["inputSchema"]["required"]


def test_inspector_calls_read_query_and_gets_the_rows(inspector: str, tmp_path: Path) -> None:
    answer = run_inspector(
        inspector,
        tmp_path / "e2e.db",
        *("--method", "tools/call", "--tool-name", "read_query"),
        *("--tool-arg", "query=SELECT 1 AS one"),
    )

    assert answer["isError"] is False
    assert answer["content"] == [{"type": "text", "text": "one\n1\n# 1 row"}]


def test_inspector_sees_a_refused_write_as_a_tool_error(inspector: str, tmp_path: Path) -> None:
    answer = run_inspector(
        inspector,
        tmp_path / "e2e.db",
        *("--method", "tools/call", "--tool-name", "read_query"),
        *("--tool-arg", "query=CREATE TABLE t(x)"),
    )

    assert answer["isError"] is True
    assert "not allowed in read_query" in answer["content"][0]["text"]
