"""Argument errors through the real server (in-memory `Client`): for every tool a missing
argument, a wrong type and an unknown argument each come back as one line naming the
argument, what was wrong and what is allowed; pydantic's text never reaches the agent."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.types import CallToolResult

from sqlgate.service import Service
from sqlgate.surfaces.mcp.arguments import expected_text
from sqlgate.surfaces.mcp.server import build_server

pytestmark = pytest.mark.anyio


def text(result: CallToolResult) -> str:
    first = result.content[0]
    assert first.type == "text"
    return first.text


@pytest.fixture
async def client(service: Service) -> AsyncIterator[Client]:
    service.write_query("CREATE TABLE t (x INTEGER, y TEXT)")
    async with Client(build_server(service)) as connected:
        yield connected


def refused(result: CallToolResult, tool: str) -> str:
    """The line after the SDK's prefix, checked to be one line with nothing of pydantic's."""
    assert result.is_error
    said = text(result)
    prefix = f"Error executing tool {tool}: "
    assert said.startswith(prefix), said
    assert "\n" not in said
    for pydantic_word in ("pydantic", "validation error", "Arguments", "type=", "input_value"):
        assert pydantic_word not in said, said
    return said[len(prefix) :]


# arguments each tool runs with (to add one unknown argument to)
VALID: dict[str, dict[str, Any]] = {
    "read_query": {"query": "SELECT 1"},
    "write_query": {"query": "INSERT INTO t VALUES (1, 'a')"},
    "destructive_query": {"query": "DELETE FROM t WHERE x = 1", "reason": "test"},
    "undo_call": {"audit_id": "1", "reason": "test"},
    "list_tables": {},
    "describe_table": {"table": "t"},
    "get_schema": {},
    "create_view": {"name": "v", "select_sql": "SELECT 1"},
    "search_text": {"pattern": "a", "table": "t"},
    "append_event": {"content": "x"},
    "verify_chain": {},
    "checkpoint": {"summary": "s"},
    "get_resume_context": {},
    "memory_search": {"query": "x"},
    "memory_timeline": {"ids": [1]},
    "memory_details": {"ids": [1]},
    "memory_stats": {},
    "claim_add": {"entity": "e", "kind": "fact", "claim": "c"},
    "claim_search": {"query": "x"},
    "claim_confirm": {"id": 1},
    "claim_retract": {"id": 1},
    "claims_contradictions": {},
    "claims_decayed": {},
}


async def test_every_tool_has_a_row_in_these_tables(client: Client) -> None:
    announced = {tool.name for tool in (await client.list_tools()).tools}
    assert announced == set(VALID)
    assert {name for name, _, _ in MISSING} | NOTHING_REQUIRED == announced
    assert {name for name, _, _ in WRONG_TYPE} | NO_ARGUMENTS == announced


NOTHING_REQUIRED = {
    "list_tables", "get_schema", "verify_chain", "get_resume_context", "memory_stats",
    "claims_contradictions", "claims_decayed",
}  # fmt: skip
MISSING = [
    ("read_query", {}, 'argument "query" is required: a string '
     "(one SELECT/WITH/EXPLAIN/PRAGMA statement; text in 'single quotes')"),
    ("write_query", {}, 'argument "query" is required: a string '
     "(one INSERT/UPDATE…WHERE/upsert/CREATE statement; text in 'single quotes')"),
    ("destructive_query", {"query": "DELETE FROM t"}, 'argument "reason" is required: a string '
     "(why this change is needed, in a sentence)"),
    ("undo_call", {"audit_id": "1"}, 'argument "reason" is required: a string '
     "(why this call should be taken back)"),
    ("describe_table", {}, 'argument "table" is required: a string'),
    ("create_view", {"name": "v"}, 'argument "select_sql" is required: a string '
     "(one SELECT to save)"),
    ("search_text", {"pattern": "a"}, 'argument "table" is required: a string'),
    ("append_event", {}, 'argument "content" is required: a string '
     "(what to remember; secrets are redacted)"),
    ("checkpoint", {}, 'argument "summary" is required: a string '
     "(the state to resume from next time)"),
    ("memory_search", {}, 'argument "query" is required: a string '
     "(a question or plain words; word* for a prefix)"),
    ("memory_timeline", {}, 'argument "ids" is required: a list of at most 50 integers '
     "(event ids, e.g. from memory_search)"),
    ("memory_details", {}, 'argument "ids" is required: a list of at most 50 integers '
     "(event ids, e.g. from memory_search)"),
    ("claim_add", {"entity": "e", "claim": "c"}, 'argument "kind" is required: a string '
     "(priority, status, fact or relationship)"),
    ("claim_search", {}, 'argument "query" is required: a string (text in claim or entity)'),
    ("claim_confirm", {}, 'argument "id" is required: an integer'),
    ("claim_retract", {}, 'argument "id" is required: an integer'),
]  # fmt: skip


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"), [pytest.param(*row, id=row[0]) for row in MISSING]
)
async def test_a_missing_argument_is_named_with_what_it_takes(
    client: Client, tool: str, arguments: dict[str, Any], expected: str
) -> None:
    assert refused(await client.call_tool(tool, arguments), tool) == expected


NO_ARGUMENTS = {"verify_chain", "memory_stats"}
WRONG_TYPE = [
    ("read_query", {"query": "SELECT 1", "limit": "ten"},
     'argument "limit" must be an integer of at least 1 (got "ten")'),
    ("write_query", {"query": 5}, 'argument "query" must be a string (got 5)'),
    ("destructive_query", {"query": "DELETE FROM t WHERE x = 1", "reason": ["a"]},
     'argument "reason" must be a string (got a list of 1 item)'),
    ("undo_call", {"audit_id": "1", "reason": ["a"]},
     'argument "reason" must be a string (got a list of 1 item)'),
    ("list_tables", {"include_row_counts": "maybe"},
     'argument "include_row_counts" must be true or false (got "maybe")'),
    ("describe_table", {"table": None}, 'argument "table" must be a string (got null)'),
    ("get_schema", {"include_system": 2},
     'argument "include_system" must be true or false (got 2)'),
    ("create_view", {"name": "v", "select_sql": "SELECT 1", "replace": "sometimes"},
     'argument "replace" must be true or false (got "sometimes")'),
    ("search_text", {"pattern": "a", "table": "t", "context_chars": 5000},
     'argument "context_chars" must be an integer from 0 to 1000 (got 5000)'),
    ("append_event", {"content": "x", "tags": 5},
     'argument "tags" must be a list of at most 20 strings or a string (got 5)'),
    ("checkpoint", {"summary": 1.5}, 'argument "summary" must be a string (got 1.5)'),
    ("get_resume_context", {"max_events": 0},
     'argument "max_events" must be an integer from 1 to 1000 (got 0)'),
    ("memory_search", {"query": "x", "top_k": 51},
     'argument "top_k" must be an integer from 1 to 50 (got 51)'),
    ("memory_timeline", {"ids": ["a"]}, 'argument "ids[0]" must be an integer (got "a")'),
    ("memory_details", {"ids": 5},
     'argument "ids" must be a list of at most 50 integers (got 5)'),
    ("claim_add", {"entity": "e", "kind": "fact", "claim": "c", "confidence": "high"},
     'argument "confidence" must be a number from 0 to 1 (got "high")'),
    ("claim_search", {"query": 5}, 'argument "query" must be a string (got 5)'),
    ("claim_confirm", {"id": "one"}, 'argument "id" must be an integer (got "one")'),
    ("claim_retract", {"id": 1.5}, 'argument "id" must be an integer (got 1.5)'),
    ("claims_contradictions", {"observed": [1]},
     'argument "observed" must be an object (got a list of 1 item)'),
    ("claims_decayed", {"threshold": 2},
     'argument "threshold" must be a number from 0 to 1 (got 2)'),
]  # fmt: skip


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"), [pytest.param(*row, id=row[0]) for row in WRONG_TYPE]
)
async def test_a_wrong_type_or_value_says_what_is_allowed_and_what_came(
    client: Client, tool: str, arguments: dict[str, Any], expected: str
) -> None:
    assert refused(await client.call_tool(tool, arguments), tool) == expected


@pytest.mark.parametrize("tool", sorted(VALID))
async def test_an_unknown_argument_is_refused_naming_what_the_tool_takes(
    client: Client, tool: str
) -> None:
    listed = {t.name: t for t in (await client.list_tools()).tools}
    takes = ", ".join(listed[tool].input_schema["properties"]) or "no arguments"
    result = await client.call_tool(tool, {**VALID[tool], "bogus_arg": 1})
    assert refused(result, tool) == f'unknown argument "bogus_arg"; {tool} takes {takes}'


async def test_an_unknown_argument_runs_nothing(client: Client) -> None:
    result = await client.call_tool(
        "write_query", {"query": "INSERT INTO t VALUES (1, 'a')", "param": [1]}
    )
    assert refused(result, "write_query") == (
        'unknown argument "param" (did you mean "params"?); write_query takes query, params'
    )
    count = await client.call_tool("read_query", {"query": "SELECT count(*) AS n FROM t"})
    assert text(count).startswith("n\n0\n")


async def test_a_misspelt_limit_is_refused_not_ignored(client: Client) -> None:
    result = await client.call_tool("read_query", {"query": "SELECT 1", "lmit": 3})
    assert refused(result, "read_query") == (
        'unknown argument "lmit" (did you mean "limit"?); read_query takes query, limit, params'
    )


async def test_unknown_names_are_quoted_short_and_counted_past_ten(client: Client) -> None:
    arguments = {"query": "SELECT 1", "a\nb": 1, "x" * 100: 2}
    arguments |= {f"extra{n}": n for n in range(10)}
    result = await client.call_tool("read_query", arguments)
    said = refused(result, "read_query")
    assert said.startswith(f'unknown argument "a\\nb"; unknown argument "{"x" * 40}…"; ')
    assert said.endswith("; 2 more unknown arguments; read_query takes query, limit, params")
    assert said.count("unknown argument ") == 10


async def test_several_problems_are_joined_in_one_line_in_argument_order(client: Client) -> None:
    result = await client.call_tool(
        "search_text", {"bogus": 1, "context_chars": -1, "pattern": 7, "limit": "many"}
    )
    assert refused(result, "search_text") == (
        'argument "pattern" must be a string (got 7); '
        'argument "table" is required: a string; '
        'argument "limit" must be an integer of at least 1 (got "many"); '
        'argument "context_chars" must be an integer from 0 to 1000 (got -1); '
        'unknown argument "bogus"; search_text takes pattern, table, columns, where, '
        "key_column, limit, ignore_case, fixed_strings, context_chars"
    )


async def test_several_wrong_items_of_one_list_are_one_clause_with_a_count(
    client: Client,
) -> None:
    result = await client.call_tool("memory_details", {"ids": [1, "a", "b", "c"]})
    assert refused(result, "memory_details") == (
        'argument "ids[1]" must be an integer (got "a") (2 more items of it wrong too)'
    )


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        pytest.param(
            "memory_details", {"ids": [1] * 51}, 'argument "ids": at most 50 ids per call, not 51',
            id="list-length",
        ),
        pytest.param(
            "read_query", {"query": "SELECT 1", "params": [[1]]},
            'argument "params[0]" is a list; bound values must be strings, numbers, booleans '
            "or null",
            id="params-item",
        ),
        pytest.param(
            "read_query", {"query": "SELECT 1", "params": "abc"},
            'argument "params" must be a list (for ? placeholders) or an object (for :name)',
            id="params-shape",
        ),
        pytest.param(
            "read_query", {"query": "SELECT 1 -- " + "x" * 100_000},
            'argument "query" is 100,012 characters, over the limit of 100,000 for SQL text; '
            "bind values with params, or split the work into several statements",
            id="sql-length",
        ),
    ],
)  # fmt: skip
async def test_the_servers_own_limits_keep_their_words_after_the_argument_name(
    client: Client, tool: str, arguments: dict[str, Any], expected: str
) -> None:
    assert refused(await client.call_tool(tool, arguments), tool) == expected


async def test_a_long_rejected_value_is_shown_short(client: Client) -> None:
    result = await client.call_tool("claim_confirm", {"id": "x" * 10_000})
    assert refused(result, "claim_confirm") == (
        f'argument "id" must be an integer (got "{"x" * 40}…")'
    )


@pytest.mark.parametrize(
    ("schema", "words"),
    [
        ({"type": "integer", "minimum": 1, "maximum": 9}, "an integer from 1 to 9"),
        ({"type": ["integer", "null"], "minimum": 1}, "an integer of at least 1"),
        ({"type": "number", "maximum": 1}, "a number of at most 1"),
        ({"type": "string", "maxLength": 5}, "a string of at most 5 characters"),
        ({"type": "array", "items": {"type": "string"}}, "a list of strings"),
        ({"type": "array"}, "a list"),
        ({"type": "array", "maxItems": 3}, "a list of at most 3 items"),
        ({"anyOf": [{"type": "array"}, {"type": "object"}, {"type": "null"}]},
         "a list or an object"),
        ({"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "number"},
                                               {"type": "null"}]}},
         "a list of strings or numbers"),
        ({"anyOf": [{"type": "array", "items": {"type": "string"}, "maxItems": 20},
                    {"type": "string"}]},
         "a list of at most 20 strings or a string"),
        ({"type": "array", "items": {"anyOf": [{"type": "integer"}]}, "maxItems": 1},
         "a list of at most 1 integer"),
        ({}, "a value"),
    ],
)  # fmt: skip
def test_a_schema_in_words(schema: dict[str, Any], words: str) -> None:
    assert expected_text(schema) == words


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                 max_size=3),
    max_leaves=6,
)  # fmt: skip


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_no_call_ever_shows_the_agent_pydantic_text(service: Service, data: st.DataObject) -> None:
    tool = data.draw(st.sampled_from(sorted(VALID)))
    names = [*VALID[tool], "limit", "ids", "query", "bogus"]
    arguments = data.draw(st.dictionaries(st.sampled_from(names), JSON_VALUES, max_size=4))

    async def call() -> CallToolResult:
        async with Client(build_server(service)) as connected:
            return await connected.call_tool(tool, {**VALID[tool], **arguments})

    result = anyio.run(call)
    if result.is_error:
        said = text(result)
        for pydantic_word in ("pydantic", "validation error", "Arguments", "type=", "input_value"):
            assert pydantic_word not in said, said
        if 'argument "' in said:
            assert "\n" not in said, said
