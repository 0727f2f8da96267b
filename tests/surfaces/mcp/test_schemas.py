"""Announced tool schemas stay small, and compacting them keeps their meaning."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from mcp import Client

from sqlgate.service import Service
from sqlgate.surfaces.mcp.schemas import compact_schema
from sqlgate.surfaces.mcp.server import build_server

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("schema", "compact"),
    [
        pytest.param(
            {"title": "Query", "type": "string", "description": "d"},
            {"type": "string", "description": "d"},
            id="title-dropped",
        ),
        pytest.param(
            {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}], "default": None},
            {"type": ["integer", "null"], "minimum": 1},
            id="optional-with-constraint",
        ),
        pytest.param(
            {"anyOf": [{"type": "string"}, {"type": "number"}, {"type": "null"}]},
            {"type": ["string", "number", "null"]},
            id="scalar-union",
        ),
        pytest.param(
            {"anyOf": [{"type": "string", "enum": ["a"]}, {"type": "null"}]},
            {"anyOf": [{"type": "string", "enum": ["a"]}, {"type": "null"}]},
            id="enum-kept-as-is",
        ),
        pytest.param(
            {"type": "object", "properties": {"title": {"title": "Title", "type": "string"}}},
            {"type": "object", "properties": {"title": {"type": "string"}}},
            id="a-property-named-title-stays",
        ),
        pytest.param(
            {"type": "integer", "default": 3}, {"type": "integer", "default": 3}, id="real-default"
        ),
    ],
)
def test_compact_schema(schema: dict[str, Any], compact: dict[str, Any]) -> None:
    assert compact_schema(schema) == compact


async def _tools_list_bytes(service: Service) -> int:
    async with Client(build_server(service)) as client:
        listed = await client.list_tools()
    return len(listed.model_dump_json(by_alias=True, exclude_unset=True).encode())


@pytest.mark.parametrize(
    ("tools", "budget"),
    [
        pytest.param(("sql",), 6000, id="sql-group"),
        pytest.param(("sql", "memory", "claims"), 12000, id="all-groups"),
    ],
)
async def test_tools_list_fits_the_token_budget(
    make_service: Callable[..., Service], tools: tuple[str, ...], budget: int
) -> None:
    assert await _tools_list_bytes(make_service(tools=tools)) <= budget


async def test_compacted_schemas_still_validate_arguments(
    make_service: Callable[..., Service],
) -> None:
    async with Client(build_server(make_service())) as client:
        bad = await client.call_tool("read_query", {"query": "SELECT 1", "limit": 0})
        good = await client.call_tool("read_query", {"query": "SELECT 1", "limit": None})
    assert bad.is_error
    assert not good.is_error


@pytest.mark.parametrize("tool", ["read_query", "write_query", "destructive_query"])
async def test_the_sql_tools_say_text_goes_in_single_quotes(
    make_service: Callable[..., Service], tool: str
) -> None:
    async with Client(build_server(make_service())) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
    query = listed[tool].input_schema["properties"]["query"]
    assert "text in 'single quotes'" in query["description"]


@pytest.mark.parametrize(
    ("overrides", "read_says", "search_says"),
    [
        pytest.param({}, "default 100, max 1000", "default 100, max 1000", id="defaults"),
        pytest.param(
            {"max_rows": 50, "default_limit": 20},
            "default 20, max 50",
            "default 50, max 50",
            id="small-caps",
        ),
        pytest.param(
            {"max_rows": 30, "default_limit": 100},
            "default 30, max 30",
            "default 30, max 30",
            id="default-above-the-cap",
        ),
    ],
)
async def test_each_limit_announces_this_servers_default_and_maximum(
    make_service: Callable[..., Service],
    overrides: dict[str, int],
    read_says: str,
    search_says: str,
) -> None:
    # the agent cannot read --max-rows: the schema says the numbers this server uses
    async with Client(build_server(make_service(**overrides))) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
    read = listed["read_query"].input_schema["properties"]["limit"]["description"]
    search = listed["search_text"].input_schema["properties"]["limit"]["description"]
    assert read_says in read
    assert search_says in search
    assert "larger is lowered" in read
    assert "larger is lowered" in search
    announced = listed["search_text"].input_schema["properties"]["limit"]["default"]
    assert f"default {announced}," in search_says
