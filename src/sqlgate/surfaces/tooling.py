"""What every MCP tool shares: annotations, and running service work off the event loop.

Tools are `async` so that a cancelled or timed-out request is abandoned at once and the
running statement interrupted (`CallControl.cancel`), freeing the server for the next call.
Tools return plain text as unstructured content only, so the agent is not sent every result
twice.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Annotated

import anyio
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from sqlgate.engine.limits import CallControl
from sqlgate.errors import SqlgateError

__all__ = ["DESTRUCTIVE", "READ_ONLY", "WRITES", "Params", "run_tool"]

Scalar = str | int | float | bool | None
Params = Annotated[
    list[Scalar] | dict[str, Scalar] | None,
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
