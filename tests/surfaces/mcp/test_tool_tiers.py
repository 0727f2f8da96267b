"""The tier table (surfaces/mcp/tool_tiers.py) says what the server announces: every tool,
and for each one the tier its annotations give it."""

from __future__ import annotations

import pytest
from mcp import Client
from mcp.types import Tool

from sqlgate.service import Service
from sqlgate.surfaces.mcp.server import CLAIMS_TOOLS, MEMORY_TOOLS, SQL_TOOLS, build_server
from sqlgate.surfaces.mcp.tool_tiers import TIERS, TOOL_TIERS, tools_of_tier

pytestmark = pytest.mark.anyio


def tier_of(tool: Tool) -> str:
    annotations = tool.annotations
    assert annotations is not None
    if annotations.destructive_hint:
        return "destructive"
    return "read" if annotations.read_only_hint else "write"


async def test_the_table_holds_every_announced_tool_with_the_tier_of_its_annotations(
    service: Service,
) -> None:
    async with Client(build_server(service)) as client:
        announced = {tool.name: tier_of(tool) for tool in (await client.list_tools()).tools}
    assert announced == TOOL_TIERS
    assert len(TOOL_TIERS) == 23


def test_the_table_is_in_the_order_of_the_groups() -> None:
    assert tuple(TOOL_TIERS) == SQL_TOOLS + MEMORY_TOOLS + CLAIMS_TOOLS


@pytest.mark.parametrize(
    ("tiers", "expected"),
    [
        pytest.param(("destructive",), ("destructive_query", "undo_call"), id="destructive"),
        pytest.param(("read",), ("read_query", "list_tables", "describe_table", "get_schema",
                                 "search_text", "verify_chain", "get_resume_context",
                                 "memory_search", "memory_timeline", "memory_details",
                                 "memory_stats", "claim_search"), id="read"),
    ],
)  # fmt: skip
def test_tools_of_a_tier_in_the_announced_order(
    tiers: tuple[str, ...], expected: tuple[str, ...]
) -> None:
    assert tools_of_tier(*tiers) == expected


def test_read_and_write_together_are_every_tool_but_the_destructive_ones() -> None:
    both = tools_of_tier("read", "write")
    assert set(both) | set(tools_of_tier("destructive")) == set(TOOL_TIERS)
    assert len(both) == 21
    assert TIERS == ("read", "write", "destructive")


def test_an_unknown_tier_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown tier"):
        tools_of_tier("admin")


def test_the_security_model_lists_each_tool_under_its_tier() -> None:
    """docs/security-model.md, "Tiers per caller": the table a team reads is this one."""
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[3] / "docs" / "security-model.md").read_text(
        encoding="utf-8"
    )
    section = doc.split("### Tiers per caller", 1)[1].split("\n### ", 1)[0]
    listed: dict[str, str] = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if len(cells) == 2 and cells[0] in TIERS:
            for name in cells[1].split("`")[1::2]:
                listed[name] = cells[0]
    assert listed == TOOL_TIERS
