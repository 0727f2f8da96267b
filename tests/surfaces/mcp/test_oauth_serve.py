"""The --oauth-* options of `sqlgate serve`: refused before anything is opened when they
cannot apply, a start-up that stops when the issuer cannot be read, and nothing of OAuth
on a server started without them."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from tests.surfaces.mcp.test_http import (
    CALL_SECONDS,
    TOKEN,
    clean_environment,  # noqa: F401 (a fixture)
    one_error_line,
    serve_cli,
    start_server,
)

pytestmark = pytest.mark.usefixtures("clean_environment", "no_oauth_environment")


@pytest.fixture
def no_oauth_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("SQLGATE_OAUTH_ISSUER", "SQLGATE_OAUTH_AUDIENCE", "SQLGATE_OAUTH_NAME_CLAIM"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A loopback port nothing listens on (held bound, so nothing else takes it)."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield held.getsockname()[1]


@pytest.mark.parametrize(
    ("args", "env", "phrase"),
    [
        pytest.param(("--oauth-audience", "https://x.example/mcp"), None,
                     "--oauth-audience applies only with --oauth-issuer", id="audience-alone"),
        pytest.param(("--insecure-no-token", "--oauth-issuer", "https://idp.example"), None,
                     "--oauth-issuer cannot apply", id="tokenless"),
        pytest.param(("--oauth-issuer", "https://idp.example", "--oauth-audience", "sqlgate"),
                     None, "is not an absolute http(s) URL", id="audience-not-a-url"),
        pytest.param((), {"SQLGATE_OAUTH_AUDIENCE": "https://x.example/mcp"},
                     "--oauth-audience applies only", id="audience-alone-by-env"),
    ],
)  # fmt: skip
def test_oauth_options_that_cannot_apply_are_refused_with_exit_2(
    tmp_path: Path, args: tuple[str, ...], env: dict[str, str] | None, phrase: str
) -> None:
    result = serve_cli("--db", str(tmp_path / "agent.db"), "--port", "0", *args, env=env)
    assert result.exit_code == 2
    assert phrase in one_error_line(result)
    assert list(tmp_path.iterdir()) == []


def test_oauth_on_stdio_is_refused(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from sqlgate.surfaces.cli.app import main

    result = CliRunner().invoke(
        main, ["serve", "--db", str(tmp_path / "a.db"), "--oauth-issuer", "https://idp.example"]
    )
    assert result.exit_code == 2
    assert "applies to --transport http only" in one_error_line(result)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("by_env", [False, True], ids=["flag", "env"])
def test_an_unreachable_issuer_stops_the_start_with_one_line(
    tmp_path: Path, closed_port: int, by_env: bool
) -> None:
    issuer = f"http://127.0.0.1:{closed_port}"
    args = () if by_env else ("--oauth-issuer", issuer)
    env = {"SQLGATE_OAUTH_ISSUER": issuer} if by_env else None
    result = serve_cli("--db", str(tmp_path / "agent.db"), "--port", "0", *args, env=env)
    assert result.exit_code == 8
    line = one_error_line(result)
    assert f"cannot read the metadata of --oauth-issuer {issuer}" in line
    assert f"{issuer}/.well-known/openid-configuration" in line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.stdio
def test_without_an_issuer_nothing_of_oauth_is_served(tmp_path: Path) -> None:
    server = start_server(tmp_path / "team.db", "--token", TOKEN)
    try:
        origin = server.url.removesuffix("/mcp")
        metadata = [
            httpx2.get(origin + path, timeout=CALL_SECONDS).status_code
            for path in (
                "/.well-known/oauth-protected-resource",
                "/.well-known/oauth-protected-resource/mcp",
            )
        ]
        jwt_like = httpx2.post(server.url, json={}, timeout=CALL_SECONDS,
                               headers={"Authorization": "Bearer aaa.bbb.ccc"})  # fmt: skip
    finally:
        server.stop()
    assert metadata == [404, 404]
    assert jwt_like.status_code == 401
    assert jwt_like.json()["reason"] == "unknown_token"
    assert "resource_metadata" not in jwt_like.headers["www-authenticate"]


@pytest.mark.parametrize(
    ("option", "variable"),
    [
        ("--oauth-issuer", "SQLGATE_OAUTH_ISSUER"),
        ("--oauth-audience", "SQLGATE_OAUTH_AUDIENCE"),
        ("--oauth-name-claim", "SQLGATE_OAUTH_NAME_CLAIM"),
    ],
)
def test_each_oauth_option_has_its_variable_and_says_so(option: str, variable: str) -> None:
    from sqlgate.surfaces.cli.app import serve

    (found,) = [p for p in serve.params if option in getattr(p, "opts", ())]
    assert getattr(found, "envvar", None) == variable
    assert f"[env {variable}]" in str(getattr(found, "help", ""))


def test_a_bad_name_claim_from_the_environment_names_the_variable(tmp_path: Path) -> None:
    result = serve_cli("--db", str(tmp_path / "a.db"), env={"SQLGATE_OAUTH_NAME_CLAIM": "upn"})
    assert result.exit_code == 2
    line = one_error_line(result)
    assert "SQLGATE_OAUTH_NAME_CLAIM" in line
    assert "'sub'" in line
    assert list(tmp_path.iterdir()) == []
