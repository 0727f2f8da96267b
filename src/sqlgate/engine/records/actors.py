"""Who makes a call: the actor named in every audit row, memory event and claim change.

    actor       who                                     tier          session
    local       the agent of `sqlgate serve` (stdio)    destructive   the server's
    cli         a person running a sqlgate command      destructive   the command's
    admin       an HTTP client with the legacy --token  destructive   per connection
    NAME        an HTTP member or OAuth subject         its own       per connection

An HTTP caller's session is `<server session>/<actor>`, followed by `/<8 hex>` (a digest of
its `Mcp-Session-Id`) when the protocol revision has sessions: two callers never share one,
and the actor is part of it, so memory events keep their actor inside the hashed `session`
field without a change to the hash contract (docs/hash-contract.md).

The surface that knows the caller runs the call under `acting_as(caller)`; the service
reads `current_caller()` (a context variable, copied into the worker thread that runs the
call) and falls back to its own caller.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from sqlgate.engine.framing import counted

__all__ = [
    "ACTOR_NAME_RULE",
    "RESERVED_ACTORS",
    "TIERS",
    "AuthRefusal",
    "Caller",
    "Identity",
    "acting_as",
    "actor_name_problem",
    "caller_session",
    "connection_tag",
    "current_caller",
    "session_now",
    "tier_allows",
]

TIERS = ("read", "write", "destructive")
# the actors sqlgate names itself; no member or OAuth subject may take one
RESERVED_ACTORS = ("admin", "local", "cli", "anonymous")
MAX_ACTOR_CHARS = 64
_ACTOR = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+:|-]*")
ACTOR_NAME_RULE = (
    f"1 to {counted(MAX_ACTOR_CHARS, 'character')}: letters, digits and . _ @ + : | - "
    "(starting with a letter or digit)"
)


def actor_name_problem(name: object) -> str | None:
    """Why `name` cannot name a member or an OAuth subject, or None when it can."""
    if not isinstance(name, str) or not name:
        return f"a name is {ACTOR_NAME_RULE}"
    if len(name) > MAX_ACTOR_CHARS:
        return f"{counted(len(name), 'character')} is too long; a name is {ACTOR_NAME_RULE}"
    if not _ACTOR.fullmatch(name):
        bad = next((c for c in name if not _ACTOR.fullmatch("a" + c)), name[0])
        shown = repr(bad) if bad.isprintable() else f"U+{ord(bad):04X}"
        return f"{shown} is not allowed; a name is {ACTOR_NAME_RULE}"
    if name.lower() in RESERVED_ACTORS:
        return f"{name!r} is sqlgate's own name for {_RESERVED_MEANING[name.lower()]}"
    return None


_RESERVED_MEANING = {
    "admin": "the legacy --token",
    "local": "the agent on stdio",
    "cli": "a person at the command line",
    "anonymous": "a client of --insecure-no-token",
}


def tier_allows(tier: str, needed: str) -> bool:
    """Whether a caller of `tier` may use a tool of tier `needed` (an unknown tier: no)."""
    if tier not in TIERS or needed not in TIERS:
        return False
    return TIERS.index(tier) >= TIERS.index(needed)


@dataclass(frozen=True)
class Identity:
    """Who a request is: its actor, the highest tier it may use, and how it was known
    (`local`, `cli`, `admin`, `member` or `oauth`)."""

    actor: str
    tier: str
    kind: str


@dataclass(frozen=True)
class Caller:
    """One caller of the service: who, and which session its calls are recorded under."""

    identity: Identity
    session: str
    client: str | None = None  # the client's name and version, when it said them

    @property
    def actor(self) -> str:
        return self.identity.actor

    @property
    def tier(self) -> str:
        return self.identity.tier


@dataclass(frozen=True)
class AuthRefusal:
    """Why a request's credentials were not accepted: a short `code` (for the audit row and
    the 401 body), a sentence saying what to do, and the actor when it is known."""

    code: str
    message: str
    actor: str | None = None


def connection_tag(mcp_session_id: str) -> str:
    """Eight hex characters naming an MCP session without repeating its id (which a client
    presents to continue the session)."""
    return hashlib.sha256(mcp_session_id.encode("utf-8", "surrogatepass")).hexdigest()[:8]


def caller_session(server_session: str, actor: str, mcp_session_id: str | None = None) -> str:
    """The session an HTTP caller's calls are recorded under (this module's table)."""
    base = f"{server_session}/{actor}"
    return base if mcp_session_id is None else f"{base}/{connection_tag(mcp_session_id)}"


_current: ContextVar[Caller | None] = ContextVar("sqlgate_caller", default=None)


@contextmanager
def acting_as(caller: Caller) -> Iterator[Caller]:
    """Run the block's calls as `caller`."""
    token = _current.set(caller)
    try:
        yield caller
    finally:
        _current.reset(token)


def current_caller() -> Caller | None:
    return _current.get()


def session_now(default: str) -> str:
    """The current caller's session, or `default` (the service's own) when none is set."""
    caller = _current.get()
    return default if caller is None else caller.session
