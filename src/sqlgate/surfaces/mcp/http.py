"""Streamable HTTP for teams: `sqlgate serve --transport http`.

Several MCP clients share one database through one `Service`, opened before the server
starts and closed after it stops (never per MCP session). Every HTTP request must carry
`Authorization: Bearer <token>` naming someone (`http_identity`: the admin --token, a
member's token), unless the server was started with `--insecure-no-token` (for tests,
loopback only); `http_access` holds the rules of which token is required and the
DNS-rebinding check on loopback hosts.

No CORS: the server never sends Access-Control-* headers, so browsers on other origins
cannot read its answers; a preflight is answered 401 like any request without the token.
TLS is left to a reverse proxy in front (docs/how-to/team-server.md, "TLS").

Behind the token, `JsonRpcGuard` screens each POSTed message as stdio does
(`jsonrpc_guard`): a body over 4 MiB is answered 413 as soon as it passes the limit, one
the SDK could not serve 400, both with a JSON-RPC error carrying the request's id.
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Callable
from contextlib import nullcontext
from types import FrameType
from typing import TYPE_CHECKING, Any

from sqlgate.errors import InvalidArgument, StartupError
from sqlgate.surfaces.mcp.http_access import (
    MIN_TOKEN_CHARS,
    TOKENLESS_FLAG,
    ASGIApp,
    Audience,
    Message,
    Receive,
    Scope,
    Send,
    Token,
    announce_start,
    audience_of,
    check_tokenless,
    is_loopback,
    rebinding_protection,
    require_loopback_socket,
    required_token,
    token_for,
)
from sqlgate.surfaces.mcp.http_options import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    OAuthOptions,
    http_options,
)
from sqlgate.surfaces.mcp.jsonrpc_guard import (
    MAX_REQUEST_BYTES,
    Rejection,
    RequestIdScan,
    oversized,
    screen,
)

if TYPE_CHECKING:
    from sqlgate.config import Settings
    from sqlgate.service import AuditEntry, Members, Service
    from sqlgate.surfaces.mcp.oauth import JwtVerifier
    from sqlgate.surfaces.stops import Stops

__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "MCP_PATH",
    "MIN_TOKEN_CHARS",
    "TOKENLESS_FLAG",
    "ASGIApp",
    "JsonRpcGuard",
    "Message",
    "Receive",
    "Scope",
    "Send",
    "announcing_server_class",
    "build_http_app",
    "check_tokenless",
    "http_options",
    "is_loopback",
    "listen_socket",
    "rebinding_protection",
    "require_loopback_socket",
    "serve_http",
    "token_for",
]

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
    for name, value in scope.get("headers", ()):
        if name.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return 0
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
    body = rejection.as_json()
    await send({
        "type": "http.response.start",
        "status": status,
        "headers": [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode("ascii")),
            (b"cache-control", b"no-store"),
        ],
    })  # fmt: skip
    await send({"type": "http.response.body", "body": body})


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


def listen_socket(host: str, port: int) -> socket.socket:
    """The listening socket, made with protocol IPPROTO_TCP and TCP_NODELAY.

    asyncio turns Nagle's algorithm off only on sockets whose `proto` says TCP, and
    `socket.create_server` leaves it 0: every response then waited for the client's delayed
    ACK, about 40 ms a call on Linux. Accepted sockets inherit both settings.
    """
    try:
        family, _, _, _, address = socket.getaddrinfo(
            host.strip("[]"), port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        try:
            if os.name == "posix":  # Windows' SO_REUSEADDR would let another bind steal it
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.bind(address[:2])
            sock.listen()
        except BaseException:
            sock.close()
            raise
        return sock
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise StartupError(
            f"cannot listen on {host}:{port}: {reason}; choose another --host or --port"
        ) from None


def _url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}{MCP_PATH}"


def _announce_oauth(verifier: JwtVerifier) -> None:
    from sqlgate.surfaces.mcp.oauth_routes import metadata_url

    policy = verifier.policy
    sys.stderr.write(
        f"sqlgate: accepting OAuth access tokens of {policy.issuer} for {policy.audience} "
        f"(named by their {policy.name_claim}); resource metadata at {metadata_url(policy)}\n"
    )
    sys.stderr.flush()


def announcing_server_class() -> type[Any]:
    import uvicorn

    class AnnouncingServer(uvicorn.Server):
        """Says where it listens once it accepts requests (its lifespan has started), and
        reports each stop signal its own handlers catch to `stops` (`surfaces.stops`).

        uvicorn handles SIGINT and SIGTERM while it serves: the first stops it gracefully
        (open responses get GRACEFUL_SHUTDOWN_SECONDS at most). With `stops`, a later one
        is only noted: uvicorn's own "second Ctrl-C" skips the application's shutdown and
        leaves its tasks to be cancelled with a traceback; the wait is bounded anyway.
        Once stopped, uvicorn hands the signals it caught to the handlers of `stops`."""

        def __init__(
            self, config: uvicorn.Config, announce: Callable[[], None], stops: Stops | None = None
        ) -> None:
            super().__init__(config)
            self._announce = announce
            self._stops = stops

        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            if self._stops is None or self._stops.note(sig):
                super().handle_exit(sig, frame)

        def stop_now(self, sig: int) -> None:
            """A stop that reached `stops` (before or after uvicorn's own handlers)."""
            super().handle_exit(sig, None)

        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if self.started:
                self._announce()

    return AnnouncingServer


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
    import apsw
    import uvicorn

    from sqlgate.config import creates_parent
    from sqlgate.service import Members, Service, connect_read_only

    required: Token | None = None
    audience: Audience | None = None
    if insecure_no_token and oauth is not None:
        raise InvalidArgument(
            f"{TOKENLESS_FLAG} serves without any identity check, so --oauth-issuer cannot "
            f"apply; drop one of them"
        )
    if insecure_no_token:
        check_tokenless(host, token)
    else:
        audience = audience_of(settings, None if oauth is None else oauth.issuer)
        required = required_token(host, token, audience)
    sock = listen_socket(host, port)
    if insecure_no_token:
        try:
            require_loopback_socket(sock)
        except InvalidArgument:
            sock.close()
            raise
    service: Service | None = None
    lookup: apsw.Connection | None = None
    stop_beside: Callable[[], None] | None = None
    try:
        keys = None
        if oauth is not None:  # before anything is opened: an unreachable issuer stops here
            from sqlgate.surfaces.mcp.oauth import discover
            from sqlgate.surfaces.mcp.oauth_claims import OAuthPolicy
            from sqlgate.surfaces.mcp.oauth_routes import check_resource

            policy = OAuthPolicy(oauth.issuer, oauth.audience or _url(sock), oauth.name_claim)
            check_resource(policy.audience)
            keys = discover(oauth.issuer)[1]
        stop_beside = beside() if beside is not None else None
        service = Service.open(
            settings,
            create_parent=creates_parent(settings.db),
            actor="anonymous" if insecure_no_token else "local",
            serving=True,
        )
        members = None
        if not insecure_no_token:  # the gate's own connection: used on the loop's thread only
            lookup = connect_read_only(settings.db, settings.busy_timeout)
            members = Members(lookup)
        verifier = None
        if keys is not None and members is not None:
            from sqlgate.surfaces.mcp.oauth import JwtVerifier

            verifier = JwtVerifier(policy, keys, members.tier_of)
        app = build_http_app(
            service,
            None if required is None else required.value,
            host,
            members=members,
            gated=not insecure_no_token,
            oauth=verifier,
        )
        config = uvicorn.Config(
            app, lifespan="on", loop="asyncio", log_level="warning", access_log=False,
            server_header=False, timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS,
        )  # fmt: skip

        def announce() -> None:
            announce_start(_url(sock), required, audience, settings.db)
            if verifier is not None:
                _announce_oauth(verifier)

        server = announcing_server_class()(config, announce, stops)
        with nullcontext() if stops is None else stops.serving(server.stop_now):
            server.run(sockets=[sock])
    finally:
        sock.close()
        if lookup is not None:
            lookup.close()
        if service is not None:
            service.close()
            sys.stderr.write("sqlgate: stopped; database closed\n")
        if stop_beside is not None:  # after close: its last sync has the final audit rows
            stop_beside()
