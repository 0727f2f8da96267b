"""Tiers per caller over HTTP (issue 22): each member, and the admin --token, sees in
`tools/list` exactly the tools of its tier (`tool_tiers.TOOL_TIERS`), on both protocol eras;
a tool above it called anyway is a tool error naming the tier and a next step, audited as a
refused row with the member as actor. `--tools` groups apply on top; resources stay readable.
"""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest
from mcp.types import CallToolResult

from sqlgate.surfaces.mcp.server import SQL_TOOLS
from sqlgate.surfaces.mcp.tool_tiers import TIERS, TOOL_TIERS
from tests.surfaces.mcp.team_server import ERAS, Team, audit_rows, member_client, open_team
from tests.surfaces.mcp.test_http import CALL_SECONDS

pytestmark = [pytest.mark.stdio, pytest.mark.anyio]

MEMBERS = {"reader": "read", "writer": "write", "wrecker": "destructive"}
# who, and the tier it holds
IDENTITIES = [*MEMBERS.items(), ("admin", "destructive")]


def allowed(tier: str, among: tuple[str, ...] = tuple(TOOL_TIERS)) -> list[str]:
    """The tools a caller of `tier` may use, in TOOL_TIERS' order (written out, not through
    engine.records.actors.tier_allows, so that a wrong tier_allows fails here)."""
    rank = {"read": 0, "write": 1, "destructive": 2}
    return [t for t in TOOL_TIERS if t in among and rank[TOOL_TIERS[t]] <= rank[tier]]


def text(result: CallToolResult) -> str:
    first = result.content[0]
    assert first.type == "text"
    return first.text


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Team]:
    team = open_team(tmp_path_factory.mktemp("tiers") / "team.db", MEMBERS)
    try:
        yield team
    finally:
        team.server.stop()


@pytest.fixture(scope="module")
def sql_only(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Team]:
    team = open_team(tmp_path_factory.mktemp("sql") / "team.db", MEMBERS, "--tools", "sql")
    try:
        yield team
    finally:
        team.server.stop()


def test_the_table_gives_every_tier_a_different_set_of_tools() -> None:
    """The premise of the tests below: each tier has tools the one under it lacks."""
    sizes = [len(allowed(tier)) for tier in TIERS]
    assert sizes == sorted(set(sizes))
    assert allowed("destructive") == list(TOOL_TIERS)


@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize(("who", "tier"), IDENTITIES, ids=[who for who, _ in IDENTITIES])
async def test_tools_list_announces_exactly_the_tools_of_the_tier(
    team: Team, who: str, tier: str, mode: str
) -> None:
    with anyio.fail_after(CALL_SECONDS):
        async with member_client(team.url, team.tokens[who], mode) as client:
            listed = await client.list_tools()
    assert [tool.name for tool in listed.tools] == allowed(tier)


@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize(("who", "tier"), list(MEMBERS.items()), ids=list(MEMBERS))
async def test_each_tool_above_the_tier_is_refused_naming_it_and_audited(
    team: Team, who: str, tier: str, mode: str
) -> None:
    above = [tool for tool in TOOL_TIERS if tool not in allowed(tier)]
    first = max((row.id for row in audit_rows(team.db)), default=0)
    answers: dict[str, CallToolResult] = {}
    with anyio.fail_after(CALL_SECONDS):
        async with member_client(team.url, team.tokens[who], mode) as client:
            for tool in above:
                answers[tool] = await client.call_tool(tool, {})
    for tool, result in answers.items():
        needed = TOOL_TIERS[tool]
        assert result.is_error, tool
        said = text(result)
        assert f"{tool} needs the {needed} tier, and {who} has {tier}" in said
        assert "nothing was run" in said
        assert f"sqlgate members set {who} --tier {needed}" in said  # the next step
    refused = audit_rows(team.db, lambda row: row.id > first)
    assert [(row.tool, row.actor, row.ok) for row in refused] == [
        (tool, who, False) for tool in above
    ]
    assert all(row.detail == {"refused": True, "reason": "tier"} for row in refused)
    assert all(f"/{who}" in row.session for row in refused)


@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize(("who", "tier"), IDENTITIES, ids=[who for who, _ in IDENTITIES])
async def test_each_tool_of_the_tier_runs(team: Team, who: str, tier: str, mode: str) -> None:
    """What the tier allows is not refused (a call with no arguments fails on its
    arguments, or runs, but never on the tier)."""
    with anyio.fail_after(CALL_SECONDS * 2):
        async with member_client(team.url, team.tokens[who], mode) as client:
            answers = {tool: await client.call_tool(tool, {}) for tool in allowed(tier)}
    assert all("tier" not in text(result) for result in answers.values()), answers
    # the read tools that need no arguments answer
    for tool in ("list_tables", "get_schema", "verify_chain", "memory_stats"):
        assert not answers[tool].is_error, text(answers[tool])


@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize(("who", "tier"), IDENTITIES, ids=[who for who, _ in IDENTITIES])
async def test_the_tools_groups_still_apply_on_top_of_the_tier(
    sql_only: Team, who: str, tier: str, mode: str
) -> None:
    with anyio.fail_after(CALL_SECONDS):
        async with member_client(sql_only.url, sql_only.tokens[who], mode) as client:
            listed = await client.list_tools()
            memory = await client.call_tool("append_event", {"content": "x"})
    assert [tool.name for tool in listed.tools] == allowed(tier, SQL_TOOLS)
    assert memory.is_error  # not served, whatever the tier


@pytest.mark.parametrize("mode", ERAS)
async def test_a_read_member_can_read_the_claims_resource(team: Team, mode: str) -> None:
    with anyio.fail_after(CALL_SECONDS):
        async with member_client(team.url, team.tokens["wrecker"], mode) as writer:
            added = await writer.call_tool(
                "claim_add", {"entity": "acme", "kind": "status", "claim": "on schedule"}
            )
        assert not added.is_error, text(added)
        async with member_client(team.url, team.tokens["reader"], mode) as reader:
            listed = await reader.list_resources()
            read = await reader.read_resource("claims://all")
    assert "claims://all" in [str(resource.uri) for resource in listed.resources]
    (content,) = read.contents
    assert "on schedule" in getattr(content, "text", "")
