"""Compact tool input schemas: the agent pays for every byte of `tools/list` on every turn.

pydantic's schemas carry a `title` on every property (the parameter name again, capitalised)
and spell `X | None` as `anyOf: [X, {"type": "null"}]`. Neither helps an agent call the tool,
so the announced schema drops the titles and writes optional scalars as a type list. The
arguments are still validated by the tool's own pydantic model, so nothing is loosened.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

__all__ = ["compact_schema", "compact_tools", "plain_descriptions", "plain_text"]

_NULL = {"type": "null"}


# keywords that only constrain values of their own type, so `null` still passes them
_TYPE_SPECIFIC = frozenset(
    {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength",
     "pattern", "items", "additionalProperties", "properties", "required", "minItems",
     "maxItems", "type"}
)  # fmt: skip


def _merge_any_of(schema: dict[str, Any]) -> None:
    """Fold `anyOf` lists that a type list says as well.

    `[{"type": "string"}, {"type": "integer"}]` -> `{"type": ["string", "integer"]}`, and
    `[{"type": "integer", "minimum": 1}, {"type": "null"}]` ->
    `{"type": ["integer", "null"], "minimum": 1}` (a minimum never applies to null).
    """
    options = schema.get("anyOf")
    if not isinstance(options, list) or not options:
        return
    if not all(isinstance(o, dict) and isinstance(o.get("type"), str) for o in options):
        return
    if all(set(option) == {"type"} for option in options):
        del schema["anyOf"]
        schema["type"] = [option["type"] for option in options]
        return
    others = [option for option in options if option != _NULL]
    if len(options) == 2 and len(others) == 1 and set(others[0]) <= _TYPE_SPECIFIC:
        del schema["anyOf"]
        merged = dict(others[0])
        merged["type"] = [others[0]["type"], "null"]
        schema.update(merged)


def compact_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop annotation-only titles and fold simple optionals, in place; returns `schema`."""
    if isinstance(schema.get("title"), str):
        del schema["title"]
    if "default" in schema and schema["default"] is None:
        del schema["default"]  # a property left out of `required` is already optional
    _merge_any_of(schema)
    for key in ("items", "additionalProperties", "not"):  # after merging: they may be new
        if isinstance(schema.get(key), dict):
            compact_schema(schema[key])
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        for option in schema.get(key, []) if isinstance(schema.get(key), list) else []:
            if isinstance(option, dict):
                compact_schema(option)
    for key in ("properties", "$defs", "definitions"):
        children = schema.get(key)
        if isinstance(children, dict):  # names of properties are kept; their schemas compacted
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
