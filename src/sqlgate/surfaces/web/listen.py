"""Where sqlgate's HTTP servers listen: the socket (TCP_NODELAY), and the uvicorn server
that says so once it accepts requests and hands stop signals to `surfaces.stops`."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from contextlib import nullcontext
from types import FrameType
from typing import TYPE_CHECKING, Any

from sqlgate.errors import StartupError

if TYPE_CHECKING:
    from sqlgate.surfaces.stops import Stops
    from sqlgate.surfaces.web.asgi import ASGIApp

__all__ = ["DEFAULT_HOST", "announcing_server_class", "listen_socket", "serve_on", "shown_host"]

DEFAULT_HOST = "127.0.0.1"


def shown_host(host: str) -> str:
    """`host` as a URL writes it: an IPv6 address in brackets."""
    return f"[{host}]" if ":" in host else host


def listen_socket(host: str, port: int) -> socket.socket:
    """The listening socket, made with protocol IPPROTO_TCP and TCP_NODELAY.

    asyncio turns Nagle's algorithm off only on sockets whose `proto` says TCP, and
    `socket.create_server` leaves it 0: every response then waited for the client's delayed
    ACK, about 40 ms a call on Linux. Accepted sockets inherit both settings.
    """
    try:
        family, _, _, _, address = socket.getaddrinfo(
            host.strip("[]"), port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        try:
            if os.name == "posix":  # Windows' SO_REUSEADDR would let another bind steal it
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.bind(address[:2])
            sock.listen()
        except BaseException:
            sock.close()
            raise
        return sock
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise StartupError(
            f"cannot listen on {host}:{port}: {reason}; choose another --host or --port"
        ) from None


def announcing_server_class() -> type[Any]:
    import uvicorn

    class AnnouncingServer(uvicorn.Server):
        """Says where it listens once it accepts requests (its lifespan has started), and
        reports each stop signal its own handlers catch to `stops` (`surfaces.stops`).

        uvicorn handles SIGINT and SIGTERM while it serves: the first stops it gracefully
        (open responses get the config's `timeout_graceful_shutdown` at most). With `stops`,
        a later one is only noted: uvicorn's own "second Ctrl-C" skips the application's
        shutdown and leaves its tasks to be cancelled with a traceback; the wait is bounded
        anyway. Once stopped, uvicorn hands the signals it caught to the handlers of `stops`."""

        def __init__(
            self, config: uvicorn.Config, announce: Callable[[], None], stops: Stops | None = None
        ) -> None:
            super().__init__(config)
            self._announce = announce
            self._stops = stops

        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            if self._stops is None or self._stops.note(sig):
                super().handle_exit(sig, frame)

        def stop_now(self, sig: int) -> None:
            """A stop that reached `stops` (before or after uvicorn's own handlers)."""
            super().handle_exit(sig, None)

        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if self.started:
                self._announce()

    return AnnouncingServer


def serve_on(
    sock: socket.socket,
    app: ASGIApp,
    announce: Callable[[], None],
    stops: Stops | None,
    *,
    graceful_seconds: int,
) -> None:
    """Serve `app` on `sock` with uvicorn until stopped (`stops`: by Ctrl-C or SIGTERM, the
    clean-up then runs whole); `announce` runs once requests are accepted. Open responses
    get `graceful_seconds` at most when it stops. `sock` stays the caller's to close."""
    import uvicorn

    config = uvicorn.Config(
        app, lifespan="on", loop="asyncio", log_level="warning", access_log=False,
        server_header=False, timeout_graceful_shutdown=graceful_seconds,
    )  # fmt: skip
    server = announcing_server_class()(config, announce, stops)
    with nullcontext() if stops is None else stops.serving(server.stop_now):
        server.run(sockets=[sock])
