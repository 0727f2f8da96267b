"""How often memory_search finds what an agent means: LoCoMo recall through the server's tools.

Not a test: it prints numbers (a markdown table) and merges its rows into bench/results.md
(or --out), keeping every other row. Usage:

    python bench/recall_bench.py                 # 10 conversations + latency at 100k and 1M
    python bench/recall_bench.py --split dev     # conversations 0-6 only (what tuning looks at)
    python bench/recall_bench.py --quick         # conversation 0, 2,000-event scale; prints only
    python bench/recall_bench.py --data FILE     # LoCoMo's locomo10.json from elsewhere

The data is LoCoMo (snap-research/LoCoMo, `data/locomo10.json`, CC BY-NC 4.0): it is read from
`../shared/bench-data/` beside the repository or from --data, used for evaluation only and
never copied into the repository. Without it the script says so and exits 0.

Protocol: one fresh database per conversation; every turn appended with `append_event`
(kind `turn`, content `"[<session date_time>] <speaker>: <text>"` plus `" [image: <caption>]"`
when the turn shares a picture); every question of categories 1-4 that lists evidence asked
with `memory_search(query=<question>, top_k=10)`. A hit at k: any gold `dia_id` among the
first k results. Conversations 0-6 are the dev split (tuning looks at them only), 7-9 are
held out.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from benchkit import BENCH, Row, leftovers, merge_rows, ms, table

from sqlgate.config import Settings
from sqlgate.engine.connect import immediate_transaction
from sqlgate.engine.records import utc_timestamp
from sqlgate.memory.chain import GENESIS, event_hash
from sqlgate.memory.witness import Witness, WitnessFile
from sqlgate.service import Service

DEFAULT_DATA = BENCH.parents[1] / "shared" / "bench-data" / "locomo10.json"
DEFAULT_OUT = BENCH / "results.md"
BENCH_RECALL = "recall: LoCoMo questions, memory_search top_k=10"
BENCH_SCALE = "recall: memory_search on LoCoMo turns at scale"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
DEV = range(0, 7)
HELD_OUT = range(7, 10)
TOP_K = 10
CUTS = (1, 5, 10)
_GOLD = re.compile(r"D:?(\d+):(\d+)")
_SESSION = re.compile(r"session_(\d+)")


# -- the data ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Question:
    text: str
    category: int
    gold: frozenset[str]


@dataclass(frozen=True)
class Conversation:
    index: int
    turns: tuple[tuple[str, str], ...]  # (dia_id, content) in the order they happened
    questions: tuple[Question, ...]


def gold_ids(evidence: Sequence[str]) -> frozenset[str]:
    """The dia_ids an evidence list names; LoCoMo has a few joined (`D8:6; D9:17`) or
    mistyped (`D:11:26`) entries, read as the ids they spell."""
    return frozenset(f"D{a}:{b}" for entry in evidence for a, b in _GOLD.findall(entry))


def turn_content(date_time: str, turn: dict[str, object]) -> str:
    content = f"[{date_time}] {turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        content += f" [image: {turn['blip_caption']}]"
    return content


def conversations(data: Path) -> list[Conversation]:
    samples = json.loads(data.read_text(encoding="utf-8"))
    result = []
    for index, sample in enumerate(samples):
        talk = sample["conversation"]
        numbers = sorted(
            int(m.group(1)) for key in talk if (m := _SESSION.fullmatch(key)) is not None
        )
        turns = tuple(
            (str(turn["dia_id"]), turn_content(talk[f"session_{n}_date_time"], turn))
            for n in numbers
            for turn in talk[f"session_{n}"]
        )
        questions = tuple(
            Question(qa["question"], qa["category"], gold_ids(qa.get("evidence") or []))
            for qa in sample["qa"]
            if qa["category"] in CATEGORIES and gold_ids(qa.get("evidence") or [])
        )
        result.append(Conversation(index, turns, questions))
    return result


# -- asking ------------------------------------------------------------------------------------
@dataclass
class Tally:
    asked: int = 0
    hits: dict[int, int] = field(default_factory=lambda: dict.fromkeys(CUTS, 0))
    seconds: list[float] = field(default_factory=list)

    def add(self, found: Sequence[str], gold: frozenset[str], seconds: float) -> None:
        self.asked += 1
        self.seconds.append(seconds)
        for k in CUTS:
            if gold.intersection(found[:k]):
                self.hits[k] += 1

    def recall(self, k: int) -> float:
        return self.hits[k] / self.asked if self.asked else 0.0

    def figure(self) -> str:
        return " · ".join(f"R@{k} {self.recall(k):.3f}" for k in CUTS)


def result_ids(reply: str) -> list[int]:
    """The event ids of a memory_search reply, best first (its CSV's first column)."""
    lines = reply.splitlines()[1:]
    return [int(line.split(",", 1)[0]) for line in lines if line and line[0].isdigit()]


def fill(service: Service, conversation: Conversation) -> None:
    for _, content in conversation.turns:
        service.append_event(content, "turn")


def ask(
    conversation: Conversation, folder: Path, reuse: bool, log: Callable[[str], None]
) -> dict[int, Tally]:
    """Per category: the questions' hits and search times, on a fresh (or kept) database."""
    path = folder / f"locomo-{conversation.index}.db"
    if not reuse:
        for leftover in leftovers(path):
            leftover.unlink(missing_ok=True)
    tallies = {category: Tally() for category in CATEGORIES}
    with Service.open(Settings(db=path), session=f"s-locomo-{conversation.index}") as service:
        events = json.loads(service.memory_stats())["events"]
        if events != len(conversation.turns):
            if events:
                raise SystemExit(f"{path} holds {events} events, not this conversation's turns")
            started = time.perf_counter()
            fill(service, conversation)
            log(
                f"conversation {conversation.index}: {len(conversation.turns)} turns appended "
                f"in {time.perf_counter() - started:.1f} s"
            )
        dia = {n: dia_id for n, (dia_id, _) in enumerate(conversation.turns, start=1)}
        for question in conversation.questions:
            started = time.perf_counter()
            reply = service.memory_search(question.text, top_k=TOP_K)
            seconds = time.perf_counter() - started
            found = [dia[n] for n in result_ids(reply)]
            tallies[question.category].add(found, question.gold, seconds)
    return tallies


def merged(tallies: Sequence[Tally]) -> Tally:
    total = Tally()
    for tally in tallies:
        total.asked += tally.asked
        total.seconds += tally.seconds
        for k in CUTS:
            total.hits[k] += tally.hits[k]
    return total


def recall_rows(per_conversation: dict[int, dict[int, Tally]]) -> list[Row]:
    """Overall, dev and held-out rows, then each category overall and per split."""
    splits = [("dev 0-6", DEV), ("held-out 7-9", HELD_OUT)]
    present = [(name, [i for i in span if i in per_conversation]) for name, span in splits]
    present = [(name, found) for name, found in present if found]
    groups: list[tuple[str, list[int]]] = []
    if len(present) > 1:
        groups.append((f"all {len(per_conversation)} conversations", sorted(per_conversation)))
    groups += present
    rows = []
    for category in (None, *CATEGORIES):
        for name, indexes in groups:
            tally = merged(
                [
                    tallies
                    for i in indexes
                    for c, tallies in per_conversation[i].items()
                    if category is None or c == category
                ]
            )
            subject = name if category is None else f"{CATEGORIES[category]}, {name}"
            rows.append(
                Row(
                    BENCH_RECALL,
                    subject,
                    f"{tally.asked:,}",
                    tally.figure(),
                    ms(statistics.median(tally.seconds)),
                    ms(percentile(tally.seconds, 99)),
                    "one fresh database per conversation; in-process `Service`"
                    if category is None and name == groups[0][0]
                    else "",
                )
            )
    return rows


def percentile(samples: Sequence[float], p: int) -> float:
    if len(samples) < 2:
        return samples[0]
    return statistics.quantiles(samples, n=100, method="inclusive")[p - 1]


# -- at scale --------------------------------------------------------------------------------
TXN_ROWS = 50_000
START_EPOCH = 1_767_225_600.0


def scaled_events(convs: Sequence[Conversation], count: int) -> Iterator[tuple[int, str, str]]:
    """(id, ts, content) for `count` events: the conversations' turns over and over, each
    pass with its own date prefix and turns shuffled within each conversation, so the text
    is realistic and no two passes index the same way."""
    rng = random.Random(count)
    turns = [[content.split("] ", 1)[1] for _, content in c.turns] for c in convs]
    event_id = 0
    for lap in range(count):
        for texts in turns:
            order = list(texts)
            rng.shuffle(order)
            for text in order:
                event_id += 1
                if event_id > count:
                    return
                day = time.strftime("%d %B, %Y", time.gmtime(START_EPOCH + lap * 86_400 * 3))
                ts = utc_timestamp(START_EPOCH + event_id * 7.3)
                yield (
                    event_id,
                    ts,
                    f"[{rng.randint(1, 12)}:{rng.randint(10, 59)} pm on {day}] {text}",
                )


def build_scaled(path: Path, convs: Sequence[Conversation], count: int) -> None:
    """A chain of `count` LoCoMo-text events, built as bench/memory_bench.py builds its chains:
    direct inserts on the server connection (hashes by the contract), the full-text index
    rebuilt once, a witness naming the head."""
    for leftover in leftovers(path):
        leftover.unlink(missing_ok=True)
    head = GENESIS
    session = "s-recall-scale"

    def rows(events: Iterator[tuple[int, str, str]]) -> Iterator[tuple[object, ...]]:
        nonlocal head
        for event_id, ts, content in events:
            digest = event_hash(event_id, ts, session, "turn", content, [], head)
            yield event_id, ts, session, "turn", content, "[]", head, digest
            head = digest

    with Service.open(Settings(db=path), session="s-recall-build") as service:
        conn = service.db.server
        events = scaled_events(convs, count)
        with service.db.server_lock:
            conn.pragma("synchronous", "off")
            for done in range(0, count, TXN_ROWS):
                batch = [next(events) for _ in range(min(TXN_ROWS, count - done))]
                with immediate_transaction(conn):
                    conn.executemany(
                        "INSERT INTO memory_events "
                        "(id, ts, session, kind, content, tags, prev_hash, hash) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        rows(iter(batch)),
                    )
            with immediate_transaction(conn):
                conn.execute("INSERT INTO memory_events_fts (memory_events_fts) VALUES ('rebuild')")
            conn.pragma("synchronous", "normal")
        WitnessFile.beside(path).write(Witness(count, head, 0, ""))


PROBE = """
import json, resource, statistics, sys, time
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from sqlgate.config import Settings
from sqlgate.service import Service
questions = json.loads(sys.stdin.read())
with Service.open(Settings(db=Path(sys.argv[2])), session="s-recall-probe") as service:
    opened = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for q in questions[:20]:
        service.memory_search(q, top_k=10)  # warm the page cache
    seconds = []
    for q in questions:
        started = time.perf_counter()
        service.memory_search(q, top_k=10)
        seconds.append(time.perf_counter() - started)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": seconds, "opened_kb": opened, "peak_kb": peak}))
"""


def probe(path: Path, questions: Sequence[str]) -> dict[str, object]:
    """Search latency and peak RSS of a fresh process that opens the database and asks."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(BENCH.parent / "src"), str(path)],
        input=json.dumps(list(questions)), capture_output=True, text=True, check=True,
    )  # fmt: skip
    answer: dict[str, object] = json.loads(done.stdout)
    return answer


def scale_rows(
    convs: Sequence[Conversation], sizes: Sequence[int], folder: Path, log: Callable[[str], None]
) -> list[Row]:
    rows = []
    questions = [q.text for c in convs for q in c.questions]
    random.Random(11).shuffle(questions)
    asked = questions[:500]
    for size in sizes:
        path = folder / f"recall-scale-{size}.db"
        started = time.perf_counter()
        build_scaled(path, convs, size)
        log(f"built {size:,} LoCoMo-text events in {time.perf_counter() - started:.0f} s")
        got = probe(path, asked)
        seconds = got["seconds"]
        assert isinstance(seconds, list)
        rows.append(
            Row(
                BENCH_SCALE,
                f"sqlgate, {size:,} events",
                f"{len(seconds):,}",
                f"peak RSS {int(got['peak_kb']) / 1024:.0f} MB",  # type: ignore[call-overload]
                ms(statistics.median(seconds)),
                ms(percentile(seconds, 99)),
                "LoCoMo turns repeated (shuffled, new dates) with LoCoMo questions; a fresh "
                f"process (RSS {int(got['opened_kb']) / 1024:.0f} MB once opened)",  # type: ignore[call-overload]
            )
        )
        path.unlink()
    return rows


# -- the report --------------------------------------------------------------------------------
def merge_into(path: Path, rows: Sequence[Row], command: str) -> None:
    """Replace this benchmark's rows in `path`'s table (the others stay), or add them."""
    merge_rows(path, rows, (f"| {BENCH_RECALL} |", f"| {BENCH_SCALE} |"), "Recall", command)


def recall(
    data: Path,
    split: str,
    scale: Sequence[int],
    folder: Path,
    log: Callable[[str], None],
    reuse: bool = False,
    limit: int | None = None,
) -> list[Row]:
    convs = conversations(data)
    wanted = {"dev": DEV, "held-out": HELD_OUT, "all": range(len(convs))}[split]
    chosen = [c for c in convs if c.index in wanted][:limit]
    per_conversation = {}
    for conversation in chosen:
        per_conversation[conversation.index] = ask(conversation, folder, reuse, log)
        log(f"conversation {conversation.index}: {len(conversation.questions)} questions asked")
    rows = recall_rows(per_conversation)
    if scale:
        rows += scale_rows(convs, scale, folder, log)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="LoCoMo's locomo10.json")
    parser.add_argument("--split", choices=("dev", "held-out", "all"), default="all")
    parser.add_argument("--quick", action="store_true", help="conversation 0, a small scale run")
    parser.add_argument(
        "--scale", default=None, help="event counts for the latency rows, e.g. 100000 (0: none)"
    )
    parser.add_argument("--workdir", type=Path, help="keep the databases here and reuse them")
    parser.add_argument("--out", type=Path, help="merge the rows into this report (default: "
                        f"{DEFAULT_OUT.name} for a full run of all conversations)")  # fmt: skip
    args = parser.parse_args(argv)

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    if not args.data.is_file():
        print(
            f"recall benchmark skipped: no LoCoMo file at {args.data}. Put snap-research/LoCoMo's "
            "data/locomo10.json there (evaluation only, never in this repository) or pass --data",
        )
        return 0
    default_scale = "2000" if args.quick else "100000,1000000"
    scale = [int(n) for n in (args.scale or default_scale).split(",") if int(n)]
    limit = 1 if args.quick else None
    with tempfile.TemporaryDirectory(prefix="sqlgate-recall-") as temp:
        folder = args.workdir or Path(temp)
        folder.mkdir(parents=True, exist_ok=True)
        rows = recall(args.data, args.split, scale, folder, log, args.workdir is not None, limit)
    print(table(rows), end="")
    full_run = not args.quick and args.split == "all"
    out = args.out or (DEFAULT_OUT if full_run else None)
    if out is not None:
        command = " ".join(["python bench/recall_bench.py", *(argv or sys.argv[1:])])
        merge_into(out, rows, command)
        log(f"merged into {out}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    raise SystemExit(main())
