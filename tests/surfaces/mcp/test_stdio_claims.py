"""The claims tools and `claims://all` through real `sqlgate serve` processes on stdio.

Every claims tool is called over the pipe: claims added (a duplicate rank, a status
conflict), contradictions with and without observed ranks (a rank drop), decay asked "as
of" a moment far in the future (nothing written), confirm and retract, the resource, and
the memory chain that holds every change. Two servers adding the same claims at once keep
one claim per identity. The servers run on the real wall clock: claims are added and
judged within seconds, and every "later" is asked with `as_of`, never waited for.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

import anyio
import apsw
import pytest
from mcp import Client
from mcp.types import CallToolResult, TextResourceContents

from sqlgate.surfaces.mcp.server import CLAIMS_INSTRUCTIONS, CLAIMS_TOOLS
from tests.records import connect_both
from tests.surfaces.mcp.test_stdio import serve_params, stdio_server, text

pytestmark = [pytest.mark.stdio, pytest.mark.anyio]

FAR_FUTURE = "2100-01-01"
CONCURRENT_CLAIMS = 12


@pytest.fixture
def server_log(tmp_path: Path) -> Iterator[TextIO]:
    """The server's stderr goes to a file the test can read."""
    with (tmp_path / "server-stderr.txt").open("w+", encoding="utf-8") as handle:
        yield handle


def ok(result: CallToolResult) -> str:
    assert not result.is_error, text(result)
    return text(result)


def json_of(result: CallToolResult) -> dict[str, Any]:
    parsed = json.loads(ok(result))
    assert isinstance(parsed, dict)
    return parsed


def csv_of(result: CallToolResult) -> tuple[list[dict[str, str]], str]:
    *body, trailer = ok(result).splitlines()
    return list(csv.DictReader(io.StringIO("\n".join(body)))), trailer


def read(db: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = connect_both(db, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return [tuple(row) for row in conn.execute(sql)]
    finally:
        conn.close()


def findings(answer: dict[str, Any]) -> list[tuple[str, list[str], list[int]]]:
    return [(f["rule"], f["entities"], f["claim_ids"]) for f in answer["findings"]]


def changes(answer: dict[str, Any]) -> list[tuple[int, str, str]]:
    return [(c["id"], c["from"], c["to"]) for c in answer["state_changes"]]


async def add(client: Client, entity: str, kind: str, claim: str, **extra: Any) -> int:
    arguments = {"entity": entity, "kind": kind, "claim": claim, **extra}
    added = json_of(await client.call_tool("claim_add", arguments))
    assert added["created"] is True
    return int(added["id"])


async def test_every_claims_tool_over_stdio(tmp_path: Path, server_log: TextIO) -> None:
    db = tmp_path / "agent.db"
    async with stdio_server(serve_params(db), server_log) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert set(CLAIMS_TOOLS) <= names
        assert client.instructions is not None
        assert CLAIMS_INSTRUCTIONS in client.instructions
        resources = (await client.list_resources()).resources
        assert [str(r.uri) for r in resources] == ["claims://all"]

        # a duplicate rank (acme and globex both #1) and a status conflict (two for launch)
        acme = await add(client, "acme", "priority", "acme is priority one", rank=1)
        globex = await add(client, "globex", "priority", "globex is priority one", rank=1)
        initech = await add(client, "initech", "priority", "initech is priority two", rank=2)
        on_time = await add(client, "launch", "status", "the launch is on schedule")
        slipped = await add(client, "launch", "status", "the launch slipped a month")
        readd = {"entity": "acme", "kind": "priority", "claim": "acme is priority one", "rank": 1}
        again = json_of(await client.call_tool("claim_add", {**readd, "confidence": 0.9}))
        assert (again["id"], again["created"], again["confidence"]) == (acme, False, 0.9)

        found = json_of(await client.call_tool("claims_contradictions", {}))
        assert findings(found) == [
            ("duplicate-rank", ["acme", "globex"], [acme, globex]),
            ("status-conflict", ["launch"], [on_time, slipped]),
        ]
        assert sorted(changes(found)) == [
            (claim, "active", "contradicted") for claim in (acme, globex, on_time, slipped)
        ]

        # observed ranks: initech (claimed #2) is worse than #4 in every valid period
        observed = {
            "signals": [{"initech": [5, 6, 1, 7]}, {"initech": [8, 5, 2, 9], "acme": [1, 1, 1, 1]}],
            "validPeriods": [True, True, False, True],
        }
        dropped = json_of(await client.call_tool("claims_contradictions", {"observed": observed}))
        assert ("rank-drop", ["initech"], [initech]) in findings(dropped)
        assert len(findings(dropped)) == 3
        assert changes(dropped) == [(initech, "active", "contradicted")]

        # far in the future everything has decayed to the floor; asking writes nothing
        events_before = read(db, "SELECT count(*) FROM memory_events")
        rows, trailer = csv_of(await client.call_tool("claims_decayed", {"as_of": FAR_FUTURE}))
        assert sorted(int(r["id"]) for r in rows) == [acme, globex, initech, on_time, slipped]
        assert {r["effective"] for r in rows} == {"0.05"}
        assert trailer.startswith("# 5 claims below 0.5")
        assert "marked stale" not in trailer
        future = json_of(await client.call_tool("claims_contradictions", {"as_of": FAR_FUTURE}))
        assert (findings(future), changes(future)) == ([], [])  # nothing live then
        assert read(db, "SELECT count(*) FROM memory_events") == events_before
        rows, _ = csv_of(await client.call_tool("claims_decayed", {}))
        assert rows == []  # today nothing has decayed

        confirmed = json_of(await client.call_tool("claim_confirm", {"id": acme}))
        assert confirmed["state"] == "active"
        retired = json_of(await client.call_tool("claim_retract", {"id": globex}))
        assert retired["state"] == "retired"
        refused = await client.call_tool("claim_confirm", {"id": globex})
        assert refused.is_error
        assert "retired" in text(refused)
        missing = await client.call_tool("claim_retract", {"id": 999})
        assert missing.is_error
        assert "no claim 999" in text(missing)

        after = json_of(await client.call_tool("claims_contradictions", {}))
        assert findings(after) == [("status-conflict", ["launch"], [on_time, slipped])]
        assert changes(after) == [(initech, "contradicted", "active")]  # no rank rule now

        rows, trailer = csv_of(await client.call_tool("claim_search", {"query": "LAUNCH"}))
        assert [(int(r["id"]), r["state"]) for r in rows] == [
            (on_time, "contradicted"),
            (slipped, "contradicted"),
        ]
        assert trailer == "# 2 claims"

        (content,) = (await client.read_resource("claims://all")).contents
        assert isinstance(content, TextResourceContents)
        assert content.mime_type == "application/json"
        every = {c["id"]: c["state"] for c in json.loads(content.text)}
        assert every == {
            acme: "active", globex: "retired", initech: "active",
            on_time: "contradicted", slipped: "contradicted",
        }  # fmt: skip

        verified = json_of(await client.call_tool("verify_chain", {}))
        assert verified["ok"] is True
        stats = json_of(await client.call_tool("memory_stats", {}))
        history_rows = read(db, "SELECT count(*) FROM claims_history")[0][0]
        assert stats["kinds"] == {"claim": history_rows}

    # every change is a history row linked to its chain event, whose content names the claim
    linked = read(
        db,
        "SELECT h.claim_id, h.action, e.kind, e.content FROM claims_history AS h "
        "JOIN memory_events AS e ON e.id = h.event_id ORDER BY h.id",
    )
    assert len(linked) == history_rows
    assert all(kind == "claim" and json.loads(content)["claim"] == claim_id
               for claim_id, _, kind, content in linked)  # fmt: skip
    actions = [(claim_id, action) for claim_id, action, _, _ in linked]
    assert actions[:6] == [(acme, "add"), (globex, "add"), (initech, "add"), (on_time, "add"),
                           (slipped, "add"), (acme, "update")]  # fmt: skip
    assert (globex, "retract") in actions
    assert (acme, "confirm") in actions
    server_log.seek(0)
    assert "Traceback" not in server_log.read()


async def test_a_claims_only_server_refuses_bad_input_over_stdio(
    tmp_path: Path, server_log: TextIO
) -> None:
    db = tmp_path / "agent.db"
    async with stdio_server(serve_params(db, "--tools", "claims"), server_log) as client:
        names = sorted(tool.name for tool in (await client.list_tools()).tools)
        assert names == sorted(CLAIMS_TOOLS)
        assert client.instructions == CLAIMS_INSTRUCTIONS
        bad: dict[str, dict[str, Any]] = {
            "claim_add": {"entity": "acme", "kind": "rumour", "claim": "x"},
            "claim_search": {"query": " "},
            "claim_confirm": {"id": 5},
            "claim_retract": {"id": 5},
            "claims_decayed": {"as_of": "whenever"},
            "claims_contradictions": {"observed": {"signals": [{"acme": [1.5]}]}},
        }
        messages = {}
        for tool, arguments in bad.items():
            result = await client.call_tool(tool, arguments)
            assert result.is_error, (tool, text(result))
            messages[tool] = text(result)
    assert "priority, status, fact, relationship" in messages["claim_add"]
    assert "no claim 5" in messages["claim_confirm"]
    assert "ISO-8601" in messages["claims_decayed"]
    assert "validPeriods" in messages["claims_contradictions"]
    assert read(db, "SELECT count(*) FROM claims") == [(0,)]
    assert read(db, "SELECT count(*) FROM memory_events") == [(0,)]
    logged = read(db, "SELECT tool, ok FROM query_log ORDER BY id")
    assert logged == [(tool, 0) for tool in bad]


async def test_two_servers_adding_the_same_claims_at_once_keep_one_claim_each(
    tmp_path: Path,
) -> None:
    db = tmp_path / "shared.db"
    logs = [(tmp_path / f"server-{n}.txt").open("w+", encoding="utf-8") for n in range(2)]
    answers: list[dict[str, Any]] = []
    verified: list[dict[str, Any]] = []
    ready = [anyio.Event(), anyio.Event()]

    async def run(number: int) -> None:
        if number:
            await ready[0].wait()  # the first server creates the file; then both add at once
        params = serve_params(db, "--busy-timeout", "60")
        async with stdio_server(params, logs[number]) as client:
            ready[number].set()
            await ready[1].wait()
            async with anyio.create_task_group() as group:
                for n in range(CONCURRENT_CLAIMS):
                    group.start_soon(add_one, client, n)
            verified.append(json_of(await client.call_tool("verify_chain", {})))

    async def add_one(client: Client, n: int) -> None:
        arguments = {"entity": f"team-{n}", "kind": "fact", "claim": f"team {n} owns billing"}
        answers.append(json_of(await client.call_tool("claim_add", arguments)))

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(run, 0)
            group.start_soon(run, 1)
        for log in logs:
            log.seek(0)
            assert "Traceback" not in log.read()
    finally:
        for log in logs:
            log.close()
    assert len(answers) == 2 * CONCURRENT_CLAIMS
    by_entity: dict[str, list[dict[str, Any]]] = {}
    for added in answers:
        by_entity.setdefault(added["entity"], []).append(added)
    assert len(by_entity) == CONCURRENT_CLAIMS
    for pair in by_entity.values():
        assert pair[0]["id"] == pair[1]["id"]  # one identity, one id
        assert sorted(a["created"] for a in pair) == [False, True]
    assert read(db, "SELECT count(*) FROM claims") == [(CONCURRENT_CLAIMS,)]
    assert read(db, "SELECT action, count(*) FROM claims_history GROUP BY 1 ORDER BY 1") == [
        ("add", CONCURRENT_CLAIMS),
        ("update", CONCURRENT_CLAIMS),
    ]
    assert [v["ok"] for v in verified] == [True, True]
    assert read(db, "SELECT count(*) FROM memory_events") == [(2 * CONCURRENT_CLAIMS,)]
