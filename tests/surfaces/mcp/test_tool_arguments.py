"""Tool arguments at the MCP surface (in-memory `Client`): out-of-range integers, unpaired
surrogates and oversized lists each get a clear tool error, never an internal one, and a
list is refused by its length before its items are looked at."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from mcp import Client
from mcp.types import CallToolResult

from sqlgate.service import Service
from sqlgate.surfaces.mcp.server import build_server

pytestmark = pytest.mark.anyio

TOP = 2**63 - 1  # SQLite's largest integer
PAST_TOP = 2**63
PAST_BOTTOM = -(2**63) - 1
LONE = "a\ud800b"  # an unpaired UTF-16 surrogate: a Python str, but not UTF-8


def text(result: CallToolResult) -> str:
    first = result.content[0]
    assert first.type == "text"
    return first.text


@pytest.fixture
async def client(service: Service) -> AsyncIterator[Client]:
    service.write_query("CREATE TABLE t (x INTEGER, y TEXT)")
    service.write_query("INSERT INTO t VALUES (1, 'abc')")
    service.append_event("the first event")
    service.claim_add("acme", "priority", "acme is priority 1", rank=1)
    async with Client(build_server(service)) as connected:
        yield connected


def arg(tool: str, arguments: dict[str, Any], id: str) -> Any:
    return pytest.param(tool, arguments, id=f"{tool}-{id}")


# every integer a tool takes that SQLite would see, one past either end of its range (a
# `limit` is only counted: above --max-rows it is lowered to it)
OUT_OF_RANGE = [
    arg("read_query", {"query": "SELECT ?", "params": [PAST_TOP]}, "params-list"),
    arg("read_query", {"query": "SELECT :n", "params": {"n": PAST_BOTTOM}}, "params-object"),
    arg("write_query", {"query": "INSERT INTO t VALUES (?, 'x')", "params": [PAST_TOP]}, "params"),
    arg(
        "destructive_query",
        {"query": "DELETE FROM t WHERE x = ?", "reason": "test", "params": [PAST_BOTTOM]},
        "params",
    ),
    arg("search_text", {"pattern": "a", "table": "t", "context_chars": PAST_TOP}, "context"),
    arg("get_resume_context", {"max_events": PAST_TOP}, "max-events"),
    arg("memory_search", {"query": "first", "top_k": PAST_TOP}, "top-k"),
    arg("memory_timeline", {"ids": [PAST_TOP]}, "ids"),
    arg("memory_timeline", {"ids": [1], "window": PAST_TOP}, "window"),
    arg("memory_details", {"ids": [PAST_TOP]}, "ids"),
    arg("memory_details", {"ids": [PAST_BOTTOM]}, "negative-ids"),
    arg("claim_add", {"entity": "e", "kind": "priority", "claim": "c", "rank": PAST_TOP}, "rank"),
    arg("claim_add", {"entity": "e", "kind": "fact", "claim": "c", "evidence": [PAST_TOP]}, "ev"),
    arg("claim_confirm", {"id": PAST_TOP}, "id"),
    arg("claim_confirm", {"id": 1, "evidence": [PAST_TOP]}, "evidence"),
    arg("claim_retract", {"id": PAST_BOTTOM}, "id"),
]


@pytest.mark.parametrize(("tool", "arguments"), OUT_OF_RANGE)
async def test_integers_outside_sqlites_range_are_argument_errors(
    client: Client, tool: str, arguments: dict[str, Any]
) -> None:
    result = await client.call_tool(tool, arguments)
    assert result.is_error
    assert "internal" not in text(result)


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        arg("read_query", {"query": "SELECT ? AS n", "params": [TOP]}, "params"),
        arg("memory_details", {"ids": [TOP]}, "ids"),
        arg("claim_confirm", {"id": TOP}, "id"),
    ],
)
async def test_the_largest_sqlite_integer_is_still_an_ordinary_value(
    client: Client, tool: str, arguments: dict[str, Any]
) -> None:
    result = await client.call_tool(tool, arguments)
    assert "internal" not in text(result)
    assert "64-bit" not in text(result)


# every string argument, and strings inside lists and objects
WITH_A_SURROGATE = [
    arg("read_query", {"query": f"SELECT '{LONE}'"}, "query"),
    arg("read_query", {"query": "SELECT ?", "params": [LONE]}, "params"),
    arg("write_query", {"query": "INSERT INTO t VALUES (1, ?)", "params": [LONE]}, "params"),
    arg("destructive_query", {"query": "DELETE FROM t WHERE x = 9", "reason": LONE}, "reason"),
    arg("describe_table", {"table": LONE}, "table"),
    arg("create_view", {"name": "v", "select_sql": "SELECT 1", "description": LONE}, "desc"),
    arg("search_text", {"pattern": LONE, "table": "t"}, "pattern"),
    arg("search_text", {"pattern": "a", "table": "t", "where": f"y = '{LONE}'"}, "where"),
    arg("search_text", {"pattern": "a", "table": "t", "columns": [LONE]}, "columns"),
    arg("append_event", {"content": LONE}, "content"),
    arg("append_event", {"content": "x", "tags": [LONE]}, "tags"),
    arg("checkpoint", {"summary": LONE}, "summary"),
    arg("memory_search", {"query": LONE}, "query"),
    arg("memory_search", {"query": "first", "session": LONE}, "session"),
    arg("get_resume_context", {"exclude_kinds": [LONE]}, "exclude-kinds"),
    arg("claim_add", {"entity": LONE, "kind": "fact", "claim": "a b"}, "entity"),
    arg("claim_search", {"query": LONE}, "query"),
    arg(
        "claims_contradictions",
        {"observed": {"signals": [{"acme": [1]}], "validPeriods": [True], "x": [LONE]}},
        "observed",
    ),
    arg("claims_decayed", {"as_of": LONE}, "as-of"),
]


@pytest.mark.parametrize(("tool", "arguments"), WITH_A_SURROGATE)
async def test_an_unpaired_surrogate_in_any_string_argument_is_a_clear_tool_error(
    client: Client, tool: str, arguments: dict[str, Any]
) -> None:
    result = await client.call_tool(tool, arguments)
    assert result.is_error
    assert "surrogate" in text(result)
    assert "internal" not in text(result)
    after = await client.call_tool("read_query", {"query": "SELECT 1 AS up"})
    assert text(after).startswith("up\n1\n")


def long(tool: str, arguments: dict[str, Any], phrase: str, id: str) -> Any:
    return pytest.param(tool, arguments, phrase, id=f"{tool}-{id}")


@pytest.mark.parametrize(
    ("tool", "arguments", "phrase"),
    [
        long("memory_details", {"ids": [1] * 300_000}, "at most 50", "ids"),
        long("memory_timeline", {"ids": list(range(1, 100_000))}, "at most 50", "ids"),
        long("append_event", {"content": "x", "tags": ["t"] * 100_000}, "at most 20", "tags"),
        long("read_query", {"query": "SELECT 1", "params": [[[]]] * 9_999}, "is a list", "nest"),
        long("read_query", {"query": "SELECT 1", "params": [1] * 100_000}, "at most 10000", "n"),
        long(
            "read_query",
            {"query": "SELECT 1", "params": {f"k{i}": i for i in range(100_000)}},
            "at most 10000",
            "named",
        ),
        long("claim_confirm", {"id": 1, "evidence": [[1]] * 100_000}, "at most 50", "evidence"),
        long(
            "search_text",
            {"pattern": "a", "table": "t", "columns": ["y"] * 100_000},
            "at most",
            "columns",
        ),
        long("get_resume_context", {"exclude_kinds": [[]] * 100_000}, "at most", "kinds"),
    ],
)
async def test_a_long_list_is_refused_by_its_length_with_one_short_error(
    client: Client, tool: str, arguments: dict[str, Any], phrase: str
) -> None:
    result = await client.call_tool(tool, arguments)
    assert result.is_error
    assert phrase in text(result)
    # one error for the list, not one per item (100,000 items made megabytes of errors)
    assert len(text(result)) < 1000, text(result)[:300]


@pytest.mark.parametrize(
    ("tool", "argument", "most"),
    [
        pytest.param("memory_details", "ids", 50, id="memory_details-ids"),
        pytest.param("memory_timeline", "ids", 50, id="memory_timeline-ids"),
        pytest.param("append_event", "tags", 20, id="append_event-tags"),
        pytest.param("claim_add", "evidence", 50, id="claim_add-evidence"),
        pytest.param("claim_confirm", "evidence", 50, id="claim_confirm-evidence"),
    ],
)
async def test_the_schema_announces_how_many_items_a_list_may_hold(
    client: Client, tool: str, argument: str, most: int
) -> None:
    listed = {t.name: t for t in (await client.list_tools()).tools}
    schema = listed[tool].input_schema["properties"][argument]
    lists = [o for o in schema.get("anyOf", [schema]) if o.get("type") == "array"]  # or a text
    assert [branch["maxItems"] for branch in lists] == [most]


DENSE_SQL = "SELECT " + "1+" * 150_000 + "1"  # 300,000 characters: 3 s and 100 MB to parse


@pytest.mark.parametrize(
    ("tool", "arguments", "name"),
    [
        pytest.param("read_query", {"query": DENSE_SQL}, "query", id="read_query"),
        pytest.param("write_query", {"query": DENSE_SQL}, "query", id="write_query"),
        pytest.param(
            "destructive_query",
            {"query": DENSE_SQL, "reason": "test"},
            "query",
            id="destructive_query",
        ),
        pytest.param(
            "create_view", {"name": "v", "select_sql": DENSE_SQL}, "select_sql", id="create_view"
        ),
        pytest.param(
            "search_text",
            {"pattern": "a", "table": "t", "where": DENSE_SQL[7:]},
            "where",
            id="search_text",
        ),
    ],
)
async def test_sql_text_over_the_limit_is_refused_before_it_is_parsed(
    client: Client, tool: str, arguments: dict[str, Any], name: str
) -> None:
    result = await client.call_tool(tool, arguments)
    assert result.is_error
    assert f'argument "{name}" is ' in text(result)
    assert "over the limit of 100,000" in text(result)


async def test_sql_text_up_to_the_limit_runs(client: Client) -> None:
    query = "SELECT 1 AS one -- " + "x" * (100_000 - 19)
    assert len(query) == 100_000
    result = await client.call_tool("read_query", {"query": query})
    assert text(result).startswith("one\n1\n")
