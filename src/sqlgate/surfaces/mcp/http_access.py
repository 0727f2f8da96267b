"""Who may use the HTTP transport: the bearer token, `--insecure-no-token`, and the
DNS-rebinding check on loopback (`http` builds the app and serves it).

    host        token given   what happens
    loopback    yes           serve with it
    loopback    no            generate one, print it (and how to use it) on stderr
    elsewhere   yes           serve with it
    elsewhere   no            refuse to start (exit 2): a public port needs a chosen token

`--insecure-no-token` is for tests (the MCP conformance suite sends no header): no gate at
all, refused with a token or off loopback (the address actually bound is checked too), and
announced on stderr. Any local user or program can then use the server; see
docs/security-model.md, "HTTP transport".

On a loopback host the SDK's DNS-rebinding check answers a foreign `Host` 421 and a foreign
`Origin` 403 (`rebinding_protection`), token or not.
"""

from __future__ import annotations

import ipaddress
import secrets
import socket
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlgate.errors import InvalidArgument
from sqlgate.surfaces.mcp.http_options import TOKENLESS_FLAG

if TYPE_CHECKING:
    from mcp.server.transport_security import TransportSecuritySettings

__all__ = [
    "LOOPBACK_NAMES",
    "MIN_TOKEN_CHARS",
    "TOKENLESS_FLAG",
    "ASGIApp",
    "Message",
    "Receive",
    "Scope",
    "Send",
    "Token",
    "check_tokenless",
    "host_header_allowed",
    "is_loopback",
    "loopback_names",
    "rebinding_protection",
    "require_loopback_socket",
    "token_for",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

MIN_TOKEN_CHARS = 16
# the names a browser may use for this machine, besides the address the server listens on
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def is_loopback(host: str) -> bool:
    """Whether `host` names this machine only. Other names are not resolved: not loopback."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class Token:
    value: str
    generated: bool


def token_for(host: str, given: str | None, *, generate: Callable[[], str] | None = None) -> Token:
    """The token the server requires, from the table in this module's docstring."""
    if given is not None:
        if len(given) < MIN_TOKEN_CHARS:
            raise InvalidArgument(
                f"--token must have at least {MIN_TOKEN_CHARS} characters; "
                "generate one with: python -c 'import secrets; print(secrets.token_urlsafe(32))'"
            )
        if not (given.isascii() and given.isprintable()) or any(c.isspace() for c in given):
            raise InvalidArgument("--token must be printable ASCII without spaces")
        return Token(given, generated=False)
    if not is_loopback(host):
        raise InvalidArgument(
            f"refusing to serve on {host}, which is not a loopback address, without a token "
            "you chose: pass --token or set SQLGATE_TOKEN (and put TLS in front: "
            "docs/how-to/team-server.md)"
        )
    return Token((generate or (lambda: secrets.token_urlsafe(32)))(), generated=True)


def check_tokenless(host: str, given: str | None) -> None:
    """--insecure-no-token is allowed only on a loopback host and never with a token."""
    if given is not None:
        raise InvalidArgument(
            f"{TOKENLESS_FLAG} and --token (or SQLGATE_TOKEN) contradict each other; drop one"
        )
    if not is_loopback(host):
        raise InvalidArgument(
            f"{TOKENLESS_FLAG} serves only on a loopback address (127.0.0.1, ::1, localhost), "
            f"not {host}; anywhere else pass --token or SQLGATE_TOKEN"
        )


def require_loopback_socket(sock: socket.socket) -> None:
    """The address bound must be loopback too: a name such as `localhost` was looked up."""
    bound = str(sock.getsockname()[0])
    if not is_loopback(bound):
        raise InvalidArgument(
            f"{TOKENLESS_FLAG} serves only on a loopback address, but the host given was bound "
            f"to {bound}; pass --host 127.0.0.1"
        )


def rebinding_protection(host: str) -> TransportSecuritySettings | None:
    """The SDK's DNS-rebinding check for a loopback host: only this machine's names may
    appear in `Host` and `Origin`. None elsewhere: behind a reverse proxy the `Host` varies,
    and the bearer token protects those servers."""
    from mcp.server.transport_security import TransportSecuritySettings

    if not is_loopback(host):
        return None
    names = loopback_names(host)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[*names, *(f"{name}:*" for name in names)],
        allowed_origins=[f"http://{name}{port}" for name in names for port in ("", ":*")],
    )


def loopback_names(host: str) -> list[str]:
    """The names a browser may use for loopback `host`: this machine's, and `host` itself."""
    bare = host.strip("[]")
    own = f"[{bare}]" if ":" in bare else bare.lower()
    return list(dict.fromkeys((*LOOPBACK_NAMES, own)))


def host_header_allowed(host: str, presented: str | None) -> bool:
    """The DNS-rebinding check of `rebinding_protection` for servers that are not the SDK's
    (the web console): on a loopback `host`, the request's `Host` must be one of
    `loopback_names`, with or without a port. Any `Host` passes elsewhere (the token guards)."""
    if not is_loopback(host):
        return True
    if not presented:
        return False
    given = presented.strip().lower()
    for name in loopback_names(host):
        if given == name:
            return True
        port = given[len(name) + 1 :] if given.startswith(name + ":") else ""
        if port.isdigit():
            return True
    return False
