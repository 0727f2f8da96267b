"""Argument errors in one line: which argument, what was wrong, what is allowed.

The SDK validates a call's arguments with the tool's pydantic model before the tool runs,
and its error text is pydantic's (`1 validation error for read_queryArguments ...`, a
documentation URL, the model's class name). The server rewrites it here, reading what is
allowed from the schema the tool announces, so the two cannot disagree:

    argument "limit" must be an integer of at least 1 (got "ten")
    argument "reason" is required: a string (why this change is needed, in a sentence)
    unknown argument "lmit" (did you mean "limit"?); read_query takes query, limit, params

Several problems are joined with "; " in argument order, one clause per argument.
Arguments the tool does not take are refused too (pydantic would drop them silently, and
the agent would believe a misspelt `limit` had applied), except the few that a client adds
to every call for itself (`CLIENT_ARGUMENTS`): those are dropped before the tool runs,
whatever their value, since they tell the client something, never the server.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from sqlgate.service import counted

__all__ = [
    "CLIENT_ARGUMENTS",
    "argument_errors_text",
    "expected_text",
    "unknown_arguments",
    "without_client_arguments",
]

# Arguments a client adds to every tool call for its own use, by name: which client, and where
# that is written down. Only names seen in a client's source or a reported call belong here;
# a tool that takes an argument of the same name gets it (`without_client_arguments`).
CLIENT_ARGUMENTS: Mapping[str, str] = MappingProxyType(
    {
        # Gemini CLI adds a boolean to every tool's schema, tells the model to set it on a
        # call that depends on an earlier one, and sends it on to the server
        # (google-gemini/gemini-cli packages/core/src/tools/tools.ts,
        # addWaitForPreviousParameter; read by packages/core/src/scheduler/scheduler.ts)
        "wait_for_previous": "Gemini CLI: run this call after the earlier ones of its turn",
        # n8n's MCP Client Tool sends its own call id with the arguments (n8n-io/n8n#21500)
        "toolCallId": "n8n MCP Client Tool: the id of the model's tool call",
    }
)

_SHOWN_CHARS = 40  # of a rejected value, in `(got ...)`, or an unknown argument's name
_SHOWN_UNKNOWN = 10  # unknown arguments named one by one; the rest are counted
_TYPE_NAMES = {
    "integer": "an integer",
    "number": "a number",
    "string": "a string",
    "boolean": "true or false",
    "array": "a list",
    "object": "an object",
}
_ITEM_KINDS = ("integer", "number", "string", "boolean")  # a list's items, named by kind


def _types(schema: Mapping[str, Any]) -> list[str]:
    """The types a schema allows: its `type` (one name, or a list), else its `anyOf`
    branches' (the announced schemas say a union that way: `schemas`)."""
    kind = schema.get("type")
    if isinstance(kind, str):
        return [kind]
    if isinstance(kind, list):
        return [k for k in kind if isinstance(k, str)]
    options = schema.get("anyOf")
    if isinstance(options, list):
        return [k for o in options if isinstance(o, Mapping) for k in _types(o)]
    return []


def _bounds(schema: Mapping[str, Any]) -> str:
    low, high = schema.get("minimum"), schema.get("maximum")
    if low is not None and high is not None:
        return f" from {low} to {high}"
    if low is not None:
        return f" of at least {low}"
    if high is not None:
        return f" of at most {high}"
    return ""


def _items(schema: Mapping[str, Any]) -> str:
    """` of at most 50 integers`, ` of strings`, or nothing when the schema is silent."""
    items = schema.get("items")
    kinds = _types(items) if isinstance(items, Mapping) else []
    nouns = [kind for kind in kinds if kind in _ITEM_KINDS]
    one = " or ".join(nouns) or "item"
    many = " or ".join(f"{noun}s" for noun in nouns) or "items"
    most = schema.get("maxItems")
    if most is not None:
        return f" of at most {counted(most, one, many)}"
    return f" of {many}" if kinds else ""


def expected_text(schema: Mapping[str, Any]) -> str:
    """What a JSON schema allows, in words: `an integer from 1 to 1000`, `a list of
    integers (at most 50)`. `null` is left out: leaving the argument out means the same."""
    options = schema.get("anyOf")
    if isinstance(options, list):
        said = [
            expected_text(o) for o in options if isinstance(o, Mapping) and _types(o) != ["null"]
        ]
        return " or ".join(s for s in said if s) or "a value"
    phrases = []
    for kind in _types(schema):
        if kind == "null":
            continue
        phrase = _TYPE_NAMES.get(kind, kind)
        if kind in ("integer", "number"):
            phrase += _bounds(schema)
        elif kind == "array":
            phrase += _items(schema)
        elif kind == "string" and schema.get("maxLength") is not None:
            phrase += f" of at most {counted(schema['maxLength'], 'character')}"
        phrases.append(phrase)
    return " or ".join(phrases) or "a value"


def _shown(value: object) -> str:
    """A rejected value, short: `"ten"`, `5`, `null`, `a list of 3 items`, `an object`."""
    if isinstance(value, (list, tuple)):
        return f"a list of {counted(len(value), 'item')}"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, str) and len(value) > _SHOWN_CHARS:
        value = value[:_SHOWN_CHARS] + "…"
    try:
        said = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return type(value).__name__
    # JSON escapes control characters; these too, so the answer stays one visible line
    return "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in said)


def _path(loc: Sequence[int | str]) -> str:
    """`("ids", 0)` -> `ids[0]`; `("params", "a")` -> `params["a"]`."""
    head, *rest = loc
    return str(head) + "".join(
        f"[{p}]" if isinstance(p, int) else f"[{json.dumps(p)}]" for p in rest
    )


def _schema_at(schema: Mapping[str, Any], loc: Sequence[int | str]) -> Mapping[str, Any]:
    """The schema of the value at `loc` below an argument (as deep as the schema says)."""
    for part in loc:
        options = schema.get("anyOf")
        if isinstance(options, list):  # the one option that has what `part` needs
            wanted = "array" if isinstance(part, int) else "object"
            picked = [o for o in options if isinstance(o, Mapping) and wanted in _types(o)]
            schema = picked[0] if picked else schema
        child = schema.get("items") if isinstance(part, int) else None
        if isinstance(part, str):
            props = schema.get("properties")
            child = props.get(part) if isinstance(props, Mapping) else None
            child = child if child is not None else schema.get("additionalProperties")
        if not isinstance(child, Mapping):
            break
        schema = child
    return schema


def _own_words(error: ErrorDetails) -> str | None:
    """The message of a sqlgate validator (`at_most`, `sql_text`, params), if it raised."""
    if error["type"] not in ("value_error", "assertion_error"):
        return None
    cause = (error.get("ctx") or {}).get("error")
    return str(cause) if cause is not None else error["msg"].split(", ", 1)[-1]


def _clause(error: ErrorDetails, schema: Mapping[str, Any], more: int) -> str:
    loc = [p for p in error["loc"] if isinstance(p, (int, str))]
    name, where = str(loc[0]), _path(loc)
    if error["type"] == "missing":
        description = schema.get("description")
        said = f" ({description})" if isinstance(description, str) else ""
        return f'argument "{name}" is required: {expected_text(schema)}{said}'
    words = _own_words(error)
    if words is not None:
        # "query is 480,000 characters, ..." -> argument "query" is 480,000 characters, ...
        subject, space, rest = words.partition(" ")
        said = subject.rstrip(":")
        if said == name or said.startswith(name + "["):
            return f'argument "{said}"{subject[len(said) :]}{space}{rest}'
        return f'argument "{where}": {words}'
    expected = expected_text(_schema_at(schema, loc[1:]))
    also = f" ({counted(more, 'more item')} of it wrong too)" if more else ""
    return f'argument "{where}" must be {expected} (got {_shown(error.get("input"))}){also}'


def without_client_arguments(
    arguments: Mapping[str, Any], accepted: Sequence[str]
) -> dict[str, Any]:
    """The call's arguments less those a client added for itself (`CLIENT_ARGUMENTS`) that
    the tool does not take. Their values are not looked at: the server has no use for them."""
    return {
        name: value
        for name, value in arguments.items()
        if name in accepted or name not in CLIENT_ARGUMENTS
    }


def unknown_arguments(given: Iterable[str], accepted: Sequence[str]) -> list[str]:
    """The names in `given` that the tool does not take, in the order given."""
    return [name for name in given if name not in accepted]


def _unknown_clause(name: str, accepted: Sequence[str]) -> str:
    close = difflib.get_close_matches(name[:_SHOWN_CHARS], accepted, n=1)
    return f"unknown argument {_shown(name)}" + (f' (did you mean "{close[0]}"?)' if close else "")


def argument_errors_text(
    tool: str,
    schema: Mapping[str, Any],
    error: ValidationError | None,
    unknown: Sequence[str] = (),
) -> str:
    """One line for every problem with a call's arguments: each argument the model
    refused (its first error; a count of the rest), then each argument the tool does not
    take, then what it takes."""
    properties = schema.get("properties")
    props: Mapping[str, Any] = properties if isinstance(properties, Mapping) else {}
    by_argument: dict[str, list[ErrorDetails]] = {}
    for details in error.errors(include_url=False) if error is not None else []:
        if details["loc"]:
            by_argument.setdefault(str(details["loc"][0]), []).append(details)
    order = [name for name in props if name in by_argument]
    order += [name for name in by_argument if name not in props]
    clauses = []
    for name in order:
        first, *rest = by_argument[name]
        argument_schema = props.get(name)
        clauses.append(
            _clause(
                first, argument_schema if isinstance(argument_schema, Mapping) else {}, len(rest)
            )
        )
    accepted = list(props)
    clauses += [_unknown_clause(name, accepted) for name in unknown[:_SHOWN_UNKNOWN]]
    if len(unknown) > _SHOWN_UNKNOWN:
        clauses.append(counted(len(unknown) - _SHOWN_UNKNOWN, "more unknown argument"))
    if unknown:
        takes = ", ".join(accepted) if accepted else "no arguments"
        clauses.append(f"{tool} takes {takes}")
    return "; ".join(clauses) or f"the arguments of {tool} are not valid"
