"""Where sqlgate's HTTP servers listen (surfaces/web/listen.py)."""

from __future__ import annotations

import socket

import anyio

from sqlgate.surfaces.web.listen import listen_socket


def test_connections_accepted_by_the_server_send_without_waiting_for_acks() -> None:
    """Nagle's algorithm held every response until the client's delayed ACK (about 40 ms a
    call): the listening socket says TCP, so asyncio turns it off on each connection."""
    listener = listen_socket("127.0.0.1", 0)
    seen: list[int] = []

    async def check() -> None:
        import asyncio

        loop = asyncio.get_running_loop()
        accepted = asyncio.Event()

        class Probe(asyncio.Protocol):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                sock = transport.get_extra_info("socket")
                seen.append(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
                accepted.set()

        server = await loop.create_server(Probe, sock=listener)
        async with server:
            _, writer = await asyncio.open_connection(*listener.getsockname()[:2])
            await asyncio.wait_for(accepted.wait(), 10)
            writer.close()

    anyio.run(check)
    assert seen
    assert seen[0] != 0
    assert listener.proto == socket.IPPROTO_TCP
