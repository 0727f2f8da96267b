"""A user's database may hold tables named like sqlgate's (`memory_events`, `claims`,
`query_log`, `members`, ...): every server-side read and write of sqlgate's records goes to
the records file, never to the user's tables of the same names, and the user's tables are
never written by sqlgate.

The user's tables have sqlgate's column names and rows of their own, so a read sent to the
wrong file would not fail: it would answer with the user's rows (`USER-ROW`), which every
answer below is checked not to hold.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import apsw
import pytest
from click.testing import CliRunner, Result

from sqlgate.config import FLAGS, Settings
from sqlgate.engine.records.members import working_member_count
from sqlgate.service import Service
from sqlgate.surfaces.cli.app import main

MARK = "USER-ROW"
USER_TABLES = {
    "memory_events": (
        "CREATE TABLE memory_events (id INTEGER PRIMARY KEY, ts TEXT, session TEXT, kind TEXT, "
        "content TEXT, tags TEXT, prev_hash TEXT, hash TEXT)",
        [(n, "2020-01-01T00:00:00.000Z", "s-user", "note", f"{MARK} needle {n}", "[]",
          "0" * 64, "f" * 64) for n in (1, 2, 3)],
    ),
    "memory_checkpoints": (
        "CREATE TABLE memory_checkpoints (id INTEGER PRIMARY KEY, ts TEXT, session TEXT, "
        "summary TEXT, event_id INTEGER)",
        [(1, "2020-01-01T00:00:00.000Z", "s-user", f"{MARK} checkpoint", 3)],
    ),
    "claims": (
        "CREATE TABLE claims (id INTEGER PRIMARY KEY, entity TEXT, kind TEXT, claim TEXT, "
        "state TEXT, confidence REAL)",
        [(1, "billing", "fact", f"{MARK} claim", "live", 0.9)],
    ),
    "query_log": (
        "CREATE TABLE query_log (id INTEGER PRIMARY KEY, ts TEXT, session TEXT, tool TEXT, "
        "query TEXT, ok INTEGER)",
        [(n, "2020-01-01T00:00:00.000Z", "s-user", "read_query", f"SELECT '{MARK}'", 1)
         for n in range(1, 6)],
    ),
    "members": (
        "CREATE TABLE members (id INTEGER PRIMARY KEY, name TEXT, tier TEXT, created TEXT, "
        "removed TEXT)",
        [(1, "mallory", "destructive", "2020-01-01T00:00:00.000Z", None)],
    ),
    "server_info": (
        "CREATE TABLE server_info (key TEXT PRIMARY KEY, value TEXT)",
        [("database_id", MARK)],
    ),
}  # fmt: skip


def user_rows(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the user's tables, read on the user's file alone."""
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return {
            name: [tuple(row) for row in conn.execute(f"SELECT * FROM main.{name} ORDER BY 1")]
            for name in USER_TABLES
        }
    finally:
        conn.close()


@pytest.fixture(params=["delete", "wal"])
def app_db(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """The user's database, in either journal mode, with tables named like sqlgate's."""
    db = tmp_path / "app.db"
    conn = apsw.Connection(str(db))
    conn.execute(f"PRAGMA journal_mode = {request.param}")
    for create, rows in USER_TABLES.values():
        conn.execute(create)
        table = create.split()[2]
        marks = ", ".join("?" * len(rows[0]))
        conn.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)
    conn.close()
    return db


@pytest.fixture
def no_sqlgate_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for flag in FLAGS:
        monkeypatch.delenv(flag.env_var, raising=False)


@pytest.fixture
def used(app_db: Path) -> tuple[Path, dict[str, list[tuple[Any, ...]]]]:
    """The database after a session that used the memory and the claims; with the user's
    rows as they were before it."""
    before = user_rows(app_db)
    with Service.open(Settings(db=app_db), session="s-ours") as service:
        service.append_event("the needle of sqlgate's own memory", "note", ["ours"])
        service.append_event("a second event of ours")
        service.checkpoint("our checkpoint")
        service.claim_add("billing", "fact", "our claim about billing", "slow", 0.7)
        service.read_query("SELECT count(*) FROM main.claims")
    return app_db, before


def cli(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), env={"COLUMNS": "200"}, prog_name="sqlgate")


def test_the_memory_tools_read_sqlgates_memory_not_the_users_tables(
    used: tuple[Path, dict[str, list[tuple[Any, ...]]]],
) -> None:
    db, before = used
    with Service.open(Settings(db=db), session="s-read") as service:
        answers = {
            "search": service.memory_search("needle", top_k=10),
            "timeline": service.memory_timeline([1], window=5),
            "details": service.memory_details([1, 2]),
            "resume": service.get_resume_context(),
        }
        stats = json.loads(service.memory_stats())
        verified = json.loads(service.verify_chain())
    for name, answer in answers.items():
        assert MARK not in answer, name
    assert "the needle of sqlgate's own memory" in answers["search"]
    assert "a second event of ours" in answers["details"]
    assert "our checkpoint" in answers["resume"]
    assert stats["kinds"] == {"note": 2, "claim": 1}  # ours: the user's rows are 3 notes
    assert (verified["ok"], verified["events"]) == (True, 3)
    assert user_rows(db) == before


def test_the_claims_tools_read_and_write_sqlgates_claims_not_the_users_table(
    used: tuple[Path, dict[str, list[tuple[Any, ...]]]],
) -> None:
    db, before = used
    with Service.open(Settings(db=db), session="s-claims") as service:
        found = service.claim_search("billing")
        confirmed = service.claim_confirm(1, 0.95)  # id 1 is also the user's row's id
        every = service.claims_all()
        retracted = service.claim_retract(1)
    for answer in (found, confirmed, every, retracted):
        assert MARK not in answer
    assert "our claim about billing" in found
    assert user_rows(db) == before


@pytest.mark.usefixtures("no_sqlgate_environment")
def test_the_audit_readers_and_members_read_sqlgates_records_not_the_users_tables(
    used: tuple[Path, dict[str, list[tuple[Any, ...]]]],
) -> None:
    db, before = used
    log = cli("log", "--json", "--limit", "0", "--db", str(db))
    assert log.exit_code == 0, log.output
    calls = [json.loads(line) for line in log.output.splitlines()]
    assert MARK not in log.output
    assert {call["session"] for call in calls} == {"s-ours"}
    stats = cli("stats", "--json", "--db", str(db))
    assert stats.exit_code == 0, stats.output
    report = json.loads(stats.output)
    assert report["memory"]["kinds"] == {"note": 2, "claim": 1}
    assert report["claims"] == {"active": 1}  # ours: the user's row is "live"
    assert report["audit"]["calls"] == len(calls)
    assert working_member_count(db, 0.0) == 0  # the user's mallory is no member of ours
    added = cli("members", "add", "alice", "--tier", "read", "--db", str(db))
    assert added.exit_code == 0, added.output
    listed = cli("members", "list", "--json", "--db", str(db))
    assert [json.loads(line)["name"] for line in listed.output.splitlines()] == ["alice"]
    assert working_member_count(db, 0.0) == 1
    verify = cli("verify", "--json", "--db", str(db))
    assert verify.exit_code == 0, verify.output
    assert MARK not in verify.output
    assert user_rows(db) == before


def test_agent_sql_reads_the_users_tables_by_their_names(
    used: tuple[Path, dict[str, list[tuple[Any, ...]]]],
) -> None:
    db, before = used
    with Service.open(Settings(db=db), session="s-sql") as service:
        theirs = service.read_query("SELECT content FROM memory_events ORDER BY id")
        members = service.read_query("SELECT name FROM members")
    assert f"{MARK} needle 1" in theirs
    assert "sqlgate's own memory" not in theirs
    assert "mallory" in members
    assert user_rows(db) == before
