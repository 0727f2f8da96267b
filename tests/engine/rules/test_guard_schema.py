"""What a new trigger would write when fired, and what a statement leaves in the schema,
read on plain connections (`engine.rules.guard_schema`)."""

from __future__ import annotations

import apsw
import pytest

from sqlgate.engine.rules.guard_schema import SchemaGuard, UncheckedTrigger, trigger_writes
from sqlgate.engine.rules.live_rules import LiveRules
from sqlgate.errors import PolicyDenied

SCHEMA = """
PRAGMA foreign_keys = ON;
CREATE TABLE parent(id INTEGER PRIMARY KEY, name TEXT UNIQUE);
CREATE TABLE child(id INTEGER PRIMARY KEY, p INTEGER REFERENCES parent(id) ON DELETE CASCADE,
                   q INTEGER REFERENCES parent(id) ON UPDATE SET NULL);
CREATE TABLE guarded(id INTEGER PRIMARY KEY, v TEXT);
CREATE TABLE "odd name"(a, b);
CREATE TABLE hop(a);
CREATE TRIGGER hop_on AFTER INSERT ON hop BEGIN UPDATE guarded SET v = new.a; END;
CREATE TABLE gone_on(a);
CREATE TRIGGER gone_t AFTER DELETE ON gone_on BEGIN DELETE FROM parent; END;
CREATE TABLE plain(a, b);
CREATE TABLE target(a);
CREATE TABLE mom(id INTEGER PRIMARY KEY);
CREATE TABLE kid(m INTEGER REFERENCES mom(id));
CREATE TRIGGER points AFTER INSERT ON plain BEGIN DELETE FROM target; END;
CREATE VIEW v AS SELECT id, v FROM guarded;
CREATE TRIGGER v_edit INSTEAD OF DELETE ON v BEGIN DELETE FROM guarded WHERE id = old.id; END;
CREATE TABLE seq(id INTEGER PRIMARY KEY AUTOINCREMENT, a);
CREATE TABLE gen(a INTEGER, b AS (a * 2));
CREATE TABLE kv(k TEXT PRIMARY KEY, v) WITHOUT ROWID;
"""
RULES = LiveRules(protected=frozenset({"guarded"}), append_only=frozenset({"child", "later"}))


def conn_with(extra: str = "") -> apsw.Connection:
    conn = apsw.Connection(":memory:")
    conn.execute(SCHEMA + extra)
    return conn


# (the trigger, its table, the writes it would make: (action, target, detail, inside, through))
WRITES = [
    pytest.param("CREATE TRIGGER t AFTER INSERT ON plain BEGIN DELETE FROM guarded; END",
                 {("DELETE", "guarded", None, "t", None),
                  ("DELETE", "guarded", None, None, "guarded")}, id="own-delete"),
    pytest.param("CREATE TRIGGER t AFTER UPDATE OF b ON plain BEGIN "
                 "UPDATE \"odd name\" SET b = 1, a = 2; END",
                 {("UPDATE", "odd name", "b", "t", None), ("UPDATE", "odd name", "a", "t", None),
                  ("UPDATE", "odd name", "b", None, "odd name"),
                  ("UPDATE", "odd name", "a", None, "odd name")}, id="update-of-and-odd-name"),
    pytest.param("CREATE TRIGGER t BEFORE DELETE ON plain BEGIN INSERT INTO hop VALUES (1); END",
                 {("INSERT", "hop", None, "t", None), ("INSERT", "hop", None, None, "hop"),
                  ("UPDATE", "guarded", "v", "hop_on", "hop")}, id="through-another-trigger"),
    pytest.param("CREATE TRIGGER t AFTER INSERT ON plain BEGIN DELETE FROM parent; END",
                 {("DELETE", "parent", None, "t", None), ("DELETE", "parent", None, None, "parent"),
                  ("DELETE", "child", None, None, "parent")}, id="through-a-foreign-key"),
    pytest.param("CREATE TRIGGER t AFTER INSERT ON plain BEGIN "
                 "INSERT INTO parent(name) VALUES (new.a); END",
                 {("INSERT", "parent", None, "t", None), ("INSERT", "parent", None, None, "parent"),
                  ("DELETE", "child", None, None, "parent")}, id="an-insert-may-replace"),
    pytest.param("CREATE TRIGGER t AFTER INSERT ON plain BEGIN DELETE FROM v; END",
                 {("DELETE", "v", None, "t", None), ("DELETE", "v", None, None, "v"),
                  ("DELETE", "guarded", None, "v_edit", "v")}, id="through-a-view"),
    pytest.param("CREATE TRIGGER t AFTER INSERT ON plain BEGIN DELETE FROM gone_on; END",
                 {("DELETE", "gone_on", None, "t", None),
                  ("DELETE", "gone_on", None, None, "gone_on"),
                  ("DELETE", "parent", None, "gone_t", "gone_on"),
                  ("DELETE", "child", None, None, "gone_on")}, id="two-levels"),
    pytest.param("CREATE TRIGGER t INSTEAD OF UPDATE ON v BEGIN "
                 "INSERT INTO plain VALUES (old.id, new.v); END",
                 {("INSERT", "plain", None, "t", None), ("INSERT", "plain", None, None, "plain"),
                  ("DELETE", "target", None, "points", "plain")}, id="instead-of-on-a-view"),
    pytest.param("CREATE TRIGGER t AFTER INSERT ON plain BEGIN "
                 "INSERT INTO seq(a) VALUES (1); END",
                 {("INSERT", "seq", None, "t", None), ("INSERT", "seq", None, None, "seq"),
                  ("READ", "sqlite_sequence", None, "t", None)}, id="autoincrement-bookkeeping"),
    pytest.param("CREATE TRIGGER t AFTER UPDATE OF a ON gen BEGIN "
                 "SELECT count(*) FROM guarded; END", set(), id="reads-only"),
    pytest.param("CREATE TRIGGER t AFTER INSERT ON kv WHEN 0 BEGIN DELETE FROM guarded; END",
                 {("DELETE", "guarded", None, "t", None),
                  ("DELETE", "guarded", None, None, "guarded")}, id="without-rowid-and-when"),
]  # fmt: skip


@pytest.mark.parametrize(("sql", "writes"), WRITES)
def test_what_a_new_trigger_would_write(sql: str, writes: set[tuple[object, ...]]) -> None:
    conn = conn_with(sql)
    name, table = sql.split()[2], sql.split(" ON ")[1].split()[0]
    found = {
        (w.op.action, w.op.target, w.op.detail, w.op.inside, w.through)
        for w in trigger_writes(conn, name, table)
        if w.op.action in ("INSERT", "UPDATE", "DELETE")
    }
    row_writes = {w for w in writes if w[0] != "READ"}
    assert found == row_writes
    assert conn.pragma("recursive_triggers") == 0  # the caller turns it on, not this


def test_each_check_prepares_afresh() -> None:
    """A statement SQLite kept prepared is not authorized again: the check asks for a new
    one each time, so a second check sees what the first did."""
    conn = conn_with("CREATE TRIGGER t AFTER INSERT ON plain BEGIN DELETE FROM hop; END")
    first = trigger_writes(conn, "t", "plain")
    assert first
    assert trigger_writes(conn, "t", "plain") == first


@pytest.mark.parametrize(
    ("sql", "error"),
    [
        pytest.param("CREATE TRIGGER t AFTER INSERT ON plain BEGIN DELETE FROM later; END",
                     "no such table: main.later", id="missing-table"),
        pytest.param("CREATE TRIGGER t AFTER UPDATE OF b ON gen BEGIN DELETE FROM plain; END",
                     "no statement fires it", id="never-fires"),
        pytest.param("CREATE TRIGGER t AFTER INSERT ON plain BEGIN INSERT INTO v VALUES (1, 2); "
                     "END", "cannot modify v because it is a view", id="view-without-instead"),
    ],
)  # fmt: skip
def test_a_trigger_whose_writes_cannot_be_prepared_is_unchecked(sql: str, error: str) -> None:
    conn = conn_with(sql)
    with pytest.raises(UncheckedTrigger) as unchecked:
        trigger_writes(conn, "t", sql.split(" ON ")[1].split()[0])
    assert error in unchecked.value.error


def test_a_follow_up_that_cannot_be_prepared_is_unchecked() -> None:
    """The trigger's own statements prepare; the write they make cannot be prepared on its
    own (here an INSERT into a view whose INSTEAD OF trigger names a missing table)."""
    conn = conn_with(
        "CREATE VIEW w AS SELECT 1 AS a;"
        "CREATE TRIGGER t AFTER INSERT ON plain BEGIN UPDATE v SET v = 'x'; END;"
        "CREATE TRIGGER v_up INSTEAD OF UPDATE ON v BEGIN SELECT 1; END;"
    )
    assert trigger_writes(conn, "t", "plain")  # fine so far
    conn.execute("DROP TRIGGER v_up")
    with pytest.raises(UncheckedTrigger, match="cannot modify v"):
        trigger_writes(conn, "t", "plain")


def guard_around(conn: apsw.Connection, sql: str, rules: LiveRules = RULES) -> None:
    """Run `sql` as the agent's statement between a SchemaGuard's two readings."""
    guard = SchemaGuard(conn, rules)
    conn.execute(sql)
    guard.refuse()


@pytest.mark.parametrize(
    ("sql", "refusal"),
    [
        pytest.param("CREATE TRIGGER t AFTER INSERT ON plain BEGIN DELETE FROM guarded; END",
                     "trigger t would DELETE rows of guarded", id="trigger"),
        pytest.param("CREATE TRIGGER t AFTER INSERT ON plain BEGIN DELETE FROM later; END",
                     "trigger t could not be checked", id="unchecked"),
        pytest.param("CREATE TRIGGER t AFTER INSERT ON plain BEGIN INSERT INTO hop VALUES (1); "
                     "END", "its write to hop does, through trigger hop_on", id="nested"),
        pytest.param("CREATE TABLE later(a REFERENCES plain(rowid) ON DELETE CASCADE)",
                     "its foreign key to plain says ON DELETE CASCADE", id="new-guarded-name"),
        pytest.param("CREATE TABLE later(a UNIQUE ON CONFLICT REPLACE)",
                     "ON CONFLICT REPLACE", id="new-append-only-replacing"),
        pytest.param("ALTER TABLE hop RENAME TO later", "trigger hop_on", id="renamed-in"),
        pytest.param("ALTER TABLE gone_on RENAME TO Later", "trigger gone_t", id="renamed-folded"),
        pytest.param("ALTER TABLE target RENAME TO later", "trigger points", id="renamed-named"),
        pytest.param("CREATE TABLE Later(a)", None, id="new-guarded-name-plain"),
        pytest.param("CREATE TRIGGER t AFTER INSERT ON plain BEGIN DELETE FROM hop; END", None,
                     id="harmless-trigger"),
        pytest.param("ALTER TABLE hop RENAME TO hop_two", None, id="renamed-elsewhere"),
        pytest.param("ALTER TABLE mom RENAME TO later", None, id="renamed-in-rewrites-a-key"),
        pytest.param("CREATE INDEX i ON plain(a)", None, id="index"),
        pytest.param("INSERT INTO plain VALUES (1, 2)", None, id="no-schema-change"),
        pytest.param("DROP TRIGGER hop_on", None, id="drop"),
    ],
)  # fmt: skip
def test_what_a_statement_leaves_in_the_schema(sql: str, refusal: str | None) -> None:
    conn = conn_with()
    conn.execute("BEGIN")
    if refusal is None:
        guard_around(conn, sql)
    else:
        with pytest.raises(PolicyDenied) as refused:
            guard_around(conn, sql)
        assert refusal in str(refused.value)
        assert str(refused.value).startswith("refused: ")
    assert conn.pragma("recursive_triggers") == 0  # put back as it was
    conn.execute("ROLLBACK")


def test_a_new_parent_of_a_guarded_tables_key_is_refused() -> None:
    conn = conn_with(
        "CREATE TABLE terms(id INTEGER PRIMARY KEY, v REFERENCES vendors(id) ON DELETE SET NULL);"
        "CREATE TABLE loose(id INTEGER PRIMARY KEY, v REFERENCES vendors(id) ON DELETE CASCADE);"
    )
    rules = LiveRules(protected=frozenset({"terms"}))
    conn.execute("BEGIN")
    with pytest.raises(PolicyDenied, match=r"terms is protected.*foreign key to vendors says ON "
                       r"DELETE SET NULL.*no tool will create vendors"):  # fmt: skip
        guard_around(conn, "CREATE TABLE vendors(id INTEGER PRIMARY KEY)", rules)
    conn.execute("ROLLBACK")
    guard_around(conn, "CREATE TABLE vendors(id INTEGER PRIMARY KEY)", LiveRules())
    conn.execute("DROP TABLE vendors; BEGIN")
    with pytest.raises(PolicyDenied, match="loose is append-only"):
        guard_around(conn, "CREATE TABLE vendors(id INTEGER PRIMARY KEY)",
                     LiveRules(append_only=frozenset({"loose"})))  # fmt: skip
    conn.execute("ROLLBACK")


def test_recursive_triggers_stay_on_when_they_were() -> None:
    conn = conn_with()
    conn.pragma("recursive_triggers", True)
    guard_around(conn, "CREATE TRIGGER t AFTER INSERT ON plain BEGIN DELETE FROM hop; END")
    assert conn.pragma("recursive_triggers") == 1


def test_the_check_assumes_recursive_triggers_as_an_application_may_set_them() -> None:
    """With recursive triggers on, REPLACE's delete fires the table's DELETE triggers: the
    trigger's INSERT OR REPLACE into parent would run parent_gone, which deletes guarded."""
    conn = conn_with(
        "CREATE TRIGGER parent_gone AFTER DELETE ON parent BEGIN DELETE FROM guarded; END;"
        "CREATE TABLE solo(id INTEGER PRIMARY KEY, name TEXT UNIQUE);"
        "CREATE TRIGGER solo_gone AFTER DELETE ON solo BEGIN DELETE FROM guarded; END;"
    )
    conn.execute("BEGIN")
    with pytest.raises(PolicyDenied, match="through trigger solo_gone"):
        guard_around(
            conn,
            "CREATE TRIGGER t AFTER INSERT ON plain BEGIN "
            "INSERT INTO solo(name) VALUES (new.a); END",
        )
    conn.execute("ROLLBACK")
