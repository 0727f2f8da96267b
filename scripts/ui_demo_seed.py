"""A realistic database for the console's screenshots: a small invoicing web app ("harbor")
that a coding agent works on over two days.

A `tasks` table, Claude Code-like sessions (UUIDs), the calls an agent makes (reads,
writes, a refusal with its advice, errors, destructive calls with reasons, an undo, a
dropped scratch table kept as a snapshot), memory events an agent writes (decisions,
errors, notes, todos), a checkpoint and claims; then two teammates' agents on the team's
HTTP server (members maya and liam: their actor and session, issue 22). Nothing hostile:
the XSS payloads stay in scripts/ui_seed.py, which the browser tests use.

    python scripts/ui_demo_seed.py PATH
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

from sqlgate.config import Settings
from sqlgate.engine.records import Caller, Identity, acting_as, caller_session
from sqlgate.service import Service

sys.path.insert(0, str(Path(__file__).resolve().parent))  # ui_seed, also when imported as scripts.*

from ui_seed import SteppingClock, attempt

__all__ = ["SESSIONS", "TEAM", "TEAM_SERVER", "seed_demo"]

HOUR = 3600.0
SESSIONS = (
    "7c1e4b2a-5d3f-4a8e-9b61-0f2d8c3a9e47",
    "e29a6f10-3b7c-4d52-8a1e-6c4b9f0d2a75",
    "b84d2c9e-1f6a-4e3b-a7d5-92c0e1f4b638",
)
TEAM_SERVER = "s-20261201T101500Z-7f3a9c"  # the team's `serve --transport http`
TEAM = ("maya", "liam")  # its members whose agents call it
TASKS = [
    ("Send invoice reminders 3 days before due date", "done", "maya", "2026-11-20", 5),
    ("PDF renderer drops the VAT line on credit notes", "done", "liam", "2026-11-24", 3),
    ("Stripe webhook retries create duplicate payments", "doing", "maya", "2026-12-03", 8),
    ("Add index for invoices by customer and due date", "done", "agent", "2026-11-28", 1),
    ("Export invoices to CSV for the accountant", "todo", "liam", "2026-12-08", 4),
    ("Customer portal: show paid invoices", "todo", "noor", "2026-12-12", 6),
    ("Migrate sessions from Redis 6 to 7", "blocked", "noor", "2026-12-05", 3),
    ("Late fee setting per customer", "todo", "maya", "2026-12-15", 5),
    ("Flaky test: test_reminder_schedule_across_dst", "doing", "agent", "2026-12-02", 2),
    ("Upgrade Django 4.2 to 5.1", "todo", "liam", "2026-12-19", 13),
    ("Audit log for refunds", "todo", "noor", "2026-12-10", 5),
    ("Dunning emails: plain-text version", "done", "maya", "2026-11-18", 2),
]
# (tool, query or None, outcome) of the bulk history: ok, "refused" or an error message
BULK = (
    [("read_query", "SELECT id, title, status FROM tasks WHERE status != 'done'", "ok")] * 6
    + [("read_query", "SELECT count(*) FROM invoices WHERE paid_at IS NULL", "ok")] * 4
    + [("read_query", "SELECT * FROM invoices WHERE customer_id = 42 ORDER BY due", "ok")] * 3
    + [("read_query", "SELECT status, count(*) FROM tasks GROUP BY status", "ok")] * 3
    + [("write_query", "UPDATE tasks SET status = 'doing' WHERE id = 3", "ok")] * 2
    + [("write_query", "INSERT INTO tasks (title, status, owner) VALUES (?, ?, ?)", "ok")] * 2
    + [("list_tables", None, "ok"), ("describe_table", None, "ok")]
    + [("memory_search", None, "ok"), ("append_event", None, "ok")]
    + [("read_query", "SELECT asignee FROM tasks", "no such column: asignee")]
    + [("write_query", "DELETE FROM payments WHERE duplicate = 1", "refused")]
)
EVENTS = [
    ("decision", "Decision: reminders go out at 09:00 in the customer's time zone, not UTC",
     ["reminders"]),
    ("note", "invoices.due is TEXT (ISO date); compare as text, no date() needed", ["schema"]),
    ("error", "pytest: test_reminder_schedule_across_dst fails on 2026-03-29 (Europe/Berlin): "
     "the 02:30 slot does not exist", ["tests", "reminders"]),
    ("decision", "Decision: skip non-existent local times by moving to the next valid minute",
     ["reminders"]),
    ("progress", "Fixed the DST test; 412 passed in 38 s", ["tests"]),
    ("error", "Stripe sends evt_ retries with the same id; payments has no unique constraint "
     "on stripe_event_id", ["payments", "stripe"]),
    ("decision", "Decision: add UNIQUE(stripe_event_id) and make the webhook handler "
     "idempotent (INSERT ... ON CONFLICT DO NOTHING)", ["payments", "stripe"]),
    ("todo", "Before the unique index: find and merge the 14 duplicate payments rows",
     ["payments"]),
    ("note", "Redis 7 migration blocked: ops must upgrade the staging cluster first (ticket "
     "OPS-311)", ["infra"]),
    ("progress", "Added index invoices_by_customer_due; the portal query went from 180 ms "
     "to 4 ms", ["perf", "schema"]),
    ("note", "Liam prefers CSV exports with ; as separator (the accountant's Excel is German)",
     ["export"]),
]  # fmt: skip


def _bulk_history(db: Path, end: float, rows: int) -> None:
    """`rows` audit rows over the 48 hours before the seeded session, in working hours,
    inserted as the audit log inserts them, so the activity chart has a history."""
    from sqlgate.engine.records import utc_timestamp

    rng = random.Random(21)  # noqa: S311 - reproducible demo data
    with Service.open(Settings(db=db), session=SESSIONS[0]) as svc:
        conn = svc.db.server
        values = []
        for i in range(rows):
            at = end - 48 * HOUR + 46 * HOUR * i / max(1, rows)
            if 1 <= time.gmtime(at).tm_hour < 7 and rng.random() < 0.85:
                continue  # a quiet night
            tool, query, outcome = rng.choice(BULK)
            ok = outcome == "ok"
            detail: dict[str, object] = {"fingerprint": query} if query else {}
            error: str | None = None if ok else outcome
            if outcome == "refused":
                detail["refused"] = True
                error = "DELETE is not allowed in write_query; use destructive_query"
            session = SESSIONS[0] if i < rows / 2 else SESSIONS[1]
            values.append((utc_timestamp(at), session, tool, query, int(ok),
                           rng.randint(1, 40) if ok else None, error,
                           rng.random() * 6, json.dumps(detail), "local"))  # fmt: skip
        with svc.db.server_lock:
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(
                "INSERT INTO query_log (ts, session, tool, query, ok, rows, error, duration_ms, "
                "detail, actor) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", values,
            )  # fmt: skip
            conn.execute("COMMIT")


def seed_demo(db: Path, *, now: float | None = None, history_rows: int = 900) -> None:
    """The harbor project's database as the screenshots show it (see the module's doc)."""
    end = time.time() if now is None else now
    if history_rows:
        _bulk_history(db, end - 2 * HOUR, history_rows)
    settings = Settings(db=db, snapshots_keep=5)
    clock = SteppingClock(end - 2 * HOUR, 20.0)
    with Service.open(settings, session=SESSIONS[1], wall_clock=clock) as svc:
        svc.write_query(
            "CREATE TABLE tasks (id INTEGER PRIMARY KEY, title TEXT NOT NULL, status TEXT NOT "
            "NULL, owner TEXT, due TEXT, estimate_h INTEGER)"
        )
        for task in TASKS:
            svc.write_query(
                "INSERT INTO tasks (title, status, owner, due, estimate_h) VALUES (?, ?, ?, ?, ?)",
                list(task),
            )
        svc.write_query("CREATE TABLE tmp_import (line TEXT)")
        svc.write_query("INSERT INTO tmp_import VALUES (?), (?)", ["id;title", "13;Refund audit"])
        for kind, content, tags in EVENTS[:5]:
            svc.append_event(content, kind, tags)
        svc.checkpoint(
            "Reminders ship at 09:00 local time; DST test fixed. Next: duplicate Stripe payments "
            "(task 3), then the CSV export (task 5)."
        )
    clock.now = end - 25 * 60  # its ~70 calls end a few minutes ago
    with Service.open(settings, session=SESSIONS[2], wall_clock=clock) as svc:
        svc.get_resume_context()
        svc.claim_add("billing-api", "status", "billing-api 2.4 is deployed to production",
                      "volatile", 0.9)  # fmt: skip
        svc.claim_add("billing-api", "status", "billing-api 2.4 is rolled back", "volatile", 0.5)
        svc.claim_add("payments", "fact", "payments.stripe_event_id has duplicates (14 rows)",
                      "volatile", 0.85)  # fmt: skip
        svc.claim_add("release-2.5", "priority", "Stripe duplicate payments block release 2.5",
                      "slow", 0.9, rank=1)  # fmt: skip
        svc.claim_add("release-2.5", "priority", "the CSV export is the top item for 2.5",
                      "slow", 0.6, rank=1)  # fmt: skip
        svc.claim_add("invoices", "fact", "invoices.due is an ISO date stored as TEXT", "stable",
                      0.95)  # fmt: skip
        svc.claim_confirm(6, 0.98)
        svc.memory_search("stripe duplicate payments")
        for kind, content, tags in EVENTS[5:]:
            svc.append_event(content, kind, tags)
        svc.read_query("SELECT id, title, status, owner FROM tasks WHERE status != 'done'")
        attempt(lambda: svc.read_query('SELECT title FROM tasks WHERE owner = "maya"'))
        svc.read_query("SELECT title FROM tasks WHERE owner = 'maya'")
        svc.write_query("UPDATE tasks SET status = 'doing', owner = 'agent' WHERE id = 3")
        svc.destructive_query(
            "UPDATE tasks SET owner = NULL WHERE status = 'blocked'",
            reason="unassign blocked tasks so they are triaged again on Monday",
        )
        undone = int(str(svc.undoable()[0]["audit_id"]).split("@")[0])
        svc.undo(undone)  # the user wanted Noor to keep the Redis task
        svc.destructive_query(
            "DROP TABLE tmp_import", reason="scratch table from the CSV import test; not needed"
        )
        attempt(lambda: svc.read_query("SELECT asignee FROM tasks WHERE status = 'done'"))
        attempt(lambda: svc.write_query("DELETE FROM tasks WHERE status = 'done'"))  # refused
        svc.destructive_query(
            "DELETE FROM tasks WHERE status = 'done' AND due < '2026-11-21'",
            reason="archive tasks finished before the November release; they are in the wiki",
        )
        svc.read_query("SELECT status, count(*) AS n FROM tasks GROUP BY status")
        svc.append_event(
            "Archived 2 done tasks (ids 1, 12) with destructive_query; undo hint kept in the log",
            "progress",
            ["tasks"],
        )
    with Service.open(settings, session=TEAM_SERVER, wall_clock=clock) as team:
        _teammates(team)


def _member(name: str, tier: str) -> Caller:
    return Caller(Identity(name, tier, "member"), caller_session(TEAM_SERVER, name, name))


def _teammates(svc: Service) -> None:
    """Maya's and Liam's agents on the team server, each call under its member."""
    with acting_as(_member("maya", "write")):
        svc.read_query("SELECT id, title, status FROM tasks WHERE owner = 'maya'")
        svc.claim_search("release-2.5")
        svc.write_query("UPDATE tasks SET status = 'doing' WHERE id = 8")
    with acting_as(_member("liam", "write")):
        svc.read_query("SELECT id, title, due FROM tasks WHERE owner = 'liam' ORDER BY due")
        svc.append_event("Liam: the CSV export uses ; and a UTF-8 BOM for Excel", "decision",
                         ["export"])  # fmt: skip
        svc.write_query("UPDATE tasks SET status = 'doing' WHERE id = 5")
    with acting_as(_member("maya", "write")):
        svc.read_query("SELECT status, count(*) AS n FROM tasks GROUP BY status")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("db", type=Path)
    seed_demo(parser.parse_args().db)


if __name__ == "__main__":
    main()
