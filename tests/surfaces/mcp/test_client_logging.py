"""`logging/setLevel`: a client that sets a level gets sqlgate's log records from its own
tool calls as `notifications/message`; a client that sets none gets nothing, as before."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from mcp import Client
from mcp.types import LoggingMessageNotificationParams

from sqlgate.service import Service
from sqlgate.surfaces.mcp.server import build_server

pytestmark = [
    pytest.mark.anyio,
    # logging/setLevel is deprecated at 2026-07-28; these clients speak 2025-11-25 on purpose
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

WARNED = "audit row for read_query not written: the database is locked"


class Logs:
    """A logging callback that keeps what arrives."""

    def __init__(self) -> None:
        self.seen: list[LoggingMessageNotificationParams] = []

    async def __call__(self, params: LoggingMessageNotificationParams) -> None:
        self.seen.append(params)


@pytest.fixture
def warning_service(service: Service, monkeypatch: pytest.MonkeyPatch) -> Service:
    """read_query logs one warning and one info record (as the audit does) while it runs."""
    real = service.read_query

    def read_query(*args: Any, **kwargs: Any) -> Any:
        logging.getLogger("sqlgate.audit").warning(WARNED)
        logging.getLogger("sqlgate").info("an info record")
        return real(*args, **kwargs)

    monkeypatch.setattr(service, "read_query", read_query)
    return service


async def test_the_server_declares_logging_and_accepts_a_level(service: Service) -> None:
    async with Client(build_server(service), mode="legacy") as client:
        assert client.server_capabilities.logging is not None
        answer = await client.set_logging_level("info")
    assert answer.model_dump(exclude_none=True) == {}


async def test_a_client_that_set_a_level_gets_the_warnings_of_its_call(
    warning_service: Service,
) -> None:
    logs = Logs()
    async with Client(
        build_server(warning_service), mode="legacy", logging_callback=logs
    ) as client:
        await client.set_logging_level("warning")
        result = await client.call_tool("read_query", {"query": "SELECT 1 AS one"})
    assert not result.is_error
    assert [(log.level, log.logger, log.data) for log in logs.seen] == [
        ("warning", "sqlgate.audit", WARNED)
    ]


async def test_records_below_the_level_are_not_sent(warning_service: Service) -> None:
    logs = Logs()
    async with Client(
        build_server(warning_service), mode="legacy", logging_callback=logs
    ) as client:
        await client.set_logging_level("error")
        await client.call_tool("read_query", {"query": "SELECT 1 AS one"})
    assert logs.seen == []


async def test_a_client_that_set_no_level_gets_nothing(warning_service: Service) -> None:
    logs = Logs()
    async with Client(
        build_server(warning_service), mode="legacy", logging_callback=logs
    ) as client:
        await client.call_tool("read_query", {"query": "SELECT 1 AS one"})
    assert logs.seen == []


async def test_a_level_set_by_one_client_sends_nothing_to_another(
    warning_service: Service,
) -> None:
    server = build_server(warning_service)
    quiet, chatty = Logs(), Logs()
    async with (
        Client(server, mode="legacy", logging_callback=chatty) as listening,
        Client(server, mode="legacy", logging_callback=quiet) as other,
    ):
        await listening.set_logging_level("debug")
        await other.call_tool("read_query", {"query": "SELECT 1 AS one"})
    assert quiet.seen == []
    assert chatty.seen == []
