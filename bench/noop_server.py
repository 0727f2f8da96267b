"""The floor of the SDK: an MCP server on the same SDK as sqlgate whose one tool does nothing.

    python bench/noop_server.py                 # stdio
    python bench/noop_server.py --http PORT     # streamable HTTP on 127.0.0.1:PORT (0: any)

Its tool is called `read_query` and takes the same `query` argument, so the benchmarks send
it exactly what they send sqlgate; it answers a fixed one-row CSV without touching a
database. Over HTTP it listens like sqlgate (TCP, no Nagle) and prints the same
"serving MCP ... at URL" line on stderr once it accepts requests.
"""

from __future__ import annotations

import argparse
import socket
import sys

from mcp.server import MCPServer

ANSWER = "1\n1\n# 1 row"


def build() -> MCPServer:
    server = MCPServer("noop")

    @server.tool()
    def read_query(query: str) -> str:
        """Answer a fixed result."""
        return ANSWER

    return server


def listen(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen()
    return sock


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--http", type=int, default=None, metavar="PORT")
    args = parser.parse_args()
    server = build()
    if args.http is None:
        server.run("stdio")
        return
    import uvicorn

    sock = listen(args.http)
    app = server.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")
    config = uvicorn.Config(app, lifespan="on", loop="asyncio", log_level="warning",
                            access_log=False, server_header=False)  # fmt: skip

    class Announcing(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            host, port = sock.getsockname()[:2]
            print(f"noop: serving MCP over streamable HTTP at http://{host}:{port}/mcp",
                  file=sys.stderr, flush=True)  # fmt: skip

    Announcing(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
