"""Who may see the console, and what every answer carries.

A browser cannot send a bearer header when it follows a link, so the token travels once:

    1. `sqlgate ui` prints http://127.0.0.1:PORT/?token=T (T generated, or SQLGATE_TOKEN)
    2. a request with ?token=T (compared in constant time) is answered 303 to the same URL
       without the token, setting the cookie `sqlgate_ui` = HMAC-SHA256(T, "sqlgate-ui"):
       HttpOnly (no script reads it), SameSite=Strict (no other site's page sends it),
       Path=/, no Max-Age (gone when the browser closes). The token leaves the address
       bar and the history at once, and the Referrer-Policy keeps it out of Referer.
    3. every later request must carry that cookie; without it: 401 and what to do.

On a loopback host the Host header must name this machine (`web.access.host_header_allowed`,
the same rule as the MCP transport): a DNS-rebinding page cannot read the console. Only GET
and HEAD are served: the console never changes anything. Every answer carries a strict
Content-Security-Policy (no inline script, styles and scripts from /static only), nosniff,
no-referrer, no framing and no caching. See docs/security-model.md, "Web console".
"""

from __future__ import annotations

import hashlib
import hmac
from http.cookies import SimpleCookie
from urllib.parse import parse_qsl, quote, urlencode

from sqlgate.surfaces.web.access import host_header_allowed
from sqlgate.surfaces.web.asgi import ASGIApp, Message, Receive, Scope, Send, header, send_answer

__all__ = ["CONTENT_SECURITY_POLICY", "COOKIE", "ConsoleGate", "cookie_value"]

COOKIE = "sqlgate_ui"
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode("ascii")),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
)


def cookie_value(token: str) -> str:
    """What the cookie holds: derived from the token, so the cookie is not the token."""
    return hmac.new(token.encode("utf-8"), b"sqlgate-ui", hashlib.sha256).hexdigest()


def _header(scope: Scope, name: bytes) -> str | None:
    value = header(scope, name)
    return None if value is None else value.decode("latin-1")


def _with_security_headers(send: Send) -> Send:
    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            present = {bytes(k).lower() for k, _ in message.get("headers", ())}
            extra = [(k, v) for k, v in SECURITY_HEADERS if k not in present]
            message = {**message, "headers": [*message.get("headers", ()), *extra]}
        await send(message)

    return sending


async def _answer(
    send: Send, status: int, text: str, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    body = text.encode("utf-8")
    await send_answer(send, status, body, b"text/plain; charset=utf-8", after=headers or [])


class ConsoleGate:
    """Pure ASGI middleware in front of the console's app (see the module docstring)."""

    def __init__(self, app: ASGIApp, token: str, host: str) -> None:
        self.app = app
        self._token = token.encode("utf-8")
        self._cookie = cookie_value(token).encode("ascii")
        self.host = host

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
                return
            await self.app(scope, receive, send)
            return
        send = _with_security_headers(send)
        if not host_header_allowed(self.host, _header(scope, b"host")):
            await _answer(send, 421, "this console answers only to this machine's names")
            return
        if scope["method"] not in ("GET", "HEAD"):
            await _answer(send, 405, "the console is read-only: GET only", [(b"allow", b"GET")])
            return
        pairs = parse_qsl(scope.get("query_string", b"").decode("latin-1"), True)
        given = [value for key, value in pairs if key == "token"]
        if given:
            await self._exchange(scope, send, given[-1], [(k, v) for k, v in pairs if k != "token"])
            return
        if self._has_cookie(scope):
            await self.app(scope, receive, send)
            return
        await _answer(
            send, 401,
            "sqlgate ui: open the URL `sqlgate ui` printed (it ends with ?token=...); it sets a "
            "cookie for this browser session\n",
        )  # fmt: skip

    def _has_cookie(self, scope: Scope) -> bool:
        raw = _header(scope, b"cookie")
        if not raw:
            return False
        jar: SimpleCookie = SimpleCookie()
        try:
            jar.load(raw)
        except Exception:  # a malformed Cookie header is no cookie
            return False
        morsel = jar.get(COOKIE)
        return morsel is not None and hmac.compare_digest(
            morsel.value.encode("latin-1", "replace"), self._cookie
        )

    async def _exchange(
        self, scope: Scope, send: Send, token: str, rest: list[tuple[str, str]]
    ) -> None:
        if not hmac.compare_digest(token.encode("utf-8", "replace"), self._token):
            await _answer(send, 401, "wrong token: use the URL `sqlgate ui` printed\n")
            return
        path = str(scope.get("path") or "/")
        target = (
            quote(path, safe="/") if path.startswith("/") and not path.startswith("//") else "/"
        )
        location = target + ("?" + urlencode(rest) if rest else "")
        cookie = f"{COOKIE}={self._cookie.decode('ascii')}; HttpOnly; SameSite=Strict; Path=/"
        await _answer(
            send, 303, "signed in; go on to " + location,
            [(b"location", location.encode("ascii", "replace")),
             (b"set-cookie", cookie.encode("ascii"))],
        )  # fmt: skip
