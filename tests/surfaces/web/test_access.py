"""Who may connect to sqlgate's HTTP servers (surfaces/web/access.py), shared by
`serve --transport http` and `sqlgate ui`: which hosts are this machine's, and which token a
host needs.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sqlgate.errors import InvalidArgument
from sqlgate.surfaces.web.access import MIN_TOKEN_CHARS, is_loopback, token_for

TOKEN = "t0k3n-for-the-tests-0123456789"


# -- which host needs which token ------------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        pytest.param("127.0.0.1", True, id="ipv4-loopback"),
        pytest.param("127.8.9.10", True, id="ipv4-loopback-range"),
        pytest.param("::1", True, id="ipv6-loopback"),
        pytest.param("[::1]", True, id="ipv6-bracketed"),
        pytest.param("localhost", True, id="localhost"),
        pytest.param("LocalHost", True, id="localhost-any-case"),
        pytest.param("0.0.0.0", False, id="all-ipv4"),
        pytest.param("::", False, id="all-ipv6"),
        pytest.param("192.168.1.20", False, id="lan"),
        pytest.param("10.0.0.1", False, id="private"),
        pytest.param("db.example.com", False, id="name-not-resolved"),
        pytest.param("localhost.example.com", False, id="localhost-lookalike"),
    ],
)
def test_is_loopback_only_for_this_machine(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_loopback_without_token_generates_one() -> None:
    token = token_for("127.0.0.1", None, generate=lambda: "generated-token-value")
    assert (token.value, token.generated) == ("generated-token-value", True)


def test_generated_tokens_are_long_and_fresh() -> None:
    first, second = token_for("localhost", None), token_for("localhost", None)
    assert len(first.value) >= 43  # secrets.token_urlsafe(32)
    assert first.value != second.value


@pytest.mark.parametrize("host", ["127.0.0.1", "0.0.0.0", "192.168.1.20"])
def test_a_given_token_is_used_on_any_host(host: str) -> None:
    token = token_for(host, TOKEN)
    assert (token.value, token.generated) == (TOKEN, False)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.20", "db.example.com"])
def test_non_loopback_without_token_is_refused(host: str) -> None:
    with pytest.raises(InvalidArgument, match="not a loopback address") as refused:
        token_for(host, None)
    # the page it names exists, and says how to put TLS in front
    (page,) = re.findall(r"docs/[\w/-]+\.md", str(refused.value))
    assert "### TLS" in (Path(__file__).resolve().parents[3] / page).read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("given", "phrase"),
    [
        pytest.param("x" * (MIN_TOKEN_CHARS - 1), "at least", id="too-short"),
        pytest.param("", "at least", id="empty"),
        pytest.param("a token with spaces in it", "without spaces", id="spaces"),
        pytest.param("tökenwithumlauts-0123456", "ASCII", id="not-ascii"),
        pytest.param("token-with\nnewline-012345", "without spaces", id="newline"),
    ],
)
def test_malformed_tokens_are_refused(given: str, phrase: str) -> None:
    with pytest.raises(InvalidArgument, match=phrase):
        token_for("127.0.0.1", given)
