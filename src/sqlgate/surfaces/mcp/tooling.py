"""What every MCP tool shares: annotations, bounds on arguments, and running service work
off the event loop.

Tools are `async` so that a cancelled or timed-out request is abandoned at once and the
running statement interrupted (`CallControl.cancel`), freeing the server for the next call.
Tools return plain text as unstructured content only, so the agent is not sent every result
twice.

Arguments are bounded before the service sees them: lists by their length (`at_most`),
before pydantic validates their items; SQL text by its length (`sql_text`); `params` by the
first value SQLite could not bind; and no text may hold an unpaired surrogate
(`refuse_unpaired_surrogates`).
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Callable, Coroutine
from typing import Annotated, Any

import anyio
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BeforeValidator, Field, ValidationInfo, WithJsonSchema

from sqlgate.errors import InvalidArgument, SqlgateError
from sqlgate.service import CallControl, counted, normalize_params, word_list

__all__ = [
    "DESTRUCTIVE",
    "MAX_PARAMS",
    "MAX_SQL_CHARS",
    "READ_ONLY",
    "WRITES",
    "Params",
    "at_most",
    "comma_text",
    "list_or_text",
    "refuse_unpaired_surrogates",
    "run_tool",
    "sql_text",
]

# SQLite takes at most 10,000 placeholders per statement (engine/connect.py)
MAX_PARAMS = 10_000
# SQL is parsed (sqlglot) before SQLite sees it, at ~330 bytes and ~11 µs a character of
# dense SQL: 1 MB took 12 s and 370 MB. 100,000 characters stay near 1 s and 30 MB.
MAX_SQL_CHARS = 100_000
_SURROGATE = re.compile("[\ud800-\udfff]")


def at_most(limit: int, noun: str) -> BeforeValidator:
    """Refuse a list (or object) longer than `limit` by its length, before pydantic looks
    at its items: 3,000,000 ids were validated one by one, and 100,000 nested lists made
    one error each (gigabytes of messages) before any check of ours ran. `noun` names one
    item (`"id"`)."""

    def check(value: object) -> object:
        if isinstance(value, (list, tuple, dict)) and len(value) > limit:
            raise ValueError(f"at most {counted(limit, noun)} per call, not {len(value)}")
        return value

    return BeforeValidator(check)


def comma_text(what: str, example: tuple[str, str]) -> BeforeValidator:
    """Let a list argument also take one comma-separated text of words (`"prompt,
    compaction"`): the text is split by `memory.inputs.word_list` before pydantic sees a
    list, so the tool always gets a list. Pair it with `list_or_text` for the schema."""

    def split(value: object, info: ValidationInfo) -> object:
        if not isinstance(value, str):
            return value
        try:
            return word_list(value, info.field_name or "it", what, example)
        except InvalidArgument as exc:
            raise ValueError(str(exc)) from None

    return BeforeValidator(split)


def list_or_text(most: int, example: tuple[str, str], said: str = "") -> WithJsonSchema:
    """The announced schema of an optional `comma_text` argument: a list of at most `most`
    strings, or a string (one type per branch, as strict validators want: `schemas`); `said`
    opens its description."""
    first, second = example
    return WithJsonSchema(
        {
            "anyOf": [
                {"type": "array", "items": {"type": "string"}, "maxItems": most},
                {"type": "string"},
            ],
            "description": f'{said}a list or "{first}, {second}"',
        }
    )


def sql_text(name: str) -> BeforeValidator:
    """Refuse SQL text longer than MAX_SQL_CHARS before anything parses it."""

    def check(value: object) -> object:
        if isinstance(value, str) and len(value) > MAX_SQL_CHARS:
            raise ValueError(
                f"{name} is {counted(len(value), 'character', spec=',')}, over the limit of "
                f"{MAX_SQL_CHARS:,} for SQL text; bind values with params, or split the work into "
                "several statements"
            )
        return value

    return BeforeValidator(check)


def _bindable(value: object) -> object:
    # the first bad value, named, instead of one pydantic error per item; the range of
    # integers and unpaired surrogates are checked here too (normalize_params)
    if isinstance(value, (list, tuple, dict)) and len(value) > MAX_PARAMS:
        raise ValueError(
            f"params: at most {counted(MAX_PARAMS, 'value')} per call, not {len(value)}"
        )
    try:
        normalize_params(value)
    except InvalidArgument as exc:
        raise ValueError(str(exc)) from None
    return value


Scalar = str | int | float | bool | None
Params = Annotated[
    list[Scalar] | dict[str, Scalar] | None,
    BeforeValidator(_bindable),
    Field(description="values for ? (a list) or :name (an object) placeholders"),
]
# one local file: no tool reaches outside it (open_world_hint=False)
READ_ONLY = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
DESTRUCTIVE = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)

# after a cancellation, how long the handler waits for the interrupted statement to stop
CANCEL_GRACE_SECONDS = 1.0

INTERNAL_ERROR = (
    "sqlgate failed internally ({kind}) and the call did not complete. Retry once; if it "
    "fails again, tell the user instead of working around it"
)


async def run_tool(work: Callable[[CallControl], str]) -> str:
    """Run `work` in a thread; on cancellation stop its statement; errors become ToolError.

    A cancelled call interrupts its statement and waits (briefly, shielded) for the worker
    to finish, so its audit row is written and its connection free before the handler ends.
    Exceptions other than SqlgateError reach the agent as their type only, never their text.
    """
    control = CallControl()
    stopped = threading.Event()

    def run() -> str:
        try:
            return work(control)
        finally:
            stopped.set()

    try:
        return await anyio.to_thread.run_sync(run, abandon_on_cancel=True)
    except anyio.get_cancelled_exc_class():
        control.cancel()
        # bounded as a whole: even waiting for a free worker thread cannot hang the handler
        with anyio.move_on_after(CANCEL_GRACE_SECONDS, shield=True):
            await anyio.to_thread.run_sync(
                stopped.wait, CANCEL_GRACE_SECONDS, abandon_on_cancel=True
            )
        raise
    except SqlgateError as exc:
        raise ToolError(str(exc)) from None
    except Exception as exc:
        raise ToolError(INTERNAL_ERROR.format(kind=type(exc).__name__)) from None


def _unpaired_surrogate(value: object, name: str) -> str | None:
    """Where in an argument (`ids[2]`, `observed['x']`) text holds an unpaired surrogate."""
    pending: list[tuple[object, str]] = [(value, name)]
    while pending:
        item, where = pending.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return where
        elif isinstance(item, (list, tuple)):
            pending.extend((v, f"{where}[{i}]") for i, v in enumerate(item))
        elif isinstance(item, dict):
            for key, v in item.items():
                if isinstance(key, str) and _SURROGATE.search(key):
                    return f"a key of {where}"
                pending.append((v, f"{where}[{key!r}]"))
    return None


def _text_checked(
    fn: Callable[..., Coroutine[Any, Any, Any]],
) -> Callable[..., Coroutine[Any, Any, Any]]:
    @functools.wraps(fn)
    async def checked(**arguments: Any) -> Any:
        for name, value in arguments.items():
            where = _unpaired_surrogate(value, name)
            if where is not None:
                raise ToolError(
                    f"{where} holds an unpaired UTF-16 surrogate (U+D800-U+DFFF), which is not "
                    "text and cannot be stored; nothing was run. Send valid Unicode"
                )
        return await fn(**arguments)

    return checked


def refuse_unpaired_surrogates(server: MCPServer[Any]) -> None:
    """Make every tool registered on `server` refuse text with an unpaired surrogate.

    JSON can carry `"\\ud800"`; over stdio and HTTP the parser refuses it, but an
    in-process client hands the tool a Python str that SQLite, the audit log and the
    hash chain cannot encode. The check runs on the validated arguments, before the tool.
    """
    manager = getattr(server, "_tool_manager", None)  # as in schemas.compact_tools
    for tool in manager.list_tools() if manager is not None else []:
        tool.fn = _text_checked(tool.fn)
