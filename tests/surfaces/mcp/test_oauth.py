"""The OAuth resource server's verifier (`surfaces/mcp/oauth.py`, `oauth_claims.py`) with keys
made here: every row of the refusal table, the tier rule, key refresh, discovery, and the
gate and metadata routes it plugs into. The flow against a real provider is in
test_oauth_provider.py."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from starlette.applications import Starlette

from sqlgate.engine.records.actors import AuthRefusal, Identity
from sqlgate.errors import InvalidArgument, StartupError
from sqlgate.surfaces.mcp.http_identity import IdentityGate, server_authenticator
from sqlgate.surfaces.mcp.oauth import JwtVerifier, KeySet, Verified, discover, metadata_urls
from sqlgate.surfaces.mcp.oauth_claims import OAuthPolicy, tier_granted
from sqlgate.surfaces.mcp.oauth_routes import (
    check_resource,
    metadata_challenge,
    metadata_routes,
)

ISSUER = "https://idp.example.com/realms/team"
AUDIENCE = "https://sqlgate.example.com/mcp"
NOW = 1_900_000_000.0
KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
OTHER_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)


def jwk_of(key: rsa.RSAPrivateKey, kid: str) -> dict[str, Any]:
    entry: dict[str, Any] = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    entry.update(kid=kid, use="sig", alg="RS256")
    return entry


def claims(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "client_id": "claude-code",
        "exp": int(NOW) + 300, "iat": int(NOW), "scope": "openid sqlgate:write",
    }  # fmt: skip
    base.update(changes)
    return {k: v for k, v in base.items() if v is not None}


def token(
    body: dict[str, Any] | None = None,
    *,
    key: Any = KEY,
    kid: str | None = "k1",
    alg: str = "RS256",
    typ: str | None = "at+jwt",
) -> str:
    headers: dict[str, Any] = {"kid": kid, "typ": typ}
    return jwt.encode(
        claims() if body is None else body,
        key,
        algorithm=alg,
        headers={k: v for k, v in headers.items() if v is not None},
    )


def unsigned(body: dict[str, Any], header: dict[str, Any]) -> str:
    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    return f"{part(header)}.{part(body)}."


@dataclass
class Fetches:
    """A JWKS endpoint: what it serves now, and each fetch of it."""

    served: list[dict[str, Any]]
    urls: list[str] = field(default_factory=list)

    async def __call__(self, url: str) -> Any:
        self.urls.append(url)
        return {"keys": self.served}


@dataclass
class Clock:
    now: float = NOW

    def __call__(self) -> float:
        return self.now


def verifier(
    *,
    members: dict[str, str] | None = None,
    served: list[dict[str, Any]] | None = None,
    name_claim: str = "sub",
) -> tuple[JwtVerifier, Fetches, Clock]:
    fetches = Fetches(served if served is not None else [jwk_of(KEY, "k1")])
    clock = Clock()
    keys = KeySet("https://idp.example.com/jwks", {"k1": jwt.PyJWK(jwk_of(KEY, "k1"))},
                  fetch=fetches, clock=clock)  # fmt: skip
    known = members or {}
    check = JwtVerifier(OAuthPolicy(ISSUER, AUDIENCE, name_claim), keys,
                        lambda name: known.get(name), clock)  # fmt: skip
    return check, fetches, clock


async def reason(presented: str, **options: Any) -> str:
    checked = await verifier(**options)[0].check(presented)
    assert isinstance(checked, AuthRefusal), checked
    return checked.code


# -- the refusal table -----------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("presented", "expected"),
    [
        pytest.param("not-a-jwt", "malformed_jwt", id="not-a-jwt"),
        pytest.param("a.b.c", "malformed_jwt", id="three-parts-of-nothing"),
        pytest.param(
            unsigned(claims(), {"alg": "none", "typ": "at+jwt", "kid": "k1"}),
            "alg_none",
            id="alg-none",
        ),
        pytest.param(
            unsigned(claims(), {"alg": "None", "typ": "at+jwt"}), "alg_none", id="alg-None-any-case"
        ),
        pytest.param(
            token(key="a-shared-secret-of-32-bytes-long!", alg="HS256"),
            "alg_not_allowed",
            id="hs256",
        ),
        pytest.param(
            unsigned(claims(), {"alg": 256, "typ": "at+jwt"}), "malformed_jwt", id="alg-a-number"
        ),
        pytest.param(unsigned(claims(), {"typ": "at+jwt"}), "malformed_jwt", id="no-alg"),
        pytest.param(token(typ="JWT"), "wrong_type", id="typ-jwt-an-id-token"),
        pytest.param(
            unsigned(claims(), {"alg": "RS256", "kid": "k1"}), "wrong_type", id="no-typ-at-all"
        ),
        pytest.param(
            unsigned(claims(), {"alg": "RS256", "typ": 9068}), "wrong_type", id="typ-a-number"
        ),
        pytest.param(token(typ=None), "wrong_type", id="no-typ"),
        pytest.param(
            token(claims(iss="https://evil.example.com")), "wrong_issuer", id="another-issuer"
        ),
        pytest.param(token(claims(iss=ISSUER + "/")), "wrong_issuer", id="issuer-plus-slash"),
        pytest.param(token(kid="k2"), "unknown_key", id="unknown-kid"),
        pytest.param(token(kid=None), "unknown_key", id="no-kid"),
        pytest.param(token(key=OTHER_KEY), "bad_signature", id="other-key-same-kid"),
        pytest.param(token(claims(exp=int(NOW) - 31)), "expired", id="expired-past-leeway"),
        pytest.param(token(claims(exp=None)), "malformed_jwt", id="no-exp"),
        pytest.param(token(claims(exp=True)), "malformed_jwt", id="exp-a-boolean"),
        pytest.param(token(claims(exp=str(int(NOW) + 300))), "malformed_jwt", id="exp-a-string"),
        pytest.param(token(claims(nbf=int(NOW) + 31)), "not_yet_valid", id="nbf-in-future"),
        pytest.param(token(claims(nbf="yesterday")), "not_yet_valid", id="nbf-a-string"),
        pytest.param(token(claims(nbf=False)), "not_yet_valid", id="nbf-a-boolean"),
        pytest.param(
            token(claims(aud="https://other.example.com/mcp")),
            "wrong_audience",
            id="another-audience",
        ),
        pytest.param(token(claims(aud=None)), "wrong_audience", id="no-aud"),
        pytest.param(token(claims(sub="al\x07ice")), "name_claim", id="control-character"),
        pytest.param(token(claims(sub="x" * 200)), "name_claim", id="200-characters"),
        pytest.param(token(claims(sub="admin")), "name_claim", id="reserved-name"),
        pytest.param(token(claims(sub=None)), "name_claim", id="no-sub"),
        pytest.param(token(claims(scope="openid profile")), "no_scope", id="no-sqlgate-scope"),
        pytest.param(token(claims(scope="sqlgate:root")), "no_scope", id="unknown-tier-scope"),
    ],
)
async def test_each_bad_token_is_refused_with_its_reason(presented: str, expected: str) -> None:
    assert await reason(presented) == expected


@pytest.mark.anyio
async def test_a_good_token_is_its_subject_at_its_scopes_tier() -> None:
    check, _, _ = verifier()
    presented = token(claims(aud=["https://other.example.com", AUDIENCE], nbf=int(NOW) + 5))
    checked = await check.check(presented)
    assert isinstance(checked, Verified)
    assert checked.identity == Identity("alice", "write", "oauth")
    assert checked.access_token.subject == "alice"
    assert checked.access_token.client_id == "claude-code"
    assert checked.access_token.scopes == ["openid", "sqlgate:write"]
    assert checked.access_token.resource == AUDIENCE
    assert checked.access_token.claims == {"iss": ISSUER}
    assert await check.verify_token(presented) == checked.access_token
    assert await check.authenticate(presented.encode()) == checked.identity
    assert await check.verify_token(token(claims(aud="x"))) is None


@pytest.mark.anyio
@pytest.mark.parametrize("typ", ["at+jwt", "application/at+jwt", "AT+JWT"])
async def test_both_spellings_of_the_access_token_type_are_accepted(typ: str) -> None:
    assert isinstance(await verifier()[0].check(token(typ=typ)), Verified)


@pytest.mark.anyio
async def test_expiry_has_a_small_leeway_both_ways() -> None:
    check, _, _ = verifier()
    assert isinstance(await check.check(token(claims(exp=int(NOW) - 29))), Verified)
    assert isinstance(await check.check(token(claims(nbf=int(NOW) + 29))), Verified)


@pytest.mark.anyio
async def test_the_leeway_is_30_s_and_its_edge_still_counts() -> None:
    """Refused only when past exp + 30 s, or before nbf - 30 s (docs/how-to/identity-provider.md),
    with the policy's defaults: named by `sub`."""
    keys = KeySet("https://idp.example.com/jwks", {"k1": jwt.PyJWK(jwk_of(KEY, "k1"))},
                  fetch=Fetches([]), clock=Clock())  # fmt: skip
    check = JwtVerifier(OAuthPolicy(ISSUER, AUDIENCE), keys, clock=Clock())
    at_edge = [claims(exp=int(NOW) - 30), claims(nbf=int(NOW) + 30)]
    for body in at_edge:
        checked = await check.check(token(body))
        assert isinstance(checked, Verified), checked
        assert checked.identity == Identity("alice", "write", "oauth")
    assert await reason_of(check, token(claims(exp=NOW - 30.5))) == "expired"
    assert await reason_of(check, token(claims(nbf=NOW + 30.5))) == "not_yet_valid"


@pytest.mark.anyio
async def test_a_header_without_typ_says_it_is_missing() -> None:
    check, _, _ = verifier()
    missing = await check.check(unsigned(claims(), {"alg": "RS256", "kid": "k1"}))
    number = await check.check(unsigned(claims(), {"alg": "RS256", "typ": 9068}))
    assert isinstance(missing, AuthRefusal)
    assert isinstance(number, AuthRefusal)
    assert missing.message.startswith("the token's typ is missing, not at+jwt")
    assert number.message.startswith("the token's typ is 9068, not at+jwt")


@pytest.mark.anyio
@pytest.mark.parametrize(
    "sub", [pytest.param("admin", id="reserved"), pytest.param("al ice", id="a-space")]
)
async def test_a_refusal_names_no_caller_when_the_name_claim_is_no_name(sub: str) -> None:
    checked = await verifier()[0].check(token(claims(sub=sub, exp=int(NOW) - 3600)))
    assert isinstance(checked, AuthRefusal)
    assert (checked.code, checked.actor) == ("expired", None)


@pytest.mark.anyio
async def test_refusals_after_the_signature_name_the_caller_and_before_it_do_not() -> None:
    check, _, _ = verifier()
    expired = await check.check(token(claims(exp=int(NOW) - 3600)))
    forged = await check.check(token(key=OTHER_KEY))
    assert isinstance(expired, AuthRefusal)
    assert isinstance(forged, AuthRefusal)
    assert (expired.code, expired.actor) == ("expired", "alice")
    assert (forged.code, forged.actor) == ("bad_signature", None)


@pytest.mark.anyio
async def test_every_refusal_message_says_what_to_do() -> None:
    presented = [
        token(claims(aud="https://other.example.com/mcp")),
        token(claims(scope="openid")),
        token(claims(iss="https://evil.example.com")),
        token(typ="JWT"),
    ]
    check, _, _ = verifier()
    messages = []
    for each in presented:
        checked = await check.check(each)
        assert isinstance(checked, AuthRefusal)
        messages.append(checked.message)
    assert f"resource={AUDIENCE}" in messages[0]
    assert "sqlgate:read" in messages[1]
    assert "sqlgate members add alice" in messages[1]
    assert f"sign in through {ISSUER}" in messages[2]
    assert "send the access token" in messages[3]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("scope", "shown"),
    [
        pytest.param(None, "(scopes: none)", id="no-scopes"),
        pytest.param("openid profile", "(scopes: openid profile)", id="other-scopes"),
    ],
)
async def test_no_scope_says_which_scopes_the_token_had(scope: str | None, shown: str) -> None:
    checked = await verifier()[0].check(token(claims(scope=scope)))
    assert isinstance(checked, AuthRefusal)
    assert checked.code == "no_scope"
    assert f"the token grants no sqlgate tier {shown} and 'alice' is no member here" in (
        checked.message
    )


@pytest.mark.anyio
async def test_a_long_claim_is_shown_cut_at_80_characters() -> None:
    check, _, _ = verifier()
    eighty = "https://evil.example.com/" + "e" * 55
    longer = eighty + "f"
    assert len(eighty) == 80
    whole = await check.check(token(claims(iss=eighty)))
    cut = await check.check(token(claims(iss=longer)))
    assert isinstance(whole, AuthRefusal)
    assert isinstance(cut, AuthRefusal)
    assert whole.message.startswith(f"the token was issued by {eighty}, and this server")
    assert cut.message.startswith(f"the token was issued by {longer[:77]}..., and this server")


# -- name and tier ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scopes", "member", "tier"),
    [
        pytest.param(["sqlgate:read"], None, "read", id="read-scope"),
        pytest.param(
            ["sqlgate:read", "sqlgate:destructive"], None, "destructive", id="highest-scope"
        ),
        pytest.param([], "write", "write", id="member-alone"),
        pytest.param(["sqlgate:destructive"], "read", "read", id="member-lowers-scope"),
        pytest.param(["sqlgate:read"], "destructive", "read", id="scope-lowers-member"),
        pytest.param(["openid", "destructive"], None, None, id="no-sqlgate-scope"),
        pytest.param(["sqlgate:"], None, None, id="empty-tier"),
    ],
)
def test_the_tier_is_the_lower_of_scope_and_member(
    scopes: list[str], member: str | None, tier: str | None
) -> None:
    assert tier_granted(scopes, member) == tier


@pytest.mark.anyio
async def test_a_member_of_the_same_name_sets_or_lowers_the_tier() -> None:
    check, _, _ = verifier(members={"alice": "read"})
    lowered = await check.check(token(claims(scope="sqlgate:destructive")))
    by_member = await check.check(token(claims(scope="openid")))
    assert isinstance(lowered, Verified)
    assert isinstance(by_member, Verified)
    assert lowered.identity.tier == by_member.identity.tier == "read"


@pytest.mark.anyio
async def test_scp_lists_count_as_scopes() -> None:
    checked = await verifier()[0].check(token(claims(scope=None, scp=["sqlgate:destructive"])))
    assert isinstance(checked, Verified)
    assert checked.identity.tier == "destructive"


@pytest.mark.anyio
async def test_the_email_claim_can_name_the_caller_when_verified() -> None:
    check, _, _ = verifier(name_claim="email")
    named = await check.check(token(claims(email="alice@example.com")))
    unverified = await check.check(token(claims(email="bob@example.com", email_verified=False)))
    assert isinstance(named, Verified)
    assert named.identity.actor == "alice@example.com"
    assert isinstance(unverified, AuthRefusal)
    assert unverified.code == "name_claim"
    assert "not verified" in unverified.message


@pytest.mark.anyio
async def test_a_space_separated_scp_counts_as_scopes() -> None:
    checked = await verifier()[0].check(token(claims(scope=None, scp="openid sqlgate:read")))
    assert isinstance(checked, Verified)
    assert checked.identity.tier == "read"
    assert checked.access_token.scopes == ["openid", "sqlgate:read"]


@pytest.mark.anyio
async def test_a_token_without_scopes_takes_its_member_tier() -> None:
    checked = await verifier(members={"alice": "write"})[0].check(token(claims(scope=None)))
    assert isinstance(checked, Verified)
    assert checked.identity == Identity("alice", "write", "oauth")
    assert checked.access_token.scopes == []


@pytest.mark.anyio
async def test_email_verification_matters_only_when_the_email_names_the_caller() -> None:
    by_sub = await verifier()[0].check(token(claims(email="a@example.com", email_verified=False)))
    reserved = await verifier(name_claim="email")[0].check(
        token(claims(email="admin", email_verified=False))
    )
    assert isinstance(by_sub, Verified)
    assert by_sub.identity.actor == "alice"
    assert isinstance(reserved, AuthRefusal)
    assert reserved.code == "name_claim"
    assert "'admin' is sqlgate's own name" in reserved.message  # the first problem, not email's


# -- the keys --------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_an_unknown_kid_fetches_the_keys_again_at_most_once_a_minute() -> None:
    check, fetches, clock = verifier(served=[jwk_of(KEY, "k1")])
    rotated = token(key=OTHER_KEY, kid="k2")
    clock.now += 60  # the start-up fetch is a minute old
    assert await reason_of(check, rotated) == "unknown_key"
    assert len(fetches.urls) == 1
    fetches.served = [jwk_of(OTHER_KEY, "k2")]  # the issuer rotates its key
    clock.now += 59
    assert await reason_of(check, rotated) == "unknown_key"
    assert len(fetches.urls) == 1  # too soon: no second fetch
    clock.now += 1
    assert isinstance(await check.check(rotated), Verified)
    assert fetches.urls == ["https://idp.example.com/jwks"] * 2
    assert await reason_of(check, token()) == "unknown_key"  # k1 was retired


@pytest.mark.anyio
async def test_tokens_of_another_issuer_never_make_it_fetch_keys() -> None:
    check, fetches, clock = verifier()
    clock.now += 3600
    assert await reason_of(check, token(claims(iss="https://evil.example"), kid="k9")) == (
        "wrong_issuer"
    )
    assert fetches.urls == []


@pytest.mark.anyio
async def test_an_unreachable_issuer_keeps_the_keys_it_had() -> None:
    check, _, clock = verifier()

    async def down(url: str) -> Any:
        raise OSError("connection refused")

    check.keys.fetch = down
    clock.now += 3600
    fresh = claims(exp=int(clock.now) + 300)
    assert await reason_of(check, token(fresh, kid="k2")) == "unknown_key"
    assert isinstance(await check.check(token(fresh)), Verified)


async def reason_of(check: JwtVerifier, presented: str) -> str:
    checked = await check.check(presented)
    assert isinstance(checked, AuthRefusal), checked
    return checked.code


# -- discovery at start-up -------------------------------------------------------------------


def test_metadata_is_looked_for_where_rfc_8414_and_openid_put_it() -> None:
    assert metadata_urls(ISSUER) == [
        "https://idp.example.com/.well-known/oauth-authorization-server/realms/team",
        "https://idp.example.com/.well-known/openid-configuration/realms/team",
        "https://idp.example.com/realms/team/.well-known/openid-configuration",
    ]
    assert metadata_urls("https://idp.example.com") == [
        "https://idp.example.com/.well-known/oauth-authorization-server",
        "https://idp.example.com/.well-known/openid-configuration",
    ]


def documents(served: dict[str, Any]) -> Callable[[str], Any]:
    def get(url: str) -> Any:
        if url not in served:
            raise OSError("404 Not Found")
        return served[url]

    return get


def test_discovery_falls_back_to_openid_and_reads_the_keys() -> None:
    jwks_uri = "https://idp.example.com/jwks"
    uri, keys = discover(ISSUER, documents({
        metadata_urls(ISSUER)[2]: {"issuer": ISSUER, "jwks_uri": jwks_uri},
        jwks_uri: {"keys": [jwk_of(KEY, "k1"), {"kty": "oct", "kid": "s", "k": "c2VjcmV0"},
                            {**jwk_of(OTHER_KEY, "enc"), "use": "enc"},
                            {**jwk_of(OTHER_KEY, "rs512"), "alg": "RS512"}]},
    }))  # fmt: skip
    assert uri == jwks_uri
    assert sorted(keys.keys) == ["k1"]


@pytest.mark.parametrize(
    ("served", "phrase"),
    [
        pytest.param({}, "cannot read the metadata of --oauth-issuer", id="unreachable"),
        pytest.param(
            {"m": {"issuer": ISSUER + "/", "jwks_uri": "j"}},
            "pass exactly that as --oauth-issuer",
            id="issuer-differs",
        ),
        pytest.param({"m": {"issuer": ISSUER}}, "has no jwks_uri", id="no-jwks-uri"),
        pytest.param(
            {"m": {"issuer": ISSUER, "jwks_uri": "j"}},
            "cannot fetch the keys",
            id="jwks-unreachable",
        ),
        pytest.param(
            {"m": {"issuer": ISSUER, "jwks_uri": "j"}, "j": {"keys": []}},
            "publishes no RS256 signing key",
            id="no-keys",
        ),
    ],
)
def test_discovery_failures_stop_the_start_with_the_step(
    served: dict[str, Any], phrase: str
) -> None:
    renamed = {metadata_urls(ISSUER)[0] if k == "m" else k: v for k, v in served.items()}
    with pytest.raises(StartupError, match="^.*" + phrase.replace("(", r"\(")):
        discover(ISSUER, documents(renamed))


def test_an_issuer_that_is_not_a_url_is_refused_before_any_fetch() -> None:
    with pytest.raises(StartupError, match="not an http"):
        discover("idp.example.com", documents({}))


@pytest.mark.parametrize("bad", ["sqlgate", "api://sqlgate", "https://x.example/mcp#frag"])
def test_an_audience_must_be_an_absolute_http_url(bad: str) -> None:
    with pytest.raises(InvalidArgument, match="--oauth-audience"):
        check_resource(bad)


# -- the gate and the metadata routes ---------------------------------------------------------


@dataclass
class Inner:
    """An ASGI app that answers 200 with the identity the gate passed on."""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        user = scope.get("user")
        body = getattr(getattr(user, "sqlgate_identity", None), "actor", "-").encode()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": body})


def gate_client(check: JwtVerifier) -> httpx2.AsyncClient:
    app = Starlette(routes=metadata_routes(check.policy))
    policy = check.policy

    async def either(scope: Any, receive: Any, send: Any) -> None:
        inner = app if str(scope.get("path", "")).startswith("/.well-known/") else Inner()
        await inner(scope, receive, send)

    gate = IdentityGate(either, server_authenticator("admin-token-0123456789", None,
                                                     check.authenticate),
                        challenge=metadata_challenge(policy))  # fmt: skip
    transport = httpx2.ASGITransport(app=gate)
    return httpx2.AsyncClient(transport=transport, base_url="https://sqlgate.example.com")


@pytest.mark.anyio
async def test_the_gate_runs_oauth_tokens_as_their_subject_beside_the_admin_token() -> None:
    check, _, _ = verifier()
    async with gate_client(check) as client:
        alice = await client.post("/mcp", headers={"Authorization": f"Bearer {token()}"})
        admin = await client.post(
            "/mcp", headers={"Authorization": "Bearer admin-token-0123456789"}
        )
    assert (alice.status_code, alice.text) == (200, "alice")
    assert (admin.status_code, admin.text) == (200, "admin")


@pytest.mark.anyio
@pytest.mark.parametrize("headers", [{}, {"Authorization": f"Bearer {token(typ='JWT')}"}])
async def test_every_401_points_to_the_resource_metadata(headers: dict[str, str]) -> None:
    check, _, _ = verifier()
    async with gate_client(check) as client:
        response = await client.post("/mcp", headers=headers)
    assert response.status_code == 401
    expected = (
        'resource_metadata="https://sqlgate.example.com/.well-known/oauth-protected-resource/mcp"'
    )
    assert response.headers["www-authenticate"].endswith(", " + expected)
    assert response.json()["reason"] == ("wrong_type" if headers else "missing_token")


@pytest.mark.anyio
@pytest.mark.parametrize(
    "path", ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"]
)
async def test_the_resource_metadata_is_served_without_a_token(path: str) -> None:
    check, _, _ = verifier()
    async with gate_client(check) as client:
        response = await client.get(path)
    assert response.status_code == 200
    metadata = response.json()
    assert metadata["resource"] == AUDIENCE
    assert metadata["authorization_servers"] == [ISSUER]
    assert metadata["scopes_supported"] == [
        "sqlgate:read", "sqlgate:write", "sqlgate:destructive"
    ]  # fmt: skip
    assert metadata["bearer_methods_supported"] == ["header"]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("issuer", "audience"),
    [
        pytest.param("https://idp.example.com", AUDIENCE, id="issuer-without-path"),
        pytest.param(ISSUER, "https://sqlgate.example.com", id="resource-without-path"),
    ],
)
async def test_the_metadata_names_issuer_and_resource_as_given(issuer: str, audience: str) -> None:
    """Clients compare the issuer as a string (RFC 8414 §3.3): no slash may be added."""
    app = Starlette(routes=metadata_routes(OAuthPolicy(issuer, audience)))
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url="https://s.example") as client:
        metadata = (await client.get("/.well-known/oauth-protected-resource")).json()
    assert (metadata["authorization_servers"], metadata["resource"]) == ([issuer], audience)
