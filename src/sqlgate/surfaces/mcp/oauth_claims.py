"""What an OAuth access token may do here, decided from its header and claims alone (no I/O).

`surfaces/mcp/oauth.py` reads a token, checks its signature, and asks this module; the
decision is a pure function of the token's header and claims, the `OAuthPolicy`, the time,
and the tier of a member of the same name (docs/how-to/identity-provider.md).

    step         refused when                                           reason
    header       not a JWT (three base64url JSON parts)                 malformed_jwt
                 `alg` is `none`                                        alg_none
                 `alg` is anything but RS256 (HS256, ES256, ...)        alg_not_allowed
                 `typ` is not `at+jwt` (an ID token, a plain JWT)       wrong_type
    issuer       `iss` is not the --oauth-issuer, exactly               wrong_issuer
    key          no key of the issuer's JWKS has the token's `kid`      unknown_key
    signature    the key does not verify it                             bad_signature
    time         past `exp` (+ leeway), or no `exp`                     expired
                 before `nbf` (- leeway)                                not_yet_valid
    audience     `aud` does not contain the resource (RFC 8707)         wrong_audience
    name         the `sub` (or `email`) is no sqlgate name              name_claim
    tier         no `sqlgate:*` scope and no member of that name        no_scope

The tier: the highest `sqlgate:read|write|destructive` scope the token grants, and the
tier of a current member of the same name (`sqlgate members`); when both exist the lower
one wins (least privilege: the identity provider and the person who runs sqlgate must both
allow a tier), when one exists it decides, when neither does the token is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlgate.service import TIERS, AuthRefusal, Identity, actor_name_problem

__all__ = [
    "ACCESS_TOKEN_TYPES",
    "SCOPE_PREFIX",
    "OAuthPolicy",
    "claims_decision",
    "granted_scopes",
    "header_problem",
    "issuer_problem",
    "refusal",
    "tier_granted",
]

ACCESS_TOKEN_TYPES = ("at+jwt", "application/at+jwt")  # RFC 9068 §2.1
SCOPE_PREFIX = "sqlgate:"

_ASK = "ask your identity provider's administrator"
_MESSAGES = {
    "malformed_jwt": "the bearer token is not a well-formed JWT access token{why}; send the "
    "access token your identity provider issued, whole",
    "alg_none": "the token is not signed (alg none); sqlgate accepts only RS256-signed "
    "access tokens: sign in again through your identity provider",
    "alg_not_allowed": "the token is signed with {alg}; sqlgate accepts only RS256-signed "
    f"access tokens: {_ASK} to sign access tokens with RS256",
    "wrong_type": "the token's typ is {typ}, not at+jwt: it is not an RFC 9068 access token "
    f"(an ID token?); send the access token, or {_ASK} to issue RFC 9068 JWT access tokens",
    "wrong_issuer": "the token was issued by {iss}, and this server trusts only {issuer}: sign "
    "in through {issuer}",
    "unknown_key": "the token is signed by a key ({kid}) that {issuer} does not publish; sign "
    "in again through {issuer} for a fresh token",
    "bad_signature": "the token's signature does not match {issuer}'s key {kid}; sign in again "
    "through {issuer} for a fresh token",
    "expired": "the token expired{when}; sign in again (or let your client refresh it)",
    "not_yet_valid": "the token is not valid before {nbf}; check this machine's clock, or wait "
    "and sign in again",
    "wrong_audience": "the token is for {aud}, not for this server ({audience}); ask your "
    "client to request a token with resource={audience}",
    "name_claim": "the token's {claim} cannot name a sqlgate caller: {problem}; {_ask} to "
    "issue a {claim} that can",
    "no_scope": "the token grants no sqlgate tier (scopes: {scopes}) and {name!r} is no member "
    "here; sign in again asking for the scope sqlgate:read, sqlgate:write or "
    "sqlgate:destructive, or ask the person who runs sqlgate to add you "
    "(`sqlgate members add {name} --tier read`)",
}


def refusal(code: str, actor: str | None = None, **facts: object) -> AuthRefusal:
    """The refusal of `code` (this module's table), its message filled in from `facts`."""
    return AuthRefusal(code, _MESSAGES[code].format(_ask=_ASK, **facts), actor)


@dataclass(frozen=True)
class OAuthPolicy:
    """What this server accepts: tokens of `issuer` for `audience`, named by `name_claim`."""

    issuer: str
    audience: str
    name_claim: str = "sub"
    leeway: float = 30.0  # seconds the clocks of the identity provider and this server may differ


def header_problem(header: Mapping[str, Any]) -> AuthRefusal | None:
    """Why a token with this (unverified) JOSE header is refused before any key is looked up."""
    alg = header.get("alg")
    if not isinstance(alg, str) or alg.lower() == "none":
        return refusal("alg_none") if isinstance(alg, str) else refusal("malformed_jwt", why="")
    if alg != "RS256":
        return refusal("alg_not_allowed", alg=_shown(alg))
    typ = header.get("typ")
    if not isinstance(typ, str) or typ.lower() not in ACCESS_TOKEN_TYPES:
        return refusal("wrong_type", typ="missing" if typ is None else _shown(typ))
    return None


def issuer_problem(claims: Mapping[str, Any], policy: OAuthPolicy) -> AuthRefusal | None:
    """Why a token claiming this `iss` is refused (read before the signature: a token of
    another issuer must not make this server fetch keys)."""
    iss = claims.get("iss")
    if iss != policy.issuer:
        return refusal("wrong_issuer", iss=_shown(iss), issuer=policy.issuer)
    return None


def granted_scopes(claims: Mapping[str, Any]) -> list[str]:
    """The token's scopes: RFC 9068's space-separated `scope`, or an `scp` list."""
    scope = claims.get("scope")
    if isinstance(scope, str):
        return scope.split()
    scp = claims.get("scp")
    if isinstance(scp, list):
        return [s for s in scp if isinstance(s, str)]
    if isinstance(scp, str):
        return scp.split()
    return []


def tier_granted(scopes: list[str], member_tier: str | None) -> str | None:
    """The tier of a token with `scopes`, for a caller whose member record (if any) has
    `member_tier`: the lower of the two when both exist (this module's rule)."""
    named = {s.removeprefix(SCOPE_PREFIX) for s in scopes if s.startswith(SCOPE_PREFIX)}
    granted = [rank for rank, tier in enumerate(TIERS) if tier in named]
    grants = granted[-1:]  # the highest tier the scopes grant
    if member_tier in TIERS:
        grants.append(TIERS.index(member_tier))
    return TIERS[min(grants)] if grants else None


def claims_decision(
    claims: Mapping[str, Any],
    policy: OAuthPolicy,
    now: float,
    member_tier: Callable[[str], str | None],
) -> Identity | AuthRefusal:
    """Who a token with these (signature-checked) claims is, or why it is refused: time,
    audience, name and tier, in that order (this module's table). A refusal names the
    caller (for the audit row) when the name claim is a valid name."""
    name = claims.get(policy.name_claim)
    problem = actor_name_problem(name)
    actor = str(name) if problem is None else None  # a name with no problem is a string
    exp = _number(claims.get("exp"))
    if exp is None:
        return refusal("malformed_jwt", actor, why=" (it has no numeric exp)")
    if now > exp + policy.leeway:
        return refusal("expired", actor, when=f" {int(now - exp)} s ago")
    nbf = claims.get("nbf")
    not_before = _number(nbf)
    if nbf is not None and (not_before is None or now < not_before - policy.leeway):
        return refusal("not_yet_valid", actor, nbf=_shown(nbf))
    aud = claims.get("aud")
    audiences = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else []
    if policy.audience not in audiences:
        return refusal("wrong_audience", actor, aud=_shown(aud), audience=policy.audience)
    if problem is None and policy.name_claim == "email" and claims.get("email_verified") is False:
        problem = "the identity provider says this email is not verified"
    if problem is not None:
        return refusal("name_claim", claim=policy.name_claim, problem=problem)
    name = str(name)
    scopes = granted_scopes(claims)
    tier = tier_granted(scopes, member_tier(name))
    if tier is None:
        return refusal("no_scope", name, scopes=" ".join(scopes) or "none", name=name)
    return Identity(name, tier, "oauth")


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _shown(value: object) -> str:
    """A claim as a message shows it: at most 80 characters, no control characters."""
    text = value if isinstance(value, str) else repr(value)
    text = "".join(c if c.isprintable() else "?" for c in text)
    return text if len(text) <= 80 else text[:77] + "..."
