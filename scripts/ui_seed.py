"""A seeded database for the web console: real tool calls through `Service` (refused,
failed, destructive with undo, undone, with a snapshot), some made by members over HTTP
(issue 22: their actor and session), memory events and claims, every agent-written field
carrying an XSS payload, and optionally a bulk history (audit rows of the members and of no
recorded actor, and chained events) spread over the last days.

Used by tests/surfaces/ui (the browser tests) and bench/ui_bench.py; the screenshots use
the realistic scripts/ui_demo_seed.py instead, so no payload shows in a picture.

    python scripts/ui_seed.py PATH [--audit-rows N] [--events N]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import time
from collections.abc import Callable
from pathlib import Path

from sqlgate.config import Settings
from sqlgate.engine.records import Caller, Identity, acting_as, caller_session
from sqlgate.errors import SqlgateError
from sqlgate.service import Service

__all__ = [
    "BIG_CELL_CHARS",
    "LONG_MEMBER",
    "MEMBERS",
    "PAYLOADS",
    "SCRIPT",
    "SERVER_SESSION",
    "member_session",
    "seed",
    "seed_history",
]

SCRIPT = "<script>alert(1)</script>"
PAYLOADS = (
    SCRIPT,
    "javascript:alert(1)",
    "<svg onload=alert(1)>",
    "<img src=x onerror=alert(1)>",
    '" onmouseover="alert(1)" x="',
    "bidi \u202egnp.exe\u202c and bell \x07 and escape \x1b[31m",
)
BIG_CELL_CHARS = 999_000  # a cell of about 1 MB (under --max-value-bytes)
SERVER_SESSION = "s-20261201T090000Z-a1b2c3"
# members of an HTTP server (issue 22); the bulk history's calls are theirs too, or no one's
MEMBERS = ("alice", "bob")
LONG_MEMBER = "dana.lopez@engineering.example.com"  # an OAuth subject named by its email
HOUR = 3600.0
TOOLS = (
    ("read_query",) * 12
    + ("write_query",) * 4
    + ("list_tables", "search_text", "memory_search", "append_event", "destructive_query")
)


class SteppingClock:
    """A wall clock that moves forward `step` seconds at each reading (set `now` to jump)."""

    def __init__(self, start: float, step: float) -> None:
        self.now = start
        self.step = step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def attempt(call: Callable[[], object]) -> None:
    # refused and failed calls are part of the story: they are audited
    with contextlib.suppress(SqlgateError):
        call()


def member_session(name: str) -> str:
    """The session of member `name`'s calls over HTTP with an Mcp-Session-Id."""
    return caller_session(SERVER_SESSION, name, f"mcp-session-of-{name}")


def as_member(name: str, tier: str) -> Caller:
    return Caller(Identity(name, tier, "member"), member_session(name))


def seed(db: Path, *, now: float | None = None) -> None:
    """Tool calls, memory and claims with every payload in `PAYLOADS`."""
    end = time.time() if now is None else now
    settings = Settings(db=db, snapshots_keep=5)
    clock = SteppingClock(end - 30 * 86_400, 1.0)
    with Service.open(settings, session=SERVER_SESSION, wall_clock=clock) as svc:
        svc.write_query("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT, note TEXT)")
        svc.write_query(
            "INSERT INTO customers (name, note) VALUES (?, ?), (?, ?), (?, ?)",
            ["acme", "top customer", "globex", "renewal in March", "initech", "churn risk"],
        )
        for payload in PAYLOADS:
            svc.write_query("INSERT INTO customers (name, note) VALUES (?, ?)", [payload, payload])
        svc.write_query("INSERT INTO customers (name, note) VALUES (?, ?)",
                        ["big", "x" * BIG_CELL_CHARS + SCRIPT])  # fmt: skip
        svc.write_query(f"CREATE TABLE {json.dumps(SCRIPT)} (v TEXT)")
        svc.write_query(f"INSERT INTO {json.dumps(SCRIPT)} VALUES (?)", [SCRIPT])
        for _ in range(3):
            svc.read_query("SELECT name, note FROM customers WHERE id = 1")
            svc.read_query("SELECT count(*) FROM customers")
        svc.read_query(f"SELECT '{SCRIPT}' AS payload, 'javascript:alert(1)' AS link")
        attempt(lambda: svc.read_query(f"SELECT * FROM no_such_table /* {SCRIPT} */"))
        attempt(lambda: svc.write_query("DROP TABLE customers"))  # refused: wrong tier
        attempt(lambda: svc.read_query("DELETE FROM customers"))  # refused
        svc.destructive_query("DELETE FROM customers WHERE name = 'initech'",
                              reason=f"cleanup {SCRIPT}")  # fmt: skip
        svc.destructive_query("UPDATE customers SET note = 'gone' WHERE id = 2",
                              reason="wrong note")  # fmt: skip
        undone = int(str(svc.undoable()[0]["audit_id"]).split("@")[0])
        svc.undo(undone)
        svc.destructive_query(f"DROP TABLE {json.dumps(SCRIPT)}", reason="<svg onload=alert(1)>")
        for payload in PAYLOADS:  # memory refuses C0 controls: those stay in the tables
            text = "".join(c for c in payload if c >= " ")
            svc.append_event(f"remember: {text}", kind="note", tags=["xss"])
        svc.append_event("deploy of billing-api went out; rollback plan in runbook", "decision")
        svc.checkpoint("seeded the console demo")
        clock.now = end - 20 * 86_400
        svc.claim_add("acme", "priority", "acme is our top customer", "slow", 0.9, rank=1)
        svc.claim_add("globex", "priority", "globex is our top customer", "slow", 0.8, rank=1)
        svc.claim_add(SCRIPT, "fact", f"claim text {SCRIPT} <img src=x onerror=alert(1)>",
                      "volatile", 0.7)  # fmt: skip
        svc.claim_add("billing-api", "status", "billing-api is deployed", "volatile", 0.95)
        svc.claim_add("billing-api", "status", "billing-api is rolled back", "volatile", 0.6)
        svc.claim_add("schema", "fact", "customers has a unique name", "stable", 0.8)
        clock.now = end - 3 * 86_400
        svc.claim_confirm(1, 0.95)
        svc.claim_confirm(4)
        with acting_as(as_member("alice", "read")):  # the same server, over HTTP
            for customer in (2, 3):
                svc.read_query(f"SELECT name, note FROM customers WHERE id = {customer}")
            attempt(lambda: svc.read_query("SELEC * FROM customers"))
            attempt(lambda: svc.write_query("DELETE FROM customers"))  # refused: her tier
        with acting_as(as_member("bob", "destructive")):
            svc.destructive_query("DELETE FROM customers WHERE name = 'globex'",
                                  reason="bob: globex left")  # fmt: skip
        with acting_as(as_member(LONG_MEMBER, "write")):
            svc.append_event("billing-api owner is the platform team", "decision")
    clock.now = end - 3600
    with Service.open(settings, session=SCRIPT, wall_clock=clock) as svc:
        svc.append_event(f"a session named {SCRIPT}", kind="note")
        attempt(lambda: svc.read_query("SELEC oops"))
        svc.read_query("SELECT name FROM customers ORDER BY id LIMIT 3")


def seed_history(db: Path, *, audit_rows: int, events: int, now: float | None = None) -> None:
    """Bulk history: `audit_rows` query_log rows over the last 48 hours (inserted as the
    audit log inserts them) and `events` chained memory events across sessions."""
    end = time.time() if now is None else now
    rng = random.Random(14)  # noqa: S311 - reproducible demo data
    settings = Settings(db=db)
    with Service.open(settings, session="bulk") as svc:
        conn = svc.db.server
        with svc.db.server_lock:
            conn.execute("BEGIN IMMEDIATE")
            rows = []
            from sqlgate.engine.records import utc_timestamp

            for i in range(audit_rows):
                at = end - 48 * HOUR + 48 * HOUR * i / max(1, audit_rows)
                tool = rng.choice(TOOLS)
                ok = rng.random() > 0.08
                refused = not ok and rng.random() < 0.5
                table = rng.choice(("orders", "customers", "invoices"))
                verb = "DELETE" if tool == "destructive_query" else "SELECT *"
                query = f"{verb} FROM {table} WHERE id = {rng.randint(1, 500)}"
                detail: dict[str, object] = {"fingerprint": f"{verb} FROM {table} WHERE id = ?"}
                if tool == "destructive_query":
                    detail["reason"] = "old test rows"
                if refused:
                    detail["refused"] = True
                # a tenth from before actors were recorded (NULL), the rest the members'
                actor = None if rng.random() < 0.1 else rng.choice(MEMBERS)
                session = f"s-bulk-{i // 500:04d}" + ("" if actor is None else f"/{actor}")
                rows.append((utc_timestamp(at), session, tool, query, int(ok),
                             1 if ok else None, None if ok else "no such column: x",
                             rng.random() * 5, json.dumps(detail), actor))  # fmt: skip
            conn.executemany(
                "INSERT INTO query_log (ts, session, tool, query, ok, rows, error, duration_ms, "
                "detail, actor) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows,
            )  # fmt: skip
            conn.execute("COMMIT")
    clock = SteppingClock(end - 30 * 86_400, 30 * 86_400 / max(1, events))
    with Service.open(settings, session="bulk", wall_clock=clock) as svc:
        words = ("deploy", "billing", "schema", "index", "customer", "invoice", "rollback",
                 "migration", "cache", "latency")  # fmt: skip
        with svc.memory.chain.writing() as writer:
            for i in range(events):
                writer.session = f"s-mem-{i // 200:04d}"
                text = " ".join(rng.choice(words) for _ in range(12))
                writer.append("note", f"event {i}: {text}", [rng.choice(words)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("db", type=Path)
    parser.add_argument("--audit-rows", type=int, default=0)
    parser.add_argument("--events", type=int, default=0)
    args = parser.parse_args()
    if args.audit_rows or args.events:
        seed_history(args.db, audit_rows=args.audit_rows, events=args.events)
    seed(args.db)


if __name__ == "__main__":
    main()
