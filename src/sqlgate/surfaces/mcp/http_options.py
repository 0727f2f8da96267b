"""The options of `sqlgate serve --transport http`, defined with click alone: the `serve`
command is built (for `--help`, for a stdio run) without importing the MCP SDK that
`http` serves with."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import click

from sqlgate.surfaces.web.listen import DEFAULT_HOST

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "TOKENLESS_FLAG", "OAuthOptions", "http_options"]

F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_PORT = 8765
TOKENLESS_FLAG = "--insecure-no-token"


@dataclass(frozen=True)
class OAuthOptions:
    """`--oauth-issuer` and its companions (surfaces/mcp/oauth.py); `audience` None: the
    server's own MCP URL."""

    issuer: str
    audience: str | None = None
    name_claim: str = "sub"


def http_options(fn: F) -> F:
    """--host, --port, --token and the --oauth-* options for `sqlgate serve`, each with its
    environment variable (but --insecure-no-token)."""
    options = (
        click.option("--host", envvar="SQLGATE_HOST", default=DEFAULT_HOST, show_default=True,
                     metavar="ADDRESS",
                     help="http: address to listen on [env SQLGATE_HOST]"),
        click.option("--port", envvar="SQLGATE_PORT", type=click.IntRange(0, 65535),
                     metavar="NUMBER",
                     default=DEFAULT_PORT, show_default=True,
                     help="http: port to listen on (0: any free port) [env SQLGATE_PORT]"),
        click.option("--token", envvar="SQLGATE_TOKEN", default=None, metavar="SECRET",
                     help="http: the admin's bearer token (every tool); optional when the "
                          "database has members, else generated on loopback if absent and "
                          "required elsewhere [env SQLGATE_TOKEN]"),
        # no environment variable on purpose: an inherited one must not turn the token off
        click.option(TOKENLESS_FLAG, "insecure_no_token", is_flag=True, default=False,
                     help="http, for tests only: serve on loopback without a token; every "
                          "local user and program can then use the server"),
        click.option("--oauth-issuer", envvar="SQLGATE_OAUTH_ISSUER", default=None,
                     metavar="URL",
                     help="http: also accept the RFC 9068 JWT access tokens of this OAuth "
                          "issuer, and serve /.well-known/oauth-protected-resource "
                          "[env SQLGATE_OAUTH_ISSUER]"),
        click.option("--oauth-audience", envvar="SQLGATE_OAUTH_AUDIENCE", default=None,
                     metavar="URL",
                     help="http, with --oauth-issuer: the resource tokens must be for (their "
                          "aud); default this server's own MCP URL [env SQLGATE_OAUTH_AUDIENCE]"),
        click.option("--oauth-name-claim", envvar="SQLGATE_OAUTH_NAME_CLAIM",
                     type=click.Choice(["sub", "email"]), default="sub", show_default=True,
                     help="http, with --oauth-issuer: the token claim that names the caller "
                          "[env SQLGATE_OAUTH_NAME_CLAIM]"),
    )  # fmt: skip
    for option in reversed(options):
        fn = option(fn)
    return fn
