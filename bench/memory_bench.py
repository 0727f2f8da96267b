"""What the memory chain costs as it grows: resume context, verification, appends, search.

Not a test: it prints numbers (a markdown table) and writes them, with the machine and the
command, to bench/results-memory.md (or --out). Usage:

    python bench/memory_bench.py            # 1k/200k resume, 10k/100k verify, 100k search
    python bench/memory_bench.py --big      # also verify_chain over 1,000,000 events
    python bench/memory_bench.py --quick    # small sizes, a few seconds (the smoke test)

Databases are built fast: a `Service` creates the schema, then events are inserted
directly on the server connection, one transaction per batch, with hashes computed by
`sqlgate.memory.chain.event_hash` (the hash contract) and their full-text rows, and a
witness naming the head is written in its records folder. Every built chain is checked with a
full `verify_chain` before anything is measured. Every measured call goes through
`Service` (so it includes validation and the audit-log row), timed with
`time.perf_counter`; the table reports medians.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import os
import platform
import random
import shlex
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import apsw

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from benchkit import leftovers

from sqlgate.config import Settings
from sqlgate.engine.connect import immediate_transaction
from sqlgate.engine.records import utc_timestamp
from sqlgate.memory.chain import GENESIS, event_hash
from sqlgate.memory.witness import Witness, WitnessFile
from sqlgate.service import Service

DEFAULT_OUT = Path(__file__).resolve().parent / "results-memory.md"
START_EPOCH = 1_767_225_600.0  # 2026-01-01T00:00:00Z

# Row names of the table; tests/test_bench_smoke.py looks for them.
ROW_RESUME_FIRST = "get_resume_context, first call (full verify)"
ROW_RESUME_REPEAT = "get_resume_context, repeated call"
ROW_RESUME_RATIO = "get_resume_context, repeated call, large/small"
ROW_RESUME_CKPT = "get_resume_context, repeated call, 50 events since checkpoint"
ROW_RESUME_CKPT_RATIO = "get_resume_context, repeated call since checkpoint, large/small"
ROW_RESUME_NEW = "get_resume_context, after 20 new appends"
ROW_VERIFY = "verify_chain (full)"
ROW_APPEND = "append_event"
ROW_SEARCH = "memory_search p50"
ROW_NAMES = (
    ROW_RESUME_FIRST,
    ROW_RESUME_REPEAT,
    ROW_RESUME_RATIO,
    ROW_RESUME_CKPT,
    ROW_RESUME_CKPT_RATIO,
    ROW_RESUME_NEW,
    ROW_VERIFY,
    ROW_APPEND,
    ROW_SEARCH,
)

# fmt: off
STOPWORDS = [
    "the", "a", "to", "of", "and", "in", "for", "on", "with", "after", "before", "when", "then",
    "it", "was", "is",
]
DOMAIN = [
    "test", "fix", "error", "build", "deploy", "commit", "config", "database", "query", "schema",
    "migration", "index", "server", "session", "token", "auth", "login", "user", "request",
    "retry", "timeout", "rollback", "release", "branch", "merge", "lint", "patch", "module",
    "parser", "cache", "worker", "queue", "thread", "socket", "network", "endpoint", "handler",
    "payload", "latency", "metric", "trace", "memory", "disk", "storage", "snapshot", "replica",
    "shard", "cluster", "router", "runtime", "sandbox", "secret", "signal", "stream", "trigger",
    "vector", "webhook", "window", "pipeline", "quota", "ledger", "mutex", "export", "import",
    "install", "upgrade", "docker", "fixture", "flaky", "refactor", "warning", "cursor", "bucket",
    "client",
]
# fmt: on
KINDS = ("note", "note", "note", "decision", "error", "observation", "todo", "tool")
TAGS = ("auth", "bug", "db", "deploy", "perf", "ui", "infra", "docs")
SEARCHES = (
    "deploy rollback",
    "migration schema",
    "auth* token",
    "flaky test timeout",
    "ticket_4242",
    "zephyr",
)


def vocabulary(seed: int = 7, size: int = 5000) -> tuple[list[str], list[float]]:
    """Words with Zipf-like weights: stop words first, domain words among made-up ones.

    Synthetic text with a few hundred equally likely words makes every query match most
    events; a long tail is closer to what agents write.
    """
    rng = random.Random(seed)
    syllables = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
    made_up: list[str] = []
    seen = set(STOPWORDS) | set(DOMAIN)
    while len(made_up) < size - len(STOPWORDS) - len(DOMAIN):
        word = "".join(rng.choices(syllables, k=rng.randint(2, 4)))
        if word not in seen:
            seen.add(word)
            made_up.append(word)
    words = list(STOPWORDS)
    tail = iter(made_up)
    for word in DOMAIN:  # a domain word every 4th rank after the stop words
        words += [word, next(tail), next(tail), next(tail)]
    words += list(tail)
    weights = list(itertools.accumulate(1.0 / rank for rank in range(1, len(words) + 1)))
    return words, weights


@dataclass(frozen=True)
class Plan:
    resume_sizes: tuple[int, int]
    verify_sizes: tuple[int, ...]
    search_size: int
    appends: int
    repeats: int  # repetitions of the cheap calls (median taken)
    search_repeats: int  # repetitions of each search query
    append_rounds: int  # rounds of "append 20, then resume"
    heavy_repeats: int  # repetitions of calls that walk a whole chain


QUICK = Plan((1_000, 5_000), (1_000, 5_000), 5_000, 200, 15, 5, 3, 2)
FULL = Plan((1_000, 200_000), (10_000, 100_000), 100_000, 2_000, 200, 30, 20, 3)


@dataclass(frozen=True)
class Row:
    name: str
    events: str
    median: str
    derived: str
    reps: int


# -- building a chain fast -----------------------------------------------------------------
STREAM_WORDS = 1 << 18  # Zipf-drawn words each event's content is a window of
TXN_ROWS = 50_000  # events per transaction while building


def _tag_sets() -> list[list[tuple[str, ...]]]:
    """Every set of 0 to 3 distinct tags, by size (each sorted, as the contract stores them)."""
    return [sorted(itertools.combinations(sorted(TAGS), size)) for size in range(4)]


def _events(count: int, seed: int) -> Iterator[tuple[int, str, str, str, str, tuple[str, ...]]]:
    """Deterministic, varied events: (id, ts, session, kind, content, sorted tags).

    The words come from one stream drawn with the Zipf weights once; each event is a
    window of 12 to 60 words at a random place in it, so an event costs a handful of
    random numbers instead of one per word (1M events in seconds, not minutes). A window
    has the stream's (Zipf) word frequencies; a tag set is 0 to 3 distinct tags, each
    size equally likely, then each set of that size equally likely.
    """
    rng = random.Random(seed)
    draw = rng.random
    words, weights = vocabulary()
    stream = rng.choices(words, cum_weights=weights, k=STREAM_WORDS)
    tag_sets = _tag_sets()
    for event_id in range(1, count + 1):
        length = 12 + int(draw() * 49)
        start = int(draw() * (STREAM_WORDS - length))
        ticket = 1 + int(draw() * 50_000)
        content = f"step {event_id} (ticket_{ticket}): " + " ".join(stream[start : start + length])
        sized = tag_sets[int(draw() * 4)]
        tags = sized[int(draw() * len(sized))]
        session = f"s-bench-{1 + event_id // 500:05d}"  # a new session every 500 events
        ts = utc_timestamp(START_EPOCH + event_id * 7.3)
        yield event_id, ts, session, KINDS[int(draw() * len(KINDS))], content, tags


def build(path: Path, count: int, *, verify: bool = True) -> str:
    """A database holding `count` chained events and a witness naming its head; the head hash.

    A `Service` creates the schema; the rows then go in directly on its server connection
    (hashes by the contract's own `event_hash`, 50,000 events per transaction), the
    full-text index is built once at the end with fts5's 'rebuild' command (it reads the
    same `content` and `tags` columns the server indexes; the stored tags' JSON
    punctuation is not a token), and the witness names the head. With `verify` (the
    default), a full `verify_chain` must then pass, or the script stops.
    """
    for leftover in leftovers(path):
        leftover.unlink(missing_ok=True)  # a kept --workdir from an earlier run
    head = GENESIS
    tag_texts: dict[tuple[str, ...], str] = {}

    def rows(
        events: Iterator[tuple[int, str, str, str, str, tuple[str, ...]]],
    ) -> Iterator[tuple[int, str, str, str, str, str, str, str]]:
        nonlocal head
        for event_id, ts, session, kind, content, tags in events:
            digest = event_hash(event_id, ts, session, kind, content, list(tags), head)
            tags_text = tag_texts.get(tags)
            if tags_text is None:
                tags_text = json.dumps(list(tags), ensure_ascii=False, separators=(",", ":"))
                tag_texts[tags] = tags_text
            yield event_id, ts, session, kind, content, tags_text, head, digest
            head = digest

    with Service.open(Settings(db=path), session="s-bench-build") as service:
        conn = service.db.server
        events = _events(count, seed=count)
        with service.db.server_lock:
            conn.pragma("synchronous", "off")  # a scratch file: a crash only means rebuild
            for done in range(0, count, TXN_ROWS):
                with immediate_transaction(conn):
                    conn.executemany(
                        "INSERT INTO memory_events "
                        "(id, ts, session, kind, content, tags, prev_hash, hash) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        rows(itertools.islice(events, min(TXN_ROWS, count - done))),
                    )
            with immediate_transaction(conn):
                conn.execute("INSERT INTO memory_events_fts (memory_events_fts) VALUES ('rebuild')")
            conn.pragma("synchronous", "normal")
        WitnessFile.beside(path).write(Witness(count, head, 0, ""))
        status = json.loads(service.verify_chain()) if verify else None
    expected = {"ok": True, "events": count, "head_id": count, "head_hash": head}
    if verify and status != expected:
        raise SystemExit(f"the built chain of {count} events does not verify: {status}")
    return head


def forget_verified(path: Path) -> None:
    """Reset the witness's verified position, so the next resume verifies everything."""
    witness = WitnessFile.beside(path)
    current = witness.read() or Witness()
    witness.write(Witness(current.head_id, current.head_hash, 0, ""))


# -- measuring -------------------------------------------------------------------------------
def timed(
    call: Callable[[], object], repeats: int, before: Callable[[], object] | None = None
) -> list[float]:
    samples = []
    for _ in range(repeats):
        if before is not None:
            before()
        started = time.perf_counter()
        call()
        samples.append(time.perf_counter() - started)
    return samples


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.3f} ms" if seconds < 0.01 else f"{seconds * 1000:.1f} ms"


def open_service(path: Path) -> Service:
    return Service.open(Settings(db=path), session="s-bench")


@dataclass
class ResumeNumbers:
    first: float
    repeated: float
    since_checkpoint: float
    after_appends: float


def measure_resume(path: Path, plan: Plan) -> ResumeNumbers:
    with open_service(path) as service:
        first = timed(
            service.get_resume_context,
            plan.heavy_repeats,
            before=lambda: forget_verified(path),
        )
        service.get_resume_context()  # sets the verified position
        repeated = timed(service.get_resume_context, plan.repeats)

        service.checkpoint("bench: a milestone, then 50 more events")
        for n in range(50):
            service.append_event(f"after the checkpoint, event {n}", "note", ["bench"])
        service.get_resume_context()
        since_checkpoint = timed(service.get_resume_context, plan.repeats)

        counter = iter(range(10**9))

        def append_twenty() -> None:
            for _ in range(20):
                service.append_event(f"new work {next(counter)}", "note", ["bench"])

        after_appends = timed(service.get_resume_context, plan.append_rounds, before=append_twenty)
    return ResumeNumbers(
        statistics.median(first),
        statistics.median(repeated),
        statistics.median(since_checkpoint),
        statistics.median(after_appends),
    )


def measure_verify(path: Path, plan: Plan) -> tuple[float, int]:
    """Median seconds of a full verify_chain, and the peak Python memory of one (bytes)."""
    with open_service(path) as service:
        seconds = statistics.median(timed(service.verify_chain, plan.heavy_repeats))
        tracemalloc.start()
        try:
            service.verify_chain()
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    return seconds, peak


def measure_appends(path: Path, count: int) -> float:
    """Seconds for `count` append_event calls through one Service."""
    with open_service(path) as service:
        started = time.perf_counter()
        for n in range(count):
            service.append_event(
                f"append {n}: tried the migration again, the retry worked", "note", ["db"]
            )
        return time.perf_counter() - started


def measure_search(path: Path, plan: Plan) -> dict[str, float]:
    with open_service(path) as service:
        medians = {}
        for query in SEARCHES:
            service.memory_search(query)  # warm the page cache for this query's terms
            medians[query] = statistics.median(
                timed(
                    functools.partial(service.memory_search, query, top_k=10), plan.search_repeats
                )
            )
    return medians


# -- reporting -------------------------------------------------------------------------------
def machine() -> list[str]:
    cpu = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text(errors="replace").splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return [
        f"- CPU: {cpu}; nproc: {os.cpu_count()}",
        f"- OS: {platform.system()} {platform.release()}",
        f"- Python {platform.python_version()}; SQLite {apsw.sqlite_lib_version()} "
        f"(apsw {apsw.apsw_version()})",
    ]


def table(rows: Sequence[Row]) -> str:
    lines = ["| benchmark | events | median | derived | reps |", "|---|---:|---:|---|---:|"]
    lines += [f"| {r.name} | {r.events} | {r.median} | {r.derived} | {r.reps} |" for r in rows]
    return "\n".join(lines) + "\n"


def report_head(title: str, written: str, command: str, remark: str = "") -> list[str]:
    """The lines every benchmark report opens with: title, when and how, and the machine."""
    stamp = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    return [
        f"# {title}",
        "",
        f"Written by {written} on {stamp} UTC." + (f" {remark}" if remark else ""),
        "",
        "Command:",
        "",
        "```",
        command,
        "```",
        "",
        "Machine:",
        "",
        *machine(),
        "",
    ]


def report(rows: Sequence[Row], notes: Sequence[str], command: str, plan_name: str) -> str:
    head = report_head(
        "Memory chain benchmarks", f"`bench/memory_bench.py` ({plan_name} sizes)", command
    )
    return "\n".join([*head, table(rows), *notes, ""])


def count_label(n: int) -> str:
    return f"{n:,}"


def run(plan: Plan, folder: Path, log: Callable[[str], None]) -> tuple[list[Row], list[str]]:
    rows: list[Row] = []
    notes: list[str] = []
    sizes = sorted({*plan.resume_sizes, *plan.verify_sizes, plan.search_size})
    paths = {}
    for size in sizes:
        path = folder / f"chain-{size}.db"
        started = time.perf_counter()
        build(path, size)
        spent = time.perf_counter() - started
        log(
            f"built and verified {size:,} events in {spent:.1f} s "
            f"({path.stat().st_size / 1e6:.0f} MB)"
        )
        paths[size] = path

    # verify_chain throughput first, while the databases are exactly as built
    for size in plan.verify_sizes:
        seconds, peak = measure_verify(paths[size], plan)
        log(f"verify_chain {size:,}: {seconds:.3f} s, peak {peak / 1e6:.2f} MB")
        rows.append(
            Row(
                ROW_VERIFY,
                count_label(size),
                ms(seconds),
                f"{size / seconds:,.0f} events/s; peak Python memory {peak / 1e6:.2f} MB",
                plan.heavy_repeats,
            )
        )

    search = measure_search(paths[plan.search_size], plan)
    for query, seconds in search.items():
        log(f"memory_search {query!r}: {ms(seconds)}")
    rows.append(
        Row(
            ROW_SEARCH,
            count_label(plan.search_size),
            ms(statistics.median(search.values())),
            "top_k=10; per query: " + ", ".join(f"`{q}` {ms(s)}" for q, s in search.items()),
            plan.search_repeats,
        )
    )

    small, large = plan.resume_sizes
    resume = {}
    for size in (small, large):
        resume[size] = measure_resume(paths[size], plan)
        got = resume[size]
        log(
            f"get_resume_context {size:,}: first {ms(got.first)}, repeated {ms(got.repeated)}, "
            f"since checkpoint {ms(got.since_checkpoint)}, after appends {ms(got.after_appends)}"
        )
    for size in (small, large):
        rows.append(
            Row(
                ROW_RESUME_FIRST,
                count_label(size),
                ms(resume[size].first),
                f"{size / resume[size].first:,.0f} events/s",
                plan.heavy_repeats,
            )
        )
    for size in (small, large):
        rows.append(Row(ROW_RESUME_REPEAT, count_label(size), ms(resume[size].repeated),
                        "no checkpoint yet", plan.repeats))  # fmt: skip
    ratio = resume[large].repeated / resume[small].repeated
    rows.append(Row(ROW_RESUME_RATIO, f"{large:,} / {small:,}", f"{ratio:.2f}x", "goal: about 1",
                    plan.repeats))  # fmt: skip
    for size in (small, large):
        rows.append(Row(ROW_RESUME_CKPT, count_label(size), ms(resume[size].since_checkpoint),
                        "latest checkpoint 50 events before the head", plan.repeats))  # fmt: skip
    ratio_ckpt = resume[large].since_checkpoint / resume[small].since_checkpoint
    rows.append(Row(ROW_RESUME_CKPT_RATIO, f"{large:,} / {small:,}", f"{ratio_ckpt:.2f}x",
                    "goal: about 1", plan.repeats))  # fmt: skip
    for size in (small, large):
        rows.append(Row(ROW_RESUME_NEW, count_label(size), ms(resume[size].after_appends),
                        "verifies the 20 new events only", plan.append_rounds))  # fmt: skip

    append_path = folder / "appends.db"
    seconds = measure_appends(append_path, plan.appends)
    log(f"append_event x{plan.appends}: {seconds:.2f} s")
    rows.append(
        Row(
            ROW_APPEND,
            f"{plan.appends:,} calls",
            ms(seconds / plan.appends),
            f"{plan.appends / seconds:,.0f} calls/s (one process; each fsyncs the witness)",
            1,
        )
    )

    notes.append(
        "Ratios: large/small of the median repeated call. About 1 means the call's cost "
        "does not follow the chain's length."
    )
    if ratio > 2:
        notes += [
            "",
            f"The repeated call without a checkpoint is {ratio:.0f}x slower at {large:,} "
            "events: something in it is still linear in the chain's length (when measured "
            "first, the count of events since the latest checkpoint, which with no "
            "checkpoint counts the whole table). See bench/README.md for how to profile it.",
        ]
    return rows, notes


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="small sizes, a few seconds")
    parser.add_argument("--big", action="store_true", help="also verify 1,000,000 events")
    parser.add_argument(
        "--out",
        type=Path,
        help=f"where to write the report (default: {DEFAULT_OUT.name} beside this script; "
        "with --quick, none unless given)",
    )
    parser.add_argument("--workdir", type=Path, help="where to build the databases (kept)")
    args = parser.parse_args(argv)

    plan = QUICK if args.quick else FULL
    if args.big:
        plan = replace(plan, verify_sizes=(*plan.verify_sizes, 1_000_000))
    command = shlex.join(
        ["python", "bench/memory_bench.py", *(argv if argv is not None else sys.argv[1:])]
    )

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory(prefix="sqlgate-bench-") as temp:
        folder = args.workdir or Path(temp)
        folder.mkdir(parents=True, exist_ok=True)
        rows, notes = run(plan, folder, log)
    text = report(rows, notes, command, "quick" if args.quick else "full")
    print(table(rows), end="")
    out = args.out or (None if args.quick else DEFAULT_OUT)
    if out is not None:
        out.write_text(text, encoding="utf-8")
        log(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
