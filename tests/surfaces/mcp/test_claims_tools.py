"""The claims tools and the `claims://all` resource end to end, through the in-memory `Client`.

What the server announces with and without the claims group (tools, annotations, argument
schemas, the resource, instructions), each of the six tools with its output (JSON for
claim_add, claim_confirm, claim_retract and claims_contradictions; CSV for claim_search and
claims_decayed), `as_of` on a hand-driven wall clock (no test sleeps), bad input as a tool
error naming what is allowed, and the audit row of every call.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import AsyncIterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import apsw
import pytest
from mcp import Client
from mcp.types import CallToolResult, TextResourceContents

from sqlgate.service import Service
from sqlgate.surfaces.mcp.server import (
    CLAIMS_INSTRUCTIONS,
    CLAIMS_TOOLS,
    MEMORY_TOOLS,
    SQL_TOOLS,
    build_server,
)
from tests.conftest import FakeClock
from tests.records import connect_both
from tests.surfaces.conftest import OpenService

pytestmark = pytest.mark.anyio

SESSION = "s-claims-tools"
START = 1767225600.0  # 2026-01-01T00:00:00Z
DAY = 86_400.0
STARTED = "2026-01-01T00:00:00.000Z"
SEARCH_HEADER = "id,entity,kind,claim,rank,volatility,confidence,effective,state,last_confirmed"
DECAYED_HEADER = "id,entity,kind,claim,effective,last_confirmed,state"
READ_ONLY_TOOLS = ("claim_search",)
WRITING_TOOLS = tuple(tool for tool in CLAIMS_TOOLS if tool not in READ_ONLY_TOOLS)


def iso(days: float) -> str:
    """The moment `days` after 2026-01-01T00:00:00Z, as ISO-8601 text."""
    moment = datetime.fromtimestamp(START + days * DAY, tz=timezone.utc)
    return moment.isoformat().replace("+00:00", "Z")


def text(result: CallToolResult) -> str:
    assert result.content, "a tool result carries text content"
    first = result.content[0]
    assert first.type == "text"
    return first.text


def ok(result: CallToolResult) -> str:
    assert not result.is_error, text(result)
    return text(result)


def refused(result: CallToolResult) -> str:
    assert result.is_error, text(result)
    return text(result)


def answer(result: CallToolResult) -> dict[str, Any]:
    parsed = json.loads(ok(result))
    assert isinstance(parsed, dict)
    return parsed


def csv_rows(output: str) -> tuple[list[dict[str, str]], str]:
    """The CSV rows of a claims list and its `#` trailer line."""
    *body, trailer = output.splitlines()
    assert trailer.startswith("# "), output
    return list(csv.DictReader(io.StringIO("\n".join(body)))), trailer


def stored(db: Path, sql: str) -> list[tuple[Any, ...]]:
    """Rows read straight from the file, on a connection of the test's own (no audit row)."""
    conn = connect_both(db, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return [tuple(row) for row in conn.execute(sql)]
    finally:
        conn.close()


def written(db: Path) -> tuple[list[tuple[Any, ...]], int, int]:
    """What a call could write: the claims, and how many history rows and chain events."""
    claims = stored(db, "SELECT * FROM claims ORDER BY id")
    ((history, events),) = stored(
        db, "SELECT (SELECT count(*) FROM claims_history), (SELECT count(*) FROM memory_events)"
    )
    return claims, int(history), int(events)


def states(db: Path) -> dict[int, str]:
    return {int(i): str(s) for i, s in stored(db, "SELECT id, state FROM claims")}


@pytest.fixture
def claims_service(open_service: OpenService) -> Service:
    return open_service()


@pytest.fixture
async def client(claims_service: Service) -> AsyncIterator[Client]:
    async with Client(build_server(claims_service)) as connected:
        yield connected


async def add_answer(
    client: Client, entity: str, kind: str, claim: str, **extra: Any
) -> dict[str, Any]:
    arguments = {"entity": entity, "kind": kind, "claim": claim, **extra}
    return answer(await client.call_tool("claim_add", arguments))


async def add(client: Client, entity: str, kind: str, claim: str, **extra: Any) -> int:
    return int((await add_answer(client, entity, kind, claim, **extra))["id"])


async def ranked(client: Client, entity: str, rank: int, **extra: Any) -> int:
    return await add(client, entity, "priority", f"{entity} is priority {rank}", rank=rank, **extra)


# -- what the server announces ---------------------------------------------------------------------


async def test_a_claims_only_server_announces_the_six_tools_the_resource_and_its_instructions(
    open_service: OpenService,
) -> None:
    async with Client(build_server(open_service(tools=("claims",)))) as connected:
        tools = [tool.name for tool in (await connected.list_tools()).tools]
        resources = (await connected.list_resources()).resources
        instructions = connected.instructions
    assert sorted(tools) == sorted(CLAIMS_TOOLS)
    assert len(CLAIMS_TOOLS) == len(set(CLAIMS_TOOLS)) == 6
    assert [(str(r.uri), r.mime_type) for r in resources] == [("claims://all", "application/json")]
    assert instructions == CLAIMS_INSTRUCTIONS
    assert "read_query" not in instructions


@pytest.mark.parametrize(
    "tools",
    [
        pytest.param(("sql",), id="sql"),
        pytest.param(("memory",), id="memory"),
        pytest.param(("sql", "memory"), id="sql-memory"),
    ],
)
async def test_without_the_claims_group_no_claims_tool_resource_or_instructions(
    open_service: OpenService, tools: tuple[str, ...]
) -> None:
    async with Client(build_server(open_service(tools=tools))) as connected:
        names = {tool.name for tool in (await connected.list_tools()).tools}
        resources = (await connected.list_resources()).resources
        instructions = connected.instructions
        call = await connected.call_tool("claim_add", {"entity": "a", "kind": "fact", "claim": "b"})
    assert not names & set(CLAIMS_TOOLS)
    assert names == set(SQL_TOOLS if "sql" in tools else ()) | set(
        MEMORY_TOOLS if "memory" in tools else ()
    )
    assert resources == []
    assert instructions is not None
    assert "claim" not in instructions.lower()
    assert call.is_error


async def test_the_default_server_instructions_mention_claims_last(client: Client) -> None:
    sent = client.instructions
    assert sent is not None
    assert sent.endswith(CLAIMS_INSTRUCTIONS)
    for tool in ("claim_add", "claims_decayed", "claim_confirm", "claim_retract"):
        assert tool in CLAIMS_INSTRUCTIONS
    assert "claims_contradictions" in CLAIMS_INSTRUCTIONS


@pytest.mark.parametrize(
    ("tool", "read_only"),
    [
        *[pytest.param(tool, True, id=f"{tool}-read-only") for tool in READ_ONLY_TOOLS],
        # decayed and contradictions record state changes when asked about the present
        *[pytest.param(tool, False, id=f"{tool}-writes") for tool in WRITING_TOOLS],
    ],
)
async def test_claims_tool_annotations(client: Client, tool: str, read_only: bool) -> None:
    listed = {t.name: t for t in (await client.list_tools()).tools}
    annotations = listed[tool].annotations
    assert annotations is not None
    assert annotations.read_only_hint is read_only
    assert annotations.destructive_hint is False  # retired claims stay, with their history
    assert annotations.open_world_hint is False
    if read_only:
        assert annotations.idempotent_hint is True
    assert listed[tool].output_schema is None  # text only, no structured copy
    assert listed[tool].description


@pytest.mark.parametrize(
    ("tool", "required", "optional"),
    [
        pytest.param(
            "claim_add",
            ["claim", "entity", "kind"],
            ["confidence", "confirmed_at", "evidence", "rank", "volatility"],
            id="claim_add",
        ),
        pytest.param("claim_search", ["query"], [], id="claim_search"),
        pytest.param("claim_confirm", ["id"], ["confidence", "evidence"], id="claim_confirm"),
        pytest.param("claim_retract", ["id"], [], id="claim_retract"),
        pytest.param("claims_contradictions", [], ["as_of", "observed"], id="contradictions"),
        pytest.param("claims_decayed", [], ["as_of", "threshold"], id="claims_decayed"),
    ],
)
async def test_claims_tool_arguments_are_declared(
    client: Client, tool: str, required: list[str], optional: list[str]
) -> None:
    schema = {t.name: t for t in (await client.list_tools()).tools}[tool].input_schema
    assert sorted(schema.get("required", [])) == required
    assert sorted(schema["properties"]) == sorted(required + optional)


def input_required(properties: dict[str, Any]) -> set[str]:
    """Names whose schema says they must be given (none of these compact schemas do)."""
    return {name for name, schema in properties.items() if schema.get("required")}


async def test_claim_add_schema_shows_defaults_and_ranges(client: Client) -> None:
    properties = {t.name: t for t in (await client.list_tools()).tools}["claim_add"].input_schema[
        "properties"
    ]
    assert properties["volatility"]["default"] == "slow"
    assert (properties["confidence"]["default"], properties["confidence"]["minimum"]) == (0.8, 0)
    assert properties["confidence"]["maximum"] == 1
    assert "rank" not in input_required(properties)  # optional: announced without null
    assert properties["rank"]["type"] == "integer"
    assert properties["rank"]["minimum"] == 1
    assert properties["evidence"]["type"] == "array"
    assert properties["evidence"]["items"] == {"type": "integer"}
    for name in ("priority", "status", "fact", "relationship"):
        assert name in properties["kind"]["description"]
    for name in ("stable", "slow", "volatile"):
        assert name in properties["volatility"]["description"]


async def test_the_moment_and_observed_arguments_are_described(client: Client) -> None:
    listed = {t.name: t for t in (await client.list_tools()).tools}
    contradictions = listed["claims_contradictions"].input_schema["properties"]
    assert "validPeriods" in contradictions["observed"]["description"]
    assert contradictions["observed"]["type"] == "object"
    decayed = listed["claims_decayed"].input_schema["properties"]
    assert (decayed["threshold"]["default"], decayed["threshold"]["maximum"]) == (0.5, 1)
    for tool in ("claims_contradictions", "claims_decayed"):
        assert "ISO-8601" in listed[tool].input_schema["properties"]["as_of"]["description"]


# -- claim_add -------------------------------------------------------------------------------------


async def test_claim_add_answers_the_claim_as_json(client: Client) -> None:
    added = answer(
        await client.call_tool(
            "claim_add",
            {"entity": "acme", "kind": "priority", "claim": "acme is priority one", "rank": 1},
        )
    )
    assert added == {
        "created": True,
        "id": 1,
        "entity": "acme",
        "kind": "priority",
        "claim": "acme is priority one",
        "volatility": "slow",
        "confidence": 0.8,
        "effective_confidence": 0.8,
        "rank": 1,
        "state": "active",
        "created_at": STARTED,
        "last_confirmed": STARTED,
        "evidence": [],
    }


async def test_adding_the_same_claim_again_updates_it_and_keeps_its_id(
    client: Client, claims_service: Service, wall: FakeClock
) -> None:
    first = await ranked(client, "acme", 1, volatility="stable")
    wall.advance(10 * DAY)
    again = await add_answer(
        client, "acme", "priority", "acme is priority 1", rank=1, confidence=0.9,
        volatility="volatile",
    )  # fmt: skip
    assert (again["id"], again["created"]) == (first, False)
    assert (again["confidence"], again["volatility"]) == (0.9, "volatile")
    assert again["last_confirmed"] == iso(10).replace("Z", ".000Z")
    assert again["created_at"] == STARTED
    other = await add(client, "acme", "fact", "acme is priority 1")  # another kind: another claim
    assert other == first + 1
    assert len(stored(claims_service.db.path, "SELECT id FROM claims")) == 2


async def test_claim_add_keeps_evidence_that_names_memory_events(client: Client) -> None:
    event = json.loads(
        ok(await client.call_tool("append_event", {"content": "acme board: we are #1"}))
    )
    added = await add_answer(
        client, "acme", "fact", "the board ranked acme first", evidence=[event["id"]]
    )
    assert added["evidence"] == [event["id"]]


async def test_claim_add_with_confirmed_at_starts_decay_then(client: Client) -> None:
    added = await add_answer(client, "acme", "fact", "acme ships weekly", confirmed_at=iso(-30))
    assert added["last_confirmed"] == "2025-12-02T00:00:00.000Z"
    assert added["effective_confidence"] == 0.4  # one slow half-life ago


# -- claim_search ----------------------------------------------------------------------------------


async def test_claim_search_lists_matches_as_csv_with_effective_confidence(
    client: Client, wall: FakeClock
) -> None:
    await ranked(client, "Acme", 1)
    await add(client, "launch", "status", "the launch is on schedule", volatility="volatile")
    await add(client, "globex", "relationship", "globex partners with ACME", confidence=1)
    wall.advance(7 * DAY)
    output = ok(await client.call_tool("claim_search", {"query": "acme"}))
    rows, trailer = csv_rows(output)
    assert output.splitlines()[0] == SEARCH_HEADER
    assert trailer == "# 2 claims"
    assert [(r["id"], r["entity"], r["claim"]) for r in rows] == [
        ("1", "Acme", "Acme is priority 1"),
        ("3", "globex", "globex partners with ACME"),
    ]
    assert [(r["rank"], r["confidence"], r["effective"], r["state"]) for r in rows] == [
        ("1", "0.80", "0.68", "active"),  # 0.8 × 0.5^(7/30)
        ("", "1.00", "0.85", "active"),
    ]
    launch, _ = csv_rows(ok(await client.call_tool("claim_search", {"query": "SCHEDULE"})))
    assert [(r["id"], r["effective"]) for r in launch] == [("2", "0.40")]  # one volatile half-life


async def test_claim_search_without_a_match_says_zero_claims(client: Client) -> None:
    await ranked(client, "acme", 1)
    output = ok(await client.call_tool("claim_search", {"query": "initech"}))
    assert output == f"{SEARCH_HEADER}\n# 0 claims"


# -- claim_confirm and claim_retract ---------------------------------------------------------------


async def test_claim_confirm_resets_decay_and_reactivates(
    client: Client, claims_service: Service, wall: FakeClock
) -> None:
    claim = await add(client, "acme", "fact", "acme ships weekly")
    wall.advance(60 * DAY)
    ok(await client.call_tool("claims_decayed", {}))  # two half-lives: 0.20, marked stale
    assert states(claims_service.db.path) == {claim: "stale"}
    confirmed = answer(await client.call_tool("claim_confirm", {"id": claim, "confidence": 0.7}))
    assert (confirmed["state"], confirmed["confidence"]) == ("active", 0.7)
    assert confirmed["effective_confidence"] == 0.7
    assert confirmed["last_confirmed"] == "2026-03-02T00:00:00.000Z"
    assert "created" not in confirmed


async def test_claim_retract_retires_for_good(client: Client, claims_service: Service) -> None:
    claim = await ranked(client, "acme", 1)
    retired = answer(await client.call_tool("claim_retract", {"id": claim}))
    assert (retired["id"], retired["state"]) == (claim, "retired")
    again = answer(await client.call_tool("claim_retract", {"id": claim}))
    assert again["state"] == "retired"
    assert "retired" in refused(await client.call_tool("claim_confirm", {"id": claim}))
    readd = refused(
        await client.call_tool(
            "claim_add",
            {"entity": "acme", "kind": "priority", "claim": "acme is priority 1", "rank": 1},
        )
    )
    assert "worded differently" in readd
    assert states(claims_service.db.path) == {claim: "retired"}


# -- claims_decayed --------------------------------------------------------------------------------


async def test_claims_decayed_as_of_lists_oldest_first_and_writes_nothing(
    client: Client, claims_service: Service
) -> None:
    await add(client, "acme", "fact", "acme ships weekly", volatility="volatile")  # 0.8
    await add(client, "globex", "fact", "globex is in oslo", confirmed_at=iso(-20))  # slow
    await add(client, "initech", "fact", "initech is stable", volatility="stable")
    before = written(claims_service.db.path)
    output = ok(await client.call_tool("claims_decayed", {"as_of": iso(10)}))
    rows, trailer = csv_rows(output)
    assert output.splitlines()[0] == DECAYED_HEADER
    # oldest confirmation first: globex (confirmed 20 days before acme), then acme
    assert [(r["id"], r["entity"], r["effective"], r["state"]) for r in rows] == [
        ("2", "globex", "0.40", "active"),  # 30 days since confirmed: one slow half-life
        ("1", "acme", "0.30", "active"),  # 0.8 × 0.5^(10/7)
    ]
    assert trailer.startswith("# 2 claims below 0.5, oldest confirmation first")
    assert "marked stale" not in trailer
    assert "claim_confirm(id)" in trailer
    assert written(claims_service.db.path) == before


async def test_claims_decayed_shows_two_decimals_and_the_floor(client: Client) -> None:
    await add(client, "acme", "fact", "acme ships weekly", volatility="volatile", confidence=1)
    rows, _ = csv_rows(ok(await client.call_tool("claims_decayed", {"as_of": iso(7)})))
    assert rows == []  # exactly at the threshold is not below it
    rows, _ = csv_rows(
        ok(await client.call_tool("claims_decayed", {"threshold": 0.51, "as_of": iso(7)}))
    )
    assert [r["effective"] for r in rows] == ["0.50"]  # exactly one half-life
    rows, _ = csv_rows(ok(await client.call_tool("claims_decayed", {"as_of": iso(3650)})))
    assert [r["effective"] for r in rows] == ["0.05"]  # never below the floor


async def test_claims_decayed_now_marks_stale_and_says_so(
    client: Client, claims_service: Service, wall: FakeClock
) -> None:
    first = await add(client, "acme", "fact", "acme ships weekly", volatility="volatile")
    second = await add(client, "globex", "fact", "globex is in oslo")
    nothing = ok(await client.call_tool("claims_decayed", {}))
    assert nothing == f"{DECAYED_HEADER}\n# 0 claims below 0.5, oldest confirmation first"
    wall.advance(8 * DAY)  # acme: 0.8 × 0.5^(8/7) = 0.36; globex: 0.66
    output = ok(await client.call_tool("claims_decayed", {}))
    rows, trailer = csv_rows(output)
    assert [(r["id"], r["effective"]) for r in rows] == [(str(first), "0.36")]
    assert f"marked stale: {first}" in trailer
    assert states(claims_service.db.path) == {first: "stale", second: "active"}
    # asked again: listed again until acted on (issue 30), said to be stale already, not
    # marked twice
    again, trailer = csv_rows(ok(await client.call_tool("claims_decayed", {})))
    assert [(r["id"], r["state"]) for r in again] == [(str(first), "stale")]
    assert "marked stale" not in trailer
    assert f"already stale: {first}" in trailer
    ok(await client.call_tool("claim_confirm", {"id": first}))
    confirmed, _ = csv_rows(ok(await client.call_tool("claims_decayed", {})))
    assert confirmed == []


async def test_as_of_before_a_confirmation_counts_the_claim_as_fresh(client: Client) -> None:
    await add(client, "acme", "fact", "acme ships weekly", volatility="volatile", confidence=0.4)
    rows, _ = csv_rows(ok(await client.call_tool("claims_decayed", {"as_of": iso(-30)})))
    assert [r["effective"] for r in rows] == ["0.40"]  # below 0.5, but not decayed further


# -- claims_contradictions -------------------------------------------------------------------------


async def test_contradictions_now_find_a_duplicate_rank_and_mark_the_claims(
    client: Client, claims_service: Service
) -> None:
    acme, globex = await ranked(client, "acme", 1), await ranked(client, "globex", 1)
    initech = await ranked(client, "initech", 2)
    found = answer(await client.call_tool("claims_contradictions", {}))
    assert found["evaluated_at"] == "now"
    assert [(f["rule"], f["entities"], f["claim_ids"]) for f in found["findings"]] == [
        ("duplicate-rank", ["acme", "globex"], [acme, globex])
    ]
    assert "rank 1" in found["findings"][0]["detail"]
    assert [(c["id"], c["from"], c["to"]) for c in found["state_changes"]] == [
        (acme, "active", "contradicted"),
        (globex, "active", "contradicted"),
    ]
    assert states(claims_service.db.path) == {
        acme: "contradicted", globex: "contradicted", initech: "active",
    }  # fmt: skip
    # resolved: the retracted claim leaves the finding, the other returns to active
    ok(await client.call_tool("claim_retract", {"id": globex}))
    resolved = answer(await client.call_tool("claims_contradictions", {}))
    assert resolved["findings"] == []
    assert [(c["id"], c["from"], c["to"]) for c in resolved["state_changes"]] == [
        (acme, "contradicted", "active")
    ]


async def test_contradictions_find_a_status_conflict(client: Client) -> None:
    first = await add(client, "launch", "status", "the launch is on schedule")
    second = await add(client, "launch", "status", "the launch slipped a month")
    await add(client, "docs", "status", "the docs are done")
    found = answer(await client.call_tool("claims_contradictions", {"as_of": iso(1)}))
    assert [(f["rule"], f["entities"], f["claim_ids"]) for f in found["findings"]] == [
        ("status-conflict", ["launch"], [first, second])
    ]


async def test_contradictions_with_observed_ranks_find_a_rank_drop(client: Client) -> None:
    acme = await ranked(client, "acme", 1)
    await ranked(client, "globex", 5)
    observed = {
        # acme (claimed 1) is worse than 3 in every signal over the valid periods 0, 1 and 3;
        # period 2 is invalid, so its rank 1 does not count; globex (claimed 5) never passes 7
        "signals": [{"acme": [4, 5, 9, 4], "globex": [5, 6, 7, 5]}, {"acme": [6, 4, 1, 5]}],
        "validPeriods": [True, True, False, True],
    }
    found = answer(
        await client.call_tool("claims_contradictions", {"observed": observed, "as_of": iso(0)})
    )
    assert [(f["rule"], f["entities"], f["claim_ids"]) for f in found["findings"]] == [
        ("rank-drop", ["acme"], [acme])
    ]
    assert "claimed rank 1" in found["findings"][0]["detail"]
    # without observed signals there is no rank rule to apply
    plain = answer(await client.call_tool("claims_contradictions", {"as_of": iso(0)}))
    assert plain["findings"] == []


async def test_contradictions_as_of_write_nothing_and_ignore_stored_states(
    client: Client, claims_service: Service, wall: FakeClock
) -> None:
    acme, globex = await ranked(client, "acme", 1), await ranked(client, "globex", 1)
    wall.advance(40 * DAY)  # both below 0.5 now
    ok(await client.call_tool("claims_decayed", {}))
    assert set(states(claims_service.db.path).values()) == {"stale"}
    before = written(claims_service.db.path)
    found = answer(await client.call_tool("claims_contradictions", {"as_of": iso(1)}))
    assert found["evaluated_at"] == iso(1)
    assert [f["claim_ids"] for f in found["findings"]] == [[acme, globex]]
    assert found["state_changes"] == []
    assert written(claims_service.db.path) == before
    # at the present the stale claims are not live: no finding, no change
    now = answer(await client.call_tool("claims_contradictions", {}))
    assert (now["findings"], now["state_changes"]) == ([], [])


# -- the resource ----------------------------------------------------------------------------------


async def test_the_claims_resource_holds_every_claim_as_json(
    client: Client, wall: FakeClock
) -> None:
    acme = await ranked(client, "acme", 1)
    gone = await add(client, "acme", "fact", "acme ships on fridays")
    ok(await client.call_tool("claim_retract", {"id": gone}))
    wall.advance(30 * DAY)
    read = await client.read_resource("claims://all")
    (content,) = read.contents
    assert isinstance(content, TextResourceContents)
    assert (str(content.uri), content.mime_type) == ("claims://all", "application/json")
    claims = json.loads(content.text)
    assert [(c["id"], c["state"], c["effective_confidence"]) for c in claims] == [
        (acme, "active", 0.4),
        (gone, "retired", 0.4),  # retired claims stay in the record
    ]
    assert set(claims[0]) >= {"entity", "kind", "claim", "rank", "volatility", "confidence",
                              "last_confirmed", "created_at", "evidence"}  # fmt: skip
    # read again after a change: the resource is current, not a cached copy
    ok(await client.call_tool("claim_confirm", {"id": acme}))
    (fresh,) = (await client.read_resource("claims://all")).contents
    assert isinstance(fresh, TextResourceContents)
    assert json.loads(fresh.text)[0]["effective_confidence"] == 0.8


async def test_the_claims_resource_of_an_empty_database_is_an_empty_list(client: Client) -> None:
    (content,) = (await client.read_resource("claims://all")).contents
    assert isinstance(content, TextResourceContents)
    assert json.loads(content.text) == []


# -- bad input -------------------------------------------------------------------------------------


BASE = {"entity": "acme", "kind": "fact", "claim": "acme is based in oslo"}


@pytest.mark.parametrize(
    ("tool", "args", "phrases"),
    [
        pytest.param(
            "claim_add", {**BASE, "kind": "rumour"},
            ["kind 'rumour'", "priority, status, fact, relationship"], id="unknown-kind",
        ),
        pytest.param(
            "claim_add", {**BASE, "volatility": "often"},
            ["volatility 'often'", "stable, slow, volatile"], id="unknown-volatility",
        ),
        pytest.param("claim_add", {**BASE, "confidence": 1.5}, ["confidence", "1"],
                     id="confidence-above-1"),
        pytest.param("claim_add", {**BASE, "confidence": -0.5}, ["confidence", "0"],
                     id="confidence-below-0"),
        pytest.param("claim_add", {**BASE, "rank": 2}, ["rank is only for priority claims"],
                     id="rank-on-a-fact"),
        pytest.param("claim_add", {**BASE, "kind": "priority", "rank": 0}, ["rank"],
                     id="rank-zero"),
        pytest.param("claim_add", {**BASE, "entity": " "}, ["entity is empty"], id="no-entity"),
        pytest.param("claim_add", {**BASE, "confirmed_at": "last week"},
                     ["confirmed_at", "ISO-8601", "2026-11-30"], id="unparseable-confirmed-at"),
        pytest.param("claim_add", {**BASE, "evidence": [42]}, ["no memory event 42"],
                     id="unknown-evidence"),
        pytest.param("claim_search", {"query": "  "}, ["query is empty"], id="empty-search"),
        pytest.param("claim_confirm", {"id": 99}, ["no claim 99", "claim_search"],
                     id="confirm-unknown-id"),
        pytest.param("claim_retract", {"id": 99}, ["no claim 99", "claim_search"],
                     id="retract-unknown-id"),
        pytest.param("claim_confirm", {"id": 0}, ["id 0", "whole number"], id="confirm-id-0"),
        pytest.param("claims_decayed", {"as_of": "next tuesday"},
                     ["as_of", "ISO-8601", "2026-11-30"], id="unparseable-as-of"),
        pytest.param("claims_decayed", {"threshold": 1.5}, ["threshold"], id="threshold-above-1"),
        pytest.param("claims_contradictions", {"as_of": "2026-02-30"}, ["as_of", "ISO-8601"],
                     id="impossible-day"),
        pytest.param(
            "claims_contradictions", {"observed": {"signals": [{"acme": [4, 5]}]}},
            ["observed must look like", "validPeriods"], id="observed-without-periods",
        ),
        pytest.param(
            "claims_contradictions",
            {"observed": {"signals": [{"acme": [4, 5]}], "validPeriods": [True, True, True]}},
            ["2 ranks for 3 periods"], id="observed-lengths-differ",
        ),
        pytest.param(
            "claims_contradictions",
            {"observed": {"signals": [{"acme": [4.5]}], "validPeriods": [True]}},
            ["whole-number ranks"], id="observed-non-integer-rank",
        ),
        pytest.param(
            "claims_contradictions",
            {"observed": {"signals": {"acme": [4]}, "validPeriods": [True]}},
            ["signals must be a list"], id="observed-signals-not-a-list",
        ),
        pytest.param(
            "claims_contradictions",
            {"observed": {"signals": [{"acme": [4]}], "validPeriods": ["yes"]}},
            ["validPeriods must hold only true or false"], id="observed-periods-not-booleans",
        ),
    ],
)  # fmt: skip
async def test_bad_input_is_a_tool_error_naming_what_is_allowed_and_writes_nothing(
    client: Client, claims_service: Service, tool: str, args: dict[str, Any], phrases: list[str]
) -> None:
    await ranked(client, "acme", 1)
    before = written(claims_service.db.path)
    message = refused(await client.call_tool(tool, args))
    for phrase in phrases:
        assert phrase in message
    assert "Traceback" not in message
    assert written(claims_service.db.path) == before


# -- audit and chain -------------------------------------------------------------------------------


async def test_every_claims_call_is_audited_with_what_it_was_about(
    client: Client, claims_service: Service
) -> None:
    acme = await ranked(client, "acme", 1)
    ok(await client.call_tool("claim_search", {"query": "acme"}))
    ok(await client.call_tool("claim_confirm", {"id": acme}))
    ok(await client.call_tool("claims_decayed", {"as_of": iso(90)}))
    ok(await client.call_tool("claims_contradictions", {}))
    refused(await client.call_tool("claim_retract", {"id": 99}))
    ok(await client.call_tool("claim_retract", {"id": acme}))
    rows = stored(
        claims_service.db.path, "SELECT tool, ok, rows, error, detail, session FROM query_log"
    )
    assert [(tool, ok_) for tool, ok_, *_ in rows] == [
        ("claim_add", 1), ("claim_search", 1), ("claim_confirm", 1), ("claims_decayed", 1),
        ("claims_contradictions", 1), ("claim_retract", 0), ("claim_retract", 1),
    ]  # fmt: skip
    details = [json.loads(row[4]) if row[4] else {} for row in rows]
    assert details[0] == {"entity": "acme", "kind": "priority"}
    assert details[2] == {"claim": acme}
    assert details[3] == {"as_of": iso(90)}
    assert rows[3][2] == 1  # one claim listed
    assert "no claim 99" in str(rows[5][3])
    assert {row[5] for row in rows} == {SESSION}


async def test_claim_changes_are_chain_events_and_the_chain_verifies(
    client: Client, claims_service: Service
) -> None:
    acme = await ranked(client, "acme", 1)
    ok(await client.call_tool("claim_confirm", {"id": acme, "confidence": 0.9}))
    ok(await client.call_tool("claim_retract", {"id": acme}))
    events = stored(claims_service.db.path, "SELECT id, kind, content FROM memory_events")
    assert [(kind, json.loads(content)["action"]) for _, kind, content in events] == [
        ("claim", "add"), ("claim", "confirm"), ("claim", "retract"),
    ]  # fmt: skip
    assert all(json.loads(content)["claim"] == acme for _, _, content in events)
    linked = stored(claims_service.db.path, "SELECT event_id FROM claims_history ORDER BY id")
    assert linked == [(event_id,) for event_id, _, _ in events]
    verified = json.loads(ok(await client.call_tool("verify_chain", {})))
    assert verified["ok"] is True
    found = ok(await client.call_tool("memory_search", {"query": "retract", "kind": "claim"}))
    assert "claim" in found
