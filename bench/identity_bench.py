"""What the HTTP identity check costs a request, in process (issue 22).

    python bench/identity_bench.py [--members 64] [--rounds 20000]

Three figures, each a p50 over `--rounds` calls on a database with `--members` members:

- `Members.authenticate`: the digest and one indexed SELECT on the gate's own read-only
  connection (what every request of a member runs on the event loop's thread);
- `server_authenticator`: the same through the gate's token table (the --token compared
  first, in constant time);
- the whole `IdentityGate` around an ASGI app that answers at once, minus that app alone:
  the header parsing, the lookup, the SDK's user and context, and the re-check watch of each
  answer (`IdentityGate._watched`).

Compare the last with the sequential HTTP p50 of bench/results.md ("call overhead over
HTTP"): the goal is at most 5% of it.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import apsw

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from sqlgate.config import Settings
from sqlgate.engine.connect import connect_read_only
from sqlgate.engine.records import Members
from sqlgate.service import Service
from sqlgate.surfaces.mcp.http_identity import IdentityGate, server_authenticator

ADMIN = "admin-token-of-the-identity-bench"


def p50_us(samples: list[float]) -> float:
    return statistics.median(samples) * 1e6


def timed(call: Callable[[], object], rounds: int) -> list[float]:
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        call()
        samples.append(time.perf_counter() - started)
    return samples


async def timed_async(call: Callable[[], Awaitable[object]], rounds: int) -> list[float]:
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        await call()
        samples.append(time.perf_counter() - started)
    return samples


async def answer(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"{}"})


def request(token: str) -> Callable[[Callable[..., Awaitable[None]]], Awaitable[None]]:
    headers = [(b"authorization", f"Bearer {token}".encode()), (b"accept", b"application/json")]

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        return None

    async def run(app: Callable[..., Awaitable[None]]) -> None:
        scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": headers,
                 "client": ("127.0.0.1", 5000), "query_string": b""}  # fmt: skip
        await app(scope, receive, send)

    return run


async def measure(members: int, rounds: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "team.db"
        Service.open(Settings(db=db), actor="cli").close()
        conn = apsw.Connection(str(db))
        store = Members(conn)
        tokens = [store.add(f"member{n}", "write")[1] for n in range(members)]
        conn.close()
        lookup = connect_read_only(db)
        try:
            gate_members = Members(lookup)
            token = tokens[members // 2]
            raw = token.encode()
            authenticate = server_authenticator(ADMIN, gate_members)
            gate = IdentityGate(answer, authenticate)
            run = request(token)
            for _ in range(200):  # warm the statement cache and the loop
                await run(gate)
            figures = {
                "Members.authenticate": p50_us(
                    timed(lambda: gate_members.authenticate(raw), rounds)
                ),
                "server_authenticator": p50_us(
                    await timed_async(lambda: authenticate(raw), rounds)
                ),
            }
            bare = await timed_async(lambda: run(answer), rounds)
            gated = await timed_async(lambda: run(gate), rounds)
            figures["IdentityGate (minus the bare app)"] = p50_us(gated) - p50_us(bare)
        finally:
            lookup.close()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=20_000)
    args = parser.parse_args()
    figures = asyncio.run(measure(args.members, args.rounds))
    print(f"identity check, {args.members} members, p50 of {args.rounds:,} calls each:")
    for name, micros in figures.items():
        print(f"  {name}: {micros:.1f} µs")


if __name__ == "__main__":
    main()
