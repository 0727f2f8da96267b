"""Who each HTTP request is: the identity gate in front of the MCP app (issue 22).

Every request carries `Authorization: Bearer <token>`, and the token names someone:

    token                     identity                 tier
    the server's --token      admin                    destructive
    sqg_... (a member's)      the member's name        the member's (engine/records/members.py)
    a JWT of --oauth-issuer   its sub (or email)       from its scopes (surfaces/mcp/oauth.py)

A request that names no one is answered 401 with a JSON body whose `reason` says why
(`missing_token`, `malformed_header`, `unknown_token`, `token_revoked`, `member_removed`,
and the OAuth reasons), and, except a request with no credentials at all (every OAuth client
sends one first, to discover the authorization server), it is audited as a refused
`http_request` row with that reason, at most one row per reason, actor and peer a minute
(`RefusalAudit`: the next one counts those left out).

An accepted request reaches the app with `scope["user"]`, the SDK's `AuthenticatedUser`
(so the SDK binds each MCP session to the identity that opened it: another identity gets 404
for it), carrying the sqlgate `Identity` that `caller_of` turns into the `Caller` a tool call
runs as.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import anyio
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from starlette.authentication import AuthCredentials

from sqlgate.service import (
    AuditEntry,
    AuthRefusal,
    Caller,
    Identity,
    Members,
    caller_session,
    looks_like_member_token,
)
from sqlgate.surfaces.web.asgi import ASGIApp, Receive, Scope, Send, header, send_answer

__all__ = [
    "PUBLIC_PATHS",
    "Authenticate",
    "BearerTokenGate",
    "IdentityGate",
    "RefusalAudit",
    "SqlgateUser",
    "admin_authenticator",
    "caller_of",
    "identity_of",
    "server_authenticator",
]

log = logging.getLogger(__name__)
# how often the token of an answer still going on is checked again (IdentityGate._watched)
RECHECK_SECONDS = 10.0
UNKNOWN_ACTOR = "(unknown)"  # a refused request's actor when its token names no one
# what a client may fetch without a token: RFC 9728's protected-resource metadata
PUBLIC_PATHS = ("/.well-known/oauth-protected-resource",)

Authenticate = Callable[[bytes], Awaitable[Identity | AuthRefusal]]

# run `work` in `delay` seconds unless the returned function is called first
Recheck = Callable[[], Coroutine[Any, Any, None]]
Schedule = Callable[[float, Recheck], Callable[[], None]]
_rechecks: set[asyncio.Task[None]] = set()  # running re-checks, kept from the collector


def call_later(delay: float, work: Recheck) -> Callable[[], None]:
    """The event loop's timer (a task per request would cost each ~150 µs; a timer set and
    cancelled costs a few)."""
    loop = asyncio.get_running_loop()

    def due() -> None:
        task = loop.create_task(work())
        _rechecks.add(task)
        task.add_done_callback(_rechecks.discard)

    return loop.call_later(delay, due).cancel


SCOPE_OF_TIER = {tier: f"sqlgate:{tier}" for tier in ("read", "write", "destructive")}
MISSING = AuthRefusal(
    "missing_token",
    "send the header Authorization: Bearer <token> (the token sqlgate serve was given or "
    "printed, or yours from `sqlgate members add`)",
)
MALFORMED = AuthRefusal(
    "malformed_header",
    "the Authorization header must be `Bearer <token>` with one token of printable ASCII; "
    "send the header Authorization: Bearer <token>",
)


UNKNOWN = AuthRefusal(
    "unknown_token",
    "this token is not one of this server's: send the header Authorization: Bearer <token> "
    "with the token sqlgate serve was given or printed, or yours from `sqlgate members add` "
    "(ask the person who runs sqlgate)",
)


class SqlgateUser(AuthenticatedUser):
    """The SDK's authenticated user, with the sqlgate identity it stands for."""

    def __init__(self, identity: Identity, token: AccessToken | None = None) -> None:
        super().__init__(
            token
            or AccessToken(
                token="",  # never kept: the SDK compares principals, not tokens
                client_id=f"{identity.kind}:{identity.actor}",
                scopes=[SCOPE_OF_TIER[identity.tier]],
                subject=identity.actor,
                claims={"iss": f"sqlgate:{identity.kind}"},
            )
        )
        self.sqlgate_identity = identity


def identity_of(scope: Scope) -> Identity | None:
    user = scope.get("user") if isinstance(scope, dict) else None
    return user.sqlgate_identity if isinstance(user, SqlgateUser) else None


def caller_of(
    scope: Scope, server_session: str, mcp_session_id: str | None, client: str | None = None
) -> Caller | None:
    """The caller an HTTP request's tool call runs as (engine.records.actors), or None when the
    request passed no identity gate (stdio; --insecure-no-token)."""
    identity = identity_of(scope)
    if identity is None:
        return None
    session = caller_session(server_session, identity.actor, mcp_session_id)
    return Caller(identity, session, client)


def admin_authenticator(token: str) -> Authenticate:
    """The legacy --token, compared in constant time: the `admin` identity."""
    expected = token.encode("ascii")
    admin = Identity("admin", "destructive", "admin")

    async def authenticate(presented: bytes) -> Identity | AuthRefusal:
        return admin if hmac.compare_digest(presented, expected) else UNKNOWN

    return authenticate


def server_authenticator(
    admin_token: str | None, members: Members | None, oauth: Authenticate | None = None
) -> Authenticate:
    """Who a token is, by this module's table: the --token first (in constant time), then a
    member's token (`sqg_...`), then an OAuth access token (a JWT: three dot-separated parts).

    `members` reads through its own connection, used only on the event loop's thread: every
    request is checked against the tables, so a revocation applies to the next request."""
    admin = admin_authenticator(admin_token) if admin_token is not None else None

    async def authenticate(presented: bytes) -> Identity | AuthRefusal:
        if admin is not None:
            found = await admin(presented)
            if isinstance(found, Identity):
                return found
        if members is not None and looks_like_member_token(presented):
            return members.authenticate(presented)
        if oauth is not None and presented.count(b".") == 2:
            return await oauth(presented)
        return UNKNOWN

    return authenticate


@dataclass
class RefusalAudit:
    """Writes refused requests to the audit log, one row per (reason, actor, peer) a
    `window` of seconds; the next row of that key counts the ones left out (`repeats`)."""

    write: Callable[[AuditEntry], None]
    window: float = 60.0
    clock: Callable[[], float] = time.monotonic
    _last: dict[tuple[str, str | None, str], tuple[float, int]] = field(default_factory=dict)

    def refused(self, refusal: AuthRefusal, scope: Scope) -> None:
        peer = str((scope.get("client") or ("?",))[0])
        key = (refusal.code, refusal.actor, peer)
        now = self.clock()
        last = self._last.get(key)
        if last is not None and now - last[0] < self.window:
            self._last[key] = (last[0], last[1] + 1)
            return
        if len(self._last) > 10_000:  # a flood of keys: forget the old ones
            self._last = {k: v for k, v in self._last.items() if now - v[0] < self.window}
        self._last[key] = (now, 0)
        detail: dict[str, Any] = {
            "refused": True,
            "reason": refusal.code,
            "peer": peer,
            "method": str(scope.get("method", "")),
            "path": str(scope.get("path", "")),
        }
        if last is not None and last[1]:
            detail["repeats"] = last[1]  # the same refusal, left out since the last row
        entry = AuditEntry(tool="http_request", error=refusal.message, detail=detail)
        # "(unknown)" cannot be a member's or a subject's name (engine.records.actors)
        entry.actor = refusal.actor or UNKNOWN_ACTOR
        self.write(entry)


class IdentityGate:
    """Pure ASGI middleware: HTTP and WebSocket requests that name no one are refused.

    `authenticate` says who a token is; `challenge` adds to the `WWW-Authenticate` header
    (the OAuth resource metadata URL, RFC 9728). Lifespan events and `PUBLIC_PATHS` pass
    through. Accepted requests go on through the SDK's `AuthContextMiddleware`.
    """

    def __init__(
        self,
        app: ASGIApp,
        authenticate: Authenticate,
        *,
        challenge: str = "",
        audit: RefusalAudit | None = None,
        schedule: Schedule | None = None,
    ) -> None:
        self.app = AuthContextMiddleware(app)
        self.public = app
        self.authenticate = authenticate
        self.challenge = challenge
        self.audit = audit
        self.recheck_seconds = RECHECK_SECONDS
        self.schedule = schedule or call_later  # the re-checks (tests run them by hand)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.public(scope, receive, send)
            return
        if scope.get("method") in ("GET", "HEAD"):  # a websocket scope has no method
            path = str(scope.get("path", ""))
            if any(path == p or path.startswith(p + "/") for p in PUBLIC_PATHS):
                await self.public(scope, receive, send)
                return
        found = _bearer_credentials(scope)
        if found is None:
            result: Identity | AuthRefusal = MISSING
        elif not found:
            result = MALFORMED
        else:
            result = await self.authenticate(found)
        if isinstance(result, Identity):
            scope["user"] = SqlgateUser(result)
            scope["auth"] = AuthCredentials([SCOPE_OF_TIER[result.tier]])
            if scope["type"] == "http":
                assert found is not None
                await self._watched(scope, receive, send, found)
            else:
                await self.app(scope, receive, send)
            return
        await self._refuse(scope, send, result)

    async def _refuse(self, scope: Scope, send: Send, refusal: AuthRefusal) -> None:
        if self.audit is not None and refusal is not MISSING:
            self.audit.refused(refusal, scope)
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
        else:
            await self._unauthorized(send, refusal)

    async def _watched(self, scope: Scope, receive: Receive, send: Send, token: bytes) -> None:
        """Serve an accepted request and check its token again every `recheck_seconds`
        for as long as its answer lasts: once the token names no one (revoked, removed),
        its answer is ended (an SSE stream cleanly) and the refusal audited. Most answers
        end long before the first re-check, which costs them a timer set and cancelled;
        what it is for are the long ones: a legacy session's standalone GET stream, open as
        long as the session, a 2026-07-28 `subscriptions/listen` stream, and the answer
        stream of a long call (a legacy session's call runs in the session and finishes,
        its answer undelivered; docs/security-model.md, "What the gate checks")."""
        started = finished = over = False
        refused: AuthRefusal | None = None
        stop: Callable[[], None]

        async def tracked(message: Any) -> None:
            nonlocal started, finished
            if message["type"] == "http.response.start":
                started = True
            elif message["type"] == "http.response.body" and not message.get("more_body"):
                finished = True
            await send(message)

        with anyio.CancelScope() as answering:

            async def recheck() -> None:
                nonlocal refused, stop
                if over:
                    return
                try:
                    found: Identity | AuthRefusal | None = await self.authenticate(token)
                except Exception as exc:  # no verdict (the file busy): the next one decides
                    log.warning("re-check of a request's token failed: %s", exc)
                    found = None
                if isinstance(found, AuthRefusal):
                    refused = found
                    answering.cancel()
                elif not over:
                    stop = self.schedule(self.recheck_seconds, recheck)

            stop = self.schedule(self.recheck_seconds, recheck)
            try:
                await self.app(scope, receive, tracked)
            finally:
                over = True
                stop()
        if refused is None:
            return
        if self.audit is not None:
            self.audit.refused(refused, scope)
        if not started:
            await self._unauthorized(send, refused)
        elif not finished:
            await send({"type": "http.response.body"})  # ASGI: no body, no more_body

    async def _unauthorized(self, send: Send, refusal: AuthRefusal) -> None:
        error = {"missing_token": "", "malformed_header": "invalid_request"}.get(
            refusal.code, "invalid_token"
        )
        parts = ['Bearer realm="sqlgate"']
        if error:
            parts.append(f'error="{error}"')
        if self.challenge:
            parts.append(self.challenge)
        body = json.dumps(
            {"error": error or "unauthorized", "reason": refusal.code, "message": refusal.message}
        ).encode()
        await send_answer(
            send, 401, body, b"application/json",
            before=[(b"www-authenticate", ", ".join(parts).encode("ascii"))],
            after=[(b"cache-control", b"no-store")],
        )  # fmt: skip


def _bearer_credentials(scope: Scope) -> bytes | None:
    """The bearer token; None when no Authorization header was sent, empty when it is not
    `Bearer <one printable ASCII token>`."""
    value = header(scope, b"authorization")
    if value is None:
        return None
    scheme, _, credentials = value.strip().partition(b" ")
    token = credentials.strip()
    if scheme.lower() != b"bearer" or any(c < 0x21 or c > 0x7E for c in token):
        return b""
    return token


def BearerTokenGate(app: ASGIApp, token: str) -> IdentityGate:
    """The gate of a server that knows only its --token (the `admin` identity)."""
    return IdentityGate(app, admin_authenticator(token))
