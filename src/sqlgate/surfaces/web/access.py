"""Who may connect to sqlgate's HTTP servers, the part the MCP transport and the web console
share: which hosts are this machine's, the Host-header check against DNS rebinding, and the
token a server requires by its host (`token_for`; the MCP transport's whole table, with
members and OAuth clients, is `mcp/http_access.required_token`).

    host        token given   what happens
    any         yes           serve with it (16+ printable ASCII characters, no spaces)
    loopback    no            generate one (printed for whoever starts the server)
    elsewhere   no            refuse to start (exit 2): no one could connect but with a
                              token nobody chose
"""

from __future__ import annotations

import ipaddress
import secrets
from collections.abc import Callable
from dataclasses import dataclass

from sqlgate.errors import InvalidArgument
from sqlgate.service import counted

__all__ = [
    "LOOPBACK_NAMES",
    "MIN_TOKEN_CHARS",
    "Token",
    "host_header_allowed",
    "is_loopback",
    "loopback_names",
    "token_for",
]

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
                f"--token must have at least {counted(MIN_TOKEN_CHARS, 'character')}; "
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


def loopback_names(host: str) -> list[str]:
    """The names a browser may use for loopback `host`: this machine's, and `host` itself."""
    bare = host.strip("[]")
    own = f"[{bare}]" if ":" in bare else bare.lower()
    return list(dict.fromkeys((*LOOPBACK_NAMES, own)))


def host_header_allowed(host: str, presented: str | None) -> bool:
    """The DNS-rebinding check of the MCP transport (`mcp/http_access.rebinding_protection`,
    the SDK's) for servers that are not the SDK's (the web console): on a loopback `host`,
    the request's `Host` must be one of `loopback_names`, with or without a port. Any `Host`
    passes elsewhere (the token guards)."""
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
