"""A call refused for its arguments is audited like any other refused call: one `query_log`
row naming the tool, the refusal the agent read, and why ("arguments"), with nothing run
(docs/security-model.md: every call, allowed or refused, is a row in query_log)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from mcp import Client

from sqlgate.service import Service
from sqlgate.surfaces.mcp.server import build_server
from tests.surfaces.mcp.test_arguments import VALID, refused

pytestmark = pytest.mark.anyio

# what goes wrong with the arguments: a misspelt name, a value of the wrong kind, one missing
MISTAKES: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "unknown": lambda valid: {**valid, "lmit": 3},
    "wrong-kind": lambda valid: {**valid, next(iter(valid)): {"a": 1}} if valid else {"x": 1},
    "missing": lambda valid: dict(list(valid.items())[1:]) if valid else {"y": 2},
}


def count(service: Service, where: str = "1", params: list[Any] | None = None) -> int:
    """Rows of query_log, read as the agent reads them (the service's own connections)."""
    answer = service.read_query(f"SELECT count(*) AS n FROM query_log WHERE {where}", None, params)
    return int(answer.splitlines()[1])


@pytest.mark.parametrize("mistake", list(MISTAKES))
@pytest.mark.parametrize("tool", sorted(VALID))
async def test_a_call_refused_for_its_arguments_leaves_one_audit_row(
    make_service: Callable[..., Service], tool: str, mistake: str
) -> None:
    service = make_service()
    service.write_query("CREATE TABLE t (x INTEGER, y TEXT)")
    arguments = MISTAKES[mistake](VALID[tool])
    async with Client(build_server(service)) as client:
        result = await client.call_tool(tool, arguments)
    if not result.is_error:
        pytest.skip(f"{tool} takes {arguments}: not a mistake for this tool")
    said = refused(result, tool)
    assert count(service) == 2  # the CREATE and the refused call: nothing else ran
    refusal = (
        "tool = ? AND ok = 0 AND error = ? AND rows IS NULL AND query IS NULL"
        ' AND detail = \'{"refused": true, "reason": "arguments"}\''
    )
    assert count(service, refusal, [tool, said]) == 1
