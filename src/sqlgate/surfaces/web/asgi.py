"""The ASGI shapes sqlgate's HTTP servers are written in, and the two things each of its
pure ASGI middlewares does by hand: read one request header, send one whole answer."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from typing import Any

__all__ = ["ASGIApp", "Message", "Receive", "Scope", "Send", "header", "send_answer"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

Headers = Sequence[tuple[bytes, bytes]]


def header(scope: Scope, name: bytes) -> bytes | None:
    """The value of the request's first header `name` (given in lower case), None when the
    request has none."""
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return bytes(value)
    return None


async def send_answer(
    send: Send,
    status: int,
    body: bytes,
    content_type: bytes,
    *,
    before: Headers = (),
    after: Headers = (),
) -> None:
    """Answer `status` with all of `body` at once: the headers `before`, the content type and
    length, the headers `after`."""
    await send({
        "type": "http.response.start",
        "status": status,
        "headers": [
            *before,
            (b"content-type", content_type),
            (b"content-length", str(len(body)).encode("ascii")),
            *after,
        ],
    })  # fmt: skip
    await send({"type": "http.response.body", "body": body})
