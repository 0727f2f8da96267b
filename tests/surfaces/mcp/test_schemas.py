"""Announced tool schemas stay small, and compacting them keeps their meaning."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from mcp import Client

from sqlgate.service import Service
from sqlgate.surfaces.mcp.schemas import compact_schema
from sqlgate.surfaces.mcp.server import build_server

pytestmark = pytest.mark.anyio


OPTIONAL_LIMIT = {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}], "default": None}
ARGUMENTS = {"type": "object", "required": ["needed"]}


@pytest.mark.parametrize(
    ("schema", "compact"),
    [
        pytest.param(
            {"title": "Query", "type": "string", "description": "d"},
            {"type": "string", "description": "d"},
            id="title-dropped",
        ),
        pytest.param(
            {**ARGUMENTS, "properties": {"limit": OPTIONAL_LIMIT, "needed": {"type": "string"}}},
            {**ARGUMENTS, "properties": {"limit": {"type": "integer", "minimum": 1},
                                         "needed": {"type": "string"}}},
            id="an-optional-argument-loses-its-null",
        ),
        pytest.param(
            {**ARGUMENTS, "properties": {"needed": OPTIONAL_LIMIT}},
            {**ARGUMENTS, "properties": {"needed": {"anyOf": [{"type": "integer", "minimum": 1},
                                                              {"type": "null"}]}}},
            id="a-required-argument-keeps-its-null",
        ),
        pytest.param(
            {"type": "object", "properties": {"n": {**OPTIONAL_LIMIT, "default": 3}}},
            {"type": "object", "properties": {"n": {**OPTIONAL_LIMIT, "default": 3}}},
            id="null-kept-where-it-is-not-the-default",
        ),
        pytest.param(
            {"type": "object", "properties": {"v": {"anyOf": [
                {"type": "string"}, {"type": "integer"}, {"type": "null"}]}}},
            {"type": "object", "properties": {"v": {"anyOf": [
                {"type": "string"}, {"type": "integer"}]}}},
            id="a-union-stays-an-anyOf-of-single-types",
        ),
        pytest.param(
            {"type": "array", "items": {"anyOf": [
                {"type": "string"}, {"type": "integer"}, {"type": "number"}, {"type": "null"}]}},
            {"type": "array", "items": {"anyOf": [
                {"type": "string"}, {"type": "number"}, {"type": "null"}]}},
            id="a-bound-null-stays-and-number-covers-integer",
        ),
        pytest.param(
            {"type": "object", "additionalProperties": True},
            {"type": "object"},
            id="additional-properties-true-is-the-default",
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
)  # fmt: skip
def test_compact_schema(schema: dict[str, Any], compact: dict[str, Any]) -> None:
    assert compact_schema(copy.deepcopy(schema)) == compact


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


# -- schemas strict validators take without a warning (ajv strict mode, which Gemini CLI uses) --

# JSON Schema draft-07 keywords the announced schemas may use, and the type each one needs
# alongside it (None: any), as ajv's strictTypes asks; anything else is an unknown keyword
KEYWORD_TYPES: dict[str, str | None] = {
    "type": None, "description": None, "default": None, "anyOf": None, "enum": None,
    "properties": "object", "required": "object", "additionalProperties": "object",
    "items": "array", "minItems": "array", "maxItems": "array",
    "minimum": "number", "maximum": "number", "minLength": "string", "maxLength": "string",
    "pattern": "string",
}  # fmt: skip
SUBSCHEMA_MAPS = ("properties",)
SUBSCHEMAS = ("items", "additionalProperties")


def strict_problems(schema: Any, at: str = "#") -> list[str]:
    """What a strict validator would say of `schema` and every schema below it."""
    if isinstance(schema, bool):
        return []
    if not isinstance(schema, dict):
        return [f"{at}: not a schema"]
    problems = [f"{at}: unknown keyword {key}" for key in schema if key not in KEYWORD_TYPES]
    kind = schema.get("type")
    if kind is not None and not isinstance(kind, str):
        problems.append(f"{at}: type is {kind!r}, not one name (anyOf says a union)")
    said = set(kind) if isinstance(kind, list) else {kind}
    for key, needs in KEYWORD_TYPES.items():
        if key in schema and needs is not None:
            kinds = {"number", "integer"} if needs == "number" else {needs}
            if not kinds & said:
                problems.append(f"{at}: {key} without type {needs}")
    required, properties = schema.get("required", []), schema.get("properties", {})
    problems += [f"{at}: required {name} is not a property" for name in required
                 if name not in properties]  # fmt: skip
    if "items" in schema and not isinstance(schema["items"], (dict, bool)):
        problems.append(f"{at}: items as a list (a tuple)")
    for n, option in enumerate(schema.get("anyOf", [])):
        typed = isinstance(option, dict) and (
            isinstance(option.get("type"), str) or "anyOf" in option
        )
        if not typed:
            problems.append(f"{at}: anyOf/{n} has no single type")
        problems += strict_problems(option, f"{at}/anyOf/{n}")
    for key in SUBSCHEMAS:
        if key in schema:
            problems += strict_problems(schema[key], f"{at}/{key}")
    for name, child in properties.items():
        problems += strict_problems(child, f"{at}/properties/{name}")
    return problems


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        ({"type": ["string", "integer"]}, "#: type is ['string', 'integer'], not one name"),
        ({"anyOf": [{"type": ["string", "null"]}]}, "#/anyOf/0: type is ['string', 'null']"),
        ({"minimum": 1}, "#: minimum without type number"),
        ({"type": "object", "required": ["a"]}, "#: required a is not a property"),
        ({"type": "array", "items": [{"type": "string"}]}, "#: items as a list"),
        ({"type": "string", "format": "date"}, "#: unknown keyword format"),
        ({"anyOf": [{"minimum": 1}]}, "#: anyOf/0 has no single type"),
    ],
)  # fmt: skip
def test_the_strict_check_can_fail(schema: dict[str, Any], problem: str) -> None:
    assert any(said.startswith(problem) for said in strict_problems(schema))


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_every_announced_schema_is_strict_clean(
    make_service: Callable[..., Service], mode: str
) -> None:
    async with Client(build_server(make_service()), mode=mode) as client:  # type: ignore[arg-type]
        listed = (await client.list_tools()).tools
    assert len(listed) == 23
    problems = []
    for tool in listed:
        problems += [f"{tool.name} input {p}" for p in strict_problems(tool.input_schema)]
        if tool.output_schema is not None:
            problems += [f"{tool.name} output {p}" for p in strict_problems(tool.output_schema)]
    assert problems == []
