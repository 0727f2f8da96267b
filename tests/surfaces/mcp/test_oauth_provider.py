"""`sqlgate serve --transport http --oauth-issuer ...` against a real OpenID Connect provider
on loopback (`oidc-provider-mock`, built on authlib), driven through the
authorization-code flow with PKCE like an MCP client: discovery from the 401, a token for
the server's URL, tool calls as the token's subject, and the refusals, all audited.

The provider as shipped issues opaque access tokens and keeps only the OpenID scopes, so
the fixture configures it: `OAUTH2_ACCESS_TOKEN_GENERATOR` makes RFC 9068 JWTs signed with
the provider's own key (its JWKS), `aud` the request's `resource` (RFC 8707); the client
registers with the `sqlgate:*` scopes; and a check of the PKCE verifier (the mock keeps no
code challenge) makes a wrong verifier fail as a real provider would.

Readiness without sleeps: werkzeug's server listens once made, sqlgate says on stderr when
it accepts requests (test_http.start_server).
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import signal
import sqlite3
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import flask
import httpx2
import jwt
import oidc_provider_mock
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from pydantic import AnyUrl
from werkzeug.serving import make_server

from tests.records import records_path
from tests.surfaces.mcp.test_http import (
    CALL_SECONDS,
    STARTUP_SECONDS,
    RunningServer,
    call,
    connected,
    start_server,
)

pytestmark = [pytest.mark.stdio, pytest.mark.skipif(sys.platform == "win32",
                                                    reason="SIGTERM ends the server")]  # fmt: skip

ADMIN = "admin-token-for-the-oauth-tests-0123"
SQLGATE_SCOPES = "sqlgate:read sqlgate:write sqlgate:destructive"
REDIRECT = "http://127.0.0.1:9/callback"  # never followed: the test reads the redirect


@dataclass
class Provider:
    """One identity provider on 127.0.0.1, and the knob its tokens' lifetime turns on."""

    issuer: str
    lifetime: int = 300  # seconds; negative: the tokens it issues are already expired
    challenges: dict[str, str] = field(default_factory=dict)  # code -> PKCE challenge

    def metadata(self) -> dict[str, Any]:
        answer = httpx2.get(f"{self.issuer}/.well-known/openid-configuration", timeout=10)
        document: dict[str, Any] = answer.raise_for_status().json()
        return document


def jwt_access_tokens(provider: Provider) -> Any:
    """authlib's OAUTH2_ACCESS_TOKEN_GENERATOR: an RFC 9068 access token for the request's
    `resource`, signed with the provider's key (the one its /jwks publishes)."""

    def generate(client: Any, grant_type: str, user: Any, scope: str) -> str:
        private = flask.g.oidc_provider_mock_storage.jwk.as_dict(is_private=True)
        now = int(time.time())
        claims = {
            "iss": flask.request.host_url.rstrip("/"),
            "aud": flask.request.values.get("resource") or client.get_client_id(),
            "sub": user.sub, "client_id": client.get_client_id(), "scope": scope,
            "iat": now, "exp": now + provider.lifetime, "jti": str(uuid.uuid4()),
        }  # fmt: skip
        key = jwt.PyJWK(private).key
        headers = {"kid": private["kid"], "typ": "at+jwt"}
        return jwt.encode(claims, key, algorithm="RS256", headers=headers)

    return generate


def pkce_checks(app: flask.Flask, provider: Provider) -> None:
    """Refuse a token request whose code_verifier does not hash to the code's challenge."""

    def remember(response: flask.Response) -> flask.Response:
        if flask.request.path.endswith("/authorize") and response.status_code == 302:
            code = parse_qs(urlsplit(response.headers["Location"]).query).get("code")
            if code:
                provider.challenges[code[0]] = flask.request.args.get("code_challenge", "")
        return response

    def check() -> flask.typing.ResponseReturnValue | None:
        if flask.request.path.endswith("/token") and flask.request.method == "POST":
            form = flask.request.form
            expected = provider.challenges.pop(form.get("code", ""), None)
            if expected is None or expected != s256(form.get("code_verifier", "")):
                return flask.jsonify({"error": "invalid_grant"}), 400
        return None

    app.after_request(remember)
    app.before_request(check)


@pytest.fixture(scope="module")
def providers() -> Iterator[tuple[Provider, Provider]]:
    """Two providers: the one sqlgate trusts, and another (its own key and issuer)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AUTHLIB_INSECURE_TRANSPORT", "1")  # loopback http, tests only
        servers, made = [], []
        try:
            for _ in range(2):
                app = flask.Flask("idp")
                provider = Provider("")
                app.config["OAUTH2_ACCESS_TOKEN_GENERATOR"] = jwt_access_tokens(provider)
                oidc_provider_mock.init_app(app, issue_refresh_token=False)
                app.secret_key = secrets.token_bytes(16)
                pkce_checks(app, provider)
                server = make_server("127.0.0.1", 0, app, threaded=True)
                provider.issuer = f"http://127.0.0.1:{server.server_port}"
                threading.Thread(target=server.serve_forever, daemon=True).start()
                servers.append(server)
                made.append(provider)
            yield made[0], made[1]
        finally:
            for server in servers:
                server.shutdown()
                server.server_close()


def s256(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def sign_in(provider: Provider, user: str, scope: str, resource: str) -> str:
    """The authorization-code flow with PKCE (S256): register a client (the mock's grant
    takes only client_secret_basic or _post), ask the provider to authorize `user` (the
    mock's consent form), trade the code for a token."""
    metadata = provider.metadata()
    with httpx2.Client(timeout=CALL_SECONDS, follow_redirects=False) as http:
        registered = http.post(metadata["registration_endpoint"], json={
            "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "client_secret_post",
            "scope": f"openid email {SQLGATE_SCOPES}",
        })  # fmt: skip
        client = registered.raise_for_status().json()
        verifier, state = secrets.token_urlsafe(48), secrets.token_urlsafe(8)
        authorize = {
            "response_type": "code", "client_id": client["client_id"], "redirect_uri": REDIRECT,
            "scope": scope, "state": state, "code_challenge": s256(verifier),
            "code_challenge_method": "S256", "resource": resource,
        }  # fmt: skip
        consent = http.post(metadata["authorization_endpoint"], params=authorize,
                            data={"sub": user})  # fmt: skip
        assert consent.status_code == 302, consent.text
        back = parse_qs(urlsplit(consent.headers["Location"]).query)
        assert back["state"] == [state]
        exchange = {
            "grant_type": "authorization_code", "code": back["code"][0],
            "redirect_uri": REDIRECT, "client_id": client["client_id"],
            "client_secret": client["client_secret"], "resource": resource,
        }  # fmt: skip
        wrong = http.post(metadata["token_endpoint"], data={**exchange, "code_verifier": "x"})
        assert wrong.status_code == 400  # the PKCE check refuses a wrong verifier...
        consent = http.post(metadata["authorization_endpoint"], params=authorize,
                            data={"sub": user})  # fmt: skip
        exchange["code"] = parse_qs(urlsplit(consent.headers["Location"]).query)["code"][0]
        exchange["code_verifier"] = verifier
        issued = http.post(metadata["token_endpoint"], data=exchange)
        assert issued.status_code == 200, issued.text  # ...and takes the right one
        access: str = issued.json()["access_token"]
    return access


def discovered(server: RunningServer) -> tuple[str, dict[str, Any]]:
    """What an MCP client learns from a 401: the metadata URL, and the metadata."""
    answer = httpx2.post(server.url, json={}, timeout=CALL_SECONDS)
    assert answer.status_code == 401
    challenge = answer.headers["www-authenticate"]
    url = challenge.split('resource_metadata="', 1)[1].split('"', 1)[0]
    metadata: dict[str, Any] = httpx2.get(url, timeout=CALL_SECONDS).raise_for_status().json()
    return url, metadata


def oauth_server(db: Path, provider: Provider) -> RunningServer:
    return start_server(db, "--token", ADMIN, "--oauth-issuer", provider.issuer)


def stopped(server: RunningServer) -> str:
    server.process.send_signal(signal.SIGTERM)
    try:
        stderr = server.stderr_until_exit(timeout=STARTUP_SECONDS)
    finally:
        server.stop()
    assert server.process.returncode == 0, stderr
    return stderr


def audit_rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(f"file:{records_path(db)}?mode=ro", uri=True) as conn:
        return conn.execute(sql).fetchall()


@pytest.mark.anyio
async def test_a_token_from_the_flow_calls_tools_as_its_subject(
    providers: tuple[Provider, Provider], tmp_path: Path
) -> None:
    provider, _ = providers
    db = tmp_path / "team.db"
    server = oauth_server(db, provider)
    try:
        metadata_url, metadata = discovered(server)
        assert metadata_url.endswith("/.well-known/oauth-protected-resource/mcp")
        assert metadata["resource"] == server.url
        issuer = metadata["authorization_servers"][0].rstrip("/")
        assert issuer == provider.issuer
        writer = sign_in(provider, "alice", "openid sqlgate:write", metadata["resource"])
        reader = sign_in(provider, "bob@example.com", "openid sqlgate:read", server.url)
        with anyio.fail_after(CALL_SECONDS * 3):
            async with connected(server.url, writer) as alice:
                alice_tools = {tool.name for tool in (await alice.list_tools()).tools}
                await call(alice, "write_query", query="CREATE TABLE notes (body TEXT)")
            async with connected(server.url, reader) as bob:
                bob_tools = {tool.name for tool in (await bob.list_tools()).tools}
                seen = await call(bob, "read_query", query="SELECT count(*) AS n FROM notes")
                refused = await bob.call_tool("write_query", {"query": "DELETE FROM notes"})
            async with connected(server.url, ADMIN) as admin:
                await call(admin, "read_query", query="SELECT 1")
    finally:
        stderr = stopped(server)
    assert "write_query" in alice_tools
    assert "write_query" not in bob_tools
    assert "read_query" in bob_tools
    assert seen == "n\n0\n# 1 row"
    assert refused.is_error
    rows = audit_rows(db, "SELECT actor, tool, ok, session FROM query_log "
                          "WHERE tool IN ('write_query', 'read_query') ORDER BY id")  # fmt: skip
    assert [(actor, tool, ok) for actor, tool, ok, _ in rows] == [
        ("alice", "write_query", 1),
        ("bob@example.com", "read_query", 1),
        ("bob@example.com", "write_query", 0),
        ("admin", "read_query", 1),
    ]
    # `<server session>/<actor>[/<connection>]` (engine.records.actors.caller_session)
    assert [session.split("/")[1] for _, _, _, session in rows] == [a for a, _, _, _ in rows]
    assert f"accepting OAuth access tokens of {provider.issuer} for {server.url}" in stderr
    assert metadata_url in stderr
    assert "Traceback" not in stderr


def alg_none(token: str) -> str:
    payload = token.split(".")[1]
    header = base64.urlsafe_b64encode(json.dumps({"alg": "none", "typ": "at+jwt"}).encode())
    return f"{header.rstrip(b'=').decode()}.{payload}."


def signed_by_a_stranger(token: str) -> str:
    claims = jwt.decode(token, options={"verify_signature": False})
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return jwt.encode(claims, stranger, algorithm="RS256",
                      headers={"kid": "not-the-providers", "typ": "at+jwt"})  # fmt: skip


def test_bad_tokens_are_refused_with_their_reason_and_audited(
    providers: tuple[Provider, Provider], tmp_path: Path
) -> None:
    provider, stranger = providers
    db = tmp_path / "team.db"
    server = oauth_server(db, provider)
    answers: dict[str, tuple[int, str, str]] = {}
    try:
        good = sign_in(provider, "carol", "openid sqlgate:read", server.url)
        provider.lifetime = -3600
        try:
            expired = sign_in(provider, "carol", "openid sqlgate:read", server.url)
        finally:
            provider.lifetime = 300
        bad = {
            "expired": expired,
            "wrong_issuer": sign_in(stranger, "carol", "openid sqlgate:read", server.url),
            "wrong_audience": sign_in(
                provider, "carol", "openid sqlgate:read", "http://127.0.0.1:9/mcp"
            ),
            "no_scope": sign_in(provider, "carol", "openid email", server.url),
            "alg_none": alg_none(good),
            "unknown_key": signed_by_a_stranger(good),
        }
        for expected, presented in bad.items():
            answer = httpx2.post(server.url, json={}, timeout=CALL_SECONDS,
                                 headers={"Authorization": f"Bearer {presented}"})  # fmt: skip
            body = answer.json()
            answers[expected] = (answer.status_code, body["reason"],
                                 answer.headers["www-authenticate"])  # fmt: skip
    finally:
        stopped(server)
    for expected, (status, reason, challenge) in answers.items():
        assert (status, reason) == (401, expected)
        assert 'error="invalid_token"' in challenge
        assert "resource_metadata=" in challenge
    rows = audit_rows(db, "SELECT actor, json_extract(detail, '$.reason') FROM query_log "
                          "WHERE tool = 'http_request' AND ok = 0")  # fmt: skip
    assert sorted(reason for _, reason in rows) == sorted(bad)
    actors = {reason: actor for actor, reason in rows}
    assert actors["expired"] == actors["no_scope"] == "carol"  # signed by the issuer: known
    assert actors["alg_none"] == actors["unknown_key"] == "(unknown)"  # claims not trusted


def test_an_issuer_given_with_another_spelling_stops_the_start(
    providers: tuple[Provider, Provider], tmp_path: Path
) -> None:
    from click.testing import CliRunner

    from sqlgate.surfaces.cli.app import main

    provider, _ = providers
    spelled = provider.issuer + "/"  # the provider's issuer has no trailing slash
    result = CliRunner().invoke(main, [
        "serve", "--transport", "http", "--db", str(tmp_path / "team.db"), "--port", "0",
        "--token", ADMIN, "--oauth-issuer", spelled,
    ])  # fmt: skip
    assert result.exit_code == 8
    assert f"says its issuer is '{provider.issuer}'; pass exactly that" in result.stderr
    assert list(tmp_path.iterdir()) == []


@dataclass
class MemoryStorage:
    """The SDK client's token storage, in memory."""

    tokens: OAuthToken | None = None
    client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


@pytest.mark.anyio
async def test_the_sdks_oauth_client_finds_its_way_from_the_401(
    providers: tuple[Provider, Provider], tmp_path: Path
) -> None:
    """What Claude Code does: discovery from the 401, registration, PKCE, the resource."""
    provider, _ = providers
    db = tmp_path / "team.db"
    server = oauth_server(db, provider)
    redirected: dict[str, str | None] = {}

    async def consent(authorize_url: str) -> None:  # the person signs in as dave
        async with httpx2.AsyncClient(timeout=CALL_SECONDS) as http:
            answer = await http.post(authorize_url, data={"sub": "dave"})
        back = parse_qs(urlsplit(answer.headers["Location"]).query)
        redirected.update(code=back["code"][0], state=back.get("state", [None])[0])

    async def callback() -> AuthorizationCodeResult:
        return AuthorizationCodeResult(code=str(redirected["code"]), state=redirected["state"])

    metadata = OAuthClientMetadata(
        redirect_uris=[AnyUrl(REDIRECT)], scope="openid sqlgate:write",
        token_endpoint_auth_method="client_secret_post", client_name="sdk client",
    )  # fmt: skip
    auth = OAuthClientProvider(server.url, metadata, MemoryStorage(), consent, callback)
    try:
        with anyio.fail_after(CALL_SECONDS * 2):
            async with (
                httpx2.AsyncClient(auth=auth, timeout=CALL_SECONDS) as http,
                Client(streamable_http_client(server.url, http_client=http)) as client,
            ):
                answer = await call(client, "read_query", query="SELECT 6 * 7 AS answer")
    finally:
        stopped(server)
    assert answer == "answer\n42\n# 1 row"
    assert audit_rows(db, "SELECT actor FROM query_log WHERE tool = 'read_query'") == [("dave",)]
