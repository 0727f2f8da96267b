"""What keeping sqlgate's records in a file of their own costs a call (issue 33), side by side.

    python bench/records_bench.py --baseline PYTHON [--rounds 6] [--calls 200]

PYTHON is the interpreter of an environment where the build to compare with is installed
(the commit before the records moved: `git worktree add /tmp/before COMMIT && python3 -m venv
/tmp/before/.venv && /tmp/before/.venv/bin/pip install -e /tmp/before`). Each round starts
one server of each build over stdio on a fresh database of its own and alternates their
calls one by one (so a change of the machine's load falls on both): `read_query('SELECT
1')`, then a 1-row `write_query` INSERT with its undo data kept (the records' extra commit
comes in here). The figure is the median of the rounds' p50s; the goal is at most 1.05x.

Start-up (`sqlgate --version`, `sqlgate log`) is compared with `farm-bench --vs` or
bench/startup_bench.py: this file times calls only. It prints its rows and merges them into
bench/results.md (`--no-write` to leave the file).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from benchkit import Row, merge_rows, ms
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from peers import text_of

BENCHMARK = "records in their own file"
GOAL = 1.05
CALLS = (
    ("read_query", {"query": "SELECT 1"}, "read_query('SELECT 1')"),
    ("write_query", {"query": "INSERT INTO t (v) VALUES ('x')"}, "1-row write_query with undo"),
)


def params(python: str, db: Path) -> StdioServerParameters:
    return StdioServerParameters(command=python, args=["-m", "sqlgate", "serve", "--db", str(db)])


async def one_round(pythons: tuple[str, str], calls: int, work: Path) -> list[list[float]]:
    """p50 (seconds) of each call of CALLS for each build, alternating call by call."""
    samples: list[list[list[float]]] = [[[] for _ in CALLS] for _ in pythons]
    folders = [Path(tempfile.mkdtemp(dir=work)) for _ in pythons]
    with open(work / "stderr.log", "a", encoding="utf-8") as errlog:
        async with (
            Client(stdio_client(params(pythons[0], folders[0] / "app.db"), errlog=errlog)) as a,
            Client(stdio_client(params(pythons[1], folders[1] / "app.db"), errlog=errlog)) as b,
        ):
            clients = (a, b)
            for client in clients:
                sql = "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)"
                await client.call_tool("write_query", {"query": sql})
            for index, (tool, args, _) in enumerate(CALLS):
                for _ in range(calls):
                    for which, client in enumerate(clients):
                        start = time.perf_counter()
                        result = await client.call_tool(tool, args)
                        samples[which][index].append(time.perf_counter() - start)
                        if result.is_error:
                            raise SystemExit(f"{tool} failed: {text_of(result)}")
    return [[statistics.median(s) for s in build] for build in samples]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", required=True, help="python of the build to compare with")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--no-write", action="store_true", help="do not update results.md")
    args = parser.parse_args()
    pythons = (args.baseline, sys.executable)
    work = Path(tempfile.mkdtemp(prefix="sqlgate-records-bench-"))
    (work / ".git").mkdir()  # a project: each database keeps its records in work/.sqlgate
    rounds = [anyio.run(one_round, pythons, args.calls, work) for _ in range(args.rounds)]
    rows = []
    for index, (_, _, label) in enumerate(CALLS):
        before = statistics.median(r[0][index] for r in rounds)
        after = statistics.median(r[1][index] for r in rounds)
        ratio = after / before
        verdict = "within" if ratio <= GOAL else "OVER"
        notes = f"p99 column: the baseline's p50; {verdict} {GOAL}x"
        counts = f"{args.rounds}x{args.calls}"
        rows.append(Row(BENCHMARK, label, counts, f"{ratio:.3f}x", ms(after), ms(before), notes))
    for row in rows:
        print(f"{row.subject}: {row.figure} (now {row.p50}, before {row.p99})")
    if not args.no_write:
        results = Path(__file__).with_name("results.md")
        command = "python bench/records_bench.py --baseline PYTHON"
        merge_rows(results, rows, (f"| {BENCHMARK} |",), BENCHMARK, command)


if __name__ == "__main__":
    main()
