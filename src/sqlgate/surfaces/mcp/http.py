"""Streamable HTTP for teams: `sqlgate serve --transport http`.

Several MCP clients share one database through one `Service`, opened before the server
starts and closed after it stops (never per MCP session). Every HTTP request must carry
`Authorization: Bearer <token>` naming someone (`http_identity`: the admin --token, a
member's token), unless the server was started with `--insecure-no-token` (for tests,
loopback only); `http_access` holds the rules of which token is required and the
DNS-rebinding check on loopback hosts. What the web console shares with it (the socket, the
server that says when it is ready, the ASGI helpers, loopback and token rules) is in
`surfaces/web/`.

No CORS: the server never sends Access-Control-* headers, so browsers on other origins
cannot read its answers; a preflight is answered 401 like any request without the token.
TLS is left to a reverse proxy in front (docs/how-to/team-server.md, "TLS").

Behind the token, `JsonRpcGuard` screens each POSTed message as stdio does
(`jsonrpc_guard`): a body over 4 MiB is answered 413 as soon as it passes the limit, one
the SDK could not serve 400, both with a JSON-RPC error carrying the request's id.
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlgate.errors import InvalidArgument
from sqlgate.surfaces.mcp.http_access import (
    Audience,
    announce_start,
    audience_of,
    check_tokenless,
    rebinding_protection,
    require_loopback_socket,
    required_token,
)
from sqlgate.surfaces.mcp.http_options import TOKENLESS_FLAG, OAuthOptions
from sqlgate.surfaces.mcp.jsonrpc_guard import (
    MAX_REQUEST_BYTES,
    Rejection,
    RequestIdScan,
    oversized,
    screen,
)
from sqlgate.surfaces.web.asgi import ASGIApp, Message, Receive, Scope, Send, header, send_answer
from sqlgate.surfaces.web.listen import DEFAULT_HOST, listen_socket, serve_on, shown_host

if TYPE_CHECKING:
    import apsw

    from sqlgate.config import Settings
    from sqlgate.service import AuditEntry, Members, Service
    from sqlgate.surfaces.mcp.oauth import JwtVerifier, KeySet
    from sqlgate.surfaces.mcp.oauth_claims import OAuthPolicy
    from sqlgate.surfaces.stops import Stops
    from sqlgate.surfaces.web.access import Token

__all__ = ["MCP_PATH", "JsonRpcGuard", "build_http_app", "serve_http"]

MCP_PATH = "/mcp"
# open response streams must not hold a stopping server forever
GRACEFUL_SHUTDOWN_SECONDS = 3


class JsonRpcGuard:
    """Pure ASGI middleware: a POST to the MCP path reaches the SDK only if it can serve it.

    The body is read up to MAX_REQUEST_BYTES; past that (or when its Content-Length says
    so, after its first piece) the request is answered 413 at once. A body the SDK could
    not serve is answered 400. Both answers are JSON-RPC errors with the request's id when
    it can be read (`jsonrpc_guard`); anything else passes on unchanged, its body replayed.
    """

    def __init__(self, app: ASGIApp, path: str = MCP_PATH) -> None:
        self.app = app
        self.path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != self.path:
            await self.app(scope, receive, send)
            return
        too_long = _declared_length(scope) > MAX_REQUEST_BYTES
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away before sending it all
            body += message.get("body", b"")
            # declared too long: its first piece is read only to find the request's id
            if too_long or len(body) > MAX_REQUEST_BYTES:
                scan = RequestIdScan()
                scan.feed(bytes(body))
                await _json_rpc_error(send, 413, oversized(scan, complete=False))
                return
            if not message.get("more_body", False):
                break
        rejection = screen(bytes(body))
        if rejection is not None:
            await _json_rpc_error(send, 400, rejection)
            return
        await self.app(scope, _replay(bytes(body), receive), send)


def _declared_length(scope: Scope) -> int:
    value = header(scope, b"content-length")
    try:
        return 0 if value is None else int(value)
    except ValueError:
        return 0


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


async def _json_rpc_error(send: Send, status: int, rejection: Rejection) -> None:
    await send_answer(
        send, status, rejection.as_json(), b"application/json",
        after=[(b"cache-control", b"no-store")],
    )  # fmt: skip


def build_http_app(
    service: Service,
    token: str | None,
    host: str = DEFAULT_HOST,
    *,
    members: Members | None = None,
    gated: bool = True,
    oauth: JwtVerifier | None = None,
) -> ASGIApp:
    """The SDK's streamable HTTP app for `service`'s tools, behind the identity gate
    (`http_identity`: the --token `token` as admin, `members`' tokens, and the access tokens
    `oauth` accepts) and the JSON-RPC guard. No gate when `gated` is False:
    `--insecure-no-token`, checked by the caller. With `oauth`, the app serves the protected
    resource metadata (RFC 9728) and every 401 points to it (`oauth_routes`).

    Its lifespan runs the SDK's session manager; `service` and `members` stay open across
    sessions and are the caller's to close.
    """
    from sqlgate.surfaces.mcp.http_identity import (
        IdentityGate,
        RefusalAudit,
        server_authenticator,
    )
    from sqlgate.surfaces.mcp.server import build_server

    app = build_server(service).streamable_http_app(
        streamable_http_path=MCP_PATH, host=host, max_request_body_size=MAX_REQUEST_BYTES,
        transport_security=rebinding_protection(host),
    )  # fmt: skip
    challenge = ""
    if oauth is not None:
        from sqlgate.surfaces.mcp.oauth_routes import metadata_challenge, metadata_routes

        app.router.routes.extend(metadata_routes(oauth.policy))
        challenge = metadata_challenge(oauth.policy)
    guarded = JsonRpcGuard(app)
    if not gated:
        return guarded

    def write(entry: AuditEntry) -> None:
        service.audit.write(entry, 0.0)

    audit = RefusalAudit(write)
    authenticate = server_authenticator(
        token, members, None if oauth is None else oauth.authenticate
    )
    return IdentityGate(guarded, authenticate, challenge=challenge, audit=audit)


def _url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://{shown_host(host)}:{port}{MCP_PATH}"


def _announce_oauth(verifier: JwtVerifier) -> None:
    from sqlgate.surfaces.mcp.oauth_routes import metadata_url

    policy = verifier.policy
    sys.stderr.write(
        f"sqlgate: accepting OAuth access tokens of {policy.issuer} for {policy.audience} "
        f"(named by their {policy.name_claim}); resource metadata at {metadata_url(policy)}\n"
    )
    sys.stderr.flush()


def serve_http(
    settings: Settings,
    *,
    host: str,
    port: int,
    token: str | None,
    insecure_no_token: bool = False,
    beside: Callable[[], Callable[[], None] | None] | None = None,
    stops: Stops | None = None,
    oauth: OAuthOptions | None = None,
) -> None:
    """Listen, open the shared Service, serve until stopped, close the Service.

    Nothing is opened or written when the host/token check or the bind fails. `beside`
    (replication) is started once both passed, before the Service opens; what it returns
    is called to stop it after the Service closed. With `stops` (`stop_signals()`), Ctrl-C
    and SIGTERM stop the server and the clean-up runs whole. With `oauth`, the issuer's
    metadata and keys are fetched once bound, before the Service opens (`oauth.discover`).

    Without --token, a database with members (or with `oauth`) is served to them only, with
    no admin identity (`http_access.required_token`).
    """
    required, audience = _who_may_connect(settings, host, token, insecure_no_token, oauth)
    sock = _listening(host, port, tokenless=insecure_no_token)
    opened = _Opened()
    try:
        # before anything is opened: an unreachable issuer stops here
        discovered = None if oauth is None else _discover(oauth, sock)
        opened.stop_beside = beside() if beside is not None else None
        service, members = opened.open(settings, gated=not insecure_no_token)
        verifier = _verifier(discovered, members)
        app = build_http_app(
            service,
            None if required is None else required.value,
            host,
            members=members,
            gated=not insecure_no_token,
            oauth=verifier,
        )

        def announce() -> None:
            announce_start(_url(sock), required, audience, settings.db)
            if verifier is not None:
                _announce_oauth(verifier)

        serve_on(sock, app, announce, stops, graceful_seconds=GRACEFUL_SHUTDOWN_SECONDS)
    finally:
        sock.close()
        opened.close()


def _who_may_connect(
    settings: Settings,
    host: str,
    token: str | None,
    insecure_no_token: bool,
    oauth: OAuthOptions | None,
) -> tuple[Token | None, Audience | None]:
    """The admin token required (None: members or OAuth clients only) and who else can
    connect (None: anyone, `--insecure-no-token`); refused before anything is bound."""
    if insecure_no_token and oauth is not None:
        raise InvalidArgument(
            f"{TOKENLESS_FLAG} serves without any identity check, so --oauth-issuer cannot "
            f"apply; drop one of them"
        )
    if insecure_no_token:
        check_tokenless(host, token)
        return None, None
    audience = audience_of(settings, None if oauth is None else oauth.issuer)
    return required_token(host, token, audience), audience


def _listening(host: str, port: int, *, tokenless: bool) -> socket.socket:
    """The bound socket; a tokenless server's must be bound to loopback too."""
    sock = listen_socket(host, port)
    if tokenless:
        try:
            require_loopback_socket(sock)
        except InvalidArgument:
            sock.close()
            raise
    return sock


def _discover(oauth: OAuthOptions, sock: socket.socket) -> tuple[OAuthPolicy, KeySet]:
    """The OAuth policy (its audience: this server's URL unless given) and the issuer's keys."""
    from sqlgate.surfaces.mcp.oauth import discover
    from sqlgate.surfaces.mcp.oauth_claims import OAuthPolicy
    from sqlgate.surfaces.mcp.oauth_routes import check_resource

    policy = OAuthPolicy(oauth.issuer, oauth.audience or _url(sock), oauth.name_claim)
    check_resource(policy.audience)
    return policy, discover(oauth.issuer)[1]


def _verifier(
    discovered: tuple[OAuthPolicy, KeySet] | None, members: Members | None
) -> JwtVerifier | None:
    if discovered is None or members is None:
        return None
    from sqlgate.surfaces.mcp.oauth import JwtVerifier

    policy, keys = discovered
    return JwtVerifier(policy, keys, members.tier_of)


@dataclass
class _Opened:
    """What `serve_http` opens once bound, closed by `close` in the order it needs."""

    service: Service | None = None
    lookup: apsw.Connection | None = None  # the gate's own: used on the loop's thread only
    stop_beside: Callable[[], None] | None = None

    def open(self, settings: Settings, *, gated: bool) -> tuple[Service, Members | None]:
        """The shared Service, and the members the gate reads (None when not `gated`)."""
        from sqlgate.config import creates_parent
        from sqlgate.service import Members, Service, connect_read_only

        self.service = Service.open(
            settings,
            create_parent=creates_parent(settings.db),
            actor="local" if gated else "anonymous",
            serving=True,
        )
        if not gated:
            return self.service, None
        self.lookup = connect_read_only(settings.records.records, settings.busy_timeout)
        return self.service, Members(self.lookup)

    def close(self) -> None:
        if self.lookup is not None:
            self.lookup.close()
        if self.service is not None:
            self.service.close()
            sys.stderr.write("sqlgate: stopped; database closed\n")
        if self.stop_beside is not None:  # after close: its last sync has the final audit rows
            self.stop_beside()
