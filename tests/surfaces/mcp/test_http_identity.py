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

from sqlgate.config import Settings
from sqlgate.engine.actors import AuthRefusal, Identity
from sqlgate.engine.audit import AuditEntry
from sqlgate.engine.members import Members
from sqlgate.service import Service
from sqlgate.surfaces.mcp.http_identity import (
    IdentityGate,
    RefusalAudit,
    identity_of,
    server_authenticator,
)
from tests.conftest import FakeClock

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
    with closing(apsw.Connection(str(db))) as conn:
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
