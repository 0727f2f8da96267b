"""Red team: every way an agent could change a protected or an append-only table (issue 23 §2).

`ledger` is protected (read only) and `events` append-only (INSERT only). Each row of the
tables below is one write path, direct or indirect, tried through the real tools in the tier
that would otherwise run it; after each refusal the guarded tables hold exactly the rows they
held before. Run against the skeleton of the rules (commit d276a9b: direct row writes only)
every indirect path and every schema change here was allowed: those rows failed first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from sqlgate.config import Settings
from sqlgate.errors import PolicyDenied, SqlgateError
from sqlgate.service import Service
from tests.conftest import FakeClock
from tests.records import connect_both

SCHEMA = """
PRAGMA foreign_keys = ON;
CREATE TABLE accounts(id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE ledger(
    id INTEGER PRIMARY KEY,
    account INTEGER REFERENCES accounts(id) ON DELETE CASCADE ON UPDATE CASCADE,
    amount REAL
);
CREATE TABLE owners(id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE events(
    id INTEGER PRIMARY KEY,
    owner INTEGER REFERENCES owners(id) ON DELETE SET NULL,
    k TEXT UNIQUE,
    v TEXT
);
CREATE TABLE stamps(id INTEGER PRIMARY KEY, k TEXT UNIQUE ON CONFLICT REPLACE);
CREATE TABLE scratch(a);
CREATE VIRTUAL TABLE bare USING fts5(body, content='', contentless_delete=1);
CREATE TABLE feed(a);
CREATE TRIGGER feed_clears AFTER INSERT ON feed BEGIN DELETE FROM events; END;
CREATE TRIGGER feed_replaces AFTER UPDATE ON feed BEGIN
    INSERT OR REPLACE INTO events(k, v) VALUES ('a', 'replaced');
END;
CREATE VIEW ledger_view AS SELECT id, amount FROM ledger;
CREATE TRIGGER ledger_view_edit INSTEAD OF UPDATE ON ledger_view BEGIN
    UPDATE ledger SET amount = new.amount WHERE id = old.id;
END;
INSERT INTO feed VALUES (0);
INSERT INTO accounts VALUES (1, 'cash'), (2, 'bank');
INSERT INTO ledger VALUES (1, 1, 10.0), (2, 2, 20.0);
INSERT INTO owners VALUES (1, 'ann');
INSERT INTO events(owner, k, v) VALUES (1, 'a', 'first'), (1, 'b', 'second');
INSERT INTO stamps(k) VALUES ('x');
INSERT INTO bare(rowid, body) VALUES (1, 'one');
"""
GUARDED = ("ledger", "events", "stamps", "bare")

Tool = Callable[[Service, str], str]


def read(service: Service, sql: str) -> str:
    return service.read_query(sql)


def write(service: Service, sql: str) -> str:
    return service.write_query(sql)


def destructive(service: Service, sql: str) -> str:
    return service.destructive_query(sql, reason="red team")


@pytest.fixture
def guarded(tmp_path: Path, clock: FakeClock) -> Iterator[Service]:
    settings = Settings(
        db=tmp_path / "agent.db",
        protect_table=("ledger",),
        append_only_table=("events", "stamps", "bare"),
        confirm="never",
    )
    service = Service.open(settings, clock=clock, session="s-red")
    with service.db.writer:
        service.db.writer.execute(SCHEMA)
    yield service
    service.close()


def rows_of(service: Service) -> dict[str, list[tuple[object, ...]]]:
    conn = service.db.writer
    return {t: list(conn.execute(f"SELECT rowid, * FROM {t} ORDER BY rowid")) for t in GUARDED}


# (tool, statement, words the refusal must hold) for each path that changes a guarded table
REFUSED = [
    # protected: direct row writes, in every tier that writes
    (write, "INSERT INTO ledger VALUES (3, 1, 5.0)", "ledger is protected"),
    (write, "UPDATE ledger SET amount = 0 WHERE id = 1", "ledger is protected"),
    (destructive, "DELETE FROM ledger WHERE id = 1", "ledger is protected"),
    (destructive, "UPDATE ledger SET amount = 0", "ledger is protected"),
    (write, "INSERT INTO ledger VALUES (1, 1, 0) ON CONFLICT(id) DO UPDATE SET amount = 0",
     "ledger is protected"),
    (write, "REPLACE INTO ledger VALUES (1, 1, 0.5)", "ledger is protected"),
    # protected: schema changes
    (destructive, "DROP TABLE ledger", "ledger is protected"),
    (destructive, "ALTER TABLE ledger RENAME TO old_ledger", "ledger is protected"),
    (destructive, "ALTER TABLE ledger ADD COLUMN note TEXT", "ledger is protected"),
    (destructive, "ALTER TABLE ledger DROP COLUMN amount", "ledger is protected"),
    (destructive, "ALTER TABLE ledger RENAME COLUMN amount TO total", "ledger is protected"),
    (write, "CREATE INDEX ledger_amount ON ledger(amount)", "ledger is protected"),
    (destructive, "CREATE TRIGGER ledger_t AFTER INSERT ON ledger BEGIN SELECT 1; END",
     "ledger is protected"),
    # protected: indirect writes
    (destructive, "DELETE FROM accounts WHERE id = 1", "foreign key"),  # ON DELETE CASCADE
    (write, "UPDATE accounts SET id = 9 WHERE id = 2", "ledger is protected"),  # ON UPDATE
    (destructive, "DROP TABLE accounts", "ledger is protected"),  # the cascade of a drop
    (destructive, "ALTER TABLE accounts RENAME TO wallets", "would rewrite"),  # REFERENCES
    (write, "UPDATE ledger_view SET amount = 0 WHERE id = 1", "ledger_view_edit"),  # INSTEAD OF
    # append-only: direct
    (write, "UPDATE events SET v = 'x' WHERE id = 1", "events is append-only"),
    (destructive, "DELETE FROM events WHERE id = 1", "events is append-only"),
    (write, "INSERT OR REPLACE INTO events(k, v) VALUES ('a', 'x')", "REPLACE deletes"),
    (write, "REPLACE INTO events(k, v) VALUES ('a', 'x')", "REPLACE deletes"),
    (write, "WITH x(k) AS (SELECT 'a') REPLACE INTO events(k) SELECT k FROM x", "REPLACE"),
    (write, "INSERT INTO events(k, v) VALUES ('a', 'x') ON CONFLICT(k) DO UPDATE SET v = 'x'",
     "events is append-only"),
    (write, "INSERT INTO stamps(k) VALUES ('x')", "REPLACE deletes"),  # the schema's
    (destructive, "DROP TABLE events", "events is append-only"),
    (destructive, "ALTER TABLE events ADD COLUMN w TEXT", "events is append-only"),
    (write, "CREATE INDEX events_v ON events(v)", "events is append-only"),
    (destructive, "CREATE TRIGGER events_t AFTER INSERT ON events BEGIN SELECT 1; END",
     "events is append-only"),
    # append-only: indirect
    (write, "INSERT INTO feed VALUES (1)", "feed_clears"),  # a trigger's DELETE
    (write, "UPDATE feed SET a = 2 WHERE a = 0", "k = 'a'"),  # a trigger's REPLACE
    (destructive, "DELETE FROM owners WHERE id = 1", "events is append-only"),  # SET NULL
    (destructive, "ALTER TABLE owners RENAME TO people", "would rewrite"),
    # append-only virtual table: a command that empties it (issue 30: its shadow tables)
    (destructive, "INSERT INTO bare(bare) VALUES ('delete-all')", "bare is append-only"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("tool", "sql", "words"), REFUSED, ids=[f"{t.__name__}: {s}" for t, s, _ in REFUSED]
)
def test_every_write_path_to_a_guarded_table_is_refused_and_changes_nothing(
    guarded: Service, tool: Tool, sql: str, words: str
) -> None:
    before = rows_of(guarded)
    with pytest.raises(PolicyDenied) as refused:
        tool(guarded, sql)
    message = str(refused.value)
    assert words in message
    assert "no tool will" in message
    assert rows_of(guarded) == before


ALLOWED = [
    (read, "SELECT * FROM ledger"),
    (read, "SELECT count(*) FROM events JOIN owners ON owners.id = events.owner"),
    (write, "INSERT INTO events(k, v) VALUES ('c', 'third')"),
    (write, "INSERT INTO events(k, v) VALUES ('a', 'again') ON CONFLICT(k) DO NOTHING"),
    (write, "INSERT OR IGNORE INTO stamps(k) VALUES ('x')"),  # overrides ON CONFLICT REPLACE
    (write, "INSERT INTO stamps(k) VALUES ('y')"),  # a key no row holds: an append
    (write, "REPLACE INTO events(k, v) VALUES ('new', 'x')"),  # REPLACE that deletes nothing
    (write, "INSERT INTO events(k, v) SELECT 'r' || id, replace(name, 'a', 'b') FROM owners"),
    (write, "INSERT INTO scratch VALUES ('REPLACE INTO events')"),
    (write, "UPDATE accounts SET name = 'till' WHERE id = 1"),  # no key change: no cascade
]


@pytest.mark.parametrize(("tool", "sql"), ALLOWED, ids=[s for _, s in ALLOWED])
def test_reads_and_plain_inserts_stay_open(guarded: Service, tool: Tool, sql: str) -> None:
    assert not tool(guarded, sql).startswith("refused")


@pytest.mark.parametrize(
    ("sql", "words"),
    [
        ("UPDATE ledger SET amount = 0 WHERE id = 1", "ledger is protected"),
        ("DELETE FROM events WHERE id = 1", "events is append-only"),
        ("INSERT INTO ledger VALUES (5, 1, 1.0)", "ledger is protected"),
        ("DROP TABLE ledger", "ledger is protected"),
    ],
)
def test_read_query_never_points_to_a_tool_that_would_refuse_too(
    guarded: Service, sql: str, words: str
) -> None:
    with pytest.raises(PolicyDenied) as refused:
        guarded.read_query(sql)
    message = str(refused.value)
    assert words in message
    assert "needs write_query" not in message
    assert "needs destructive_query" not in message


def test_read_query_of_an_insert_into_an_append_only_table_points_to_write_query(
    guarded: Service,
) -> None:
    with pytest.raises(PolicyDenied, match="use write_query"):
        guarded.read_query("INSERT INTO events(k) VALUES ('z')")
    assert "ok" in guarded.write_query("INSERT INTO events(k) VALUES ('z')")


def test_a_guarded_table_created_after_the_server_started_is_guarded(
    tmp_path: Path, clock: FakeClock
) -> None:
    settings = Settings(db=tmp_path / "later.db", protect_table=("Audit",))
    service = Service.open(settings, clock=clock, session="s")
    try:
        service.write_query("CREATE TABLE audit(a)")
        with pytest.raises(PolicyDenied, match="Audit is protected"):
            service.write_query("INSERT INTO AUDIT VALUES (1)")
    finally:
        service.close()


def test_a_guarded_table_renamed_by_another_program_stays_guarded(guarded: Service) -> None:
    guarded.read_query("SELECT count(*) FROM ledger")  # the server has seen the table
    other = connect_both(guarded.db.path)
    other.execute("ALTER TABLE ledger RENAME TO books")
    other.close()
    with pytest.raises(PolicyDenied, match="protected"):
        guarded.write_query("UPDATE books SET amount = 0 WHERE id = 1")


def test_undo_call_of_a_call_that_wrote_an_append_only_table_is_refused(
    guarded: Service,
) -> None:
    answer = guarded.write_query("INSERT INTO events(k, v) VALUES ('u', 'undo me')")
    audit_id = guarded.db.records.execute("SELECT max(id) FROM query_log").fetchone()[0]
    assert "undo" in answer
    before = rows_of(guarded)
    with pytest.raises(SqlgateError, match=r"events, which is append-only.*nothing was undone"):
        guarded.undo_call(audit_id, reason="take it back")
    assert rows_of(guarded) == before
    # the person who runs sqlgate may: `sqlgate undo` is not the agent's tool
    assert guarded.undo(audit_id).startswith("undone")
