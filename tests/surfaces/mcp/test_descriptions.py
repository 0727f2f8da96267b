"""What the server announces reads as text, not as source code (issue 30 §6): no tool,
resource, resource template or prompt description, nor any parameter description, carries the
indentation of the docstring it came from, nor a line break that only wrapped the source."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer

from sqlgate.service import Service
from sqlgate.surfaces.mcp.schemas import plain_descriptions
from sqlgate.surfaces.mcp.server import build_server

pytestmark = pytest.mark.anyio


def schema_descriptions(schema: Any, where: str) -> Iterator[tuple[str, str]]:
    """Every `description` in a JSON schema, with where it is."""
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "description" and isinstance(value, str):
                yield where, value
            else:
                yield from schema_descriptions(value, f"{where}.{key}")
    elif isinstance(schema, list):
        for n, item in enumerate(schema):
            yield from schema_descriptions(item, f"{where}[{n}]")


async def announced(server: MCPServer[Any]) -> list[tuple[str, str]]:
    async with Client(server) as client:
        found: list[tuple[str, str]] = []
        for tool in (await client.list_tools()).tools:
            found.append((tool.name, tool.description or ""))
            found += schema_descriptions(tool.input_schema, tool.name)
        for resource in (await client.list_resources()).resources:
            found.append((str(resource.uri), resource.description or ""))
        for template in (await client.list_resource_templates()).resource_templates:
            found.append((template.uri_template, template.description or ""))
        for prompt in (await client.list_prompts()).prompts:
            found.append((prompt.name, prompt.description or ""))
            for argument in prompt.arguments or []:
                found.append((f"{prompt.name}.{argument.name}", argument.description or ""))
    return found


def problems(described: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [
        (where, text)
        for where, text in described
        if text != text.strip() or "\n " in text or "\n\t" in text or "  " in text
        or ("\n" in text and "\n\n" not in text)
    ]  # fmt: skip


async def test_no_announced_description_carries_source_indentation(service: Service) -> None:
    described = await announced(build_server(service))
    assert len(described) > 40  # every tool, its parameters, and the resource
    assert "undo_call" in dict(described)
    assert problems(described) == []
    undo = dict(described)["undo_call"]
    assert undo.startswith("Take back one earlier call")
    assert "(rows, or what a CREATE made); refused, changing nothing" in undo


async def test_any_tool_resource_or_prompt_registered_is_made_plain() -> None:
    """The class, not the one tool: whatever is registered gets its text made plain."""
    server: MCPServer[Any] = MCPServer("probe")

    @server.tool()
    def wrapped(x: int) -> str:
        """First line of a docstring
        that goes on, indented in the source.

        A second paragraph,
            indented further."""
        return str(x)

    @server.resource("probe://r", description="  a resource\n        wrapped  ")
    def resource() -> str:
        return ""

    @server.prompt()
    def ask(topic: str) -> str:
        """A prompt
        about a topic."""
        return topic

    plain_descriptions(server)
    described = dict(await announced(server))
    assert described["wrapped"] == (
        "First line of a docstring that goes on, indented in the source.\n\n"
        "A second paragraph, indented further."
    )
    assert described["probe://r"] == "a resource wrapped"
    assert described["ask"] == "A prompt about a topic."
