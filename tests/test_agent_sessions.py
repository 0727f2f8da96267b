"""The agent sessions the README and the manual show are what the tools answer today.

A ```text block right after a `<!-- agent-session -->` line is a transcript: a tool call
written as the agent makes it (`write_query(query="...")`), then the text it reads, until a
blank line or the next call. The marked blocks of one page run in order, through the MCP
tools, on one fresh database; `<!-- agent-session setup: SQL; SQL -->` runs those statements
first. Ids, hashes, dates and paths differ from run to run, and are compared as such.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from sqlgate.service import Service
from sqlgate.surfaces.mcp.server import build_server

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
_MARK = re.compile(r"^<!-- agent-session(?: setup: (?P<setup>.*?))? -->\n```text\n(?P<body>.*?)```",
                   re.DOTALL | re.MULTILINE)  # fmt: skip
_CALL = re.compile(r"^[a-z_]+\(.*\)$")
_VARYING = [
    (re.compile(r"\b\d+@[0-9a-f]{8}\b"), "N@DATABASE"),
    (re.compile(r"--db \S+"), "--db PATH"),
    (re.compile(r"\b[0-9a-f]{64}\b"), "HASH"),
    (re.compile(r"\b[0-9a-f]{12}…"), "HASH…"),
    (re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}"), "DATE"),
]
_TOOL_ERROR = re.compile(r"^Error executing tool \w+: ")

pytestmark = pytest.mark.anyio


def sessions() -> list[Any]:
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        blocks = list(_MARK.finditer(text))
        if blocks:
            setup = [m["setup"] for m in blocks if m["setup"]]
            found.append(
                pytest.param(setup[0] if setup else "", [m["body"] for m in blocks],
                             id=str(page.relative_to(ROOT)))
            )  # fmt: skip
    return found


def transcript(body: str) -> list[tuple[str, str]]:
    """(call, the answer shown) for each call of a block."""
    steps: list[tuple[str, list[str]]] = []
    for line in body.splitlines():
        if _CALL.match(line):
            steps.append((line, []))
        elif line.strip() and steps:
            steps[-1][1].append(line)
        elif line.strip():
            raise AssertionError(f"an agent-session block starts with {line!r}, not a call")
    return [(call, "\n".join(shown)) for call, shown in steps]


def parse_call(line: str) -> tuple[str, dict[str, Any]]:
    node = ast.parse(line, mode="eval").body
    assert isinstance(node, ast.Call), line
    assert isinstance(node.func, ast.Name), line
    assert not node.args, f"write the arguments by name: {line}"
    return node.func.id, {kw.arg: ast.literal_eval(kw.value) for kw in node.keywords if kw.arg}


def steady(text: str) -> str:
    text = _TOOL_ERROR.sub("", text.strip())
    for pattern, stands_for in _VARYING:
        text = pattern.sub(stands_for, text)
    return text


def test_the_readme_and_the_tutorial_show_agent_sessions() -> None:
    shown = {param.id for param in sessions()}
    assert {"README.md", "docs/tutorial.md"} <= shown


@pytest.mark.parametrize(("setup", "blocks"), sessions())
async def test_an_agent_session_shown_is_what_the_tools_answer(
    make_service: Callable[..., Service], setup: str, blocks: list[str]
) -> None:
    service = make_service()
    for statement in filter(str.strip, setup.split(";")):
        service.write_query(statement)
    async with Client(build_server(service)) as client:
        for body in blocks:
            for call, shown in transcript(body):
                tool, arguments = parse_call(call)
                result = await client.call_tool(tool, arguments)
                answer = "\n".join(getattr(part, "text", "") for part in result.content)
                assert steady(answer) == steady(shown), call
