"""The read-only commands and the web console read a file older than migration 9 (no
`query_log.actor`, no members tables) without upgrading it (issue 22): a person who
upgraded sqlgate runs `sqlgate log` before any server has opened the file again.

Every row of such a file was written before actors were recorded, so it reads `-`; a filter
by a name finds nothing and the filter `-` finds every call."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest
from click.testing import CliRunner, Result
from starlette.testclient import TestClient

from sqlgate.config import Settings
from sqlgate.service import Service
from sqlgate.surfaces.cli.app import main
from sqlgate.surfaces.ui.app import build_ui_app
from sqlgate.surfaces.ui.console import Console
from tests.records import records_path
from tests.surfaces.cli.helpers import json_lines, succeeded

pytestmark = pytest.mark.usefixtures("no_sqlgate_environment")
TOKEN = "older-schema-token-" + "x" * 24
# what migration 9 (issue 22) added, taken away again: a file as sqlgate 8 left it
SCHEMA_8 = (
    "DROP TABLE member_tokens",
    "DROP TABLE members",
    "DROP INDEX query_log_by_actor",
    "DROP VIEW query_errors",
    "DROP VIEW query_patterns",
    "ALTER TABLE query_log DROP COLUMN actor",
    """CREATE VIEW query_errors AS
        SELECT id, ts, session, tool, query, error, duration_ms
        FROM query_log WHERE ok = 0 ORDER BY id DESC""",
    """CREATE VIEW query_patterns AS
        SELECT json_extract(detail, '$.fingerprint') AS fingerprint, count(*) AS calls,
               sum(ok = 0) AS failures, max(ts) AS last_used, query AS example
        FROM query_log WHERE json_extract(detail, '$.fingerprint') IS NOT NULL
        GROUP BY 1 ORDER BY calls DESC, last_used DESC""",
)


@pytest.fixture
def no_sqlgate_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from sqlgate.config import FLAGS

    for flag in FLAGS:
        monkeypatch.delenv(flag.env_var, raising=False)


@pytest.fixture
def old_db(tmp_path: Path) -> Path:
    db = tmp_path / "old.db"
    with Service.open(Settings(db=db)) as service:
        service.write_query("CREATE TABLE t (x)")
        service.write_query("INSERT INTO t VALUES (1)")
        service.write_query("INSERT INTO t VALUES (2)")  # a repeated shape: query_patterns
        with pytest.raises(Exception, match="syntax error"):
            service.read_query("SELEC 1")
        service.destructive_query("DELETE FROM t", reason="the test's destructive call")
    conn = apsw.Connection(str(records_path(db)))  # sqlgate's tables are in its records
    try:
        for statement in SCHEMA_8:
            conn.execute(statement)
        conn.pragma("user_version", 8)
    finally:
        conn.close()
    return db


def run(db: Path, *args: str) -> Result:
    return CliRunner().invoke(
        main, [*args, "--db", str(db)], env={"TTY_COMPATIBLE": "0"}, prog_name="sqlgate"
    )


def schema_version(db: Path) -> int:
    """The records' schema version (sqlgate's, not the database's user_version)."""
    conn = apsw.Connection(str(records_path(db)), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return int(conn.pragma("user_version"))
    finally:
        conn.close()


def test_log_reads_an_older_file_and_names_no_one(old_db: Path) -> None:
    calls = json_lines(succeeded(run(old_db, "log", "--json")))
    assert [call["tool"] for call in calls] == [
        "destructive_query", "read_query", "write_query", "write_query", "write_query",
    ]  # fmt: skip
    assert {call["actor"] for call in calls} == {None}
    piped = succeeded(run(old_db, "log")).splitlines()
    assert all(line.split("\t")[2] == "-" for line in piped[1:])
    assert schema_version(old_db) == 8  # read, never upgraded


def test_log_actor_filters_on_an_older_file(old_db: Path) -> None:
    assert len(json_lines(succeeded(run(old_db, "log", "--json", "--actor", "-")))) == 5
    assert json_lines(succeeded(run(old_db, "log", "--json", "--actor", "alice"))) == []
    errors = json_lines(succeeded(run(old_db, "log", "--json", "--errors", "--actor", "-")))
    assert [call["tool"] for call in errors] == ["read_query"]


def test_stats_and_members_list_read_an_older_file(old_db: Path) -> None:
    (report,) = json_lines(succeeded(run(old_db, "stats", "--json")))
    assert report["audit"]["actors"] == [
        {"actor": None, "calls": 5, "ok": 4, "refused": 0, "error": 1}
    ]
    assert json_lines(succeeded(run(old_db, "members", "list", "--json"))) == []
    assert schema_version(old_db) == 8


@pytest.fixture
def old_client(old_db: Path) -> Iterator[TestClient]:
    console = Console.open(Settings(db=old_db))
    try:
        app = build_ui_app(console, TOKEN, "127.0.0.1")
        with TestClient(app, base_url="http://127.0.0.1:8766") as client:
            assert client.get(f"/?token={TOKEN}", follow_redirects=False).status_code == 303
            yield client
    finally:
        console.close()


@pytest.mark.parametrize(
    ("path", "shows"),
    [
        pytest.param("/", "INSERT INTO t VALUES", id="activity"),
        pytest.param("/?actor=-", "INSERT INTO t VALUES", id="activity-not-recorded"),
        pytest.param("/?actor=-&before=2", "CREATE TABLE t", id="activity-older-page"),
        pytest.param("/errors", "SELEC 1", id="errors"),
        pytest.param("/patterns", "INSERT INTO t VALUES", id="patterns"),
        pytest.param("/destructive", "DELETE FROM t", id="destructive"),
    ],
)
def test_the_console_reads_an_older_file(old_client: TestClient, path: str, shows: str) -> None:
    page = old_client.get(path)
    assert page.status_code == 200, page.text[:500]
    assert shows in page.text


def test_the_console_filter_by_a_name_finds_nothing_in_an_older_file(
    old_client: TestClient,
) -> None:
    page = old_client.get("/?actor=alice")
    assert page.status_code == 200
    assert "INSERT INTO t VALUES" not in page.text
