"""MCP logging for the handshake revisions (2025-06-18, 2025-11-25): `logging/setLevel`.

A client that sets a level is sent sqlgate's own log records (loggers `sqlgate.*`: an audit
row that could not be written, a tool that failed unexpectedly) at that level or above, as
`notifications/message`, but only the records emitted while one of its own tool calls ran.
They are collected during the call (the worker thread inherits the context variable that
holds the call's list) and sent when it ends, on the call's own stream, so no client sees
another's. A client that sets no level is sent nothing, as before this module. The records
still reach stderr as always. Revision 2026-07-28 removed `logging/setLevel`; this module
sends nothing there.
"""

from __future__ import annotations

import logging
import warnings
import weakref
from contextvars import ContextVar
from typing import Any, cast

from mcp.server import MCPServer
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.types import EmptyResult, LoggingLevel, SetLevelRequestParams

__all__ = ["MCP_LEVELS", "enable_client_logging"]

# MCP's syslog levels on Python's scale (notice sits between INFO and WARNING)
MCP_LEVELS: dict[str, int] = {
    "debug": logging.DEBUG, "info": logging.INFO, "notice": 25, "warning": logging.WARNING,
    "error": logging.ERROR, "critical": logging.CRITICAL, "alert": 60, "emergency": 70,
}  # fmt: skip
# one misbehaving call must not flood the client
MAX_RECORDS_PER_CALL = 20
# serving the 2025 revisions' logging is deliberate: no warning on stderr for it
warnings.filterwarnings("ignore", category=MCPDeprecationWarning, module=__name__)

_collected: ContextVar[list[logging.LogRecord] | None] = ContextVar(
    "sqlgate_client_log", default=None
)


class _CollectForCaller(logging.Handler):
    """Keeps the records emitted in a tool call's context for that call's client."""

    def emit(self, record: logging.LogRecord) -> None:
        bucket = _collected.get()
        if bucket is not None and len(bucket) < MAX_RECORDS_PER_CALL:
            bucket.append(record)


_HANDLER = _CollectForCaller()


def _mcp_level(levelno: int) -> LoggingLevel:
    name = max((n for n, v in MCP_LEVELS.items() if v <= levelno), key=MCP_LEVELS.__getitem__,
               default="debug")  # fmt: skip
    return cast(LoggingLevel, name)


def _connection(ctx: ServerRequestContext[Any, Any]) -> object | None:
    # the SDK builds a ServerSession per request; the connection behind it lasts (no public name)
    return getattr(ctx.session, "_connection", None)


class ClientLogging:
    """The `logging/setLevel` handler and the middleware that sends each call's records."""

    def __init__(self) -> None:
        self._levels: weakref.WeakKeyDictionary[object, int] = weakref.WeakKeyDictionary()

    async def set_level(
        self, ctx: ServerRequestContext[Any, Any], params: SetLevelRequestParams
    ) -> EmptyResult:
        connection = _connection(ctx)
        if connection is not None:
            self._levels[connection] = MCP_LEVELS[params.level]
        return EmptyResult()

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        connection = _connection(ctx) if ctx.method == "tools/call" else None
        threshold = None if connection is None else self._levels.get(connection)
        if threshold is None:
            return await call_next(ctx)
        bucket: list[logging.LogRecord] = []
        token = _collected.set(bucket)
        try:
            result = await call_next(ctx)
        finally:
            _collected.reset(token)
        for record in bucket:
            if record.levelno >= threshold:
                await ctx.session.send_log_message(
                    _mcp_level(record.levelno), record.getMessage(), logger=record.name,
                    related_request_id=ctx.request_id,
                )  # fmt: skip
        return result


def enable_client_logging(server: MCPServer[Any]) -> None:
    """Declare logging on `server`: answer `logging/setLevel`, send each call's records."""
    sqlgate_logger = logging.getLogger("sqlgate")
    if _HANDLER not in sqlgate_logger.handlers:
        sqlgate_logger.addHandler(_HANDLER)
    client_logging = ClientLogging()
    lowlevel = server._lowlevel_server
    lowlevel.add_request_handler(
        "logging/setLevel", SetLevelRequestParams, client_logging.set_level
    )
    lowlevel.middleware.append(client_logging)
