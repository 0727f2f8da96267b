"""Progress of long tool calls (large snapshots, long chain verifications) for the client.

The service reports `(done, total)` from the worker thread a tool runs in; `relay_progress`
turns each report into `notifications/progress`, sent on the event loop. The SDK sends it
only when the caller asked for progress (a progress token on JSON-RPC transports, a callback
in process) and drops it otherwise. Reports are coarse (one per 1024 snapshot pages, one per
4096 verified events), so a call that asked for none pays a few loop round trips at most.
Progress is best-effort: a notification that cannot be sent never fails the call.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import anyio.from_thread
from mcp.server.mcpserver import Context

__all__ = ["Progress", "relay_progress"]

Progress = Callable[[int, int], None]  # (done, total), called from a worker thread

log = logging.getLogger("sqlgate")


def relay_progress(ctx: Context[Any, Any], unit: str) -> Progress:
    """A `(done, total)` callback for the tool's worker thread; each call sends one
    notification, e.g. `3072/5000 pages copied`, and returns once it is handed over."""

    def report(done: int, total: int) -> None:
        try:
            anyio.from_thread.run(ctx.report_progress, done, total, f"{done}/{total} {unit}")
        except Exception:  # the loop is gone or the client left: the work goes on regardless
            log.debug("progress notification not sent", exc_info=True)

    return report
