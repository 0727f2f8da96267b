"""Compact tool input schemas that strict validators take: the agent pays for every byte of
`tools/list` on every turn, and some clients check each schema before they call.

pydantic's schemas carry a `title` on every property (the parameter name again, capitalised)
and spell `X | None` as `anyOf: [X, {"type": "null"}]`. Neither helps an agent call the tool,
so the announced schema drops the titles, and an optional argument whose default is null is
announced without its `null`: leaving it out says the same. What stays a union (`str | int`,
a list or a string) is an `anyOf` of branches of one type each, never a `type` list: ajv's
strict mode, which Gemini CLI runs on every schema, warns about a `type` list of more than
one non-null type (see docs/decisions.md). The arguments are still validated by the tool's
own pydantic model, which accepts null as before, so nothing is loosened.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

__all__ = ["compact_schema", "compact_tools", "plain_descriptions", "plain_text"]

_NULL = {"type": "null"}


def _without_null(schema: dict[str, Any]) -> None:
    """`{"anyOf": [X, {"type": "null"}], "description": d}` -> `{**X, "description": d}`."""
    options = schema.get("anyOf")
    if not isinstance(options, list) or _NULL not in options:
        return
    others = [option for option in options if option != _NULL]
    if not others:
        return
    schema["anyOf"] = others
    only = others[0]
    if len(others) == 1 and isinstance(only, dict) and not set(only) & set(schema):
        rest = {key: value for key, value in schema.items() if key != "anyOf"}
        schema.clear()
        schema.update({**only, **rest})


def _number_for_integer(schema: dict[str, Any]) -> None:
    """`anyOf` of bare `integer` and `number` branches: `number` says both (JSON Schema)."""
    options = schema.get("anyOf")
    if isinstance(options, list) and {"type": "number"} in options:
        schema["anyOf"] = [option for option in options if option != {"type": "integer"}]


def compact_schema(schema: dict[str, Any], optional: bool = False) -> dict[str, Any]:
    """Drop annotation-only titles, keywords that say the default, and `null` from an
    `optional` argument (one left out of `required` whose default is null), in place, here
    and below; returns `schema`."""
    if isinstance(schema.get("title"), str):
        del schema["title"]
    if "default" in schema and schema["default"] is None:
        del schema["default"]  # a property left out of `required` is already optional
    if optional and "default" not in schema:
        _without_null(schema)
    if schema.get("additionalProperties") is True:
        del schema["additionalProperties"]  # what JSON Schema assumes without it
    _number_for_integer(schema)
    for key in ("items", "additionalProperties", "not"):  # after merging: they may be new
        if isinstance(schema.get(key), dict):
            compact_schema(schema[key])
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        for option in schema.get(key, []) if isinstance(schema.get(key), list) else []:
            if isinstance(option, dict):
                compact_schema(option)
    required = schema.get("required")
    needed = set(required) if isinstance(required, list) else set()
    properties = schema.get("properties")
    if isinstance(properties, dict):  # names of properties are kept; their schemas compacted
        for name, child in properties.items():
            if isinstance(child, dict):
                compact_schema(child, optional=name not in needed)
    for key in ("$defs", "definitions"):
        children = schema.get(key)
        if isinstance(children, dict):
            for child in children.values():
                if isinstance(child, dict):
                    compact_schema(child)
    return schema


def compact_tools(server: Any) -> None:
    """Compact the announced schema of every tool registered on an `MCPServer`.

    The SDK keeps each tool's announced schema on its registration (`Tool.parameters`);
    arguments are validated by the tool's pydantic model, which this leaves alone.
    """
    manager = getattr(server, "_tool_manager", None)
    for tool in manager.list_tools() if manager is not None else []:
        compact_schema(tool.parameters)


def plain_text(text: str) -> str:
    """A description as prose: a docstring's indentation and the line breaks that only
    wrapped the source go; paragraphs (a blank line between) stay."""
    paragraphs = re.split(r"\n[ \t]*\n", inspect.cleandoc(text))
    return "\n\n".join(" ".join(p.split()) for p in paragraphs if p.strip())


def _plain_schema(schema: Any) -> None:
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "description" and isinstance(value, str):
                schema[key] = plain_text(value)
            else:
                _plain_schema(value)
    elif isinstance(schema, list):
        for item in schema:
            _plain_schema(item)


def plain_descriptions(server: Any) -> None:
    """Make every description an `MCPServer` announces plain text (`plain_text`): each
    tool's and its parameters', each resource's, resource template's, prompt's and prompt
    argument's. The SDK takes a docstring as it is, indentation and all."""
    tools = getattr(server, "_tool_manager", None)
    for tool in tools.list_tools() if tools is not None else []:
        tool.description = plain_text(tool.description or "")
        _plain_schema(tool.parameters)
    resources = getattr(server, "_resource_manager", None)
    if resources is not None:
        for item in [*resources.list_resources(), *resources.list_templates()]:
            if item.description:
                item.description = plain_text(item.description)
    prompts = getattr(server, "_prompt_manager", None)
    for prompt in prompts.list_prompts() if prompts is not None else []:
        if prompt.description:
            prompt.description = plain_text(prompt.description)
        for argument in prompt.arguments or []:
            if argument.description:
                argument.description = plain_text(argument.description)
