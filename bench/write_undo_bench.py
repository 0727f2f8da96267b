"""Write undo cost (issue 19): what keeping row-level undo data costs every write_query,
measured side by side in one run against the same build with it off (`--write-undo-keep 0`,
the write path as it was before: no changeset, the preupdate guard).

    python bench/write_undo_bench.py [--rounds 8] [--calls 300] [--stdio-calls 400]

Three statements: a 1-row INSERT, a 1-row UPDATE, a 500-row UPDATE, each in process
(`Service.write_query`, where the undo work is the largest share) and over stdio (what an
agent's call costs, MCP framing included). In process, rounds alternate off and on; over
stdio both servers run at once (one pair per round, for the three statements) and their
calls alternate one by one, so a change of the machine's load falls on both; the figure is
the median of the rounds' p50s. Goals: 1-row writes at most 1.10x, the 500-row UPDATE at
most 2x.

It runs on its own (about a minute) and merges its rows into bench/results.md;
tests/test_bench_write_undo_smoke.py runs it on tiny counts.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import anyio
from benchkit import Row, merge_rows, ms, time_sync
from mcp import Client
from mcp.client.stdio import stdio_client
from peers import sqlgate_params, text_of

from sqlgate.config import Settings
from sqlgate.service import Service

__all__ = ["write_undo_cost"]

BENCHMARK = "write_query undo cost"
SEEDED = 600
STATEMENTS: dict[str, tuple[str, Callable[[int], list[object]]]] = {
    "1-row INSERT": ("INSERT INTO tasks (title, priority) VALUES (?, ?)", lambda n: [f"x{n}", 1]),
    "1-row UPDATE": ("UPDATE tasks SET priority = priority + 1 WHERE id = ?", lambda n: [7]),
    "500-row UPDATE": ("UPDATE tasks SET priority = priority + 1 WHERE id <= ?", lambda n: [500]),
}
GOALS = {"1-row INSERT": 1.10, "1-row UPDATE": 1.10, "500-row UPDATE": 2.0}
SCHEMA = "CREATE TABLE tasks (id INTEGER PRIMARY KEY, title TEXT, priority INT)"


def _seed(service: Service) -> None:
    service.write_query(SCHEMA)
    for n in range(SEEDED):
        service.write_query("INSERT INTO tasks (title, priority) VALUES (?, ?)", [f"t{n}", n % 5])


def _service(folder: Path, keep: int) -> Service:
    service = Service.open(Settings(db=folder / f"keep{keep}.db", write_undo_keep=keep))
    _seed(service)
    return service


def _caller(
    service: Service, sql: str, params: Callable[[int], list[object]]
) -> Callable[[], object]:
    counter = iter(range(10**9))
    return lambda: service.write_query(sql, params(next(counter)))


def _in_process(workdir: Path, rounds: int, calls: int) -> dict[str, tuple[float, float]]:
    off, on = _service(workdir, 0), _service(workdir, 1000)
    medians: dict[str, tuple[list[float], list[float]]] = {k: ([], []) for k in STATEMENTS}
    try:
        for _ in range(rounds):
            for name, (sql, params) in STATEMENTS.items():
                count = calls if name.startswith("1-row") else max(2, calls // 10)
                for index, service in enumerate((off, on)):
                    lat = time_sync(_caller(service, sql, params), count)
                    medians[name][index].append(lat.percentile(50))
    finally:
        off.close()
        on.close()
    return {k: (statistics.median(a), statistics.median(b)) for k, (a, b) in medians.items()}


async def _stdio_p50s(
    dbs: dict[int, Path], counts: dict[str, int]
) -> dict[str, tuple[float, float]]:
    """Both servers open at once for every statement (a start costs more than the calls),
    their calls interleaved one by one (off, on, off, ...), so a change of the machine's
    load falls on both alike."""
    off_params = sqlgate_params(dbs[0], "--write-undo-keep", "0")
    on_params = sqlgate_params(dbs[1000], "--write-undo-keep", "1000")
    p50s = {}
    async with Client(stdio_client(off_params)) as off, Client(stdio_client(on_params)) as on:
        for name, calls in counts.items():
            sql, params = STATEMENTS[name]
            seconds: tuple[list[float], list[float]] = ([], [])
            for n in range(20 + calls):  # the first 20 of each statement warm up
                for index, client in enumerate((off, on)):
                    started = time.perf_counter()
                    arguments = {"query": sql, "params": params(n)}
                    result = await client.call_tool("write_query", arguments)
                    if result.is_error:
                        raise RuntimeError(text_of(result))
                    if n >= 20:
                        seconds[index].append(time.perf_counter() - started)
            p50s[name] = (statistics.median(seconds[0]), statistics.median(seconds[1]))
    return p50s


def _over_stdio(workdir: Path, rounds: int, calls: int) -> dict[str, tuple[float, float]]:
    dbs = {}
    for keep in (0, 1000):
        with Service.open(Settings(db=workdir / f"stdio{keep}.db")) as service:
            _seed(service)
        dbs[keep] = workdir / f"stdio{keep}.db"
    counts = {
        name: calls if name.startswith("1-row") else max(2, calls // 4) for name in STATEMENTS
    }
    medians: dict[str, tuple[list[float], list[float]]] = {k: ([], []) for k in STATEMENTS}
    for _ in range(rounds):
        for name, (off, on) in anyio.run(_stdio_p50s, dbs, counts).items():
            medians[name][0].append(off)
            medians[name][1].append(on)
    return {k: (statistics.median(a), statistics.median(b)) for k, (a, b) in medians.items()}


def _rows(where: str, figures: dict[str, tuple[float, float]]) -> list[Row]:
    rows = []
    for name, (off, on) in figures.items():
        ratio = on / off
        goal = GOALS[name]
        verdict = "met" if ratio <= goal else "not met"
        rows.append(
            Row(
                BENCHMARK,
                f"{name}, {where}",
                "",
                f"{ratio:.2f}x",
                ms(on),
                "",
                f"undo off (--write-undo-keep 0) p50 {ms(off)}; goal <= {goal:.2f}x: {verdict}",
            )
        )
    return rows


def write_undo_cost(
    workdir: Path,
    rounds: int = 8,
    calls: int = 300,
    stdio_calls: int = 400,
    log: Callable[[str], None] = print,
) -> list[Row]:
    """Rows for bench/results.md: in process and over stdio, undo on beside undo off."""
    log(f"{BENCHMARK}: in process, {rounds} rounds")
    rows = _rows("in process", _in_process(workdir, rounds, calls))
    log(f"{BENCHMARK}: over stdio, {max(1, rounds // 4)} rounds")
    rows += _rows("over stdio", _over_stdio(workdir, max(1, rounds // 4), stdio_calls))
    for row in rows:
        log(f"  {row.subject}: {row.figure} ({row.notes})")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--stdio-calls", type=int, default=400)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--no-write", action="store_true", help="do not update results.md")
    args = parser.parse_args()
    folder = args.workdir or Path(tempfile.mkdtemp(prefix="sqlgate-write-undo-"))
    folder.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    rows = write_undo_cost(folder, args.rounds, args.calls, args.stdio_calls)
    print(f"done in {time.perf_counter() - started:.0f} s")
    if not args.no_write:
        command = "python bench/write_undo_bench.py " + " ".join(sys.argv[1:])
        merge_rows(
            Path(__file__).with_name("results.md"),
            rows,
            (f"| {BENCHMARK} |",),
            "write undo",
            command.strip(),
        )


if __name__ == "__main__":
    main()
