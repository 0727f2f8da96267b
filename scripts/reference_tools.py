"""The tools page of the manual (docs/reference/tools.md): what a server announces, one server
per --tools group on a throwaway database, listed by an in-memory MCP client as
`sqlgate tools` lists them: each tool's description, annotations and input schema, the
resources, and the instructions sent at connect."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from reference_markdown import anchor, cell, code, header, md_text, paragraphs, table

from sqlgate.config import TOOL_GROUPS, Settings

__all__ = ["announced", "argument_rows", "bounds_text", "tools_page", "type_text"]


def _dumped(model: Any) -> dict[str, Any]:
    """A listed item as the client received it (its JSON field names, no unset fields)."""
    dumped: dict[str, Any] = model.model_dump(by_alias=True, exclude_none=True)
    return dumped


async def _announced(group: str, folder: Path) -> dict[str, Any]:
    """What a server announcing only `group` lists: tools, resources and instructions."""
    from mcp import Client

    from sqlgate.service import Service
    from sqlgate.surfaces.mcp.server import build_server

    service = Service.open(Settings(db=folder / f"{group}.db", tools=(group,)))
    try:
        async with Client(build_server(service), mode="legacy") as client:
            tools = await client.list_tools()
            resources = await client.list_resources()
            templates = await client.list_resource_templates()
            instructions = client.instructions
    finally:
        service.close()
    return {
        "tools": [_dumped(tool) for tool in tools.tools],
        "resources": [_dumped(item) for item in resources.resources],
        "templates": [_dumped(item) for item in templates.resource_templates],
        "instructions": instructions or "",
    }


def announced() -> dict[str, dict[str, Any]]:
    import anyio

    async def every_group(folder: Path) -> dict[str, dict[str, Any]]:
        return {group: await _announced(group, folder) for group in TOOL_GROUPS}

    with tempfile.TemporaryDirectory(prefix="sqlgate-reference-") as folder:
        return anyio.run(every_group, Path(folder))


def type_text(schema: dict[str, Any], sep: str = " or ") -> tuple[str, bool]:
    """(the JSON type of a schema in words, whether null is accepted at the top): the kinds
    of a union joined by `sep`, those of an array's items or an object's values by `/`."""
    if "anyOf" in schema:
        options = [type_text(option, sep) for option in schema["anyOf"]]
        null = any(text == "null" or null for text, null in options)
        named = [text for text, _ in options if text != "null" or sep == "/"]
        if sep == "/":  # inside an array or object: null is one of the kinds
            return "/".join(named), False
        joined = ", or " if any(" of " in text for text in named) else " or "
        return joined.join(named), null
    given = schema.get("type", "any")
    kinds: list[str] = given if isinstance(given, list) else [given]
    words: list[str] = []
    for kind in kinds:
        if kind == "null":
            continue
        if kind == "array" and "items" in schema:
            words.append(f"array of {type_text(schema['items'], '/')[0]}")
        elif kind == "object" and isinstance(schema.get("additionalProperties"), dict):
            words.append(f"object of {type_text(schema['additionalProperties'], '/')[0]}")
        else:
            words.append(kind)
    null = "null" in kinds
    if sep == "/" and null:  # inside an array or object: null is one of the kinds
        words.append("null")
    return sep.join(words) or "null", null and sep != "/"


_BOUNDS = (
    ("minimum", "≥ {}"), ("maximum", "≤ {}"), ("exclusiveMinimum", "> {}"),
    ("exclusiveMaximum", "< {}"), ("minLength", "at least {} characters"),
    ("maxLength", "at most {} characters"), ("minItems", "at least {} items"),
    ("maxItems", "at most {} items"),
)  # fmt: skip


def bounds_text(schema: dict[str, Any]) -> str:
    """The bounds of a schema, and of the branches of its `anyOf`."""
    branches = [schema, *[option for option in schema.get("anyOf", []) if isinstance(option, dict)]]
    words = [form.format(one[key]) for one in branches for key, form in _BOUNDS if key in one]
    if "enum" in schema:
        words.append("one of " + ", ".join(code(json.dumps(value)) for value in schema["enum"]))
    return ", ".join(words) or "—"


def argument_rows(input_schema: dict[str, Any]) -> list[list[str]]:
    required = set(input_schema.get("required", []))
    rows = []
    for name, schema in input_schema.get("properties", {}).items():
        kind, null = type_text(schema)
        default = code(json.dumps(schema["default"])) if "default" in schema else "—"
        rows.append([
            code(name), kind + (" or null" if null else ""), "yes" if name in required else "no",
            default, bounds_text(schema), cell(schema.get("description", "")),
        ])  # fmt: skip
    return rows


def _hints(annotations: dict[str, Any]) -> str:
    return ", ".join(f"`{key}: {json.dumps(value)}`" for key, value in annotations.items())


def _details(title: str, value: Any) -> str:
    body = json.dumps(value, indent=2, ensure_ascii=False)
    indented = "\n".join("    " + line if line else "" for line in body.splitlines())
    return f'??? note "{title}"\n\n    ```json\n{indented}\n    ```'


def tool_section(tool: dict[str, Any]) -> str:
    parts = [f"### `{tool['name']}`", ""]
    if tool.get("title"):
        parts += [f"**{md_text(tool['title'])}**", ""]
    parts.append(paragraphs(tool.get("description", "")))
    if tool.get("annotations"):
        parts += ["", f"Annotations: {_hints(tool['annotations'])}"]
    rows = argument_rows(tool["inputSchema"])
    if rows:
        header = ["argument", "type", "required", "default", "bounds", "description"]
        parts += ["", table(header, rows)]
    else:
        parts += ["", "No arguments."]
    parts += ["", _details("inputSchema, as announced", tool["inputSchema"])]
    if "outputSchema" in tool:
        parts += ["", _details("outputSchema, as announced", tool["outputSchema"])]
    return "\n".join(parts)


def resource_section(resource: dict[str, Any]) -> str:
    uri = resource.get("uri") or resource.get("uriTemplate", "")
    parts = [f"### `{uri}`", ""]
    facts = [f"name {code(resource['name'])}"]
    if resource.get("mimeType"):
        facts.append(f"type {code(resource['mimeType'])}")
    parts.append(f"A resource ({', '.join(facts)}).")
    if resource.get("description"):
        parts += ["", paragraphs(resource["description"])]
    return "\n".join(parts)


_GROUP_TITLES = {"sql": "SQL", "memory": "Memory", "claims": "Claims"}


def tools_page(listing: dict[str, dict[str, Any]] | None = None) -> str:
    listing = announced() if listing is None else listing
    total = sum(len(found["tools"]) for found in listing.values())
    summary = [
        [f"`{group}`", ", ".join(f"[`{tool['name']}`](#{anchor(tool['name'])})"
                                 for tool in found["tools"]),
         ", ".join(code(item.get("uri") or item.get("uriTemplate", ""))
                   for item in (*found["resources"], *found["templates"])) or "—"]
        for group, found in listing.items()
    ]  # fmt: skip
    sections = []
    for group, found in listing.items():
        parts = [
            f"## {_GROUP_TITLES.get(group, group)} (`--tools {group}`)",
            f"Instructions the server sends at connect when `{group}` is on:",
            "```text\n" + found["instructions"].rstrip("\n") + "\n```",
        ]
        parts += [tool_section(tool) for tool in found["tools"]]
        parts += [resource_section(item) for item in (*found["resources"], *found["templates"])]
        sections.append("\n\n".join(parts))
    return "\n".join(
        [
            header("the tools a server announces (`tools/list`, `resources/list`)"),
            "# Tools",
            "",
            f"Every tool a sqlgate server can announce: {total} in {len(listing)} groups, chosen "
            "with [`--tools`](flags.md) (all of them by default). Each tool is shown as a client "
            "lists it: its description, its annotations (hints a client may use to decide what "
            "to ask the user first) and its arguments, from the `inputSchema` the server "
            "announces. What each tool answers is described in "
            "[Output format](output-format.md).",
            "",
            table(["group", "tools", "resources"], summary),
            "",
            "\n\n".join(sections),
            "",
        ]
    )
