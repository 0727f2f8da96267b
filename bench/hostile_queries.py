"""Hostile queries over real stdio: what they cost the server, and how fast cancel frees it.

Not a test: it prints numbers. Linux only (reads /proc). Usage:

    python bench/hostile_queries.py [--query-timeout SECONDS] [--cancels N]

For each memory or CPU bomb it prints whether the call failed cleanly, how long it took and
how much the server wrote to disk; then the server's peak RSS (VmHWM), and the time from
cancelling a runaway query to the server answering the next call.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.surfaces.mcp.test_stdio import (  # the test suite's bomb list
    ENDLESS,
    MEMORY_BOMBS,
    _children_serving,
    _peak_rss_kb,
)


def _disk_written(pid: int) -> int:
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("write_bytes"):
            return int(line.split()[1])
    return 0


async def run(timeout: str, cancels: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "bench.db"
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "sqlgate", "serve", "--db", str(db), "--query-timeout", timeout],
        )
        async with Client(params) as client:
            pid = _children_serving(db)[0]
            print(f"peak RSS after start: {_peak_rss_kb(pid) / 1024:.0f} MB")
            print("| bomb | tool error | seconds | disk written (MB) |")
            print("|---|---|---|---|")
            for name, query, _ in MEMORY_BOMBS:
                written, started = _disk_written(pid), time.monotonic()
                result = await client.call_tool("read_query", {"query": query})
                spent = time.monotonic() - started
                disk = (_disk_written(pid) - written) / 1e6
                print(f"| {name} | {result.is_error} | {spent:.2f} | {disk:.1f} |")
            print(f"peak RSS after the bombs: {_peak_rss_kb(pid) / 1024:.0f} MB")
            waits = []
            for _ in range(cancels):
                with anyio.move_on_after(0.3):
                    await client.call_tool("read_query", {"query": ENDLESS})
                started = time.monotonic()
                answer = await client.call_tool("read_query", {"query": "SELECT 2"})
                assert not answer.is_error
                waits.append((time.monotonic() - started) * 1000)
            print(
                f"cancel -> next answer over {cancels} cancels: median "
                f"{statistics.median(waits):.1f} ms, max {max(waits):.1f} ms"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--query-timeout", default="10")
    parser.add_argument("--cancels", type=int, default=20)
    args = parser.parse_args()
    anyio.run(run, args.query_timeout, args.cancels)


if __name__ == "__main__":
    main()
