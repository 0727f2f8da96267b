"""What a command costs before it does anything: whole-process times of `sqlgate` commands
beside the floor `python -c "import apsw, click"`, and of `sqlgate serve` answering
`initialize` beside the SDK's no-op server (bench/noop_server.py).

    python bench/startup_bench.py            # 21 runs each; merges its rows into results.md
    python bench/startup_bench.py --quick    # 1 run of each; prints only (unless --out)

Each command is timed from spawn to exit (stdout and stderr pipes, as a hook or a script
runs it), interleaved with its floor: floor, command, floor, command... so that the load of
a shared machine hits both; the figure is the ratio of the two medians. The CLI rows run the
console script `<venv>/bin/sqlgate` (what a user and Claude Code's hooks run); one row runs
`python -m sqlgate --version` for comparison. The read commands read a small database (a
table, 20 events, a claim, a snapshot, an undoable call). Before timing, every command runs
once untimed, with PYTHONDONTWRITEBYTECODE unset, so the byte-code of an editable install is
cached as a wheel install's is.

The serve row times spawn -> the `initialize` answer on stdout of `python -m sqlgate serve
--db DB` and of `python bench/noop_server.py`, interleaved the same way.

Goals (issue 20): `--version` and `--help` <= 1.5x the floor, `capture` <= 2.5x, the read
commands <= 3x, `serve` <= 1.15x the no-op server. `tools` has no goal: it lists the tools
through the SDK's own client, so the SDK is what it runs.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchkit import BENCH, QUICK, SRC, Context, Latencies, Row, merge_rows, ms, table

sys.path.insert(0, str(SRC))

__all__ = ["BENCH_SERVE_START", "BENCH_START", "startup"]

BENCH_START = "start cost: whole process"
BENCH_SERVE_START = "start cost: spawn to initialize answer (stdio)"
SUBJECT_FLOOR = "floor: python -c 'import apsw, click'"
SUBJECT_NOOP = "no-op tool, same SDK (floor)"
SUBJECT_SERVE = "sqlgate serve"
RUNS = {"full": 21, "quick": 1}
DEFAULT_OUT = BENCH / "results.md"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "startup-bench", "version": "0"},
    },
}
HOOK = {"session_id": "bench-session", "transcript_path": "/nonexistent", "cwd": "/tmp"}
TOOL_USE = {
    **HOOK,
    "hook_event_name": "PostToolUse",
    "tool_name": "Bash",
    "tool_input": {"command": "ls"},
    "tool_response": {"stdout": "README.md", "stderr": "", "interrupted": False},
}
SESSION_START = {**HOOK, "hook_event_name": "SessionStart", "source": "startup"}


@dataclass(frozen=True)
class Command:
    subject: str
    args: tuple[str, ...]  # after the program; {db} is the database
    goal: float | None  # most times the floor; None: measured, no goal
    stdin: str = ""
    module: bool = False  # `python -m sqlgate` instead of the console script


COMMANDS = (
    Command("sqlgate --version", ("--version",), 1.5),
    Command("sqlgate --help", ("--help",), 1.5),
    Command("python -m sqlgate --version", ("--version",), 1.5, module=True),
    Command("sqlgate capture (PostToolUse)", ("capture", "--db", "{db}"), 2.5,
            stdin=json.dumps(TOOL_USE)),
    Command("sqlgate capture (SessionStart)", ("capture", "--db", "{db}"), 2.5,
            stdin=json.dumps(SESSION_START)),
    Command("sqlgate stats", ("stats", "--db", "{db}"), 3.0),
    Command("sqlgate log", ("log", "--db", "{db}"), 3.0),
    Command("sqlgate verify", ("verify", "--db", "{db}"), 3.0),
    Command("sqlgate claims list", ("claims", "list", "--db", "{db}"), 3.0),
    Command("sqlgate snapshots list", ("snapshots", "list", "--db", "{db}"), 3.0),
    Command("sqlgate undo --list", ("undo", "--list", "--db", "{db}"), 3.0),
    Command("sqlgate export", ("export", "--db", "{db}"), 3.0),
    Command("sqlgate tools", ("tools",), None),
)  # fmt: skip


def child_env() -> dict[str, str]:
    """This environment with this checkout's sqlgate importable, byte-code caching on, and
    no SQLGATE_* setting or terminal override from the shell."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("SQLGATE_")
        and key not in ("PYTHONDONTWRITEBYTECODE", "TTY_COMPATIBLE", "FORCE_COLOR")
    }
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))
    return env


def program(command: Command) -> list[str]:
    """The console script beside this interpreter, or `python -m sqlgate` (asked for, or
    when there is no script: the row then says so)."""
    script = Path(sys.executable).with_name("sqlgate")
    if command.module or not script.is_file():
        return [sys.executable, "-m", "sqlgate"]
    return [str(script)]


def seed(db: Path) -> None:
    """A small database as the server leaves it: a table, audit rows, 20 events, a claim,
    a snapshot and an undoable call."""
    from sqlgate.config import Settings
    from sqlgate.service import Service

    with Service.open(Settings(db=db), session="s-bench") as service:
        service.write_query("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
        service.write_query("INSERT INTO notes (body) VALUES ('a'), ('b'), ('c')")
        for number in range(20):
            service.append_event(f"note {number}: the build passes", "note", ["bench"])
        service.claim_add("api", "fact", "uses REST", "slow", 0.8)
        service.sql.snapshot()
        service.destructive_query("DELETE FROM notes WHERE body = 'b'", "bench")


def run_once(argv: Sequence[str], stdin: str, env: dict[str, str]) -> float:
    """Seconds from spawn to exit; a failing command stops the benchmark, with its words."""
    started = time.perf_counter()
    done = subprocess.run(argv, input=stdin.encode(), capture_output=True, env=env,
                          timeout=120, check=False)  # fmt: skip
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        tail = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no output"]
        raise RuntimeError(f"`{shlex.join(argv)}` exited {done.returncode}: {tail[0]}")
    return seconds


def serve_once(argv: Sequence[str], env: dict[str, str]) -> float:
    """Seconds from spawn to the first line on stdout after sending `initialize`."""
    started = time.perf_counter()
    with subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, env=env) as server:  # fmt: skip
        assert server.stdin is not None
        assert server.stdout is not None
        server.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
        server.stdin.flush()
        answer = server.stdout.readline()
        seconds = time.perf_counter() - started
        server.stdin.close()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
    if b'"result"' not in answer:
        raise RuntimeError(f"`{shlex.join(argv)}` answered {answer[:200]!r} to initialize")
    return seconds


def paired(
    floor: Callable[[], float], subject: Callable[[], float], runs: int
) -> tuple[list[float], list[float]]:
    """`runs` times each, interleaved: floor, subject, floor, subject..."""
    floors, subjects = [], []
    for _ in range(runs):
        floors.append(floor())
        subjects.append(subject())
    return floors, subjects


def ratio_row(
    benchmark: str, subject: str, seconds: list[float], floors: list[float],
    goal: float | None, notes: str = "",
) -> Row:  # fmt: skip
    lat = Latencies(seconds, sum(seconds))
    ratio = statistics.median(seconds) / statistics.median(floors)
    if goal is None:
        verdict = "no goal"
    else:
        verdict = f"goal <= {goal:g}x: {'met' if ratio <= goal else 'NOT met'}"
    beside = f"floor {ms(statistics.median(floors))} beside it"
    notes = "; ".join(filter(None, [verdict, beside, notes]))
    return Row(benchmark, subject, str(len(seconds)), f"{ratio:.2f}x", ms(lat.percentile(50)),
               ms(lat.percentile(99)), notes)  # fmt: skip


def startup(ctx: Context) -> list[Row]:
    """The start-cost rows: each CLI command beside `import apsw, click`, then `serve`'s
    `initialize` answer beside the no-op server."""
    runs = RUNS.get(ctx.plan.name, RUNS["full"])
    env = child_env()
    db = ctx.folder / "project" / ".sqlgate" / "agent.db"  # where hooks keep a project's
    db.parent.mkdir(parents=True, exist_ok=True)
    seed(db)
    floor_argv = [sys.executable, "-c", "import apsw, click"]

    def floor() -> float:
        return run_once(floor_argv, "", env)

    rows: list[Row] = []
    all_floors: list[float] = []
    for command in COMMANDS:
        argv = [*program(command), *(arg.format(db=db) for arg in command.args)]
        note = "" if command.module or argv[0] != sys.executable else "no console script: -m"
        ctx.log(f"start cost: {command.subject}, {runs} runs beside the floor")
        try:
            run_once(argv, command.stdin, env)  # untimed: byte-code written, files cached
            floors, seconds = paired(floor, lambda a=argv, c=command: run_once(a, c.stdin, env),
                                     runs)  # fmt: skip
        except (RuntimeError, subprocess.TimeoutExpired) as error:
            rows.append(Row(BENCH_START, command.subject, "", "not available", "", "",
                            str(error)))  # fmt: skip
            continue
        all_floors += floors
        rows.append(ratio_row(BENCH_START, command.subject, seconds, floors, command.goal, note))
    if all_floors:
        lat = Latencies(all_floors, sum(all_floors))
        rows.insert(0, Row(BENCH_START, SUBJECT_FLOOR, str(len(all_floors)), "1.00x",
                           ms(lat.percentile(50)), ms(lat.percentile(99)),
                           "taken beside each command below"))  # fmt: skip
    rows += serve_rows(ctx, db, runs, env)
    return rows


def serve_rows(ctx: Context, db: Path, runs: int, env: dict[str, str]) -> list[Row]:
    noop = [sys.executable, str(BENCH / "noop_server.py")]
    serve = [sys.executable, "-m", "sqlgate", "serve", "--db", str(db)]
    ctx.log(f"start cost: {SUBJECT_SERVE} initialize, {runs} runs beside the no-op server")
    try:
        serve_once(noop, env)
        serve_once(serve, env)
        floors, seconds = paired(lambda: serve_once(noop, env), lambda: serve_once(serve, env),
                                 runs)  # fmt: skip
    except (RuntimeError, OSError) as error:
        return [Row(BENCH_SERVE_START, SUBJECT_SERVE, "", "not available", "", "", str(error))]
    lat = Latencies(floors, sum(floors))
    return [
        Row(BENCH_SERVE_START, SUBJECT_NOOP, str(runs), "1.00x", ms(lat.percentile(50)),
            ms(lat.percentile(99)), "`python bench/noop_server.py`"),
        ratio_row(BENCH_SERVE_START, SUBJECT_SERVE, seconds, floors, 1.15,
                  "`python -m sqlgate serve --db DB`"),
    ]  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    from benchkit import FULL

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="1 run each; prints only")
    parser.add_argument("--out", type=Path, help="merge the rows into this report")
    args = parser.parse_args(argv)
    plan = QUICK if args.quick else FULL
    command = shlex.join(["python", "bench/startup_bench.py",
                          *(argv if argv is not None else sys.argv[1:])])  # fmt: skip

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory(prefix="sqlgate-startup-bench-") as temp:
        rows = startup(Context(plan, Path(temp), log))
    print(table(rows), end="")
    out = args.out or (None if args.quick else DEFAULT_OUT)
    if out is not None:
        merge_rows(out, rows, (f"| {BENCH_START} |", f"| {BENCH_SERVE_START} |"),
                   "Start cost", command)  # fmt: skip
        log(f"merged into {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
