"""Who may use the HTTP transport: the bearer token, `--insecure-no-token`, and the
DNS-rebinding check on loopback (`http` builds the app and serves it).

    host        token given   members or OAuth   what happens
    any         yes           any                serve with it (the `admin` identity)
    any         no            yes                serve with no admin identity: members only
    loopback    no            no                 generate one, print it (and how to use it)
    elsewhere   no            no                 refuse to start (exit 2): no one could connect
                                                 but with a token nobody chose

`required_token` applies this table (`web.access.token_for`, which the web console shares,
is its first column alone); `audience_of` finds the members (those with a working token)
before anything is opened for writing, and takes the OAuth issuer when one is configured.

`--insecure-no-token` is for tests (the MCP conformance suite sends no header): no gate at
all, refused with a token or off loopback (the address actually bound is checked too), and
announced on stderr. Any local user or program can then use the server; see
docs/security-model.md, "HTTP transport".

On a loopback host the SDK's DNS-rebinding check answers a foreign `Host` 421 and a foreign
`Origin` 403 (`rebinding_protection`), token or not.
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sqlgate.errors import InvalidArgument
from sqlgate.service import counted, db_option, working_member_count
from sqlgate.surfaces.mcp.http_options import TOKENLESS_FLAG
from sqlgate.surfaces.web.access import Token, is_loopback, loopback_names, token_for

if TYPE_CHECKING:
    from mcp.server.transport_security import TransportSecuritySettings

    from sqlgate.config import Settings

__all__ = [
    "Audience",
    "announce_start",
    "audience_of",
    "check_tokenless",
    "rebinding_protection",
    "require_loopback_socket",
    "required_token",
    "who_can_connect",
]


@dataclass(frozen=True)
class Audience:
    """Who can connect besides the holder of --token: the members with a working token,
    and the holders of access tokens from `oauth_issuer`."""

    members: int = 0
    oauth_issuer: str | None = None

    @property
    def anyone(self) -> bool:
        return self.members > 0 or self.oauth_issuer is not None


def audience_of(settings: Settings, oauth_issuer: str | None = None) -> Audience:
    """The audience of a server on `settings.db`, read without creating or changing it
    (`working_member_count`): no file, or one from before the members tables, has no
    members."""
    return Audience(working_member_count(settings.db, settings.busy_timeout), oauth_issuer)


def required_token(
    host: str,
    given: str | None,
    audience: Audience,
    *,
    generate: Callable[[], str] | None = None,
) -> Token | None:
    """The admin token the server requires, or None when there is no admin identity
    (no --token, and members or OAuth clients can connect): this module's table."""
    if given is None and audience.anyone:
        return None
    if given is None and not is_loopback(host):
        raise InvalidArgument(
            f"refusing to serve on {host}, which is not a loopback address, with no one able "
            "to connect: pass --token or set SQLGATE_TOKEN (the admin identity), or give "
            "each teammate a token first with `sqlgate members add NAME --tier read "
            "--db PATH` (and put TLS in front: docs/how-to/team-server.md)"
        )
    return token_for(host, given, generate=generate)


def who_can_connect(token: Token | None, audience: Audience, db: Path) -> list[str]:
    """The lines saying who can connect (before the URL line, which says it is ready)."""
    lines, where = [], db_option(db)
    if token is not None and not token.generated:
        lines.append("the --token connects as admin (every tool)")
    if audience.members:
        lines.append(
            f"{counted(audience.members, 'member')} can connect, each with their own token and "
            f"tier (`sqlgate members list {where}`)"
        )
    lines.append(
        f"to give a teammate their own token: sqlgate members add NAME --tier read {where}"
    )
    return [f"sqlgate: {line}\n" for line in lines]


def announce_start(
    url: str, token: Token | None, audience: Audience | None = None, db: Path = Path("PATH")
) -> None:
    """Say on stderr who can connect, then where the server listens (the line that says
    it is ready), then the generated token or the --insecure-no-token warning."""
    say = sys.stderr.write
    if audience is not None:  # None: --insecure-no-token, where anyone can
        for line in who_can_connect(token, audience, db):
            say(line)
    say(f"sqlgate: serving MCP over streamable HTTP at {url}\n")
    if audience is None:
        say(
            f"sqlgate: WARNING: {TOKENLESS_FLAG}: no token is required, so any program or user "
            "on this machine can use this server; use it for tests only\n"
        )
    elif token is None:
        pass  # members (or OAuth clients) only: said above
    elif token.generated:
        say(
            "sqlgate: no --token given, so clients must send this generated one "
            "(valid until the server stops):\n"
            f"sqlgate:   Authorization: Bearer {token.value}\n"
            "sqlgate: pass --token or SQLGATE_TOKEN to choose a token that survives restarts\n"
        )
    sys.stderr.flush()


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
