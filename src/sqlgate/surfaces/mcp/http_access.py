"""Who may use the HTTP transport: the bearer token, `--insecure-no-token`, and the
DNS-rebinding check on loopback (`http` builds the app and serves it).

    host        token given   members or OAuth   what happens
    any         yes           any                serve with it (the `admin` identity)
    any         no            yes                serve with no admin identity: members only
    loopback    no            no                 generate one, print it (and how to use it)
    elsewhere   no            no                 refuse to start (exit 2): no one could connect
                                                 but with a token nobody chose

`required_token` applies this table (`token_for` is its first column alone, for the web
console); `audience_of` finds the members (those with a working token) before anything is
opened for writing, and takes the OAuth issuer when one is configured.

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
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlgate.errors import InvalidArgument, StartupError
from sqlgate.service import counted, db_option
from sqlgate.surfaces.mcp.http_options import TOKENLESS_FLAG

if TYPE_CHECKING:
    from mcp.server.transport_security import TransportSecuritySettings

    from sqlgate.config import Settings

__all__ = [
    "LOOPBACK_NAMES",
    "MIN_TOKEN_CHARS",
    "TOKENLESS_FLAG",
    "ASGIApp",
    "Audience",
    "Message",
    "Receive",
    "Scope",
    "Send",
    "Token",
    "announce_start",
    "audience_of",
    "check_tokenless",
    "host_header_allowed",
    "is_loopback",
    "loopback_names",
    "rebinding_protection",
    "require_loopback_socket",
    "required_token",
    "token_for",
    "who_can_connect",
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


@dataclass(frozen=True)
class Audience:
    """Who can connect besides the holder of --token: the members with a working token,
    and the holders of access tokens from `oauth_issuer`."""

    members: int = 0
    oauth_issuer: str | None = None

    @property
    def anyone(self) -> bool:
        return self.members > 0 or self.oauth_issuer is not None


_WORKING_MEMBERS = (
    "SELECT count(*) FROM members m WHERE m.removed IS NULL AND EXISTS "
    "(SELECT 1 FROM member_tokens t WHERE t.member_id = m.id AND t.revoked IS NULL)"
)


def audience_of(settings: Settings, oauth_issuer: str | None = None) -> Audience:
    """The audience of a server on `settings.db`, read without creating or changing it: no
    file, or one from before the members tables, has no members."""
    import apsw

    from sqlgate.service import connect_read_only

    db = settings.db
    if not db.is_file():
        return Audience(0, oauth_issuer)
    wal = db.with_name(db.name + "-wal")
    try:
        if wal.is_file() and wal.stat().st_size > 0:  # a writer's changes: read them too
            conn = connect_read_only(db, settings.busy_timeout)
        else:  # all in the file: read it alone, leaving no -wal or -shm behind
            uri = f"{db.resolve().as_uri()}?immutable=1"
            conn = apsw.Connection(uri, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    except (apsw.Error, StartupError):
        return Audience(0, oauth_issuer)  # Service.open says what is wrong with the file
    try:
        (count,) = conn.execute(_WORKING_MEMBERS).fetchone() or (0,)
    except apsw.Error:  # no members table yet (or not a database: Service.open says so)
        count = 0
    finally:
        conn.close()
    return Audience(int(count), oauth_issuer)


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
