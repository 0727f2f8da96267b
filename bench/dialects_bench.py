"""What issue 34's dialect rewrites score on the corpus, and what they cost a call.

    python bench/dialects_bench.py [--baseline PYTHON [--label TEXT]] [--rounds 7]
                                   [--calls 400] [--write-calls 100] [--json] [--no-write]

1. The corpus (tests/data/dialect_corpus.json, run by tests/dialect_corpus.py): per dialect,
   the items right on the first try, right after following the answer's rewrite once, the
   rewrites that run but give another result (goal 0), the failures with no rewrite, the
   statements that ran silently wrong, and sqlglot's plain transpile run with the same tool
   (the anchor); for the items that must get no rewrite, the noise (goal 0).
2. The success path: in a fresh process, N `read_query` calls of ordinary SQLite statements
   and N `write_query` INSERTs on an in-process `Service`, per-call microseconds (median of the
   rounds' medians), and which of sqlglot's dialect modules are loaded after them (goal: none).
3. The failing path: per-call microseconds of the corpus's failing reads (the dialect items
   SQLite refuses) in the same process, after the success path, and of the first of them alone
   (what loading a rewrite search costs once).

With `--baseline PYTHON` (the interpreter of an environment where the build to compare with
is installed, e.g. `git worktree add /tmp/before COMMIT && python3 -m venv /tmp/before/.venv &&
/tmp/before/.venv/bin/pip install -e /tmp/before`) parts 2 and 3 also run under it, one
process per round of each build in turn (the order flipping each round), side by side. The
write row waits on the disk's syncs: it moves with the machine's other work far more than
the others. The corpus is scored with this checkout only. The tables go to stdout (`--json`:
one JSON document) and, unless `--no-write`, into the "Dialects (issue 34)" section of
bench/results.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
HEADING = "## Dialects (issue 34)"
END = "<!-- end of the dialects section -->"
WATCHED = (
    "sqlglot.parser",
    "sqlglot.dialects.postgres",
    "sqlglot.dialects.mysql",
    "sqlglot.dialects.tsql",
    "sqlglot.transforms",
)
READS = (
    "SELECT COUNT(*) FROM t",
    "SELECT id, v FROM t WHERE id = 3",
    "SELECT v, COUNT(*) FROM t GROUP BY v ORDER BY 2 DESC LIMIT 5",
    "SELECT strftime('%Y-%m', at) AS m, SUM(n) FROM t GROUP BY m",
    "SELECT a.id FROM t AS a JOIN t AS b ON b.id = a.id + 1 WHERE a.v LIKE 'x%' LIMIT 10",
)
SCHEMA = (
    "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, n INTEGER, at TEXT)",
    "INSERT INTO t (v, n, at) SELECT 'x' || (value % 7), value, "
    "datetime('2024-01-01', '+' || value || ' hours') FROM json_each(json_array("
    + ", ".join(str(i) for i in range(50))
    + "))",
)


# -- the child: one round of the success and failing paths in a fresh process --------------
def child_round(calls: int, write_calls: int, failing: list[str]) -> dict[str, Any]:
    """Run in a fresh interpreter (this build's or the baseline's): nothing of sqlglot's
    dialects may be loaded by the parent's corpus run."""
    import apsw

    from sqlgate.config import Settings
    from sqlgate.errors import SqlgateError
    from sqlgate.service import Service

    work = Path(tempfile.mkdtemp(prefix="sqlgate-dialects-bench-"))
    (work / ".git").mkdir()  # a project: the records live in work/.sqlgate
    conn = apsw.Connection(str(work / "app.db"))
    for statement in SCHEMA:
        conn.execute(statement)
    conn.close()
    service = Service.open(Settings(db=work / "app.db"), session="bench")
    try:
        for sql in READS:  # warm: the first statement of a kind loads what it needs
            service.read_query(sql)
        service.write_query("INSERT INTO t (v, n, at) VALUES ('w', 0, '2024-01-01')")
        reads = _per_call(lambda i: service.read_query(READS[i % len(READS)]), calls)
        writes = _per_call(
            lambda i: service.write_query(
                "INSERT INTO t (v, n, at) VALUES ('w', ?, '2024-01-01')", [i]
            ),
            write_calls,
        )
        loaded = [name for name in WATCHED if name in sys.modules]

        def fail(i: int) -> None:
            with contextlib.suppress(SqlgateError):
                service.read_query(failing[i % len(failing)])

        first = _per_call(fail, 1)
        failed = _per_call(fail, max(len(failing), 1) * 3)
    finally:
        service.close()
    return {"read": reads, "write": writes, "loaded": loaded, "first": first, "fail": failed}


def _per_call(call: Any, count: int) -> float:
    """Median microseconds of `count` calls of `call(i)`."""
    samples = []
    for i in range(count):
        start = time.perf_counter()
        call(i)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1e6


def run_child(python: str, args: argparse.Namespace, failing: Path) -> dict[str, Any]:
    command = [python, str(Path(__file__).resolve()), "--child", str(failing)]
    command += ["--calls", str(args.calls), "--write-calls", str(args.write_calls)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=REPO, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{python}: the timing process failed:\n{done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def timing(args: argparse.Namespace, failing: list[str]) -> dict[str, dict[str, Any]]:
    """Per build ("now", and "baseline" with --baseline): the medians over the rounds, each
    round one fresh process of each build in turn."""
    builds = {"now": sys.executable}
    if args.baseline:
        builds["baseline"] = args.baseline
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(failing, handle)
    path = Path(handle.name)
    rounds: dict[str, list[dict[str, Any]]] = {name: [] for name in builds}
    try:
        for turn in range(args.rounds):  # the order flips each round: drift falls on both
            order = list(builds.items())
            for name, python in order if turn % 2 == 0 else order[::-1]:
                rounds[name].append(run_child(python, args, path))
    finally:
        path.unlink()
    out: dict[str, dict[str, Any]] = {}
    for name, results in rounds.items():
        out[name] = {k: statistics.median(r[k] for r in results) for k in ("read", "write")}
        out[name].update({k: statistics.median(r[k] for r in results) for k in ("first", "fail")})
        out[name]["loaded"] = sorted({m for r in results for m in r["loaded"]})
    return out


# -- the corpus ----------------------------------------------------------------------------
def corpus_scores() -> tuple[list[dict[str, Any]], list[str], dict[str, list[str]]]:
    """The score rows, the failing reads (for the timing), and the ids behind each count."""
    sys.path.insert(0, str(REPO))
    from tests.dialect_corpus import load, run, scores

    corpus = load()
    outcomes = run(corpus)
    rows = []
    for score in scores(outcomes):
        row = {k: getattr(score, k) for k in score.__dataclass_fields__}
        row["two_try"] = score.two_try
        rows.append(row)
    failing = [
        o.item.sql
        for o in outcomes
        if o.item.tool == "read_query" and o.first.error is not None and not o.item.no_rewrite
    ]
    lists = {
        "wrong_rewrite": [o.item.id for o in outcomes if o.wrong_rewrite and not o.item.no_rewrite],
        "broken_rewrite": [o.item.id for o in outcomes if o.broken_rewrite],
        "noise": [o.item.id for o in outcomes if o.item.no_rewrite and o.offered],
        "silent": [o.item.id for o in outcomes if o.silent and o.item.expect is not None],
        "after_rewrite": [o.item.id for o in outcomes if o.after_rewrite],
    }
    return rows, failing, lists


def percent(count: int, total: int) -> str:
    return f"{count} ({100 * count / total:.1f}%)" if total else "0"


def score_table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| dialect | items | first try | within two tries | after the rewrite | wrong "
        "rewrites | broken rewrites | no rewrite | silently wrong | sqlglot transpile | noise |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        n = r["items"]
        if r["group"] == "must-not":
            lines.append(f"| must not get a rewrite | {n} |  |  |  |  |  |  |  |  | {r['noise']} |")
            continue
        lines.append(
            f"| {r['group']} | {n} | {percent(r['first_try'], n)} | {percent(r['two_try'], n)}"
            f" | {r['after_rewrite']} | {r['wrong_rewrite']} | {r['broken_rewrite']}"
            f" | {r['no_rewrite']} | {r['silent']} | {percent(r['anchor'], n)} |  |"
        )
    return "\n".join(lines) + "\n"


def cost_table(times: dict[str, dict[str, Any]], failing: int, args: argparse.Namespace) -> str:
    builds = list(times)
    head = "| measure | " + " | ".join(f"{b} (µs per call)" for b in builds)
    head += " | now / baseline |" if "baseline" in times else " |"
    lines = [head, "|---|" + "---:|" * (len(builds) + ("baseline" in times))]
    measures = (
        ("read", f"read_query, ordinary SQLite ({args.calls} calls of {len(READS)} statements)"),
        ("write", f"write_query, 1-row INSERT with undo ({args.write_calls} calls)"),
        ("fail", f"read_query failing: the corpus's {failing} failing reads, 3 times each"),
        ("first", "read_query failing: the first failing call of the process"),
    )
    for key, label in measures:
        cells = " | ".join(f"{times[b][key]:.0f}" for b in builds)
        ratio = (
            f" | {times['now'][key] / times['baseline'][key]:.3f}x" if "baseline" in times else ""
        )
        lines.append(f"| {label} | {cells}{ratio} |")
    return "\n".join(lines) + "\n"


def loaded_line(times: dict[str, dict[str, Any]]) -> str:
    parts = [
        f"{build}: " + (", ".join(f"`{m}`" for m in found["loaded"]) or "none")
        for build, found in times.items()
    ]
    return (
        "sqlglot modules loaded after the success path (of "
        + ", ".join(f"`{m}`" for m in WATCHED)
        + "): "
        + "; ".join(parts)
        + ".\n"
    )


def added_work_line() -> str:
    """What a statement that runs pays for the rewrites, timed alone (the whole call's
    difference above is within this machine's noise): the trap signs' tests per statement."""
    import timeit

    from sqlgate.engine.dialects import has_sign

    each = [timeit.timeit(lambda s=sql: has_sign(s), number=20000) / 20000 * 1e6 for sql in READS]
    shown = ", ".join(f"{t:.2f}" for t in each)
    return (
        "The success path's added work, timed alone (`has_sign`, the trap signs' substring "
        f"tests, over the {len(READS)} ordinary statements): {shown} µs per statement.\n"
    )


LEGEND = (
    "*first try*: the statement as sent gives the expected result with no note; *within two"
    " tries*: that, or the statement the answer offers (error or `# note:`), followed once,"
    " gives it; *wrong rewrites*: an offered statement runs and gives another result (goal 0);"
    " *broken rewrites*: an offered statement fails; *no rewrite*: failed or wrong, nothing"
    " offered; *silently wrong*: ran, no note, another result; *sqlglot transpile*:"
    ' `sqlglot.transpile(sql, read=dialect, write="sqlite")[0]` sent with the same tool (the'
    " anchor); *noise*: anything offered on a statement that must get nothing (goal 0)."
    " Per item lists: `--json`."
)


def merge_section(path: Path, body: str) -> None:
    """Put `body` under HEADING in `path`, in place of the section's old text (up to END),
    or at the end of the file."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    section = f"{HEADING}\n\n{body.rstrip()}\n\n{END}\n"
    start = text.find(HEADING)
    if start >= 0 and text.find(END, start) >= 0:
        stop = text.find(END, start) + len(END) + 1
        text = text[:start] + section + text[stop:]
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.write_text(text, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", help="python of the build to compare with")
    parser.add_argument("--label", default="the build of --baseline", help="says what it is")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--write-calls", type=int, default=100)
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("--no-write", action="store_true", help="do not update results.md")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        failing = json.loads(Path(args.child).read_text(encoding="utf-8"))
        print(json.dumps(child_round(args.calls, args.write_calls, failing)))
        return
    rows, failing, lists = corpus_scores()
    times = timing(args, failing)
    if args.json:
        print(json.dumps({"scores": rows, "items": lists, "cost": times}, indent=1))
    scores_md = score_table(rows)
    cost_md = cost_table(times, len(failing), args) + "\n" + loaded_line(times)
    cost_md += "\n" + added_work_line()
    if not args.json:
        print(scores_md)
        print(cost_md)
        for name, ids in lists.items():
            print(f"{name}: {', '.join(ids) or '-'}")
    if not args.no_write:
        command = "python bench/dialects_bench.py" + (" --baseline PYTHON" if args.baseline else "")
        stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        against = f" Baseline: {args.label}." if args.baseline else ""
        body = f"`{command}` on {stamp} (same machine).{against}\n\n{LEGEND}\n\n{scores_md}\n"
        body += cost_md
        merge_section(BENCH / "results.md", body)


if __name__ == "__main__":
    main()
