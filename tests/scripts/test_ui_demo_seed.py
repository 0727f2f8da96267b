"""The screenshots' database (scripts/ui_demo_seed.py) reads like a real project's: no XSS
payload or other hostile string reaches a picture. Those stay in scripts/ui_seed.py, for the
browser tests."""

from __future__ import annotations

from pathlib import Path

import apsw
from scripts.screenshots import seed_screenshots
from scripts.ui_demo_seed import SESSIONS, TEAM, TEAM_SERVER
from scripts.ui_seed import seed

from tests.records import connect_both

HOSTILE = ("<script", "alert(", "onerror", "onload", "javascript:", "\u202e", "\x1b")
NOW = 1796126400.0  # 2026-12-01T12:00:00Z


def hostile_text(db: Path) -> list[tuple[str, str]]:
    """(table, text) of every stored text, name or SQL in the file holding a hostile string."""
    conn = connect_both(db, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        found = []
        schemas = [str(name) for (_, name, _) in conn.execute("PRAGMA database_list")]
        for schema in schemas:  # the user's file and its records (attached as sqlgate)
            tables = [str(n) for (n,) in conn.execute(
                f"SELECT name FROM {schema}.sqlite_schema WHERE type = 'table'"
            )]  # fmt: skip
            for (sql,) in conn.execute(
                f"SELECT group_concat(name || ' ' || coalesce(sql, '')) FROM {schema}.sqlite_schema"
            ):
                found += [("sqlite_schema", str(sql))]
            for table in tables:
                quoted = '"' + table.replace('"', '""') + '"'
                for row in conn.execute(f"SELECT * FROM {schema}.{quoted}"):
                    found += [(table, cell) for cell in row if isinstance(cell, str)]
    finally:
        conn.close()
    return [(table, text) for table, text in found if any(h in text for h in HOSTILE)]


def test_the_screenshot_database_holds_no_hostile_string(tmp_path: Path) -> None:
    db = tmp_path / "agent.db"
    seed_screenshots(db, now=NOW, history_rows=200)
    assert hostile_text(db) == []


def test_the_browser_tests_database_still_holds_them(tmp_path: Path) -> None:
    db = tmp_path / "agent.db"
    seed(db, now=NOW)
    assert {table for table, _ in hostile_text(db)} >= {"customers", "query_log", "memory_events"}


def test_the_screenshot_database_tells_a_project_story(tmp_path: Path) -> None:
    db = tmp_path / "agent.db"
    seed_screenshots(db, now=NOW, history_rows=0)
    conn = connect_both(db, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        sessions = {
            str(s)
            for (s,) in conn.execute("SELECT DISTINCT session FROM query_log WHERE actor = 'local'")
        }
        team = dict(
            conn.execute("SELECT DISTINCT actor, session FROM query_log WHERE actor != 'local'")
        )
        outcomes = dict(
            conn.execute(
                "SELECT CASE WHEN ok THEN 'ok' WHEN json_extract(detail, '$.refused') "
                "THEN 'refused' ELSE 'error' END AS outcome, count(*) FROM query_log "
                "GROUP BY outcome"
            )
        )
        kinds = {str(k) for (k,) in conn.execute("SELECT DISTINCT kind FROM memory_events")}
        destructive = [
            str(r)
            for (r,) in conn.execute(
                "SELECT json_extract(detail, '$.reason') FROM query_log "
                "WHERE tool = 'destructive_query' AND ok"
            )
        ]
        (tasks,) = next(conn.execute("SELECT count(*) FROM tasks"))
        (claims,) = next(conn.execute("SELECT count(*) FROM claims"))
    finally:
        conn.close()
    assert sessions <= set(SESSIONS)
    assert len(sessions) >= 2
    assert set(team) == set(TEAM)  # the teammates' agents on the team's HTTP server
    assert all(str(team[name]).startswith(f"{TEAM_SERVER}/{name}/") for name in TEAM)
    assert set(outcomes) == {"ok", "refused", "error"}
    assert {"decision", "error", "note", "todo"} <= kinds
    assert len(destructive) >= 3
    assert all(reason for reason in destructive)
    assert tasks > 5
    assert claims > 3
