"""sqlgate's records attached to the agent's connections: readable as `sqlgate.x`, read-only
to SQLite itself, and the last file ever attached (`engine.connect.attach_records`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest

from sqlgate.config import Settings
from sqlgate.engine.connect import open_agent_connection
from sqlgate.engine.rules.authorizer import PolicyRecorder, recording
from sqlgate.engine.statements import Tier
from sqlgate.errors import StartupError

KINDS = [pytest.param(False, id="writer"), pytest.param(True, id="reader")]


@pytest.fixture
def records(tmp_path: Path) -> Path:
    path = tmp_path / "records.sqlite"
    conn = apsw.Connection(str(path))
    conn.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t(v) VALUES ('r')")
    conn.close()
    return path


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    user = tmp_path / "app.sqlite"
    conn = apsw.Connection(str(user))
    conn.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t(v) VALUES ('u')")
    conn.close()
    return Settings(db=user)


@pytest.fixture(params=KINDS)
def agent(
    request: pytest.FixtureRequest, settings: Settings, records: Path
) -> Iterator[apsw.Connection]:
    conn = open_agent_connection(settings, readonly=request.param, records=records)
    yield conn
    conn.close()


def test_the_records_read_as_sqlgate_beside_main(agent: apsw.Connection, records: Path) -> None:
    assert agent.execute("SELECT v FROM sqlgate.t").fetchall() == [("r",)]
    assert agent.execute("SELECT v FROM t").fetchall() == [("u",)]  # main first
    names = {row[1]: row[2] for row in agent.execute("PRAGMA database_list")}
    assert Path(names["sqlgate"]).resolve() == records.resolve()


def test_no_statement_of_the_tiers_writes_the_records(agent: apsw.Connection) -> None:
    recorder = PolicyRecorder(Tier.DESTRUCTIVE, frozenset())
    with recording(agent, recorder), pytest.raises(apsw.AuthError):
        agent.execute("DELETE FROM sqlgate.t")
    assert recorder.refusal is not None
    assert recorder.refusal.reason.startswith("sqlgate.t is a sqlgate server object")


@pytest.mark.parametrize(
    "sql",
    [
        "INSERT INTO sqlgate.t(v) VALUES ('x')",
        "UPDATE sqlgate.t SET v = 'x'",
        "DELETE FROM sqlgate.t",
        "CREATE TABLE sqlgate.n(a)",
        "CREATE INDEX sqlgate.i ON t(v)",
        "DROP TABLE sqlgate.t",
        "PRAGMA sqlgate.user_version = 7",
    ],
)
def test_sqlite_itself_refuses_a_write_to_the_records(agent: apsw.Connection, sql: str) -> None:
    """With no authorizer at all (the server's own statements), the file is read-only."""
    with pytest.raises(apsw.ReadOnlyError):
        agent.execute(sql)
    assert agent.execute("SELECT v FROM sqlgate.t").fetchall() == [("r",)]


def test_nothing_more_can_be_attached(agent: apsw.Connection, tmp_path: Path) -> None:
    with pytest.raises(apsw.SQLError, match="too many attached databases"):
        agent.execute("ATTACH ? AS other", (str(tmp_path / "other.sqlite"),))
    assert not (tmp_path / "other.sqlite").exists()


@pytest.mark.parametrize(
    ("sql", "reason"),
    [
        ("ATTACH 'x.sqlite' AS other", "ATTACH"),
        ("DETACH sqlgate", "DETACH"),
    ],
)
def test_the_policy_refuses_attach_and_detach(
    agent: apsw.Connection, sql: str, reason: str
) -> None:
    recorder = PolicyRecorder(Tier.DESTRUCTIVE, frozenset())
    with recording(agent, recorder), pytest.raises(apsw.AuthError):
        agent.execute(sql)
    assert recorder.refusal is not None
    assert recorder.refusal.reason.startswith(reason)
    assert agent.execute("SELECT count(*) FROM sqlgate.t").fetchall() == [(1,)]


@pytest.mark.parametrize("readonly", KINDS)
def test_a_missing_records_file_is_a_startup_error_and_is_not_made(
    settings: Settings, tmp_path: Path, readonly: bool
) -> None:
    missing = tmp_path / "no-records.sqlite"
    with pytest.raises(StartupError, match=r"records file .*no-records\.sqlite does not exist"):
        open_agent_connection(settings, readonly=readonly, records=missing)
    assert not missing.exists()


@pytest.mark.parametrize("readonly", KINDS)
def test_a_records_file_that_is_not_sqlite_is_a_startup_error(
    settings: Settings, tmp_path: Path, readonly: bool
) -> None:
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not a database, just text")
    with pytest.raises(StartupError, match="not a SQLite database"):
        open_agent_connection(settings, readonly=readonly, records=junk)
    assert junk.read_bytes() == b"not a database, just text"


@pytest.mark.parametrize("readonly", KINDS)
def test_without_records_nothing_is_attached(settings: Settings, readonly: bool) -> None:
    conn = open_agent_connection(settings, readonly=readonly)
    try:
        assert [row[1] for row in conn.execute("PRAGMA database_list")] == ["main"]
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("op", "expected"),
    [
        pytest.param(apsw.SQLITE_DBCONFIG_ENABLE_ATTACH_WRITE, 0, id="attach-write"),
        pytest.param(apsw.SQLITE_DBCONFIG_ENABLE_ATTACH_CREATE, 0, id="attach-create"),
        pytest.param(apsw.SQLITE_DBCONFIG_DEFENSIVE, 1, id="defensive"),
    ],
)
def test_the_hardening_holds_with_the_records_attached(
    agent: apsw.Connection, op: int, expected: int
) -> None:
    assert agent.config(op, -1) == expected
    assert agent.limit(apsw.SQLITE_LIMIT_ATTACHED, -1) == 0


@pytest.mark.parametrize("readonly", KINDS)
def test_the_busy_timeout_is_set_before_the_first_statement(
    settings: Settings, records: Path, readonly: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ATTACH is the connection's first statement: on a WAL file another program's last
    connection is closing, it meets a lock for a moment and must wait, not fail at once
    (seen as `export` failing "database is locked" beside a concurrent `stats`)."""
    import sqlgate.engine.connect as connect

    seen: list[int] = []
    attach = connect.attach_records

    def noting(conn: apsw.Connection, path: Path) -> None:
        seen.append(int(conn.pragma("busy_timeout")))
        attach(conn, path)

    monkeypatch.setattr(connect, "attach_records", noting)
    conn = open_agent_connection(
        Settings(db=settings.db, busy_timeout=2.5), readonly=readonly, records=records
    )
    conn.close()
    assert seen == [2500]
