"""sqlgate beside its peers and the floor, measured in one run on one machine.

Not a test: it prints numbers (a markdown table) and writes them, with the machine and the
exact command, to bench/results.md (or --out). Usage:

    python bench/run.py                  # full run; installs peers when the registry answers
    python bench/run.py --quick          # few calls, no peer install; prints only, unless --out
    python bench/run.py --out FILE       # write the report elsewhere
    python bench/run.py --only http      # only the benchmarks named so; their rows replace
                                         # the same rows of results.md, the others stay

Each benchmark is a function in BENCHMARKS that returns table rows; add one there.

Peers live in their own venvs under bench/.peers/ (gitignored). The reference SQLite MCP
server (PyPI `mcp-server-sqlite`, archived) needs `mcp<2`, so it gets its own venv and is
driven over stdio by this repo's SDK v2 client, exactly as sqlgate is.

The benchmarks live beside this file: benchkit.py (plans, rows, timers, the table), peers.py
(starting sqlgate and the reference server), stdio_bench.py, http_bench.py (HTTP latency, a
member's token beside --token), http_load.py (HTTP load, one member a session),
noop_server.py (the SDK's floor: a tool that does nothing) and inprocess_bench.py.
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import memory_bench as mb
from benchkit import BENCH, FULL, QUICK, Benchmark, Context, Plan, Row, merge_rows, table
from capture_bench import capture_cost
from http_bench import http_call_overhead, http_identity_cost
from http_load import http_load
from inprocess_bench import chain, destructive, search
from policy_bench import table_rules_cost
from recall_bench import DEFAULT_DATA as LOCOMO
from recall_bench import recall
from replication_bench import replication
from startup_bench import startup
from stdio_bench import audit_cost, call_overhead, result_size

DEFAULT_OUT = BENCH / "results.md"


def replicated(ctx: Context) -> list[Row]:
    """Replication's loss window, 10 kills per target (S3 too when moto's `moto_server` is on
    PATH). A quick run leaves it to `bench/replication_bench.py --quick`, which its own smoke
    test runs."""
    if ctx.plan.name == "quick":
        return []
    return replication(ctx, s3_server=shutil.which("moto_server"))


def recalled(ctx: Context) -> list[Row]:
    """LoCoMo recall through memory_search, and its latency at 100k and 1M events, when the
    data file is there (bench/recall_bench.py). A quick run leaves it to
    `bench/recall_bench.py --quick`, which its own smoke test runs."""
    if ctx.plan.name == "quick" or not LOCOMO.is_file():
        return []
    return recall(LOCOMO, "all", (100_000, 1_000_000), ctx.folder, ctx.log)


BENCHMARKS: list[Benchmark] = [
    call_overhead,
    http_call_overhead,
    http_identity_cost,
    http_load,
    result_size,
    audit_cost,
    table_rules_cost,
    chain,
    search,
    destructive,
    capture_cost,
    replicated,
    recalled,
    startup,
]


def report(rows: Sequence[Row], command: str, plan: Plan) -> str:
    head = mb.report_head(
        "sqlgate benchmarks",
        f"`bench/run.py` ({plan.name} run)",
        command,
        "Ratios are the figures: absolute rates move with the machine's load.",
    )
    return "\n".join([*head, table(rows)])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--quick", action="store_true", help="few calls, no peer install, a few seconds"
    )
    parser.add_argument(
        "--out",
        type=Path,
        help=f"where to write the report (default: {DEFAULT_OUT.name} beside this script; "
        "with --quick, none unless given)",
    )
    parser.add_argument(
        "--only",
        metavar="WORD",
        help="run only the benchmarks whose name contains WORD (http: "
        + ", ".join(b.__name__ for b in BENCHMARKS if "http" in b.__name__)
        + "); their rows replace the same rows of the report, the other rows stay",
    )
    args = parser.parse_args(argv)
    plan = QUICK if args.quick else FULL
    chosen = [b for b in BENCHMARKS if args.only is None or args.only in b.__name__]
    if not chosen:
        parser.error(
            f"no benchmark is named with {args.only!r}; they are: "
            + ", ".join(b.__name__ for b in BENCHMARKS)
        )
    command = shlex.join(["python", "bench/run.py", *(argv if argv is not None else sys.argv[1:])])

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="sqlgate-bench-") as temp:
        ctx = Context(plan, Path(temp), log)
        for benchmark in chosen:
            rows += benchmark(ctx)
    print(table(rows), end="")
    out = args.out or (None if args.quick else DEFAULT_OUT)
    if out is not None and args.only is not None:
        names = tuple(dict.fromkeys(f"| {row.benchmark} |" for row in rows))
        merge_rows(out, rows, names, f"`--only {args.only}`", command)
        log(f"merged into {out}")
    elif out is not None:
        out.write_text(report(rows, command, plan), encoding="utf-8")
        log(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
