"""The benchmarks of bench/run.py that build chains and tables and time them in-process:
the memory chain (after its append_event rows over stdio), the two searches, and the
destructive cost from bench/destructive_bench.py."""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

import anyio
import apsw
import memory_bench as mb
from benchkit import (
    BENCH,
    BENCH_APPEND,
    BENCH_DESTRUCTIVE,
    BENCH_MEMORY_SEARCH,
    BENCH_RESUME,
    BENCH_TEXT_SEARCH,
    BENCH_VERIFY,
    SUBJECT_APPEND_FOUR,
    SUBJECT_APPEND_ONE,
    SUBJECT_DESTRUCTIVE,
    SUBJECT_RESUME_RATIO,
    Context,
    Row,
    latency_row,
    ms,
    time_sync,
)
from peers import server_failure, sqlgate_params, stdio_rows
from stdio_bench import append_arguments, append_concurrently

from sqlgate.config import Settings
from sqlgate.engine.running import SearchRequest
from sqlgate.service import Service


def chain(ctx: Context) -> list[Row]:
    """append_event from one and four processes; verify_chain; repeated get_resume_context."""
    plan = ctx.plan
    rows: list[Row] = []
    got = stdio_rows(
        ctx,
        BENCH_APPEND,
        SUBJECT_APPEND_ONE,
        "append-one",
        sqlgate_params(ctx.folder / "append-one.db"),
        "append_event",
        append_arguments(0),
        5,
        plan.appends_one,
    )
    if isinstance(got, Row):
        rows.append(got)
    else:
        rows.append(latency_row(BENCH_APPEND, SUBJECT_APPEND_ONE, got[0], "sequential"))

    workers, each = 4, plan.appends_each
    ctx.log(f"{BENCH_APPEND}, {SUBJECT_APPEND_FOUR}: {workers} x {each} calls")
    errlog_path = ctx.folder / "append-four.stderr.txt"
    with errlog_path.open("w", encoding="utf-8") as errlog:
        try:
            params = sqlgate_params(ctx.folder / "append-four.db")
            seconds = anyio.run(append_concurrently, params, workers, each, errlog)
        except Exception as error:
            errlog.flush()
            reason = server_failure(error, errlog_path)
            rows.append(Row(BENCH_APPEND, SUBJECT_APPEND_FOUR, "", "not available", "", "", reason))
        else:
            total = workers * each
            rows.append(
                Row(
                    BENCH_APPEND,
                    SUBJECT_APPEND_FOUR,
                    f"{total:,}",
                    f"{total / seconds:,.0f} calls/s",
                    "",
                    "",
                    f"aggregate over {workers} concurrent clients, {each:,} calls each",
                )
            )

    sizes = sorted({*plan.verify_sizes, *plan.resume_sizes, *plan.search_sizes})
    paths = {}
    for size in sizes:
        path = ctx.folder / f"chain-{size}.db"
        started = time.perf_counter()
        mb.build(path, size)
        ctx.log(f"built and verified {size:,} events in {time.perf_counter() - started:.1f} s")
        paths[size] = path
    ctx.paths.update(paths)

    for size in plan.verify_sizes:
        with mb.open_service(paths[size]) as service:
            samples = mb.timed(service.verify_chain, plan.heavy_repeats)
        seconds = statistics.median(samples)
        growth = verify_rss_growth(paths[size])
        ctx.log(f"verify_chain {size:,}: {seconds:.3f} s; peak RSS growth {growth}")
        rows.append(
            Row(
                BENCH_VERIFY,
                f"sqlgate, {size:,} events",
                f"{len(samples)}",
                f"{size / seconds:,.0f} events/s",
                ms(seconds),
                "",
                "in-process `Service.verify_chain`; p50 = median time of one full walk; "
                f"peak RSS growth of one walk in a fresh process: {growth}",
            )
        )

    small, large = plan.resume_sizes
    medians = {}
    for size in (small, large):
        with mb.open_service(paths[size]) as service:
            service.get_resume_context()  # records the verified position
            lat = time_sync(service.get_resume_context, plan.repeats)
        medians[size] = lat.percentile(50)
        rows.append(
            Row(
                BENCH_RESUME,
                f"sqlgate, {size:,} events",
                f"{plan.repeats:,}",
                "",
                ms(lat.percentile(50)),
                ms(lat.percentile(99)),
                "in-process `Service`, no checkpoint, after a first call",
            )
        )
    ratio = medians[large] / medians[small]
    verdict = "goal met (<= 2)" if ratio <= 2 else "goal not met (> 2)"
    rows.append(
        Row(
            BENCH_RESUME,
            SUBJECT_RESUME_RATIO,
            "",
            f"{ratio:.2f}x",
            "",
            "",
            f"p50 at {large:,} / p50 at {small:,}; {verdict}",
        )
    )
    return rows


def search(ctx: Context) -> list[Row]:
    """memory_search p50 over the built chain; search_text over 1 KB rows, in-process."""
    plan = ctx.plan
    rows: list[Row] = []
    mb_plan = dataclasses.replace(mb.QUICK, search_repeats=max(plan.repeats // 3, 3))
    for size in plan.search_sizes:
        path = ctx.paths.get(size)
        if path is None:
            path = ctx.folder / f"chain-{size}.db"
            mb.build(path, size)
        medians = mb.measure_search(path, mb_plan)
        p50 = statistics.median(medians.values())
        ctx.log(f"memory_search {size:,}: p50 {ms(p50)}")
        rows.append(
            Row(
                BENCH_MEMORY_SEARCH,
                f"sqlgate, {size:,} events",
                f"{len(medians)} queries",
                "",
                ms(p50),
                ms(max(medians.values())),
                "in-process `Service`, top_k=10; median of per-query medians; p99 column = "
                "slowest query",
            )
        )

    db = ctx.folder / "text.db"
    n = plan.text_rows
    with Service.open(Settings(db=db, query_timeout=600.0), session="s-bench") as service:
        fill_documents(db, n)
        ctx.log(f"built {n:,} rows of 1 KB for search_text")
        for label, request in TEXT_SEARCHES:
            service.search_text(request)  # warm the page cache
            samples = mb.timed(functools.partial(service.search_text, request), plan.heavy_repeats)
            rows.append(
                Row(
                    BENCH_TEXT_SEARCH,
                    f"sqlgate, {label}",
                    f"{len(samples)}",
                    "",
                    ms(statistics.median(samples)),
                    "",
                    f"{n:,} rows; in-process `Service.search_text`, "
                    f"pattern `{request.pattern}`, limit {request.limit}",
                )
            )
    return rows


TEXT_SEARCHES = [
    ("no match (full scan)", SearchRequest("zzqx_never", "docs", ["body"], fixed_strings=True)),
    ("rare literal", SearchRequest("needle_7", "docs", ["body"], fixed_strings=True)),
    ("regex, ignore case", SearchRequest(r"TICKET_4\d{3}\b", "docs", ["body"], ignore_case=True)),
    ("common word, limit 100", SearchRequest("deploy", "docs", ["body"], limit=100)),
]


def fill_documents(db: Path, count: int) -> None:
    """`count` rows of about 1 KB each, through a direct connection (the schema exists)."""
    rng = random.Random(count)
    words, weights = mb.vocabulary()
    bodies = []
    for _ in range(997):
        text = " ".join(rng.choices(words, cum_weights=weights, k=220))
        bodies.append(text[:1000])
    conn = apsw.Connection(str(db))
    try:
        conn.execute("CREATE TABLE docs (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
        with conn:
            conn.executemany(
                "INSERT INTO docs (id, body) VALUES (?, ?)",
                (
                    (
                        i,
                        f"ticket_{i % 10_000} "
                        + ("needle_7 " if i % 1000 == 7 else "")
                        + bodies[i % len(bodies)],
                    )
                    for i in range(1, count + 1)
                ),
            )
    finally:
        conn.close()


def destructive(ctx: Context) -> list[Row]:
    """A 10-row DELETE: row-level undo beside a whole-file snapshot (bench/destructive_bench.py)."""
    try:
        import destructive_bench
    except ImportError as error:
        why = f"bench/destructive_bench.py is not importable: {error}"
        return [Row(BENCH_DESTRUCTIVE, SUBJECT_DESTRUCTIVE, "", "not available", "", "", why)]
    folder = ctx.folder / "destructive"
    folder.mkdir(exist_ok=True)
    ctx.log(f"{BENCH_DESTRUCTIVE}: {ctx.plan.destructive_mb} MB, {ctx.plan.destructive_repeats} x")
    found = destructive_bench.destructive_cost(
        folder, ctx.plan.destructive_mb, ctx.plan.destructive_repeats, ctx.log
    )
    return [destructive_row(found_row) for found_row in found]


def destructive_row(found: dict[str, object]) -> Row:
    """One dict of destructive_cost as a table row.

    The keys named like Row's columns fill them (`subject` is required); a float p50 or p99
    is seconds; any other key goes into the notes as `key=value`.
    """
    columns = ("calls", "figure", "p50", "p99", "notes")

    def cell(name: str) -> str:
        value = found.get(name, "")
        return ms(value) if name in ("p50", "p99") and isinstance(value, float) else str(value)

    extra = [f"{key}={value}" for key, value in found.items() if key not in {"subject", *columns}]
    notes = "; ".join(filter(None, [cell("notes"), *extra]))
    return Row(
        BENCH_DESTRUCTIVE,
        str(found["subject"]),
        cell("calls"),
        cell("figure"),
        cell("p50"),
        cell("p99"),
        notes,
    )


VERIFY_RSS = """
import json, resource, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import memory_bench as mb
def resident():  # now, in ru_maxrss units: VmRSS where /proc has it (KiB), else the peak
    try:
        with open("/proc/self/status") as status:
            return next(int(ln.split()[1]) for ln in status if ln.startswith("VmRSS:"))
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
with mb.open_service(Path(sys.argv[2])) as service:
    before = resident()
    service.verify_chain()
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps([before, after]))
"""


def verify_rss_growth(path: Path) -> str:
    """How much one full verify_chain raises the peak RSS of a fresh process (flat = streams).

    The resident size is read after opening the Service (VmRSS on Linux; elsewhere the
    peak so far), then the peak (ru_maxrss) after the walk: the difference is what the walk
    itself needed at most. Needs the `resource` module.
    """
    if os.name == "nt":
        return "n/a (no ru_maxrss on Windows)"
    done = subprocess.run(
        [sys.executable, "-c", VERIFY_RSS, str(BENCH), str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        return f"n/a ({done.stderr.strip()[-120:]})"
    before, after = json.loads(done.stdout.strip().splitlines()[-1])
    unit = 1 if sys.platform == "darwin" else 1024  # bytes on macOS, KiB on Linux
    return f"{(after - before) * unit / 1e6:.1f} MB (peak {after * unit / 1e6:.0f} MB)"
