"""sqlgate as an OAuth 2.1 resource server (issue 22 §2): `serve --oauth-issuer URL`.

The identity provider issues RFC 9068 JWT access tokens; this module checks them with the
issuer's keys and says who each one is (`oauth_claims` decides, from the claims alone):

- at start-up, `discover` reads the issuer's metadata (RFC 8414
  `/.well-known/oauth-authorization-server`, then OpenID Connect
  `/.well-known/openid-configuration`), whose `issuer` must be the one given, and fetches
  its `jwks_uri`; a start-up that cannot do both stops with one line saying why;
- `JwtVerifier` is the SDK's `TokenVerifier` (`verify_token`) and the identity gate's OAuth
  authenticator (`authenticate`, `http_identity.server_authenticator`); a token signed by
  a key it does not know makes it fetch the JWKS again, at most once a `refresh_every`
  seconds (the issuer rotated its keys), without blocking the event loop.

Neither opaque tokens nor token introspection are supported: every request would cost a
round trip to the identity provider (docs/how-to/identity-provider.md).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import jwt
from mcp.server.auth.provider import AccessToken

if TYPE_CHECKING:
    from mcp.server.auth.provider import TokenVerifier

from sqlgate.errors import StartupError
from sqlgate.service import AuthRefusal, Identity
from sqlgate.surfaces.mcp.oauth_claims import (
    OAuthPolicy,
    claims_decision,
    granted_scopes,
    header_problem,
    issuer_problem,
    refusal,
)

__all__ = [
    "FETCH_SECONDS",
    "REFRESH_SECONDS",
    "JwtVerifier",
    "KeySet",
    "Verified",
    "discover",
    "fetch_json_async",
    "keys_of",
    "metadata_urls",
]

FETCH_SECONDS = 10.0
REFRESH_SECONDS = 60.0  # an unknown kid fetches the JWKS again at most this often

FetchJson = Callable[[str], Awaitable[Any]]
MemberTier = Callable[[str], str | None]


def metadata_urls(issuer: str) -> list[str]:
    """Where an issuer's metadata may be, in the order tried (RFC 8414 §3.1 inserts the
    well-known path before the issuer's path; OpenID Connect Discovery appends it)."""
    parts = urlsplit(issuer)
    origin, path = f"{parts.scheme}://{parts.netloc}", parts.path.rstrip("/")
    urls = [f"{origin}/.well-known/oauth-authorization-server{path}"]
    if path:
        urls.append(f"{origin}/.well-known/openid-configuration{path}")
    urls.append(f"{origin}{path}/.well-known/openid-configuration")
    return urls


def keys_of(jwks: object) -> dict[str, jwt.PyJWK]:
    """The RS256 signing keys of a JWKS document, by `kid` (keys without one, for
    encryption, for another algorithm, or of another kind are left out)."""
    found: dict[str, jwt.PyJWK] = {}
    entries = jwks.get("keys") if isinstance(jwks, dict) else None
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict) or entry.get("kty") != "RSA":
            continue
        kid = entry.get("kid")
        if not isinstance(kid, str) or entry.get("use", "sig") != "sig":
            continue
        if entry.get("alg", "RS256") != "RS256":  # a key meant for another algorithm
            continue
        try:
            found[kid] = jwt.PyJWK(entry, algorithm="RS256")
        except jwt.PyJWTError:
            continue
    return found


def discover(issuer: str, get_json: Callable[[str], Any] | None = None) -> tuple[str, KeySet]:
    """The issuer's `jwks_uri` and its keys, fetched at start-up (blocking: the event loop
    has not started). Raises StartupError naming the step that failed."""
    scheme = urlsplit(issuer).scheme
    if scheme not in ("https", "http") or not urlsplit(issuer).netloc:
        raise StartupError(
            f"--oauth-issuer {issuer!r} is not an http(s) URL; give your identity provider's "
            "issuer URL, e.g. https://idp.example.com/realms/team"
        )
    get = get_json or _get_json
    tried: list[str] = []
    metadata: Mapping[str, Any] | None = None
    for url in metadata_urls(issuer):
        try:
            found = get(url)
        except (OSError, ValueError) as exc:
            tried.append(f"{url} ({_why(exc)})")
            continue
        if isinstance(found, dict):
            metadata = found
            break
        tried.append(f"{url} (not a JSON object)")
    if metadata is None:
        raise StartupError(
            f"cannot read the metadata of --oauth-issuer {issuer}: tried {'; '.join(tried)}; "
            "check the URL and that the identity provider is reachable from this machine"
        )
    if metadata.get("issuer") != issuer:
        raise StartupError(
            f"the identity provider at {issuer} says its issuer is "
            f"{metadata.get('issuer')!r}; pass exactly that as --oauth-issuer"
        )
    jwks_uri = metadata.get("jwks_uri")
    if not isinstance(jwks_uri, str) or not jwks_uri:
        raise StartupError(
            f"the metadata of {issuer} has no jwks_uri, so its tokens' signatures cannot be "
            "checked; sqlgate needs an identity provider that signs JWT access tokens"
        )
    try:
        keys = keys_of(get(jwks_uri))
    except (OSError, ValueError) as exc:
        raise StartupError(
            f"cannot fetch the keys of {issuer} from {jwks_uri} ({_why(exc)}); check that "
            "the identity provider is reachable from this machine"
        ) from None
    if not keys:
        raise StartupError(
            f"{jwks_uri} publishes no RS256 signing key with a kid; sqlgate checks RS256 "
            "access tokens only: configure the identity provider to sign them with RS256"
        )
    return jwks_uri, KeySet(jwks_uri, keys)


def _why(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= 120 else text[:117] + "..."


def _get_json(url: str) -> Any:
    import httpx2

    try:
        response = httpx2.get(url, timeout=FETCH_SECONDS, follow_redirects=False)
        response.raise_for_status()
        return response.json()
    except httpx2.HTTPError as exc:
        raise OSError(str(exc) or type(exc).__name__) from None


async def fetch_json_async(url: str) -> Any:
    import httpx2

    try:
        async with httpx2.AsyncClient(timeout=FETCH_SECONDS) as client:
            response = await client.get(url)
            response.raise_for_status()
            return response.json()
    except httpx2.HTTPError as exc:
        raise OSError(str(exc) or type(exc).__name__) from None


@dataclass
class KeySet:
    """The issuer's signing keys by `kid`, fetched again on an unknown one at most once a
    `refresh_every` seconds (by `clock`)."""

    uri: str
    keys: dict[str, jwt.PyJWK]
    fetch: FetchJson = fetch_json_async
    clock: Callable[[], float] = time.monotonic
    refresh_every: float = REFRESH_SECONDS
    fetched_at: float | None = None
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    def __post_init__(self) -> None:
        if self.fetched_at is None:
            self.fetched_at = self.clock()

    async def key(self, kid: str) -> jwt.PyJWK | None:
        if kid in self.keys:
            return self.keys[kid]
        async with self._lock:  # one fetch for a burst of tokens with a new kid
            if kid not in self.keys and self._may_refresh():
                self.fetched_at = self.clock()
                try:
                    fresh = keys_of(await self.fetch(self.uri))
                except (OSError, ValueError):
                    fresh = {}  # the issuer is unreachable: keep the keys we have
                if fresh:
                    self.keys = fresh
        return self.keys.get(kid)

    def _may_refresh(self) -> bool:
        return self.fetched_at is None or self.clock() - self.fetched_at >= self.refresh_every


@dataclass(frozen=True)
class Verified:
    """An accepted token: who it is, and the SDK's view of it."""

    identity: Identity
    access_token: AccessToken


@dataclass
class JwtVerifier:
    """RFC 9068 JWT access tokens of one issuer, checked with its keys (module docstring)."""

    policy: OAuthPolicy
    keys: KeySet
    member_tier: MemberTier = lambda _name: None
    clock: Callable[[], float] = time.time

    async def verify_token(self, token: str) -> AccessToken | None:
        """The SDK's `TokenVerifier`: the token's access, or None when refused."""
        checked = await self.check(token)
        return checked.access_token if isinstance(checked, Verified) else None

    async def authenticate(self, token: bytes) -> Identity | AuthRefusal:
        """The identity gate's authenticator (`http_identity.Authenticate`)."""
        checked = await self.check(token.decode("ascii", "replace"))
        return checked.identity if isinstance(checked, Verified) else checked

    async def check(self, token: str) -> Verified | AuthRefusal:
        """Who `token` is, or why it is refused (`oauth_claims`' table, in its order)."""
        try:
            header = jwt.get_unverified_header(token)
            unverified = jwt.decode(token, options={"verify_signature": False})
        except (jwt.PyJWTError, json.JSONDecodeError, UnicodeError, ValueError):
            return refusal("malformed_jwt", why="")
        problem = header_problem(header) or issuer_problem(unverified, self.policy)
        if problem is not None:
            return problem
        kid = header.get("kid")
        key = await self.keys.key(kid) if isinstance(kid, str) else None
        shown_kid = repr(kid) if isinstance(kid, str) else "no kid"
        if key is None:
            return refusal("unknown_key", kid=shown_kid[:80], issuer=self.policy.issuer)
        try:
            claims = jwt.decode(
                token, key.key, algorithms=["RS256"],
                options={"verify_exp": False, "verify_nbf": False, "verify_iat": False,
                         "verify_aud": False, "verify_iss": False},
            )  # fmt: skip
        except jwt.InvalidSignatureError:
            return refusal("bad_signature", kid=shown_kid[:80], issuer=self.policy.issuer)
        except jwt.PyJWTError:
            return refusal("malformed_jwt", why="")
        decided = claims_decision(claims, self.policy, self.clock(), self.member_tier)
        if isinstance(decided, AuthRefusal):
            return decided
        return Verified(decided, self._access_token(token, claims, decided))

    def _access_token(self, token: str, claims: dict[str, Any], who: Identity) -> AccessToken:
        client = claims.get("client_id") or claims.get("azp")
        return AccessToken(
            token=token,
            client_id=client if isinstance(client, str) else "",
            scopes=granted_scopes(claims),
            expires_at=int(claims["exp"]),
            resource=self.policy.audience,
            subject=who.actor,
            claims={"iss": self.policy.issuer},
        )


if TYPE_CHECKING:

    def _an_sdk_token_verifier(verifier: JwtVerifier) -> TokenVerifier:
        return verifier  # mypy checks that JwtVerifier implements the SDK's protocol
