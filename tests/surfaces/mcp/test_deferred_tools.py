"""`build_server` registers the tools (each a pydantic model built from its signature, the
most of a server's start) when a client first lists or calls them, not before: `serve`
answers `initialize` sooner, and the tools a client then sees are the same."""

from __future__ import annotations

import threading

import pytest
from mcp import Client

from sqlgate.service import Service
from sqlgate.surfaces.mcp.server import CLAIMS_TOOLS, MEMORY_TOOLS, SQL_TOOLS, build_server

pytestmark = pytest.mark.anyio


async def test_initialize_is_answered_before_the_tools_are_built(service: Service) -> None:
    server = build_server(service)
    assert not server.tools_built
    async with Client(server) as client:
        assert client.server_info.name == "sqlgate"
        assert client.server_capabilities.tools is not None
        assert not server.tools_built
        listed = await client.list_tools()
    assert server.tools_built
    assert {tool.name for tool in listed.tools} == {*SQL_TOOLS, *MEMORY_TOOLS, *CLAIMS_TOOLS}


async def test_a_first_call_builds_the_tools_and_runs(service: Service) -> None:
    server = build_server(service)
    async with Client(server) as client:
        result = await client.call_tool("read_query", {"query": "SELECT 41 + 1 AS n"})
    assert not result.is_error
    assert "42" in result.content[0].text  # type: ignore[union-attr]


def test_threads_asking_at_once_build_the_tools_once(service: Service) -> None:
    server = build_server(service)
    seen: list[int] = []
    barrier = threading.Barrier(4)

    def ask() -> None:
        barrier.wait()
        seen.append(len(server._tool_manager.list_tools()))

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == [len(SQL_TOOLS) + len(MEMORY_TOOLS) + len(CLAIMS_TOOLS)] * 4
