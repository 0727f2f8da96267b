"""Sessions of a team server (issue 22): a revoked or removed member's open session fails
at its next request (HTTP 401 with the reason, audited); two teammates never share a
session, and one's session cannot be used with the other's token (the SDK answers 404);
every audit row of the run names its actor; a destructive call's confirmation goes to the
session that made it, and its audit row says who confirmed it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp.client.context import ClientRequestContext
from mcp.types import ElicitRequestParams, ElicitResult

from tests.surfaces.mcp.team_server import (
    ERAS,
    Team,
    audit_rows,
    member_client,
    open_team,
)
from tests.surfaces.mcp.test_http import CALL_SECONDS

pytestmark = [pytest.mark.stdio]

MEMBERS = {"alice": "destructive", "bob": "destructive", "carol": "write", "dave": "read"}
ACCEPT = {"Accept": "application/json, text/event-stream"}
LEGACY = "2025-11-25"


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Team]:
    team = open_team(tmp_path_factory.mktemp("sessions") / "team.db", MEMBERS)
    try:
        yield team
    finally:
        team.server.stop()


def answer_of(response: httpx2.Response) -> dict[str, Any]:
    """The JSON-RPC answer of a POST: a JSON body, or the last `data:` of an SSE body."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
        return dict(json.loads(data[-1]))
    return dict(response.json())


@dataclass
class RawSession:
    """A legacy (stateful) MCP session spoken by hand, to see each HTTP answer."""

    url: str
    token: str
    id: str | None = None
    next_id: int = field(default=1)

    def post(self, message: dict[str, Any], token: str | None = None) -> httpx2.Response:
        headers = {**ACCEPT, "Authorization": f"Bearer {token or self.token}"}
        if self.id is not None:
            headers["Mcp-Session-Id"] = self.id
            headers["Mcp-Protocol-Version"] = LEGACY
        return httpx2.post(self.url, json=message, headers=headers, timeout=CALL_SECONDS)

    def request(self, method: str, params: dict[str, Any], token: str | None = None) -> Any:
        self.next_id += 1
        return self.post({"jsonrpc": "2.0", "id": self.next_id, "method": method,
                          "params": params}, token)  # fmt: skip

    def open(self) -> RawSession:
        response = self.request("initialize", {
            "protocolVersion": LEGACY, "capabilities": {},
            "clientInfo": {"name": "raw-test", "version": "1.0"},
        })  # fmt: skip
        assert response.status_code == 200, response.text
        self.id = response.headers["mcp-session-id"]
        done = self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert done.status_code == 202, done.text
        return self

    def call(self, tool: str, token: str | None = None, **arguments: Any) -> httpx2.Response:
        return self.request("tools/call", {"name": tool, "arguments": arguments}, token)


def refused_rows(db: Path, reason: str, actor: str) -> list[dict[str, Any]]:
    return [
        row.detail
        for row in audit_rows(db, lambda row: row.tool == "http_request" and row.actor == actor)
        if row.detail.get("reason") == reason and not row.ok
    ]


# -- revocation during an open session -------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        pytest.param("revoke", "token_revoked", id="revoked"),
        pytest.param("remove", "member_removed", id="removed"),
    ],
)
def test_an_open_session_fails_at_its_next_request_once_its_member_is_ended(
    tmp_path: Path, change: str, reason: str
) -> None:
    team = open_team(tmp_path / "team.db", {"erin": "write"})
    try:
        session = RawSession(team.url, team.tokens["erin"]).open()
        before = session.call("read_query", query="SELECT 1 AS one")
        assert before.status_code == 200
        assert answer_of(before)["result"]["isError"] is False
        members = team.members()  # another connection: what `sqlgate members` does
        with closing(members.conn):
            getattr(members, change)("erin")
        after = session.call("read_query", query="SELECT 2 AS two")
        listing = session.request("tools/list", {})
    finally:
        team.server.stop()
    for response in (after, listing):
        assert response.status_code == 401
        body = response.json()
        assert body["reason"] == reason
        assert "erin" in body["message"]
        assert 'error="invalid_token"' in response.headers["www-authenticate"]
    (row,) = refused_rows(team.db, reason, "erin")  # the second one coalesced into it
    assert row["method"] == "POST"
    assert row["path"] == "/mcp"
    ran = audit_rows(team.db, lambda row: row.tool == "read_query")
    assert len(ran) == 1  # the call after the change never ran


# -- two teammates, two sessions -------------------------------------------------------------


def test_teammates_never_share_a_session_and_cannot_use_each_others(team: Team) -> None:
    alice = RawSession(team.url, team.tokens["alice"]).open()
    bob = RawSession(team.url, team.tokens["bob"]).open()
    assert alice.id != bob.id
    assert answer_of(alice.call("read_query", query="SELECT 'alice' AS who"))["result"]
    assert answer_of(bob.call("read_query", query="SELECT 'bob' AS who"))["result"]
    # alice's session, presented with bob's token: the SDK answers as if it did not exist
    stolen = alice.call("read_query", token=team.tokens["bob"], query="SELECT 'stolen' AS who")
    assert stolen.status_code == 404
    # and still works for alice
    assert alice.call("read_query", query="SELECT 'again' AS who").status_code == 200
    rows = audit_rows(team.db, lambda row: row.tool == "read_query")
    by_query = {row.actor: row.session for row in rows}
    assert set(by_query) >= {"alice", "bob"}
    assert by_query["alice"] != by_query["bob"]
    assert "/alice/" in by_query["alice"]
    assert "/bob/" in by_query["bob"]
    assert not [row for row in rows if "stolen" in str(row.query)]


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ERAS)
async def test_every_audit_row_of_a_team_run_names_its_actor(tmp_path: Path, mode: str) -> None:
    team = open_team(tmp_path / "team.db", {"carol": "write", "dave": "read"})
    try:
        with anyio.fail_after(CALL_SECONDS * 2):
            for who in ("carol", "dave", "admin"):
                async with member_client(team.url, team.tokens[who], mode) as client:
                    await client.call_tool("read_query", {"query": f"SELECT '{who}' AS who"})
                    await client.call_tool("append_event", {"content": f"note of {who}"})
                    await client.call_tool("write_query", {"query": "CREATE TABLE IF NOT "
                                                           f"EXISTS t_{who} (x)"})  # fmt: skip
            bad = httpx2.post(team.url, json={}, headers={"Authorization": "Bearer sqg_nope"})
            assert bad.status_code == 401
    finally:
        team.server.stop()
    rows = audit_rows(team.db)
    assert rows
    assert all(row.actor is not None for row in rows), rows
    calls = {(row.actor, row.tool, row.ok) for row in rows if row.tool != "http_request"}
    assert calls == {
        ("carol", "read_query", True), ("carol", "append_event", True),
        ("carol", "write_query", True),
        ("dave", "read_query", True), ("dave", "append_event", False),
        ("dave", "write_query", False),
        ("admin", "read_query", True), ("admin", "append_event", True),
        ("admin", "write_query", True),
    }  # fmt: skip
    for row in rows:
        if row.tool != "http_request":
            assert f"/{row.actor}" in row.session
            assert row.detail.get("client", "mcp").startswith("mcp")
    (unknown,) = [row for row in rows if row.tool == "http_request"]
    assert unknown.actor == "(unknown)"
    assert unknown.detail["reason"] == "unknown_token"
    # the memory events carry the actor in their (hashed) session
    with closing(team.members().conn) as conn:
        events = conn.execute("SELECT session, content FROM memory_events").fetchall()
    assert sorted((session.split("/")[1], content) for session, content in events) == [
        ("admin", "note of admin"),
        ("carol", "note of carol"),
    ]


# -- confirmation goes to the session that asked ----------------------------------------------


class Person:
    """A client's user: records each question, answers `approve`."""

    def __init__(self, approve: bool = True) -> None:
        self.questions: list[str] = []
        self.approve = approve

    async def __call__(self, context: ClientRequestContext, params: ElicitRequestParams) -> Any:
        self.questions.append(params.message)
        return ElicitResult(action="accept", content={"approve": self.approve})


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ERAS)
async def test_a_confirmation_reaches_only_the_session_that_made_the_call(
    team: Team, mode: str
) -> None:
    table = f"doomed_{mode}"
    alice_person, bob_person = Person(), Person()
    with anyio.fail_after(CALL_SECONDS * 2):
        async with (
            member_client(team.url, team.tokens["alice"], mode,
                          elicitation_callback=alice_person) as alice,
            member_client(team.url, team.tokens["bob"], mode,
                          elicitation_callback=bob_person) as bob,
        ):  # fmt: skip
            await alice.call_tool("read_query", {"query": "SELECT 1"})  # alice's session is open
            made = await bob.call_tool("write_query", {"query": f"CREATE TABLE {table} (x)"})
            assert not made.is_error
            dropped = await bob.call_tool(
                "destructive_query", {"query": f"DROP TABLE {table}", "reason": "a test table"}
            )
            await alice.call_tool("read_query", {"query": "SELECT 2"})
    assert not dropped.is_error, dropped
    assert len(bob_person.questions) == 1
    assert f"DROP TABLE {table}" in bob_person.questions[0]
    assert alice_person.questions == []
    (row,) = audit_rows(
        team.db, lambda row: row.tool == "destructive_query" and row.query == f"DROP TABLE {table}"
    )
    assert row.actor == "bob"
    assert row.ok
    assert row.detail["confirmed_by"] == "bob"


# -- a malformed header reaches the audit log of the file ---------------------------------------


def test_a_malformed_header_is_answered_401_and_lands_in_the_audit_log(team: Team) -> None:
    """Each malformed shape is tested in process (test_http_identity); here, the row."""
    response = httpx2.post(
        team.url, json={}, headers={**ACCEPT, "Authorization": f"Basic {team.tokens['dave']}"}
    )
    assert response.status_code == 401
    assert response.json()["reason"] == "malformed_header"
    (row,) = refused_rows(team.db, "malformed_header", "(unknown)")
    assert row == {
        "refused": True, "reason": "malformed_header", "peer": "127.0.0.1", "method": "POST",
        "path": "/mcp",
    }  # fmt: skip
    assert team.tokens["dave"] not in str(audit_rows(team.db))  # never written down


def test_a_tier_change_applies_to_an_open_session_at_its_next_request(tmp_path: Path) -> None:
    """The SDK binds a session to its principal (the member), not to its scopes: the
    session goes on with the new tier, and a rotated token continues it too."""
    team = open_team(tmp_path / "team.db", {"erin": "read"})
    try:
        session = RawSession(team.url, team.tokens["erin"]).open()
        before = answer_of(session.request("tools/list", {}))["result"]["tools"]
        members = team.members()
        with closing(members.conn):
            members.set_tier("erin", "write")
            after = answer_of(session.request("tools/list", {}))["result"]["tools"]
            _, rotated = members.rotate("erin")
        made = session.call("write_query", token=rotated, query="CREATE TABLE t (x)")
    finally:
        team.server.stop()
    assert "write_query" not in [tool["name"] for tool in before]
    assert "write_query" in [tool["name"] for tool in after]
    assert made.status_code == 200
    assert answer_of(made)["result"]["isError"] is False
