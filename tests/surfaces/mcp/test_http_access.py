"""Who can connect to `serve --transport http` (issue 22): with members in the database (or
an OAuth issuer) the --token is optional on any host, and without it there is no admin
identity; the start-up message says who can connect and how to add a member.
"""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

import httpx2
import pytest

from sqlgate.config import Settings
from sqlgate.engine.records.members import Members
from sqlgate.errors import InvalidArgument
from sqlgate.service import Service
from sqlgate.surfaces.mcp.http_access import Audience, audience_of, required_token
from sqlgate.surfaces.web.access import Token
from tests.records import connect_both
from tests.surfaces.mcp.team_server import ADMIN_TOKEN, with_members
from tests.surfaces.mcp.test_http import CALL_SECONDS, child_env, start_server

GIVEN = "a-token-of-my-own-0123456789"
NOBODY = Audience()
TWO = Audience(members=2)
OAUTH = Audience(oauth_issuer="https://id.example.com")


@pytest.mark.parametrize(
    ("host", "given", "audience", "expected"),
    [
        pytest.param("127.0.0.1", GIVEN, NOBODY, Token(GIVEN, False), id="loopback-token"),
        pytest.param("127.0.0.1", GIVEN, TWO, Token(GIVEN, False), id="loopback-token-members"),
        pytest.param("0.0.0.0", GIVEN, TWO, Token(GIVEN, False), id="public-token-members"),
        pytest.param("127.0.0.1", None, NOBODY, Token("generated", True), id="loopback-nobody"),
        pytest.param("127.0.0.1", None, TWO, None, id="loopback-members"),
        pytest.param("0.0.0.0", None, TWO, None, id="public-members"),
        pytest.param("192.168.1.20", None, OAUTH, None, id="public-oauth"),
        pytest.param("localhost", None, OAUTH, None, id="loopback-oauth"),
    ],
)
def test_the_token_a_server_requires(
    host: str, given: str | None, audience: Audience, expected: Token | None
) -> None:
    assert required_token(host, given, audience, generate=lambda: "generated") == expected


def test_a_public_host_with_nobody_to_connect_is_refused_naming_both_ways() -> None:
    with pytest.raises(InvalidArgument) as refused:
        required_token("0.0.0.0", None, NOBODY)
    said = str(refused.value)
    assert "pass --token or set SQLGATE_TOKEN" in said
    assert "sqlgate members add" in said


def test_a_short_token_is_refused_even_with_members() -> None:
    with pytest.raises(InvalidArgument, match="at least 16 characters"):
        required_token("127.0.0.1", "short", TWO)


@pytest.mark.parametrize(
    ("tiers", "ended", "members"),
    [
        pytest.param({}, (), 0, id="none"),
        pytest.param({"ann": "read", "ben": "write"}, (), 2, id="two"),
        pytest.param({"ann": "read", "ben": "write"}, ("ben",), 1, id="one-revoked"),
    ],
)
def test_the_audience_counts_members_with_a_working_token(
    tmp_path: Path, tiers: dict[str, str], ended: tuple[str, ...], members: int
) -> None:
    db = tmp_path / "team.db"
    with_members(db, tiers)
    with closing(connect_both(db)) as conn:
        for name in ended:
            Members(conn).revoke(name)
    assert audience_of(Settings(db=db)) == Audience(members=members)


def test_the_audience_of_a_missing_or_older_database_is_nobody(tmp_path: Path) -> None:
    assert audience_of(Settings(db=tmp_path / "absent.db")) == NOBODY
    assert not (tmp_path / "absent.db").exists()  # looked at, never created
    plain = tmp_path / "plain.db"
    with closing(connect_both(plain)) as conn:
        conn.execute("CREATE TABLE x (y)")
    assert audience_of(Settings(db=plain)) == NOBODY


def test_the_oauth_hook_counts_as_someone(tmp_path: Path) -> None:
    audience = audience_of(Settings(db=tmp_path / "absent.db"), oauth_issuer="https://id.x")
    assert audience == Audience(oauth_issuer="https://id.x")
    assert audience.anyone


# -- the real server ---------------------------------------------------------------------------


@pytest.mark.stdio
def test_a_server_of_members_needs_no_token_and_says_who_can_connect(tmp_path: Path) -> None:
    db = tmp_path / "team.db"
    tokens = with_members(db, {"ann": "read", "ben": "write"})
    server = start_server(db, env=child_env())
    try:
        as_ann = httpx2.post(server.url, json={}, timeout=CALL_SECONDS,
                             headers={"Authorization": f"Bearer {tokens['ann']}"})  # fmt: skip
        as_guess = httpx2.post(server.url, json={}, timeout=CALL_SECONDS,
                               headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})  # fmt: skip
    finally:
        server.stop()
    said = "".join(server.lines)
    assert "Bearer" not in said  # no generated admin token
    assert "2 members can connect, each with their own token" in said
    assert f"sqlgate members add NAME --tier read --db {db}" in said
    assert as_ann.status_code != 401  # the SDK answers the empty message; the gate let it in
    assert as_guess.status_code == 401


@pytest.mark.stdio
def test_a_server_with_a_token_and_members_names_both(tmp_path: Path) -> None:
    db = tmp_path / "team.db"
    with_members(db, {"ann": "read"})
    server = start_server(db, "--token", ADMIN_TOKEN)
    server.stop()
    said = "".join(server.lines)
    assert "the --token connects as admin (every tool)" in said
    assert "1 member can connect, each with their own token" in said
    assert ADMIN_TOKEN not in said


@pytest.mark.stdio
def test_a_server_of_nobody_keeps_its_generated_token_and_says_how_to_add_members(
    tmp_path: Path,
) -> None:
    db = tmp_path / "team.db"
    Service.open(Settings(db=db)).close()
    server = start_server(db)
    server.stop()
    said = "".join(server.lines)
    assert server.token
    assert "Authorization: Bearer" in said
    assert "sqlgate members add NAME --tier read" in said
