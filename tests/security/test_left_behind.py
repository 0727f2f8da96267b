"""Nothing the agent leaves in the schema may change a guarded table when another program
fires it (issue 30 §4).

The owner's application writes the database through its own connection, which has no
authorizer: a trigger the agent created, a table it renamed or created under a name the rules
(or a guarded table's foreign key) give, would run there unpoliced. Each case below is a
sequence of the agent's calls: every call but the last succeeds, the last is refused and
changes nothing; then the application (a plain connection, foreign keys on) runs its
ordinary statement, and the guarded tables still hold exactly what they held. On main
b73da57 the last call of every REFUSED case succeeded and the application's statement then
changed a guarded table (or the table the rule names came to exist with what would): those
rows failed first.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest

from sqlgate.config import Settings
from sqlgate.errors import PolicyDenied
from sqlgate.service import Service
from tests.conftest import FakeClock

SCHEMA = """
PRAGMA foreign_keys = ON;
CREATE TABLE accounts(id INTEGER PRIMARY KEY, name TEXT UNIQUE);
CREATE TABLE ledger(
    id INTEGER PRIMARY KEY,
    account INTEGER REFERENCES accounts(id) ON DELETE CASCADE ON UPDATE CASCADE,
    amount REAL
);
CREATE TABLE codes(code TEXT PRIMARY KEY, label TEXT) WITHOUT ROWID;
CREATE TABLE events(id INTEGER PRIMARY KEY, k TEXT UNIQUE, v TEXT);
CREATE TABLE owners(id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE notes(
    id INTEGER PRIMARY KEY,
    owner INTEGER REFERENCES owners(id) ON DELETE SET NULL,
    body BLOB
);
CREATE TABLE vendor_terms(id INTEGER PRIMARY KEY,
                          vendor INTEGER REFERENCES vendors(id) ON DELETE CASCADE);
CREATE TABLE orders(id INTEGER PRIMARY KEY, status TEXT, total NUMERIC);
CREATE TABLE teams(id INTEGER PRIMARY KEY);
CREATE TABLE scratch(a, b);
CREATE TABLE feed(a TEXT);
CREATE TRIGGER feed_clears AFTER INSERT ON feed BEGIN DELETE FROM events WHERE k = new.a; END;
CREATE TABLE relay(a TEXT);
CREATE TRIGGER relay_forwards AFTER INSERT ON relay BEGIN INSERT INTO feed VALUES (new.a); END;
CREATE TABLE audit_src(a TEXT);
CREATE TRIGGER audit_src_logs AFTER INSERT ON audit_src BEGIN
    INSERT INTO events(k, v) VALUES (new.a, 'log');
END;
CREATE VIEW ledger_view AS SELECT id, amount FROM ledger;
CREATE TRIGGER ledger_view_edit INSTEAD OF UPDATE ON ledger_view BEGIN
    UPDATE ledger SET amount = new.amount WHERE id = old.id;
END;
INSERT INTO accounts VALUES (1, 'cash'), (2, 'bank');
INSERT INTO ledger VALUES (1, 1, 10.0), (2, 2, 20.0);
INSERT INTO codes VALUES ('a', 'alpha'), ('b', 'beta');
INSERT INTO events(k, v) VALUES ('a', 'first'), ('b', 'second');
INSERT INTO owners VALUES (1, 'ann');
INSERT INTO notes VALUES (1, 1, x'00ff');
INSERT INTO vendor_terms VALUES (1, NULL);
INSERT INTO orders VALUES (1, 'void', 5), (2, 'open', 7);
INSERT INTO teams VALUES (1);
"""
PROTECTED = ("ledger", "codes", "vendor_terms", "archive")
APPEND_ONLY = ("events", "notes", "journal")

Step = tuple[str, str]  # (tool, statement): "write", "destructive" or "view" (name AS select)


def run(service: Service, step: Step) -> str:
    tool, sql = step
    if tool == "write":
        return service.write_query(sql)
    if tool == "view":
        name, _, select = sql.partition(" AS ")
        return service.create_view(name, select, "agent's view")
    return service.destructive_query(sql, reason="red team")


@pytest.fixture
def guarded(tmp_path: Path, clock: FakeClock) -> Iterator[Service]:
    settings = Settings(
        db=tmp_path / "agent.db",
        protect_table=PROTECTED,
        append_only_table=APPEND_ONLY,
        confirm="never",
    )
    service = Service.open(settings, clock=clock, session="s-left")
    # the owner's schema, built by the owner's program (vendor_terms names a parent it never
    # made: an agent connection, foreign keys on, could not insert its row)
    owner = apsw.Connection(str(settings.db))
    with owner:  # a transaction: the script's PRAGMA foreign_keys = ON waits for it to end
        owner.execute(SCHEMA)
    owner.close()
    yield service
    service.close()


def guarded_rows(conn: apsw.Connection) -> dict[str, list[tuple[Any, ...]]]:
    names = [n for (n,) in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")]
    return {
        name: sorted(conn.execute(f'SELECT * FROM "{name}"'), key=repr)
        for name in names
        if name.lower() in PROTECTED + APPEND_ONLY
    }


def schema_of(conn: apsw.Connection) -> list[tuple[Any, ...]]:
    return list(conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_schema ORDER BY name"))


def application(service: Service) -> apsw.Connection:
    """The owner's program: its own connection, no authorizer, foreign keys on."""
    conn = apsw.Connection(str(service.db.path))
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


W, D = "write", "destructive"
# (the agent's calls, the last one refused; the words its refusal holds; what the owner's
# application then runs)
REFUSED = [
    pytest.param([(D, "CREATE TRIGGER t AFTER INSERT ON orders BEGIN DELETE FROM ledger; END")],
                 ("trigger t", "ledger is protected"),
                 "INSERT INTO orders(status) VALUES ('new')", id="deletes-protected"),
    pytest.param([(D, "CREATE TRIGGER t BEFORE UPDATE ON orders BEGIN "
                      "UPDATE ledger SET amount = 0; END")],
                 ("ledger is protected", "UPDATE"),
                 "UPDATE orders SET status = 'x'", id="before-update-updates-protected"),
    pytest.param([(D, "CREATE TRIGGER t AFTER UPDATE OF total ON orders BEGIN "
                      "UPDATE codes SET label = 'x'; END")],
                 ("codes is protected",),
                 "UPDATE orders SET total = 1", id="update-of-column"),
    pytest.param([(D, "CREATE TRIGGER t AFTER DELETE ON orders WHEN old.status = 'void' BEGIN "
                      "DELETE FROM codes WHERE code = 'a'; END")],
                 ("codes is protected", "DELETE"),
                 "DELETE FROM orders WHERE status = 'void'", id="when-clause"),
    pytest.param([(D, "CREATE TRIGGER t AFTER INSERT ON orders BEGIN "
                      "INSERT INTO ledger(amount) VALUES (new.total); END")],
                 ("ledger is protected", "INSERT"),
                 "INSERT INTO orders(total) VALUES (3)", id="inserts-into-protected"),
    pytest.param([(D, "CREATE TRIGGER t AFTER INSERT ON orders BEGIN "
                      "UPDATE events SET v = 'x'; END")],
                 ("events is append-only",),
                 "INSERT INTO orders(total) VALUES (3)", id="updates-append-only"),
    pytest.param([(D, "CREATE TRIGGER t AFTER INSERT ON orders BEGIN "
                      "INSERT INTO scratch VALUES (1, 2); DELETE FROM notes; END")],
                 ("notes is append-only", "DELETE"),
                 "INSERT INTO orders(total) VALUES (3)", id="second-statement-deletes"),
    pytest.param([(D, "CREATE TRIGGER t AFTER INSERT ON orders BEGIN "
                      "INSERT INTO events(k, v) VALUES ('a', 'x') "
                      "ON CONFLICT(k) DO UPDATE SET v = 'y'; END")],
                 ("events is append-only",),
                 "INSERT INTO orders(total) VALUES (3)", id="upsert-into-append-only"),
    pytest.param([(D, "CREATE TRIGGER t AFTER INSERT ON orders BEGIN "
                      "INSERT INTO events(k, v) VALUES (new.status, 'x'); END")],
                 ("events is append-only", "INSERT"),
                 "INSERT OR REPLACE INTO orders(id, status) VALUES (9, 'a')",
                 id="appends-but-the-firing-statement-replaces"),
    pytest.param([(D, "CREATE TRIGGER t AFTER INSERT ON orders BEGIN "
                      "INSERT INTO feed VALUES (new.status); END")],
                 ("events is append-only", "feed_clears"),
                 "INSERT INTO orders(status) VALUES ('a')", id="through-the-owners-trigger"),
    pytest.param([(D, "CREATE TRIGGER t AFTER INSERT ON orders BEGIN "
                      "INSERT INTO relay VALUES (new.status); END")],
                 ("events is append-only", "relay"),
                 "INSERT INTO orders(status) VALUES ('b')", id="through-two-owner-triggers"),
    pytest.param([(D, "CREATE TRIGGER t AFTER INSERT ON orders BEGIN "
                      "INSERT INTO audit_src VALUES (new.status); END")],
                 ("events is append-only", "audit_src_logs"),
                 "INSERT OR REPLACE INTO orders(id, status) VALUES (2, 'a')",
                 id="through-the-owners-appending-trigger"),
    pytest.param([(D, "CREATE TRIGGER t AFTER UPDATE ON orders BEGIN "
                      "UPDATE ledger_view SET amount = 0; END")],
                 ("ledger is protected", "ledger_view"),
                 "UPDATE orders SET status = 'x'", id="through-a-view"),
    pytest.param([(D, "CREATE TRIGGER t AFTER INSERT ON orders BEGIN "
                      "DELETE FROM accounts WHERE id = 1; END")],
                 ("ledger is protected", "foreign key"),
                 "INSERT INTO orders(status) VALUES ('x')", id="through-on-delete-cascade"),
    pytest.param([(D, "CREATE TRIGGER t AFTER INSERT ON orders BEGIN "
                      "UPDATE accounts SET id = id + 100; END")],
                 ("ledger is protected", "accounts"),
                 "INSERT INTO orders(status) VALUES ('x')", id="through-on-update-cascade"),
    pytest.param([(D, "CREATE TRIGGER t AFTER INSERT ON orders BEGIN DELETE FROM owners; END")],
                 ("notes is append-only",),
                 "INSERT INTO orders(status) VALUES ('x')", id="through-set-null"),
    pytest.param([(D, "CREATE TRIGGER t AFTER INSERT ON orders BEGIN "
                      "INSERT OR REPLACE INTO accounts(id, name) VALUES (1, 'x'); END")],
                 ("ledger is protected",),
                 "INSERT INTO orders(status) VALUES ('x')", id="through-replace-of-a-parent"),
    pytest.param([(D, "CREATE TRIGGER t AFTER UPDATE ON accounts BEGIN "
                      "DELETE FROM accounts WHERE id = old.id; END")],
                 ("ledger is protected",),
                 "UPDATE accounts SET name = 'z' WHERE id = 1", id="its-own-table-cascades"),
    pytest.param([("view", "open_orders AS SELECT id, status FROM orders"),
                  (D, "CREATE TRIGGER t INSTEAD OF INSERT ON open_orders BEGIN "
                      "DELETE FROM codes; END")],
                 ("codes is protected",),
                 "INSERT INTO open_orders(status) VALUES ('x')", id="instead-of-on-its-view"),
    pytest.param([(W, "CREATE TABLE kv(k TEXT PRIMARY KEY, v) WITHOUT ROWID"),
                  (D, "CREATE TRIGGER t AFTER INSERT ON kv BEGIN DELETE FROM codes; END")],
                 ("codes is protected",),
                 "INSERT INTO kv VALUES ('k', 1)", id="on-a-without-rowid-table"),
    pytest.param([(W, "CREATE TABLE gen(a INTEGER, b AS (a * 2))"),
                  (D, "CREATE TRIGGER t AFTER UPDATE OF a ON gen BEGIN DELETE FROM ledger; END")],
                 ("ledger is protected",),
                 "INSERT INTO gen VALUES (1); UPDATE gen SET a = 2", id="on-a-generated-table"),
    pytest.param([(W, "CREATE TABLE stage(a)"),
                  (D, "CREATE TRIGGER stage_t AFTER INSERT ON orders BEGIN DELETE FROM stage; END"),
                  (D, "ALTER TABLE stage RENAME TO archive")],
                 ("archive is protected", "stage_t"),
                 None, id="rename-points-a-trigger-at-a-guarded-name"),
    pytest.param([(W, "CREATE TABLE stage(a)"),
                  (D, "CREATE TRIGGER stage_t AFTER INSERT ON stage BEGIN "
                      "DELETE FROM stage WHERE rowid < new.rowid; END"),
                  (D, "ALTER TABLE stage RENAME TO journal")],
                 ("journal is append-only", "stage_t"),
                 None, id="rename-brings-a-trigger-under-a-guarded-name"),
    pytest.param([(W, "CREATE TABLE stage(a REFERENCES teams(id) ON DELETE CASCADE)"),
                  (W, "INSERT INTO stage VALUES (1)"),
                  (D, "ALTER TABLE stage RENAME TO journal")],
                 ("journal is append-only", "teams"),
                 "DELETE FROM teams", id="rename-brings-a-foreign-key-action"),
    pytest.param([(W, "CREATE TABLE archive(id INTEGER PRIMARY KEY, "
                      "t REFERENCES teams(id) ON UPDATE SET NULL)")],
                 ("archive is protected", "teams", "ON UPDATE SET NULL"),
                 None, id="created-under-a-rule-with-a-foreign-key-action"),
    pytest.param([(W, "CREATE TABLE journal(k TEXT UNIQUE ON CONFLICT REPLACE, v)")],
                 ("journal is append-only", "ON CONFLICT REPLACE"),
                 None, id="created-append-only-with-replace"),
    pytest.param([(W, "CREATE TABLE vendors(id INTEGER PRIMARY KEY, name TEXT)")],
                 ("vendor_terms is protected", "vendors"),
                 None, id="created-as-a-guarded-tables-parent"),
    pytest.param([(W, "CREATE TABLE stage(id INTEGER PRIMARY KEY)"),
                  (D, "ALTER TABLE stage RENAME TO vendors")],
                 ("vendor_terms is protected", "vendors"),
                 None, id="renamed-into-a-guarded-tables-parent"),
    pytest.param([(D, "CREATE TABLE vendors AS SELECT 1 AS id")],
                 ("vendor_terms is protected",),
                 None, id="created-as-select-as-a-parent"),
]  # fmt: skip


@pytest.mark.parametrize(("steps", "words", "fire"), REFUSED)
def test_what_would_change_a_guarded_table_when_another_program_fires_it_is_refused(
    guarded: Service, steps: list[Step], words: tuple[str, ...], fire: str | None
) -> None:
    *ready, last = steps
    for step in ready:
        assert not run(guarded, step).startswith("refused")
    conn = guarded.db.writer
    schema, rows = schema_of(conn), guarded_rows(conn)
    with pytest.raises(PolicyDenied) as refused:
        run(guarded, last)
    message = str(refused.value)
    for word in words:
        assert word in message
    assert "no tool will" in message
    assert "set by" in message  # the person who runs sqlgate set the rule
    assert schema_of(conn) == schema
    if fire is not None:
        app = application(guarded)
        try:
            app.execute(fire)
        except apsw.SQLError:
            pass  # what the agent meant to leave is not there to take the statement
        finally:
            app.close()
    assert guarded_rows(conn) == rows


def test_a_trigger_whose_body_cannot_be_checked_is_refused(guarded: Service) -> None:
    """It names a table that does not exist yet (here the one an append-only rule names):
    what it would write cannot be known, so it is not left behind."""
    with pytest.raises(PolicyDenied, match=r"could not be checked.*no such table") as refused:
        guarded.destructive_query(
            "CREATE TRIGGER t AFTER INSERT ON orders BEGIN DELETE FROM journal; END",
            reason="red team",
        )
    assert "no tool will" in str(refused.value)
    app = application(guarded)
    try:
        app.execute("CREATE TABLE journal(a); INSERT INTO journal VALUES (1);")
        app.execute("INSERT INTO orders(status) VALUES ('x')")
        assert app.execute("SELECT count(*) FROM journal").fetchone() == (1,)
    finally:
        app.close()


ALLOWED = [
    pytest.param([(D, "CREATE TRIGGER t AFTER INSERT ON orders BEGIN "
                      "INSERT INTO scratch VALUES (new.id, new.status); END")], id="plain-write"),
    pytest.param([(D, "CREATE TRIGGER t AFTER INSERT ON orders BEGIN INSERT INTO scratch "
                      "SELECT count(*), sum(amount) FROM ledger; END")],
                 id="reads-a-guarded-table"),
    pytest.param([(D, "CREATE TRIGGER t AFTER INSERT ON feed BEGIN "
                      "INSERT INTO scratch VALUES (new.a, 0); END")],
                 id="beside-the-owners-trigger-on-the-same-table"),
    pytest.param([(D, "CREATE TRIGGER t AFTER DELETE ON accounts BEGIN "
                      "INSERT INTO scratch VALUES (old.id, old.name); END")],
                 id="on-a-parent-whose-own-deletes-cascade"),
    pytest.param([(W, "CREATE TABLE ledger_notes(l INTEGER REFERENCES ledger(id) "
                      "ON DELETE CASCADE, t TEXT)"),
                  (D, "CREATE TRIGGER t AFTER INSERT ON orders BEGIN "
                      "DELETE FROM ledger_notes; END")], id="writes-a-guarded-tables-child"),
    pytest.param([("view", "open_orders AS SELECT id, status FROM orders"),
                  (D, "CREATE TRIGGER t INSTEAD OF INSERT ON open_orders BEGIN "
                      "INSERT INTO orders(status) VALUES (new.status); END")],
                 id="instead-of-writing-the-base-table"),
    pytest.param([(W, "CREATE TABLE journal(id INTEGER PRIMARY KEY, o REFERENCES owners(id))")],
                 id="created-under-a-rule-without-actions"),
    pytest.param([(W, "CREATE TABLE journal(k TEXT PRIMARY KEY, code TEXT UNIQUE, v)")],
                 id="created-under-a-rule-with-keys"),
    pytest.param([(D, "CREATE TABLE archive(k TEXT, n INTEGER, PRIMARY KEY(k, n)) WITHOUT ROWID")],
                 id="created-protected-with-a-composite-key"),
    pytest.param([(W, "CREATE TABLE stage(a)"),
                  (D, "CREATE TRIGGER stage_t AFTER INSERT ON stage BEGIN "
                      "INSERT INTO scratch VALUES (new.a, 1); END"),
                  (D, "ALTER TABLE stage RENAME TO stage_two")], id="rename-to-a-plain-name"),
    pytest.param([(D, "ALTER TABLE feed RENAME TO feed_old")],
                 id="rename-a-table-with-the-owners-trigger"),
    pytest.param([(D, "ALTER TABLE orders RENAME COLUMN total TO amount")], id="rename-column"),
    pytest.param([(W, "CREATE TABLE accounts_two(id INTEGER PRIMARY KEY)")], id="a-new-table"),
    pytest.param([(D, "DROP TRIGGER relay_forwards")], id="drop-a-trigger"),
]  # fmt: skip


@pytest.mark.parametrize("steps", ALLOWED)
def test_schema_that_writes_no_guarded_table_is_created(
    guarded: Service, steps: list[Step]
) -> None:
    for step in steps:
        assert not run(guarded, step).startswith("refused")
