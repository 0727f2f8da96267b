"""The identity gate in process (issue 22, bad input): each refused credential answers 401
with its `reason` and is audited as an `http_request` row with that reason (coalesced per
reason, actor and peer a minute: an injected clock, no sleeps); a long-lived GET stream is
re-checked and closed once its member is revoked (an injected pause, no sleeps).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, closing
from pathlib import Path
from typing import Any

import anyio
import apsw
import httpx2
import pytest
from mcp.server.auth.provider import AccessToken

from sqlgate.config import Settings
from sqlgate.engine.records.actors import AuthRefusal, Caller, Identity, caller_session
from sqlgate.engine.records.audit import AuditEntry
from sqlgate.engine.records.members import Members
from sqlgate.service import Service
from sqlgate.surfaces.mcp.http_identity import (
    BearerTokenGate,
    IdentityGate,
    RefusalAudit,
    SqlgateUser,
    caller_of,
    identity_of,
    server_authenticator,
)
from tests.conftest import FakeClock
from tests.records import connect_both

pytestmark = pytest.mark.anyio

ADMIN = "admin-t0k3n-of-the-gate-tests-0123"
Scope = dict[str, Any]


class Inner:
    """The app behind the gate: answers 200 naming who reached it."""

    def __init__(self) -> None:
        self.seen: list[Identity | None] = []

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        self.seen.append(identity_of(scope))
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"inner"})


@pytest.fixture
def members(tmp_path: Path) -> Iterator[Members]:
    db = tmp_path / "team.db"
    Service.open(Settings(db=db), actor="cli").close()
    with closing(connect_both(db)) as conn:
        yield Members(conn)


def gate_of(
    app: Any, members: Members | None, written: list[AuditEntry], clock: FakeClock | None = None
) -> IdentityGate:
    audit = RefusalAudit(written.append, clock=clock or FakeClock())
    return IdentityGate(app, server_authenticator(ADMIN, members), audit=audit)


@asynccontextmanager
async def client_of(
    gate: IdentityGate, peer: str = "10.1.2.3"
) -> AsyncIterator[httpx2.AsyncClient]:
    transport = httpx2.ASGITransport(app=gate, client=(peer, 5000))
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        yield client


async def post(
    gate: IdentityGate, headers: list[tuple[bytes, bytes]], peer: str = "10.1.2.3"
) -> httpx2.Response:
    async with client_of(gate, peer) as client:
        return await client.post("/mcp", headers=headers, content=b"{}")


def bearer(token: str | bytes) -> list[tuple[bytes, bytes]]:
    raw = token if isinstance(token, bytes) else token.encode()
    return [(b"authorization", b"Bearer " + raw)]


# -- each bad credential: 401, its reason, an audited row ---------------------------------------


@pytest.mark.parametrize(
    ("headers", "reason", "error"),
    [
        pytest.param([(b"authorization", b"Basic YWxpY2U6c2VjcmV0")], "malformed_header",
                     "invalid_request", id="basic"),
        pytest.param([(b"authorization", ADMIN.encode())], "malformed_header",
                     "invalid_request", id="no-scheme"),
        pytest.param([(b"authorization", f"Bearer {ADMIN} {ADMIN}".encode())],
                     "malformed_header", "invalid_request", id="two-tokens"),
        pytest.param([(b"authorization", "Bearer sqg_caf\u00e9".encode())], "malformed_header",
                     "invalid_request", id="non-ascii"),
        pytest.param([(b"authorization", b"Bearer sqg_\x01tab")], "malformed_header",
                     "invalid_request", id="control-character"),
        pytest.param([(b"authorization", b"Bearer ")], "malformed_header", "invalid_request",
                     id="empty-bearer"),
        pytest.param([(b"authorization", b"")], "malformed_header", "invalid_request",
                     id="empty-header"),
        pytest.param(bearer("sqg_" + "A" * 43), "unknown_token", "invalid_token",
                     id="unknown-member-token"),
        pytest.param(bearer("not-a-token-of-this-server"), "unknown_token", "invalid_token",
                     id="unknown-token"),
    ],
)  # fmt: skip
async def test_a_bad_header_is_answered_401_with_its_reason_and_audited(
    members: Members, headers: list[tuple[bytes, bytes]], reason: str, error: str
) -> None:
    inner, written = Inner(), []
    response = await post(gate_of(inner, members, written), headers)
    assert response.status_code == 401
    body = response.json()
    assert (body["error"], body["reason"]) == (error, reason)
    assert (
        "Authorization: Bearer <token>" in body["message"] or "sqlgate members" in body["message"]
    )
    assert response.headers["www-authenticate"] == f'Bearer realm="sqlgate", error="{error}"'
    assert inner.seen == []
    (entry,) = written
    assert (entry.tool, entry.ok, entry.actor) == ("http_request", False, "(unknown)")
    assert entry.detail == {
        "refused": True, "reason": reason, "peer": "10.1.2.3", "method": "POST", "path": "/mcp",
    }  # fmt: skip
    assert entry.error == body["message"]


async def test_no_credentials_at_all_is_answered_but_not_audited(members: Members) -> None:
    """Every OAuth client asks once without a token, to discover the authorization server."""
    written: list[AuditEntry] = []
    response = await post(gate_of(Inner(), members, written), [])
    assert (response.status_code, response.json()["reason"]) == (401, "missing_token")
    assert written == []


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        pytest.param("revoke", "token_revoked", id="revoked"),
        pytest.param("remove", "member_removed", id="removed"),
        pytest.param("rotate", "token_revoked", id="rotated"),
    ],
)
async def test_an_ended_members_token_is_refused_with_its_reason_and_actor(
    members: Members, change: str, reason: str
) -> None:
    _, token = members.add("erin", "write")
    inner, written = Inner(), []
    gate = gate_of(inner, members, written)
    assert (await post(gate, bearer(token))).status_code == 200
    getattr(members, change)("erin")
    response = await post(gate, bearer(token))
    assert response.status_code == 401
    body = response.json()
    assert body["reason"] == reason
    assert "erin" in body["message"]
    assert inner.seen == [Identity("erin", "write", "member")]
    (entry,) = written
    assert entry.actor == "erin"
    assert entry.detail["reason"] == reason


async def test_a_tier_change_applies_to_the_next_request(members: Members) -> None:
    _, token = members.add("erin", "read")
    inner = Inner()
    gate = gate_of(inner, members, [])
    await post(gate, bearer(token))
    members.set_tier("erin", "destructive")
    await post(gate, bearer(token))
    assert [who.tier for who in inner.seen if who is not None] == ["read", "destructive"]


# -- coalescing, with a clock driven by hand -------------------------------------------------


async def test_refusals_are_coalesced_per_reason_actor_and_peer_a_window(
    members: Members,
) -> None:
    clock, written = FakeClock(), []
    gate = gate_of(Inner(), members, written, clock)
    wrong = bearer("not-a-token-of-this-server")
    for _ in range(3):
        await post(gate, wrong)  # one row, two left out
    await post(gate, wrong, peer="10.9.9.9")  # another peer: its own row
    await post(gate, [(b"authorization", b"Basic x")])  # another reason: its own row
    clock.advance(59.0)
    await post(gate, wrong)  # still within the minute of the first row
    clock.advance(1.0)
    await post(gate, wrong)  # a minute on: a row counting the three left out
    await post(gate, wrong)
    seen = [(e.detail["reason"], e.detail["peer"], e.detail.get("repeats")) for e in written]
    assert seen == [
        ("unknown_token", "10.1.2.3", None),
        ("unknown_token", "10.9.9.9", None),
        ("malformed_header", "10.1.2.3", None),
        ("unknown_token", "10.1.2.3", 3),
    ]


async def test_coalescing_keeps_each_members_refusals_apart(members: Members) -> None:
    _, erin = members.add("erin", "read")
    _, finn = members.add("finn", "read")
    members.revoke("erin")
    members.revoke("finn")
    written: list[AuditEntry] = []
    gate = gate_of(Inner(), members, written)
    for token in (erin, finn, erin, finn):
        await post(gate, bearer(token))
    assert [entry.actor for entry in written] == ["erin", "finn"]


def test_a_flood_of_keys_forgets_the_old_ones() -> None:
    clock, written = FakeClock(), []
    audit = RefusalAudit(written.append, clock=clock)
    refusal = AuthRefusal("unknown_token", "no")
    for n in range(10_002):
        audit.refused(refusal, {"client": (f"10.0.{n // 256}.{n % 256}", 1)})
    clock.advance(61.0)
    audit.refused(refusal, {"client": ("10.200.0.1", 1)})
    assert len(audit._last) <= 2
    assert len(written) == 10_003


# -- a long-lived GET stream is re-checked -----------------------------------------------------


class Rechecks:
    """The gate's timer, run by the test: `fire()` runs the re-check that is due."""

    def __init__(self) -> None:
        self.due: list[Callable[[], Awaitable[None]]] = []
        self.waits: list[float] = []
        self.cancelled = 0

    def schedule(self, delay: float, work: Callable[[], Awaitable[None]]) -> Callable[[], None]:
        self.waits.append(delay)
        self.due.append(work)

        def cancel() -> None:
            if work in self.due:
                self.due.remove(work)
                self.cancelled += 1

        return cancel

    async def fire(self) -> None:
        await anyio.wait_all_tasks_blocked()  # the gate has set its timer by then
        (work,) = self.due
        self.due.remove(work)
        await work()


class Stream:
    """An SSE stream that sends an event each time the test says, until cancelled."""

    def __init__(self) -> None:
        self.send, self.receive = anyio.create_memory_object_stream[bytes](10)
        self.cancelled = False

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")]})  # fmt: skip
        try:
            async for event in self.receive:
                await send({"type": "http.response.body", "body": event, "more_body": True})
        except anyio.get_cancelled_exc_class():
            self.cancelled = True
            raise


async def run_get(
    gate: IdentityGate,
    token: str,
    events: Callable[[list[bytes]], Awaitable[None]],
    method: str = "GET",
) -> list[bytes]:
    """GET through the gate as raw ASGI; `events(got)` runs while the stream is open."""
    got: list[bytes] = []
    ended = anyio.Event()
    scope = {"type": "http", "method": method, "path": "/mcp", "headers": bearer(token),
             "client": ("10.1.2.3", 5000), "query_string": b""}  # fmt: skip

    async def receive() -> dict[str, Any]:
        await ended.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            got.append(message.get("body", b""))
            if not message.get("more_body", False):
                got.append(b"<end>")

    async with anyio.create_task_group() as tg:
        tg.start_soon(gate, scope, receive, send)
        await events(got)
        ended.set()
    return got


@pytest.mark.parametrize(
    "method",
    [
        pytest.param("GET", id="legacy-standalone-stream"),
        pytest.param("POST", id="listen-stream-or-long-call"),
    ],
)
async def test_a_stream_is_closed_once_its_member_is_revoked(members: Members, method: str) -> None:
    _, token = members.add("erin", "read")
    rechecks, stream, written = Rechecks(), Stream(), []
    gate = gate_of(stream, members, written)
    gate.schedule = rechecks.schedule

    async def events(got: list[bytes]) -> None:
        await stream.send.send(b"data: one\n\n")
        await rechecks.fire()  # a re-check while erin is a member: the stream goes on
        await stream.send.send(b"data: two\n\n")
        members.revoke("erin")
        await rechecks.fire()  # the next re-check ends it
        with anyio.fail_after(5):
            while b"<end>" not in got:
                await anyio.wait_all_tasks_blocked()

    with anyio.fail_after(10):
        got = await run_get(gate, token, events, method)
    assert got == [b"data: one\n\n", b"data: two\n\n", b"", b"<end>"]
    assert stream.cancelled
    (entry,) = written
    assert (entry.actor, entry.detail["reason"], entry.detail["method"]) == (
        "erin", "token_revoked", method,
    )  # fmt: skip
    assert rechecks.waits == [gate.recheck_seconds] * 2


async def test_a_get_stream_of_a_member_that_stays_is_never_closed(members: Members) -> None:
    _, token = members.add("erin", "read")
    rechecks, stream, written = Rechecks(), Stream(), []
    gate = gate_of(stream, members, written)
    gate.schedule = rechecks.schedule

    async def events(got: list[bytes]) -> None:
        for n in range(3):
            await rechecks.fire()
            await stream.send.send(b"data: %d\n\n" % n)
        with anyio.fail_after(5):
            while len(got) < 3:
                await anyio.wait_all_tasks_blocked()
        stream.send.close()  # the app ends its stream itself

    with anyio.fail_after(10):
        got = await run_get(gate, token, events)
    assert got[:3] == [b"data: 0\n\n", b"data: 1\n\n", b"data: 2\n\n"]
    assert written == []
    assert rechecks.waits == [gate.recheck_seconds] * 4  # the last cancelled at the end
    assert (rechecks.due, rechecks.cancelled) == ([], 1)


async def test_a_recheck_that_fails_keeps_the_stream_and_checks_again(members: Members) -> None:
    """A lookup that fails (the file busy, say) is no verdict: the next re-check decides."""
    _, token = members.add("erin", "read")
    rechecks, stream, written = Rechecks(), Stream(), []
    gate = gate_of(stream, members, written)
    gate.schedule = rechecks.schedule
    real = gate.authenticate
    failing = [True]

    async def flaky(presented: bytes) -> Identity | AuthRefusal:
        if failing and rechecks.waits:  # a re-check, not the first look
            failing.clear()
            raise apsw.BusyError("database is locked")
        return await real(presented)

    gate.authenticate = flaky

    async def events(got: list[bytes]) -> None:
        await rechecks.fire()  # fails: no verdict
        await stream.send.send(b"data: still\n\n")
        members.revoke("erin")
        await rechecks.fire()  # decides
        with anyio.fail_after(5):
            while b"<end>" not in got:
                await anyio.wait_all_tasks_blocked()

    with anyio.fail_after(10):
        got = await run_get(gate, token, events)
    assert got == [b"data: still\n\n", b"", b"<end>"]
    assert [entry.detail["reason"] for entry in written] == ["token_revoked"]


# -- who each token is: the admin's, a member's, an OAuth token --------------------------------


class OAuthStub:
    """An OAuth verifier that answers `who` and records what it was asked."""

    def __init__(self, who: Identity | AuthRefusal) -> None:
        self.who = who
        self.asked: list[bytes] = []

    async def __call__(self, presented: bytes) -> Identity | AuthRefusal:
        self.asked.append(presented)
        return self.who


JWT_SHAPED = b"eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl"
CAROL = Identity("carol", "read", "oauth")


async def test_the_admin_token_is_admin_at_destructive_beside_members(members: Members) -> None:
    _, token = members.add("erin", "read")
    inner = Inner()
    gate = gate_of(inner, members, [])
    assert (await post(gate, bearer(ADMIN))).status_code == 200
    assert (await post(gate, bearer(token))).status_code == 200
    assert inner.seen == [
        Identity("admin", "destructive", "admin"), Identity("erin", "read", "member"),
    ]  # fmt: skip


async def test_without_an_admin_token_the_members_tokens_still_work(members: Members) -> None:
    _, token = members.add("erin", "read")
    check = server_authenticator(None, members)
    assert await check(token.encode()) == Identity("erin", "read", "member")
    found = await check(ADMIN.encode())
    assert isinstance(found, AuthRefusal)
    assert found.code == "unknown_token"


async def test_a_member_token_without_members_and_a_jwt_without_oauth_are_unknown() -> None:
    check = server_authenticator(ADMIN, None)
    for presented in (b"sqg_" + b"A" * 43, JWT_SHAPED):
        found = await check(presented)
        assert isinstance(found, AuthRefusal)
        assert found.code == "unknown_token"


async def test_only_a_three_part_token_goes_to_oauth(members: Members) -> None:
    oauth = OAuthStub(CAROL)
    check = server_authenticator(ADMIN, members, oauth)
    assert await check(JWT_SHAPED) == CAROL
    for presented in (b"a.b", b"a.b.c.d", b"no-dots-at-all", b"sqg_a.b.c"):
        found = await check(presented)
        assert isinstance(found, AuthRefusal)
        assert found.code == "unknown_token"
    assert oauth.asked == [JWT_SHAPED]  # a member-looking token is the members' to answer
    refused = AuthRefusal("expired", "the token expired", "carol")
    assert await server_authenticator(None, None, OAuthStub(refused))(JWT_SHAPED) is refused


async def test_the_bearer_gate_knows_only_its_token() -> None:
    inner = Inner()
    gate = BearerTokenGate(inner, ADMIN)
    assert (await post(gate, bearer(ADMIN))).status_code == 200
    assert (await post(gate, bearer("sqg_" + "A" * 43))).status_code == 401
    assert inner.seen == [Identity("admin", "destructive", "admin")]


@pytest.mark.parametrize("token", ["sqg_!edge~", "!", "~"])
async def test_every_printable_ascii_character_may_be_in_a_token(
    members: Members, token: str
) -> None:
    response = await post(gate_of(Inner(), members, []), bearer(token))
    assert (response.status_code, response.json()["reason"]) == (401, "unknown_token")


async def test_a_delete_character_makes_the_header_malformed(members: Members) -> None:
    response = await post(gate_of(Inner(), members, []), bearer(b"sqg_\x7fdel"))
    assert (response.status_code, response.json()["reason"]) == (401, "malformed_header")


async def test_no_credentials_get_a_plain_challenge_without_an_error_code(
    members: Members,
) -> None:
    response = await post(gate_of(Inner(), members, []), [])
    assert response.headers["www-authenticate"] == 'Bearer realm="sqlgate"'
    assert (response.json()["error"], response.headers["cache-control"]) == (
        "unauthorized", "no-store",
    )  # fmt: skip


async def test_a_gate_without_an_audit_still_refuses(members: Members) -> None:
    gate = IdentityGate(Inner(), server_authenticator(ADMIN, members))
    response = await post(gate, bearer("not-a-token-of-this-server"))
    assert (response.status_code, response.json()["reason"]) == (401, "unknown_token")


# -- what the app behind the gate is told ------------------------------------------------------


class Scopes:
    """An app that keeps each scope it is given and answers 200."""

    def __init__(self) -> None:
        self.seen: list[Scope] = []

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        self.seen.append(scope)
        if scope["type"] == "http":
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"ok"})


async def test_an_accepted_request_carries_its_user_and_tier_scope(members: Members) -> None:
    _, token = members.add("erin", "write")
    app = Scopes()
    assert (await post(gate_of(app, members, []), bearer(token))).status_code == 200
    (scope,) = app.seen
    assert scope["auth"].scopes == ["sqlgate:write"]
    user = scope["user"]
    assert isinstance(user, SqlgateUser)
    assert user.sqlgate_identity == Identity("erin", "write", "member")
    principal = user.access_token
    assert (principal.client_id, principal.subject, principal.scopes, principal.claims) == (
        "member:erin", "erin", ["sqlgate:write"], {"iss": "sqlgate:member"},
    )  # fmt: skip
    assert principal.token == ""  # the token itself is never kept


def test_a_user_made_from_an_oauth_token_keeps_that_token() -> None:
    access = AccessToken(token="t", client_id="claude-code", scopes=["sqlgate:read"],
                         subject="carol")  # fmt: skip
    assert SqlgateUser(CAROL, access).access_token is access


def test_a_call_runs_as_the_caller_the_gate_named() -> None:
    scope = {"type": "http", "user": SqlgateUser(Identity("erin", "read", "member"))}
    caller = caller_of(scope, "s-1", "mcp-session-7", "claude-code/2.0")
    assert caller == Caller(
        Identity("erin", "read", "member"),
        caller_session("s-1", "erin", "mcp-session-7"),
        "claude-code/2.0",
    )
    assert caller_of({"type": "http"}, "s-1", None) is None


# -- public paths and websockets ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        pytest.param("GET", "/.well-known/oauth-protected-resource", 200, id="get-metadata"),
        pytest.param("HEAD", "/.well-known/oauth-protected-resource", 200, id="head-metadata"),
        pytest.param("GET", "/.well-known/oauth-protected-resource/mcp", 200, id="get-of-mcp"),
        pytest.param("POST", "/.well-known/oauth-protected-resource", 401, id="post-metadata"),
        pytest.param("GET", "/.well-known/oauth-protected-resourcex", 401, id="longer-name"),
        pytest.param("GET", "/mcp", 401, id="get-mcp"),
    ],
)
async def test_only_gets_of_the_resource_metadata_pass_without_a_token(
    members: Members, method: str, path: str, status: int
) -> None:
    written: list[AuditEntry] = []
    async with client_of(gate_of(Inner(), members, written)) as client:
        response = await client.request(method, path)
    assert response.status_code == status


async def websocket(gate: IdentityGate, headers: list[tuple[bytes, bytes]]) -> list[Any]:
    sent: list[Any] = []

    async def receive() -> dict[str, Any]:
        return {"type": "websocket.connect"}

    async def send(message: Any) -> None:
        sent.append(message)

    scope = {"type": "websocket", "path": "/.well-known/oauth-protected-resource",
             "headers": headers, "client": ("10.1.2.3", 5000)}  # fmt: skip
    await gate(scope, receive, send)
    return sent


async def test_a_websocket_that_names_no_one_is_closed_as_a_policy_violation(
    members: Members,
) -> None:
    app, written = Scopes(), []
    gate = gate_of(app, members, written)
    assert await websocket(gate, []) == [{"type": "websocket.close", "code": 1008}]
    assert await websocket(gate, bearer("wrong")) == [{"type": "websocket.close", "code": 1008}]
    assert app.seen == []
    assert [entry.detail["reason"] for entry in written] == ["unknown_token"]
    assert await websocket(gate, bearer(ADMIN)) == []
    assert [identity_of(scope) for scope in app.seen] == [Identity("admin", "destructive", "admin")]


# -- the refusal audit's memory ----------------------------------------------------------------


def test_a_refusal_without_a_peer_is_audited_from_an_unknown_one() -> None:
    written: list[AuditEntry] = []
    RefusalAudit(written.append, clock=FakeClock()).refused(
        AuthRefusal("unknown_token", "no"), {"type": "http"}
    )
    assert written[0].detail["peer"] == "?"


def test_the_same_refusal_a_window_later_counts_no_repeats_when_none_were_left_out() -> None:
    clock, written = FakeClock(), []
    audit = RefusalAudit(written.append, clock=clock)
    refusal, scope = AuthRefusal("unknown_token", "no"), {"client": ("10.0.0.1", 1)}
    audit.refused(refusal, scope)
    clock.advance(60.0)
    audit.refused(refusal, scope)
    assert [entry.detail.get("repeats", "none") for entry in written] == ["none", "none"]


def test_past_10_000_keys_only_those_a_window_old_are_forgotten() -> None:
    clock, written = FakeClock(), []
    audit = RefusalAudit(written.append, clock=clock)
    refusal = AuthRefusal("unknown_token", "no")
    for n in range(10_000):
        audit.refused(refusal, {"client": (f"10.0.{n // 256}.{n % 256}", 1)})
    clock.advance(60.0)  # every one of them exactly a window old
    audit.refused(refusal, {"client": ("10.200.0.1", 1)})
    assert len(audit._last) == 10_001  # 10 000 kept: nothing is forgotten yet
    audit.refused(refusal, {"client": ("10.200.0.2", 1)})
    assert sorted(key[2] for key in audit._last) == ["10.200.0.1", "10.200.0.2"]


# -- the re-checks' timer, and the end of an answer --------------------------------------------


async def test_the_gate_rechecks_every_10_s_on_the_timer_it_was_given(members: Members) -> None:
    _, token = members.add("erin", "read")
    rechecks, stream = Rechecks(), Stream()
    gate = IdentityGate(stream, server_authenticator(ADMIN, members), schedule=rechecks.schedule)

    async def events(got: list[bytes]) -> None:
        await rechecks.fire()
        stream.send.close()

    with anyio.fail_after(10):
        await run_get(gate, token, events)
    assert rechecks.waits == [10.0, 10.0]


class Answer:
    """An app that sends `messages`, then waits until it is cancelled."""

    def __init__(self, *messages: dict[str, Any]) -> None:
        self.messages = messages

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        for message in self.messages:
            await send(message)
        await anyio.sleep_forever()


START = {"type": "http.response.start", "status": 200, "headers": []}


@pytest.mark.parametrize(
    ("messages", "after"),
    [
        pytest.param((START,), [b"", b"<end>"], id="started-no-body: the body is ended"),
        pytest.param(
            (START, {"type": "http.response.body", "body": b"done"}),
            [b"done", b"<end>"],
            id="finished: nothing more is sent",
        ),
    ],
)
async def test_a_revoked_answer_is_ended_once_whatever_it_had_sent(
    members: Members, messages: tuple[dict[str, Any], ...], after: list[bytes]
) -> None:
    _, token = members.add("erin", "read")
    rechecks = Rechecks()
    gate = gate_of(Answer(*messages), members, [])
    gate.schedule = rechecks.schedule

    async def events(got: list[bytes]) -> None:
        await anyio.wait_all_tasks_blocked()  # the answer has sent what it sends
        members.revoke("erin")
        await rechecks.fire()

    with anyio.fail_after(10):
        got = await run_get(gate, token, events, "POST")
    assert got == after


async def test_a_recheck_due_after_the_answer_ended_does_nothing(members: Members) -> None:
    _, token = members.add("erin", "read")
    rechecks, stream = Rechecks(), Stream()
    gate = gate_of(stream, members, [])
    late: list[Callable[[], Awaitable[None]]] = []

    def schedule(delay: float, work: Callable[[], Awaitable[None]]) -> Callable[[], None]:
        late.append(work)
        return rechecks.schedule(delay, work)

    gate.schedule = schedule
    asked: list[bytes] = []
    real = gate.authenticate

    async def counted(presented: bytes) -> Identity | AuthRefusal:
        asked.append(presented)
        return await real(presented)

    gate.authenticate = counted

    async def events(got: list[bytes]) -> None:
        stream.send.close()

    with anyio.fail_after(10):
        await run_get(gate, token, events)
    await late[0]()  # its timer fired just as the answer ended
    assert (len(asked), rechecks.waits) == (1, [10.0])
