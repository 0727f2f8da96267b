"""The web console's pages on a big database: 100,000 audit rows and 100,000 memory events
(plus the seeded calls, claims and payloads of scripts/ui_seed.py). Each page is requested
through the console's ASGI app in-process (routing, thread pool, gate and rendering: the
server's time, no network or browser), after 2 warm-up requests.

    python bench/ui_bench.py            # 100k + 100k, 20 requests a page; merges its rows
                                        # into bench/results.md
    python bench/ui_bench.py --quick    # 5k + 5k, 5 requests a page; prints only (unless --out)

Goal (issue 14): every page under 200 ms of server time at 100k audit rows and 100k events.
Two more rows: the start (opening the database and reading the audit log and the sessions
once, for the summaries the pages then update by id) and the chain's first verification,
which runs in the background (pages show the last verdict meanwhile); the page timings are
taken after it finished.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from benchkit import BENCH, Row, merge_rows, ms, table, time_sync

__all__ = ["BENCH_UI", "ui_pages"]

BENCH_UI = "ui page"
DEFAULT_OUT = BENCH / "results.md"
GOAL_SECONDS = 0.200
TOKEN = "bench-token-" + "x" * 20
PAGES = (
    "/", "/?outcome=refused", "/?outcome=error", "/?tool=destructive_query",
    "/?session=s-bulk-0100/alice", "/?actor=alice", "/?actor=bob&before=50000",
    "/?actor=-&outcome=error", "/?since={day}", "/?before=50000", "/errors", "/patterns",
    "/destructive", "/memory", "/memory?q=deploy+billing", "/memory?session=s-mem-0250",
    "/memory/event/{mid}", "/claims", "/tables", "/tables/rows?name=customers",
)  # fmt: skip


def ui_pages(audit_rows: int, events: int, requests: int, log: object = print) -> list[Row]:
    from starlette.testclient import TestClient
    from ui_seed import seed, seed_history

    from sqlgate.config import Settings
    from sqlgate.surfaces.ui.app import build_ui_app
    from sqlgate.surfaces.ui.console import Console

    say = log if callable(log) else print
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="sqlgate-ui-bench-") as temp:
        db = Path(temp) / "big.db"
        started = time.perf_counter()
        seed_history(db, audit_rows=audit_rows, events=events)
        seed(db)
        say(f"seeded {audit_rows:,} audit rows and {events:,} events in "
            f"{time.perf_counter() - started:.1f} s")  # fmt: skip
        day = time.strftime("%Y-%m-%d", time.gmtime(time.time() - 86_400))
        opened = time.perf_counter()
        console = Console.open(Settings(db=db))
        opening = time.perf_counter() - opened
        size = f"{audit_rows // 1000}k audit rows, {events // 1000}k events"
        rows.append(Row(f"{BENCH_UI} ({size})", "start: open, read the log and sessions once",
                        "1", "", ms(opening), "",
                        "summaries behind calls per hour, query_patterns, sessions"))  # fmt: skip
        try:
            app = build_ui_app(console, TOKEN, "127.0.0.1")
            with TestClient(app, base_url="http://127.0.0.1") as client:
                client.get(f"/?token={TOKEN}")
                verifying = time.perf_counter()
                client.get("/memory")  # starts the chain's verification in the background
                console.chain.wait(600)
                rows.append(Row(f"{BENCH_UI} ({size})", "chain verification (background)",
                                "1", "", ms(time.perf_counter() - verifying), "",
                                "pages show the last verdict meanwhile"))  # fmt: skip
                for template in PAGES:
                    path = template.format(day=day, mid=events // 2)
                    status: list[int] = []
                    body: list[int] = []

                    def get(path: str = path, status: list[int] = status,
                            body: list[int] = body) -> None:  # fmt: skip
                        answer = client.get(path)
                        status.append(answer.status_code)
                        body.append(len(answer.content))

                    for _ in range(2):
                        get()
                    lat = time_sync(get, requests)
                    p99 = lat.percentile(99)
                    verdict = "goal met (< 200 ms)" if p99 < GOAL_SECONDS else "OVER 200 ms"
                    bad = [s for s in status if s != 200]
                    notes = f"{verdict}; {size}" + (f"; statuses {sorted(set(bad))}" if bad else "")
                    rows.append(Row(f"{BENCH_UI} ({size})", f"`{template}`", f"{requests}",
                                    f"{body[-1] / 1024:.0f} KiB", ms(lat.percentile(50)),
                                    ms(p99), notes))  # fmt: skip
                    say(f"{path}: p50 {ms(lat.percentile(50))}, p99 {ms(p99)}")
        finally:
            console.close()
    return rows


def merge_into(path: Path, rows: Sequence[Row], command: str) -> None:
    """Replace this benchmark's rows in `path`'s table (the others stay), or add them."""
    merge_rows(path, rows, (f"| {BENCH_UI} (",), "Web console", command)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="5k rows and events; prints only")
    parser.add_argument("--out", type=Path, help="merge the rows into this report (default: "
                        f"{DEFAULT_OUT.name}; with --quick, none unless given)")  # fmt: skip
    args = parser.parse_args(argv)
    size, requests = (5_000, 5) if args.quick else (100_000, 20)

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    rows = ui_pages(size, size, requests, log)
    print(table(rows), end="")
    out = args.out or (None if args.quick else DEFAULT_OUT)
    if out is not None:
        command = " ".join(["python bench/ui_bench.py", *(argv or sys.argv[1:])])
        merge_into(out, rows, command)
        log(f"merged into {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
