"""What the user's table rules cost a read, in process (issue 23).

    python bench/policy_bench.py [--quick] [--rounds 40] [--batch 200]

Two figures, each a ratio of p50 latencies of `Service.read_query`, the two sides timed in
turn (a batch of one, then a batch of the other, `--rounds` times) so load moves both alike:

- `read_query('SELECT 1')` on a server with a 10-rule policy (six hidden columns over three
  tables, two protected and two append-only tables) against one with none: goal <= 1.02;
- a 1,000-row read of an 8-column table one of whose columns is hidden, against the same
  table with no rule: goal <= 1.05.

Both databases hold the same tables and rows; only the rules differ.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from benchkit import Context, Row, ms

from sqlgate.config import Settings
from sqlgate.service import Service

BENCH_RULES = "table rules cost: read_query"
SUBJECT_SELECT_ONE = "SELECT 1, 10-rule policy / none"
SUBJECT_THOUSAND = "1,000 rows x 8 columns, one hidden / none"
GOALS = {SUBJECT_SELECT_ONE: 1.02, SUBJECT_THOUSAND: 1.05}

TEN_RULES = {
    "hide_column": (
        "users.ssn", "users.password_hash", "customers.card", "customers.phone",
        "wide.c3", "api_keys.secret",
    ),
    "protect_table": ("invoices", "ledger"),
    "append_only_table": ("events", "audit_trail"),
}  # fmt: skip
ONE_HIDDEN = {"hide_column": ("wide.c3",)}
SCHEMA = (
    "CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT, ssn TEXT, password_hash TEXT)",
    "CREATE TABLE customers(id INTEGER PRIMARY KEY, card TEXT, phone TEXT)",
    "CREATE TABLE api_keys(id INTEGER PRIMARY KEY, secret TEXT)",
    "CREATE TABLE invoices(id INTEGER PRIMARY KEY, total REAL)",
    "CREATE TABLE ledger(id INTEGER PRIMARY KEY, amount REAL)",
    "CREATE TABLE events(id INTEGER PRIMARY KEY, what TEXT)",
    "CREATE TABLE audit_trail(id INTEGER PRIMARY KEY, what TEXT)",
    "CREATE TABLE wide(id INTEGER PRIMARY KEY, c1 TEXT, c2 TEXT, c3 TEXT, c4 TEXT, c5 TEXT,"
    " c6 INTEGER, c7 REAL)",
)
THOUSAND = "SELECT * FROM wide"


def _service(path: Path, rules: dict[str, tuple[str, ...]]) -> Service:
    settings = Settings(db=path, max_result_bytes=10_000_000, max_rows=1000, audit=False)
    return Service.open(Settings(**{**settings.__dict__, **rules}), session="bench")


def _fill(service: Service) -> None:
    conn = service.db.server
    with conn:
        for statement in SCHEMA:
            conn.execute(statement)
        conn.executemany(
            "INSERT INTO wide(c1, c2, c3, c4, c5, c6, c7) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(f"name {i}", f"city {i % 50}", f"secret-{i:06d}", "x" * 20, "note", i, i / 7)
             for i in range(1000)],
        )  # fmt: skip


def in_turn(
    calls: dict[str, Callable[[], object]], rounds: int, batch: int
) -> dict[str, list[float]]:
    """Per-call seconds of each side, timed a batch at a time, the sides in turn."""
    samples: dict[str, list[float]] = {name: [] for name in calls}
    clock = time.perf_counter
    for call in calls.values():  # warm up: caches, the schema's first read
        for _ in range(min(batch, 50)):
            call()
    for _ in range(rounds):
        for name, call in calls.items():
            for _ in range(batch):
                before = clock()
                call()
                samples[name].append(clock() - before)
    return samples


def measure(folder: Path, rounds: int, batch: int) -> list[Row]:
    plain = _service(folder / "no-rules.db", {})
    ruled = _service(folder / "ten-rules.db", TEN_RULES)
    hidden = _service(folder / "one-hidden.db", ONE_HIDDEN)
    rows: list[Row] = []
    try:
        for service in (plain, ruled, hidden):
            _fill(service)
        cases = (
            (SUBJECT_SELECT_ONE, "SELECT 1", ruled, 1, batch),
            (SUBJECT_THOUSAND, THOUSAND, hidden, 1000, max(1, batch // 20)),
        )
        for subject, sql, with_rules, limit, size in cases:
            assert "secret-" not in with_rules.read_query(sql, limit=limit)
            got = in_turn(
                {
                    "none": lambda sql=sql, limit=limit: plain.read_query(sql, limit=limit),
                    "rules": lambda s=with_rules, sql=sql, limit=limit: s.read_query(
                        sql, limit=limit
                    ),
                },
                rounds,
                size,
            )
            base, ruled_p50 = (statistics.median(got[k]) for k in ("none", "rules"))
            ratio = ruled_p50 / base
            goal = GOALS[subject]
            verdict = (
                f"goal met (<= {goal:.2f})" if ratio <= goal else f"goal not met (> {goal:.2f})"
            )
            rows.append(
                Row(BENCH_RULES, subject, f"{len(got['rules']):,} each", f"{ratio:.3f}x",
                    ms(ruled_p50), ms(base), f"p50 with rules / p50 without (p99 column: p50 "
                    f"without); sides in turn; {verdict}")
            )  # fmt: skip
    finally:
        for service in (plain, ruled, hidden):
            service.close()
    return rows


def table_rules_cost(ctx: Context) -> list[Row]:
    """bench/run.py's entry: the two ratios above."""
    quick = ctx.plan.name == "quick"
    ctx.log(f"{BENCH_RULES}: SELECT 1 and 1,000 rows, with rules and without, in turn")
    return measure(ctx.folder, 3 if quick else 40, 50 if quick else 200)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a few calls: proves it runs")
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--batch", type=int, default=200)
    args = parser.parse_args()
    rounds, batch = (3, 50) if args.quick else (args.rounds, args.batch)
    with tempfile.TemporaryDirectory() as folder:
        for row in measure(Path(folder), rounds, batch):
            print(f"{row.subject}: {row.figure} (p50 {row.p50} vs {row.p99}) - {row.notes}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
