"""Capture cost (issue 20 §2): what one Claude Code tool call costs with capture on.

    python bench/capture_bench.py [--runs 30] [--no-write]

Claude Code runs a `PostToolUse` hook after every tool call. A command hook blocks the
session until it exits; with `"async": true` (what `sqlgate install claude-code --capture`
writes for every hook but SessionStart) Claude Code starts it and goes on. So there are two
figures, both whole processes, measured side by side in one run:

- *synchronous*: the wall time of one `python -m sqlgate capture --db DB` process fed a
  PostToolUse payload on stdin, from the spawn to its exit: what the session waited for on
  every tool call before the hooks were async (and still waits for on SessionStart);
- *async*: the time to spawn that process and hand it the payload, without waiting for it
  to finish: what the session waits for now. The process is then waited for, untimed, and
  the run checks that every event reached the database (the work still happens).

Beside them: the floor the issue measures start costs against (`python -c "import apsw,
click"`), and SessionStart, which stays synchronous (it prints the resume context), on a
database holding the events of the run. Runs alternate between the subjects, so a change of
the machine's load falls on all of them. It runs on its own and merges its rows into
bench/results.md; bench/run.py runs it too; tests/test_bench_capture_smoke.py runs it on
tiny counts.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import apsw
from benchkit import SRC, Context, Row, merge_rows, ms

__all__ = ["BENCHMARK", "SUBJECTS", "capture_cost", "capture_rows"]

BENCHMARK = "capture cost: one tool call (PostToolUse hook)"
SUBJECTS = (
    "floor: python -c 'import apsw, click'",
    "sqlgate capture, synchronous (the wait without async)",
    'sqlgate capture, "async": true (the wait now: the spawn)',
    "SessionStart, synchronous (resume context)",
)
SESSION_CALLS = 50  # the figure: 50 tool calls in a session


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SQLGATE_")}
    env.pop("CLAUDE_PROJECT_DIR", None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))
    return env


def _payload(event: str, n: int) -> bytes:
    body: dict[str, object] = {
        "session_id": "bench-session",
        "transcript_path": "/nonexistent/transcript.jsonl",
        "cwd": "/srv/project",
        "permission_mode": "default",
        "hook_event_name": event,
    }
    if event == "PostToolUse":
        body |= {
            "tool_name": "Bash",
            "tool_input": {"command": f"pytest -q tests/test_{n}.py", "timeout": 120000},
            "tool_response": {"stdout": "." * 400 + f"\n{n} passed in 0.8s", "stderr": ""},
            "tool_use_id": f"toolu_{n:04}",
        }
    else:
        body["source"] = "startup"
    return json.dumps(body).encode()


def _wall(argv: list[str], stdin: bytes, env: dict[str, str]) -> float:
    """Spawn to exit of one process fed `stdin`."""
    started = time.perf_counter()
    subprocess.run(argv, input=stdin, env=env, capture_output=True, check=True)
    return time.perf_counter() - started


def _spawn(argv: list[str], stdin: bytes, env: dict[str, str]) -> float:
    """What an async hook costs its caller: start the process and hand it the payload; the
    process is then waited for (untimed) so that runs do not pile up."""
    started = time.perf_counter()
    child = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env=env,
    )  # fmt: skip
    assert child.stdin is not None
    child.stdin.write(stdin)
    child.stdin.close()
    spent = time.perf_counter() - started
    if child.wait(timeout=60) != 0:
        raise RuntimeError(f"sqlgate capture exited {child.returncode}")
    return spent


def _stored(db: Path) -> int:
    """The capture's events: in the records file of `db` (sqlgate's tables live there)."""
    from sqlgate.home import record_files

    conn = apsw.Connection(str(record_files(db).records), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        row = conn.execute("SELECT count(*) FROM memory_events WHERE kind = 'tool'").fetchone()
        return int(row[0]) if row else 0
    finally:
        conn.close()


def _p(seconds: list[float], p: int) -> float:
    if len(seconds) < 2:
        return seconds[0]
    return statistics.quantiles(seconds, n=100, method="inclusive")[p - 1]


def capture_rows(folder: Path, runs: int, log: Callable[[str], None] = print) -> list[Row]:
    """The four rows: runs alternate floor, synchronous, async, then SessionStart."""
    env = _env()
    db = folder / "capture-bench.db"
    capture = [sys.executable, "-m", "sqlgate", "capture", "--db", str(db)]
    floor = [sys.executable, "-c", "import apsw, click"]
    # one untimed run of each creates the database and warms the file cache
    _wall(capture, _payload("PostToolUse", 0), env)
    _wall(floor, b"", env)
    times: list[list[float]] = [[], [], [], []]
    log(f"{BENCHMARK}: {runs} runs of each")
    for n in range(1, runs + 1):
        times[0].append(_wall(floor, b"", env))
        times[1].append(_wall(capture, _payload("PostToolUse", 2 * n), env))
        times[2].append(_spawn(capture, _payload("PostToolUse", 2 * n + 1), env))
        times[3].append(_wall(capture, _payload("SessionStart", n), env))
    stored = _stored(db)
    expected = 1 + 2 * runs
    floor_p50, sync_p50, async_p50 = (statistics.median(t) for t in times[:3])
    notes = [
        "whole process; the floor of issue 20's start costs",
        f"{sync_p50 / floor_p50:.1f}x the floor; {SESSION_CALLS} tool calls waited "
        f"{SESSION_CALLS * sync_p50:.1f} s in all",
        f"{async_p50 / sync_p50:.2%} of the synchronous wait; {SESSION_CALLS} tool calls wait "
        f"{SESSION_CALLS * async_p50 * 1000:.0f} ms in all; events stored: {stored} of "
        f"{expected}",
        f"{statistics.median(times[3]) / floor_p50:.1f}x the floor; the resume context of up "
        f"to {expected} events, printed",
    ]
    rows = [
        Row(BENCHMARK, subject, f"{len(t):,}", ms(statistics.median(t)), ms(_p(t, 50)),
            ms(_p(t, 99)), note)
        for subject, t, note in zip(SUBJECTS, times, notes, strict=True)
    ]  # fmt: skip
    for row in rows:
        log(f"  {row.subject}: p50 {row.p50} ({row.notes})")
    return rows


def capture_cost(ctx: Context) -> list[Row]:
    """bench/run.py's entry: 30 runs (3 on --quick)."""
    return capture_rows(ctx.folder, 3 if ctx.plan.name == "quick" else 30, ctx.log)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--no-write", action="store_true", help="do not update results.md")
    args = parser.parse_args()
    folder = args.workdir or Path(tempfile.mkdtemp(prefix="sqlgate-capture-"))
    folder.mkdir(parents=True, exist_ok=True)
    rows = capture_rows(folder, args.runs, lambda line: print(line, file=sys.stderr))
    if not args.no_write:
        command = "python bench/capture_bench.py " + " ".join(sys.argv[1:])
        merge_rows(
            Path(__file__).with_name("results.md"),
            rows,
            (f"| {BENCHMARK} |",),
            "capture",
            command.strip(),
        )


if __name__ == "__main__":
    main()
