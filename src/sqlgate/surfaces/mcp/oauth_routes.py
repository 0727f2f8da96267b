"""What an OAuth client reads before it has a token: RFC 9728's protected resource metadata.

With `--oauth-issuer`, the HTTP app serves the metadata at
`/.well-known/oauth-protected-resource` followed by the resource's path (RFC 9728 §3.1;
`/.well-known/oauth-protected-resource/mcp` by default) and at the bare path, both built by
the SDK (`create_protected_resource_routes`), and every 401 names it in `WWW-Authenticate:
Bearer ..., resource_metadata="..."`. The identity gate lets GETs of these paths through
without a token (`http_identity.PUBLIC_PATHS`).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from mcp.server.auth.routes import build_resource_metadata_url, create_protected_resource_routes
from mcp.shared.auth import ProtectedResourceMetadata
from pydantic import AnyHttpUrl
from starlette.routing import BaseRoute, Route

from sqlgate.errors import InvalidArgument
from sqlgate.surfaces.mcp.http_identity import PUBLIC_PATHS, SCOPE_OF_TIER
from sqlgate.surfaces.mcp.oauth_claims import OAuthPolicy

__all__ = ["check_resource", "metadata_challenge", "metadata_routes", "metadata_url"]


def check_resource(resource: str) -> str:
    """`resource` (the --oauth-audience) if it is an absolute http(s) URL without a
    fragment, as RFC 8707 and the MCP authorization spec require of a resource."""
    parts = urlsplit(resource)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.fragment:
        raise InvalidArgument(
            f"--oauth-audience {resource!r} is not an absolute http(s) URL; give the URL "
            "clients connect to, e.g. https://sqlgate.example.com/mcp"
        )
    return resource


def metadata_url(policy: OAuthPolicy) -> str:
    return str(build_resource_metadata_url(AnyHttpUrl(policy.audience)))


def metadata_challenge(policy: OAuthPolicy) -> str:
    """The `WWW-Authenticate` parameter of every 401 (RFC 9728 §5.1)."""
    return f'resource_metadata="{metadata_url(policy)}"'


def metadata_routes(policy: OAuthPolicy) -> list[BaseRoute]:
    """The SDK's metadata route for `policy`'s resource, and the same answer at the bare
    well-known path (for clients that look there first)."""
    # validated by the SDK's model, which keeps an empty path empty: `AnyHttpUrl(url)` would
    # add a slash, and clients compare the issuer as a string (RFC 8414 §3.3)
    urls = ProtectedResourceMetadata.model_validate(
        {"resource": policy.audience, "authorization_servers": [policy.issuer]}
    )
    routes: list[BaseRoute] = list(
        create_protected_resource_routes(
            resource_url=urls.resource,
            authorization_servers=urls.authorization_servers,
            scopes_supported=list(SCOPE_OF_TIER.values()),
            resource_name="sqlgate",
        )
    )
    first = routes[0]
    assert isinstance(first, Route)  # the SDK builds one Route
    if first.path != PUBLIC_PATHS[0]:
        routes.append(Route(PUBLIC_PATHS[0], endpoint=first.endpoint, methods=["GET", "OPTIONS"]))
    return routes
