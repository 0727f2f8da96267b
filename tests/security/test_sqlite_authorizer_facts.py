"""What SQLite's authorizer reports, and what SQLITE_IGNORE does, on each leak path of issue 23.

Groundwork for hidden columns and protected tables: nothing of sqlgate's runs here, only plain
apsw connections with an authorizer that records every callback and answers SQLITE_IGNORE to
the reads of the hidden columns (exactly as SQLite passes the names). Each test pins one fact
of the SQLite that apsw bundles; if an upgrade changes one, the test fails and the hiding
design must be looked at again. "Leak" in a docstring means the real value (or one bit of it)
reaches the caller although every read of the column was answered SQLITE_IGNORE.

Observed on apsw 3.54.1.0 with SQLite 3.54.1 (compiled with ENABLE_STAT4 and ENABLE_FTS5).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import apsw
import pytest

Call = tuple[str, str | None, str | None, str | None, str | None]

OBSERVED_SQLITE = (3, 54, 1)
OBSERVED_APSW = (3, 54, 1, 0)

# name of each authorizer action code, for readable call records
ACTIONS: dict[int, str] = {
    getattr(apsw, name): name[len("SQLITE_") :]
    for name in (
        "SQLITE_READ",
        "SQLITE_INSERT",
        "SQLITE_UPDATE",
        "SQLITE_DELETE",
        "SQLITE_SELECT",
        "SQLITE_FUNCTION",
        "SQLITE_CREATE_INDEX",
        "SQLITE_REINDEX",
        "SQLITE_ANALYZE",
        "SQLITE_ALTER_TABLE",
        "SQLITE_CREATE_TABLE",
        "SQLITE_CREATE_TRIGGER",
        "SQLITE_CREATE_TEMP_TRIGGER",
        "SQLITE_DROP_TABLE",
        "SQLITE_CREATE_VTABLE",
        "SQLITE_PRAGMA",
        "SQLITE_TRANSACTION",
    )
}

USERS = """
CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT, ssn TEXT);
INSERT INTO users VALUES (1, 'ann', '333'), (2, 'bob', '111'), (3, 'cy', '222');
"""
SECRETS = {"111", "222", "333"}
SSN_ORDER = [2, 3, 1]  # ids sorted by their real ssn
HIDDEN = {("users", "ssn")}


@dataclass
class Guarded:
    """A plain connection whose authorizer records each callback and hides some columns."""

    conn: apsw.Connection
    hidden: set[tuple[str, str]]
    calls: list[Call] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.conn.authorizer = self._authorize

    def _authorize(
        self, op: int, a: str | None, b: str | None, db: str | None, inner: str | None
    ) -> int:
        self.calls.append((ACTIONS.get(op, str(op)), a, b, db, inner))
        if op == apsw.SQLITE_READ and (a, b) in self.hidden:
            return apsw.SQLITE_IGNORE
        return apsw.SQLITE_OK

    def run(self, sql: str) -> list[tuple[Any, ...]]:
        """Prepare and run `sql`, keeping only this statement's callbacks."""
        self.calls.clear()
        return list(self.conn.execute(sql))

    def reads(self) -> list[tuple[str | None, str | None]]:
        return [(a, b) for op, a, b, _, _ in self.calls if op == "READ"]

    def ops(self, name: str) -> list[Call]:
        return [call for call in self.calls if call[0] == name]

    def plain(self, sql: str) -> list[tuple[Any, ...]]:
        """Run `sql` with no authorizer (the user, or another program), then guard again."""
        self.conn.authorizer = None
        try:
            return list(self.conn.execute(sql))
        finally:
            self.conn.authorizer = self._authorize


def guarded(setup: str = USERS, hidden: Iterable[tuple[str, str]] = HIDDEN) -> Guarded:
    """A fresh in-memory database built by `setup` with no authorizer, then guarded."""
    conn = apsw.Connection(":memory:")
    conn.execute(setup)
    return Guarded(conn, set(hidden))


def cells(rows: list[tuple[Any, ...]]) -> set[Any]:
    return {value for row in rows for value in row}


# --- the version the facts were seen on ---------------------------------------------------


def test_these_facts_hold_on_the_sqlite_they_were_seen_on_or_a_newer_one() -> None:
    """The facts below were seen on OBSERVED_SQLITE; an older SQLite is not known to hold
    them. A newer one must pass every test of this file as it is: a fact that changed fails
    its own test (a fresh install may bring a newer apsw, and CI must not fail for the
    version alone)."""
    sqlite = tuple(int(part) for part in apsw.sqlite_lib_version().split("."))
    bundled = tuple(int(part) for part in apsw.apsw_version().split("."))
    assert sqlite >= OBSERVED_SQLITE, f"SQLite {sqlite}: older than these facts were seen on"
    assert bundled >= OBSERVED_APSW
    assert "ENABLE_STAT4" in apsw.compile_options
    assert "ENABLE_FTS5" in apsw.compile_options


# --- an ignored read is NULL everywhere in a SELECT ---------------------------------------


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        pytest.param("SELECT ssn FROM users ORDER BY id", [(None,)] * 3, id="result"),
        pytest.param("SELECT id FROM users WHERE ssn = '111'", [], id="where-equal"),
        pytest.param("SELECT id FROM users WHERE ssn IS NOT NULL", [], id="where-not-null"),
        pytest.param("SELECT ssn, count(*) FROM users GROUP BY ssn", [(None, 3)], id="group-by"),
        pytest.param("SELECT upper(ssn) FROM users", [(None,)] * 3, id="function-argument"),
        pytest.param("SELECT max(ssn), min(ssn) FROM users", [(None, None)], id="aggregate"),
        pytest.param(
            "SELECT count(*) FROM users a JOIN users b ON a.ssn = b.ssn", [(0,)], id="join-on"
        ),
        pytest.param("WITH c AS (SELECT ssn FROM users) SELECT * FROM c", [(None,)] * 3, id="cte"),
        pytest.param("SELECT (SELECT max(ssn) FROM users)", [(None,)], id="scalar-subquery"),
        pytest.param(
            "SELECT id FROM users WHERE id IN (SELECT id FROM users WHERE ssn > '0')",
            [],
            id="in-subquery",
        ),
        pytest.param("SELECT ssn FROM users UNION SELECT ssn FROM users", [(None,)], id="compound"),
        pytest.param("SELECT u.ssn FROM users AS u WHERE u.id = 2", [(None,)], id="alias"),
    ],
)
def test_an_ignored_column_reads_as_null_in_every_part_of_a_select(
    sql: str, expected: list[tuple[Any, ...]]
) -> None:
    g = guarded()
    assert g.run(sql) == expected
    assert ("users", "ssn") in g.reads()


def test_a_view_reports_the_base_column_read_with_the_view_name_as_fifth_argument() -> None:
    """Through a view the base read is reported once (5th arg = view name) and is NULL."""
    g = guarded(USERS + "CREATE VIEW v AS SELECT id, ssn AS remark FROM users;")
    assert g.run("SELECT remark FROM v") == [(None,)] * 3
    assert ("READ", "users", "ssn", "main", "v") in g.calls
    assert ("READ", "v", "remark", "main", None) in g.calls


def test_a_cte_names_itself_as_the_fifth_argument_of_the_reads_inside_it() -> None:
    """Surprise: a CTE is reported like a view: the 5th argument of its reads is the CTE name."""
    g = guarded()
    g.run("WITH c AS (SELECT ssn FROM users) SELECT * FROM c")
    assert ("READ", "users", "ssn", "main", "c") in g.calls


def test_create_table_as_select_and_insert_select_copy_nulls() -> None:
    """CTAS and INSERT ... SELECT into a visible table store NULL, not the value."""
    g = guarded(USERS + "CREATE TABLE copy(v);")
    g.run("CREATE TABLE t2 AS SELECT id, ssn FROM users")
    g.run("INSERT INTO copy SELECT ssn FROM users")
    assert cells(g.plain("SELECT * FROM t2")) & SECRETS == set()
    assert cells(g.plain("SELECT * FROM copy")) == {None}


# --- triggers ------------------------------------------------------------------------------

TRIGGER = """
CREATE TABLE copied(v);
CREATE TRIGGER spy AFTER UPDATE OF name ON users BEGIN INSERT INTO copied VALUES (new.ssn); END;
"""


def test_a_trigger_body_is_authorized_when_the_firing_statement_is_prepared() -> None:
    """The body's reads come with the firing statement, 5th argument = trigger name; NULL.

    The same holds for the user's own triggers: an audit trigger copying new.ssn stores NULL
    when the agent's write fires it, so IGNORE inside a trigger body changes the user's data.
    """
    g = guarded(USERS + TRIGGER)
    g.run("UPDATE users SET name = 'x' WHERE id = 2")
    assert ("INSERT", "copied", None, "main", "spy") in g.calls
    assert ("READ", "users", "ssn", "main", "spy") in g.calls
    assert g.plain("SELECT v FROM copied") == [(None,)]


def test_creating_a_trigger_reports_no_read_of_the_columns_its_body_uses() -> None:
    """CREATE TRIGGER is checked by name only; its body's reads wait for a firing statement."""
    g = guarded(USERS + "CREATE TABLE copied(v);")
    g.run(
        "CREATE TRIGGER spy AFTER UPDATE OF name ON users "
        "BEGIN INSERT INTO copied VALUES (new.ssn); END"
    )
    assert g.ops("CREATE_TRIGGER") == [("CREATE_TRIGGER", "spy", "users", "main", None)]
    assert ("users", "ssn") not in g.reads()


def test_a_trigger_fired_by_a_connection_without_the_authorizer_copies_the_real_value() -> None:
    """Leak: the agent's trigger runs later in another program's connection, unauthorized."""
    g = guarded(USERS + TRIGGER)
    g.plain("UPDATE users SET name = 'x' WHERE id = 2")
    g.calls.clear()
    assert g.run("SELECT v FROM copied") == [("111",)]
    assert g.reads() == [("copied", "v")]


# --- RETURNING -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        pytest.param(
            "UPDATE users SET name = 'x' WHERE id = 2 RETURNING ssn", [("111",)], id="update"
        ),
        pytest.param(
            "INSERT INTO users VALUES (4, 'dee', '444') RETURNING *",
            [(4, "dee", "444")],
            id="insert-star",
        ),
        pytest.param("DELETE FROM users WHERE id = 3 RETURNING ssn", [("222",)], id="delete"),
        pytest.param(
            "UPDATE users SET name = 'x' WHERE id = 1 RETURNING upper(ssn) AS s",
            [("333",)],
            id="update-expression",
        ),
    ],
)
def test_returning_gives_the_real_value_although_its_read_was_answered_ignore(
    sql: str, expected: list[tuple[Any, ...]]
) -> None:
    """Leak, as the issue says: RETURNING reports SQLITE_READ of ssn, IGNORE has no effect."""
    g = guarded()
    assert g.run(sql) == expected
    assert ("users", "ssn") in g.reads()


# --- writes: INSERT, UPDATE, upsert --------------------------------------------------------


@pytest.mark.parametrize(
    "sql",
    [
        "INSERT INTO users(name) VALUES ('dee')",
        "INSERT INTO users(id, name, ssn) VALUES (4, 'dee', '444')",
        "INSERT INTO users VALUES (4, 'dee', '444')",
        "REPLACE INTO users(id, name) VALUES (1, 'ann')",
    ],
)
def test_sqlite_insert_names_only_the_table_never_a_column(sql: str) -> None:
    """SQLITE_INSERT is (table, None, db, None) whatever the column list: decide from sqlglot."""
    g = guarded()
    g.run(sql)
    assert g.calls == [("INSERT", "users", None, "main", None)]


def test_an_insert_from_values_reports_no_read_at_all() -> None:
    """Nothing in the callbacks tells an INSERT naming ssn from one leaving it to its default."""
    g = guarded()
    g.run("INSERT INTO users(name) VALUES ('dee')")
    quiet = list(g.calls)
    g.run("INSERT INTO users(name, ssn) VALUES ('eve', '555')")
    assert g.calls == quiet
    assert g.reads() == []


def test_update_reports_one_sqlite_update_per_assigned_column() -> None:
    g = guarded()
    g.run("UPDATE users SET name = 'x', ssn = 'y' WHERE id = 1")
    assert g.ops("UPDATE") == [
        ("UPDATE", "users", "name", "main", None),
        ("UPDATE", "users", "ssn", "main", None),
    ]


def test_an_upsert_reports_insert_then_update_per_do_update_column() -> None:
    g = guarded()
    g.run(
        "INSERT INTO users(id, name, ssn) VALUES (1, 'x', '9') "
        "ON CONFLICT(id) DO UPDATE SET ssn = excluded.ssn, name = excluded.name"
    )
    assert g.ops("INSERT") == [("INSERT", "users", None, "main", None)]
    assert g.ops("UPDATE") == [
        ("UPDATE", "users", "ssn", "main", None),
        ("UPDATE", "users", "name", "main", None),
    ]


def test_an_upsert_reads_of_excluded_columns_are_never_reported() -> None:
    """Surprise: `excluded.ssn` gives no SQLITE_READ at all (only the conflict target's id)."""
    g = guarded()
    rows = g.run(
        "INSERT INTO users(id, name, ssn) VALUES (1, 'x', '9') "
        "ON CONFLICT(id) DO UPDATE SET name = excluded.ssn RETURNING name"
    )
    assert rows == [("9",)]
    assert ("users", "ssn") not in g.reads()
    assert g.plain("SELECT name FROM users WHERE id = 1") == [("9",)]


def test_an_upsert_reading_the_stored_column_is_reported_and_ignored() -> None:
    """`DO UPDATE SET name = ssn` (the stored row's ssn) is a reported read and copies NULL."""
    g = guarded()
    g.run("INSERT INTO users(id, name) VALUES (2, 'x') ON CONFLICT(id) DO UPDATE SET name = ssn")
    assert ("READ", "users", "ssn", "main", None) in g.calls
    assert g.plain("SELECT name FROM users WHERE id = 2") == [(None,)]


# --- REPLACE's implicit deletes ------------------------------------------------------------

UNIQUE_NAMES = """
CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT UNIQUE, ssn TEXT);
INSERT INTO users VALUES (1, 'ann', '333'), (2, 'bob', '111'), (3, 'cy', '222');
CREATE TABLE r(id INTEGER PRIMARY KEY ON CONFLICT REPLACE, v);
INSERT INTO r VALUES (1, 'old');
"""


@pytest.mark.parametrize(
    ("sql", "remaining"),
    [
        pytest.param("REPLACE INTO users(id, name) VALUES (1, 'bob')", [1, 3], id="replace"),
        pytest.param(
            "INSERT OR REPLACE INTO users(id, name) VALUES (9, 'cy')",
            [1, 2, 9],
            id="insert-or-replace",
        ),
        pytest.param(
            "UPDATE OR REPLACE users SET name = 'ann' WHERE id = 3", [2, 3], id="update-or-replace"
        ),
    ],
)
def test_replace_deletes_rows_without_reporting_any_sqlite_delete(
    sql: str, remaining: list[int]
) -> None:
    """REPLACE removes each row it conflicts with (id or UNIQUE name), never reported as DELETE."""
    g = guarded(UNIQUE_NAMES)
    g.run(sql)
    assert g.ops("DELETE") == []
    assert [i for (i,) in g.plain("SELECT id FROM users ORDER BY id")] == remaining


def test_a_schema_on_conflict_replace_turns_a_plain_insert_into_an_unreported_delete() -> None:
    """A plain INSERT (only SQLITE_INSERT reported) replaces the row; no sign in the callbacks."""
    g = guarded(UNIQUE_NAMES)
    g.run("INSERT INTO r VALUES (1, 'new')")
    assert g.calls == [("INSERT", "r", None, "main", None)]
    assert g.plain("SELECT v FROM r") == [("new",)]


# --- foreign-key actions -------------------------------------------------------------------

FOREIGN_KEYS = """
PRAGMA foreign_keys = ON;
CREATE TABLE parent(id INTEGER PRIMARY KEY, k TEXT UNIQUE);
CREATE TABLE cascade_child(id INTEGER PRIMARY KEY, pid REFERENCES parent(id) ON DELETE CASCADE);
CREATE TABLE null_child(id INTEGER PRIMARY KEY, pid REFERENCES parent(id) ON DELETE SET NULL);
CREATE TABLE key_child(id INTEGER PRIMARY KEY, pk REFERENCES parent(k) ON UPDATE CASCADE);
INSERT INTO parent VALUES (1, 'one'), (2, 'two');
INSERT INTO cascade_child VALUES (1, 1);
INSERT INTO null_child VALUES (1, 1);
INSERT INTO key_child VALUES (1, 'two');
"""


def test_on_delete_cascade_and_set_null_are_reported_at_prepare_against_the_child() -> None:
    """FK actions are authorized with the parent's DELETE: DELETE child / UPDATE child.col."""
    g = guarded(FOREIGN_KEYS, hidden=())
    g.run("DELETE FROM parent WHERE id = 1")
    assert ("DELETE", "cascade_child", None, "main", None) in g.calls
    assert ("UPDATE", "null_child", "pid", "main", None) in g.calls
    assert g.plain("SELECT (SELECT count(*) FROM cascade_child), (SELECT pid FROM null_child)") == [
        (0, None)
    ]


def test_on_update_cascade_is_reported_as_an_update_of_the_child_column() -> None:
    g = guarded(FOREIGN_KEYS, hidden=())
    g.run("UPDATE parent SET k = 'deux' WHERE id = 2")
    assert ("UPDATE", "key_child", "pk", "main", None) in g.calls
    assert g.plain("SELECT pk FROM key_child") == [("deux",)]


def test_fk_actions_are_not_reported_when_foreign_keys_are_off() -> None:
    """The child callbacks come only with PRAGMA foreign_keys=ON at prepare time."""
    g = guarded(FOREIGN_KEYS.replace("= ON", "= OFF"), hidden=())
    g.run("DELETE FROM parent WHERE id = 1")
    assert g.ops("DELETE") == [("DELETE", "parent", None, "main", None)]


def test_renaming_a_parent_rewrites_the_child_definition_without_naming_the_child() -> None:
    """Only ALTER_TABLE (db, parent) and sqlite_master updates: the child is never named."""
    g = guarded(FOREIGN_KEYS, hidden=())
    g.run("ALTER TABLE parent RENAME TO mother")
    assert g.ops("ALTER_TABLE") == [("ALTER_TABLE", "main", "parent", None, None)]
    named = {a for _, a, _, _, _ in g.calls} | {b for _, _, b, _, _ in g.calls}
    assert not named & {"cascade_child", "null_child", "key_child"}
    (sql,) = g.plain("SELECT sql FROM sqlite_schema WHERE name = 'cascade_child'")[0]
    assert 'REFERENCES "mother"(id)' in sql


# --- indexes, REINDEX, ANALYZE -------------------------------------------------------------


@pytest.mark.parametrize(
    "sql",
    [
        pytest.param("CREATE INDEX u_ssn ON users(ssn)", id="column"),
        pytest.param("CREATE INDEX u_ssn ON users(lower(ssn))", id="expression"),
        pytest.param("CREATE INDEX u_ssn ON users(name) WHERE ssn > '150'", id="partial"),
    ],
)
def test_create_index_reports_a_read_of_each_indexed_column(sql: str) -> None:
    """CREATE INDEX does report SQLITE_READ of the column (after CREATE_INDEX, then REINDEX)."""
    g = guarded()
    g.run(sql)
    assert ("CREATE_INDEX", "u_ssn", "users", "main", None) in g.calls
    assert ("READ", "users", "ssn", "main", None) in g.calls
    assert ("REINDEX", "u_ssn", None, "main", None) in g.calls


def test_create_index_answered_ignore_builds_a_corrupt_index() -> None:
    """Surprise: IGNORE indexes NULLs, so integrity_check fails and lookups miss: refuse instead."""
    g = guarded()
    g.run("CREATE INDEX u_ssn ON users(ssn)")
    assert g.plain("PRAGMA integrity_check") != [("ok",)]
    assert g.plain("SELECT id FROM users INDEXED BY u_ssn WHERE ssn = '111'") == []
    g.plain("REINDEX u_ssn")
    assert g.plain("PRAGMA integrity_check") == [("ok",)]


def test_reindex_and_analyze_report_no_column_reads() -> None:
    """REINDEX gives one REINDEX per index; ANALYZE gives ANALYZE(table): no SQLITE_READ."""
    g = guarded(USERS + "CREATE INDEX u_ssn ON users(ssn);")
    g.run("REINDEX users")
    assert g.calls == [("REINDEX", "u_ssn", None, "main", None)]
    g.run("ANALYZE users")
    assert ("ANALYZE", "users", None, "main", None) in g.calls
    assert ("users", "ssn") not in g.reads()


def test_sqlite_stat4_samples_hold_the_secret_values_as_record_blobs() -> None:
    """Leak: after ANALYZE, stat4's `sample` of an index on ssn is a record holding each value."""
    g = guarded(USERS + "CREATE INDEX u_ssn ON users(ssn);")
    g.run("ANALYZE")
    samples = g.run("SELECT sample FROM sqlite_stat4 WHERE idx = 'u_ssn'")
    assert {bytes(s) for (s,) in samples} >= {b"\x03\x13\x01" + b"111" + b"\x02"}
    joined = b"".join(bytes(s) for (s,) in samples)
    assert all(secret.encode() in joined for secret in SECRETS)


def test_sqlite_stat1_counts_the_rows_of_a_partial_index_on_the_secret() -> None:
    """Oracle: stat1's first number is how many rows satisfy the partial index's ssn predicate."""
    g = guarded(USERS + "CREATE INDEX u_big ON users(name) WHERE ssn > '150';")
    g.run("ANALYZE")
    assert g.run("SELECT stat FROM sqlite_stat1 WHERE idx = 'u_big'") == [("2 1",)]


def test_a_scan_of_an_index_on_the_secret_returns_rows_in_secret_order() -> None:
    """Leak: INDEXED BY u_ssn walks the index; no read of ssn is even reported."""
    g = guarded(USERS + "CREATE INDEX u_ssn ON users(ssn);")
    assert [i for (i,) in g.run("SELECT id FROM users INDEXED BY u_ssn")] == SSN_ORDER
    assert ("users", "ssn") not in g.reads()
    assert [n for (n,) in g.run("SELECT name FROM users INDEXED BY u_ssn")] == ["bob", "cy", "ann"]


def test_order_by_an_ignored_column_still_sorts_by_the_real_value_when_an_index_serves_it() -> None:
    """Leak: the planner satisfies ORDER BY ssn from the index, so the NULLs come in real order."""
    g = guarded(USERS + "CREATE INDEX u_ssn ON users(ssn);")
    assert g.run("SELECT id, ssn FROM users ORDER BY ssn") == [(i, None) for i in SSN_ORDER]


def test_order_by_an_ignored_column_without_an_index_keeps_table_order() -> None:
    """Without an index the sort key is NULL for every row: rowid order, nothing learned."""
    g = guarded()
    assert [i for (i,) in g.run("SELECT id FROM users ORDER BY ssn")] == [1, 2, 3]


# --- generated columns ---------------------------------------------------------------------

GENERATED = """
CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT, ssn TEXT,
    first TEXT GENERATED ALWAYS AS (substr(ssn, 1, 1)) VIRTUAL,
    head TEXT GENERATED ALWAYS AS (substr(ssn, 1, 2)) STORED);
INSERT INTO users(id, name, ssn) VALUES (1, 'ann', '333'), (2, 'bob', '111'), (3, 'cy', '222');
"""


@pytest.mark.parametrize(
    ("column", "expected"),
    [
        pytest.param("first", ["3", "1", "2"], id="virtual"),
        pytest.param("head", ["33", "11", "22"], id="stored"),
    ],
)
def test_a_generated_column_over_the_secret_reports_only_its_own_read(
    column: str, expected: list[str]
) -> None:
    """Leak: reading a generated column never reports SQLITE_READ of the column it derives from."""
    g = guarded(GENERATED)
    assert [v for (v,) in g.run(f"SELECT {column} FROM users ORDER BY id")] == expected
    assert g.reads() == [("users", column), ("users", "id")]


def test_an_insert_computes_a_stored_generated_column_from_the_real_value() -> None:
    g = guarded(GENERATED)
    g.run("INSERT INTO users(id, name, ssn) VALUES (4, 'dee', '444')")
    assert g.plain("SELECT head FROM users WHERE id = 4") == [("44",)]


# --- FTS5 over the secret ------------------------------------------------------------------

FTS = """
CREATE VIRTUAL TABLE ext USING fts5(ssn, content='users', content_rowid='id');
INSERT INTO ext(ext) VALUES ('rebuild');
CREATE VIRTUAL TABLE bare USING fts5(ssn, content='');
INSERT INTO bare(rowid, ssn) SELECT id, ssn FROM users;
CREATE VIRTUAL TABLE terms USING fts5vocab(ext, 'row');
"""


def test_an_external_content_fts5_reads_the_content_table_through_the_authorizer() -> None:
    """Reading ext.ssn runs FTS5's own SELECT on users, reported as READ users.ssn: NULL."""
    g = guarded(USERS + FTS)
    assert g.run("SELECT rowid, ssn FROM ext ORDER BY rowid") == [(1, None), (2, None), (3, None)]
    assert ("READ", "users", "ssn", "main", None) in g.calls


def test_match_on_an_external_content_fts5_answers_from_its_index() -> None:
    """Oracle: MATCH '111' finds bob's row, read from ext_idx, though users.ssn is ignored."""
    g = guarded(USERS + FTS)
    assert g.run("SELECT rowid, ssn FROM ext WHERE ext MATCH '111'") == [(2, None)]


def test_match_on_a_contentless_fts5_answers_with_no_read_of_the_source() -> None:
    """Oracle: a contentless table's index keeps the terms; nothing names users.ssn."""
    g = guarded(USERS + FTS)
    assert g.run("SELECT rowid FROM bare WHERE bare MATCH '111'") == [(2,)]
    assert ("users", "ssn") not in g.reads()


def test_fts5vocab_lists_the_secret_terms() -> None:
    """Leak: fts5vocab over the index lists every value as a term."""
    g = guarded(USERS + FTS)
    assert {t for (t,) in g.run("SELECT term FROM terms")} == SECRETS
    assert ("users", "ssn") not in g.reads()


def test_an_fts5_rebuild_under_the_authorizer_indexes_nulls() -> None:
    """The rebuild's SELECT of users.ssn is authorized too, so it indexes nothing."""
    g = guarded(
        USERS + "CREATE VIRTUAL TABLE ext USING fts5(ssn, content='users', content_rowid='id');"
    )
    g.run("INSERT INTO ext(ext) VALUES ('rebuild')")
    assert ("READ", "users", "ssn", "main", None) in g.calls
    assert g.run("SELECT rowid FROM ext WHERE ext MATCH '111'") == []


# --- constraints as oracles ----------------------------------------------------------------

CONSTRAINED = """
CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT, ssn TEXT UNIQUE, CHECK (ssn <> name));
INSERT INTO users VALUES (1, 'ann', '333'), (2, 'bob', '111'), (3, 'cy', '222');
"""


def test_a_check_over_the_secret_is_not_reported_and_sees_the_real_value() -> None:
    """Oracle: `SET name = ?` fails CHECK only on the right guess; no READ of ssn reported."""
    g = guarded(CONSTRAINED)
    with pytest.raises(apsw.ConstraintError, match="CHECK"):
        g.run("UPDATE users SET name = '111' WHERE id = 2")
    assert ("users", "ssn") not in g.reads()
    g.run("UPDATE users SET name = '999' WHERE id = 2")


def test_a_unique_index_on_the_secret_answers_a_guessed_insert() -> None:
    """Oracle: INSERT naming ssn fails UNIQUE only on a value already stored."""
    g = guarded(CONSTRAINED)
    with pytest.raises(apsw.ConstraintError, match="UNIQUE"):
        g.run("INSERT INTO users(id, name, ssn) VALUES (9, 'z', '111')")
    g.run("INSERT INTO users(id, name, ssn) VALUES (9, 'z', '112')")


def test_an_insert_leaving_a_unique_secret_to_its_default_reports_no_read() -> None:
    g = guarded(CONSTRAINED)
    g.run("INSERT INTO users(id, name) VALUES (9, 'z')")
    assert g.calls == [("INSERT", "users", None, "main", None)]


# --- names as the authorizer passes them ---------------------------------------------------

MIXED_CASE = """
CREATE TABLE Users(Id INTEGER PRIMARY KEY, SSN TEXT);
INSERT INTO Users VALUES (1, '111');
"""


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT ssn FROM users",
        "SELECT SSN FROM USERS",
        'SELECT "ssn" FROM "users"',
        "SELECT main.users.ssn FROM main.users",
        'SELECT "main"."Users"."sSn" FROM "MAIN"."USERS"',
        "SELECT u.ssn FROM users AS u",
    ],
)
def test_names_come_as_declared_whatever_the_case_and_quoting_written(sql: str) -> None:
    """Table and column arrive spelled as in CREATE TABLE; db is 'main': match folded names."""
    g = guarded(MIXED_CASE, hidden={("Users", "SSN")})
    assert g.run(sql) == [(None,)]
    assert ("READ", "Users", "SSN", "main", None) in g.calls


def test_a_rule_keyed_on_the_exact_declared_name_misses_another_spelling() -> None:
    """The callback's name is the declared one, so a rule written 'users.ssn' must fold case."""
    g = guarded(MIXED_CASE, hidden={("users", "ssn")})
    assert g.run("SELECT ssn FROM users") == [("111",)]


def test_after_a_rename_the_authorizer_passes_the_new_names() -> None:
    """A rule keyed on the old table or column name stops matching after ALTER TABLE RENAME."""
    g = guarded()
    g.run("ALTER TABLE users RENAME TO people")
    assert g.run("SELECT ssn FROM people WHERE id = 2") == [("111",)]
    assert g.reads() == [("people", "ssn"), ("people", "id")]
    g.run("ALTER TABLE people RENAME COLUMN ssn TO tax_id")
    g.run("SELECT tax_id FROM people WHERE id = 2")
    assert ("people", "tax_id") in g.reads()


def test_a_rowid_alias_and_a_whole_table_read_use_their_own_names() -> None:
    """`SELECT count(*)` reads the table with column '' and db None; rowid reads say 'ROWID'."""
    g = guarded(USERS + "CREATE VIRTUAL TABLE f USING fts5(x);")
    g.run("SELECT count(*) FROM users")
    assert ("READ", "users", "", None, None) in g.calls
    g.run("SELECT rowid FROM f")
    assert ("READ", "f", "ROWID", "main", None) in g.calls


# --- plan choice: an index on the secret orders rows that never name it --------------------

INDEXED = USERS + "CREATE INDEX u_ssn ON users(ssn);"


def test_a_scan_naming_no_hidden_column_comes_in_secret_order_via_a_covering_index() -> None:
    """Surprise, leak: `SELECT id FROM users` scans the narrower covering index u_ssn, so the
    ids arrive in ssn order (LIMIT 1 names the smallest ssn); no read of ssn is reported."""
    g = guarded(INDEXED)
    assert [i for (i,) in g.run("SELECT id FROM users")] == SSN_ORDER
    assert g.run("SELECT group_concat(id) FROM users") == [("2,3,1",)]
    assert g.run("SELECT id FROM users LIMIT 1") == [(2,)]
    assert ("users", "ssn") not in g.reads()
    plan = g.run("EXPLAIN QUERY PLAN SELECT id FROM users")
    assert "COVERING INDEX u_ssn" in plan[0][-1]


def test_order_by_a_wrapped_ignored_column_keeps_the_scan_order_of_the_index() -> None:
    """`ORDER BY +ssn` sorts NULL keys stably, so the covering index's order shows through."""
    g = guarded(INDEXED)
    assert [i for (i,) in g.run("SELECT id FROM users ORDER BY +ssn")] == SSN_ORDER
    assert [i for (i,) in g.run("SELECT id FROM users ORDER BY ssn, id")] == [1, 2, 3]


def test_a_window_ordered_by_the_ignored_column_numbers_rows_in_secret_order() -> None:
    g = guarded(INDEXED)
    rows = g.run("SELECT id, row_number() OVER (ORDER BY ssn) FROM users")
    assert [i for i, _ in sorted(rows, key=lambda row: row[1])] == SSN_ORDER


def test_group_by_the_ignored_column_keeps_the_first_row_in_index_order() -> None:
    """All keys are NULL, one group; its bare `id` is the row with the smallest real ssn."""
    g = guarded(INDEXED)
    assert g.run("SELECT id FROM users GROUP BY ssn") == [(2,)]


def test_an_expression_index_orders_by_the_real_expression() -> None:
    g = guarded(USERS + "CREATE INDEX u_low ON users(lower(ssn));")
    assert [i for (i,) in g.run("SELECT id FROM users ORDER BY lower(ssn)")] == SSN_ORDER
    assert g.run("SELECT id FROM users WHERE lower(ssn) = '111'") == []


def test_a_lookup_through_an_index_on_the_ignored_column_still_sees_null() -> None:
    """WHERE, min/max and DISTINCT through the index see NULL: the plan does not undo IGNORE."""
    g = guarded(INDEXED)
    assert g.run("SELECT id FROM users INDEXED BY u_ssn WHERE ssn = '111'") == []
    assert g.run("SELECT min(ssn), max(ssn) FROM users") == [(None, None)]
    assert g.run("SELECT DISTINCT ssn FROM users") == [(None,)]


# --- writes whose WHERE or constraint involves the ignored column --------------------------


def test_a_write_filtered_on_the_ignored_column_changes_nothing() -> None:
    """No changes-count oracle: WHERE ssn = guess is NULL = guess for every row."""
    g = guarded()
    g.run("UPDATE users SET name = 'hit' WHERE ssn = '111'")
    g.run("DELETE FROM users WHERE ssn = '222'")
    assert g.conn.changes() == 0
    assert g.plain("SELECT count(*) FROM users WHERE name = 'hit'") == [(0,)]
    assert g.plain("SELECT count(*) FROM users") == [(3,)]


def test_a_foreign_key_to_the_ignored_column_fails_even_for_a_stored_value() -> None:
    """The parent lookup is a reported READ; IGNORE makes it NULL, so every reference fails:
    no oracle, but a valid insert is refused."""
    g = guarded(
        "PRAGMA foreign_keys = ON;"
        + USERS.replace("ssn TEXT", "ssn TEXT UNIQUE")
        + "CREATE TABLE refs(r REFERENCES users(ssn));"
    )
    for guess in ("111", "112"):
        with pytest.raises(apsw.ConstraintError, match="FOREIGN KEY"):
            g.run(f"INSERT INTO refs VALUES ('{guess}')")
        assert ("READ", "users", "ssn", "main", None) in g.calls


def test_an_update_of_another_column_keeps_a_stored_generated_column_real() -> None:
    """No corruption: recomputing the STORED column on UPDATE is not an authorized read."""
    g = guarded(GENERATED)
    g.run("UPDATE users SET name = 'x' WHERE id = 1")
    assert ("users", "ssn") not in g.reads()
    assert g.plain("SELECT head FROM users WHERE id = 1") == [("33",)]


@pytest.mark.parametrize(
    "sql",
    [
        pytest.param("CREATE INDEX u_x ON users(ssn)", id="column"),
        pytest.param("CREATE INDEX u_x ON users(lower(ssn))", id="expression"),
        pytest.param("CREATE UNIQUE INDEX u_x ON users(ssn)", id="unique"),
    ],
)
def test_every_index_built_under_ignore_is_corrupt(sql: str) -> None:
    """An IGNOREd CREATE INDEX must never happen on the user's file: answer SQLITE_DENY."""
    g = guarded()
    g.run(sql)
    problems = g.plain("PRAGMA integrity_check")
    assert problems != [("ok",)]
    assert any("missing from index u_x" in p for (p,) in problems)


# --- which schema: the fourth argument -----------------------------------------------------


def test_the_fourth_argument_names_the_schema_that_holds_the_table() -> None:
    """A temp table shadows main's name (4th arg 'temp'); an attached one says its alias."""
    g = guarded(
        USERS + "ATTACH ':memory:' AS aux;"
        "CREATE TABLE aux.users(id, ssn); INSERT INTO aux.users VALUES (1, 'a');"
        "CREATE TEMP TABLE users(id, ssn); INSERT INTO temp.users VALUES (1, 't');"
    )
    g.run("SELECT ssn FROM users")
    assert g.calls[-1] == ("READ", "users", "ssn", "temp", None)
    g.run("SELECT ssn FROM aux.users")
    assert g.calls[-1] == ("READ", "users", "ssn", "aux", None)
    assert g.run("SELECT ssn FROM main.users WHERE id = 2") == [(None,)]


def test_dbstat_is_readable_and_names_no_user_column() -> None:
    """dbstat (compiled in) reports only reads of dbstat and sqlite_master: page sizes reach
    the caller (a length side channel); sqlite_dbpage is not compiled in."""
    g = guarded()
    assert g.run("SELECT count(*) FROM dbstat WHERE name = 'users'") == [(1,)]
    assert ("dbstat", "name") in g.reads()
    assert {table for table, _ in g.reads()} == {"dbstat", "sqlite_master"}
    assert ("users", "ssn") not in g.reads()
    with pytest.raises(apsw.SQLError, match="no such table"):
        g.run("SELECT * FROM sqlite_dbpage")


# --- protected tables: every indirect write is named, with the program that does it -------

PROTECTED = """
PRAGMA foreign_keys = ON;
CREATE TABLE inv(id INTEGER PRIMARY KEY, amt);
INSERT INTO inv VALUES (1, 10), (2, 20);
CREATE TABLE other(x);
CREATE TRIGGER t_other AFTER INSERT ON other BEGIN
    UPDATE inv SET amt = 0; DELETE FROM inv WHERE id = 2;
END;
CREATE VIEW vinv AS SELECT * FROM inv;
CREATE TRIGGER t_view INSTEAD OF INSERT ON vinv BEGIN INSERT INTO inv VALUES (new.id, new.amt); END;
CREATE TABLE par(id INTEGER PRIMARY KEY);
CREATE TABLE kid(p REFERENCES par(id) ON DELETE CASCADE);
INSERT INTO par VALUES (1);
INSERT INTO kid VALUES (1);
"""


def test_a_trigger_on_another_table_reports_its_writes_with_its_name() -> None:
    g = guarded(PROTECTED, hidden=())
    g.run("INSERT INTO other VALUES (1)")
    assert ("UPDATE", "inv", "amt", "main", "t_other") in g.calls
    assert ("DELETE", "inv", None, "main", "t_other") in g.calls


def test_an_instead_of_trigger_reports_the_write_to_the_base_table() -> None:
    g = guarded(PROTECTED, hidden=())
    g.run("INSERT INTO vinv VALUES (3, 30)")
    assert g.calls[:2] == [
        ("INSERT", "vinv", None, "main", None),
        ("INSERT", "inv", None, "main", "t_view"),
    ]


def test_drop_table_of_a_parent_reports_the_cascade_delete_of_the_child() -> None:
    """With foreign_keys ON, DROP TABLE deletes the parent's rows first; kid's DELETE is named."""
    g = guarded(PROTECTED, hidden=())
    g.run("DROP TABLE par")
    assert ("DROP_TABLE", "par", None, "main", None) in g.calls
    assert ("DELETE", "kid", None, "main", None) in g.calls
    assert g.plain("SELECT count(*) FROM kid") == [(0,)]


@pytest.mark.parametrize(
    ("sql", "call"),
    [
        pytest.param(
            "ALTER TABLE inv ADD COLUMN note",
            ("ALTER_TABLE", "main", "inv", None, None),
            id="alter",
        ),
        pytest.param(
            "CREATE INDEX i_amt ON inv(amt)",
            ("CREATE_INDEX", "i_amt", "inv", "main", None),
            id="index",
        ),
        pytest.param(
            "CREATE TRIGGER t2 AFTER DELETE ON inv BEGIN SELECT 1; END",
            ("CREATE_TRIGGER", "t2", "inv", "main", None),
            id="trigger",
        ),
        pytest.param(
            "CREATE TEMP TRIGGER t3 AFTER DELETE ON main.inv BEGIN SELECT 1; END",
            ("CREATE_TEMP_TRIGGER", "t3", "inv", "temp", None),
            id="temp-trigger",
        ),
        pytest.param("DROP TABLE inv", ("DROP_TABLE", "inv", None, "main", None), id="drop"),
    ],
)
def test_schema_changes_to_a_table_name_it(sql: str, call: Call) -> None:
    """ALTER_TABLE's arguments are (db, table), unlike the others' (object, table, db)."""
    g = guarded(PROTECTED, hidden=())
    g.run(sql)
    assert call in g.calls


def test_ignore_is_not_a_refusal_for_writes() -> None:
    """IGNORE on SQLITE_INSERT silently skips the insert, on SQLITE_UPDATE silently skips the
    column (no error either way), on SQLITE_DELETE deletes anyway: protect with SQLITE_DENY."""
    outcome: dict[int, list[tuple[Any, ...]]] = {}
    for op in (apsw.SQLITE_INSERT, apsw.SQLITE_UPDATE, apsw.SQLITE_DELETE):
        conn = apsw.Connection(":memory:")
        conn.execute(
            "CREATE TABLE t(id INTEGER PRIMARY KEY, a); INSERT INTO t VALUES (1, 'x'), (2, 'y')"
        )

        def ignore_t(code: int, a: str | None, *_: str | None, op: int = op) -> int:
            return apsw.SQLITE_IGNORE if code == op and a == "t" else apsw.SQLITE_OK

        conn.authorizer = ignore_t
        conn.execute("INSERT INTO t VALUES (3, 'z')")
        conn.execute("UPDATE t SET a = 'u' WHERE id = 1")
        conn.execute("DELETE FROM t WHERE id = 2")
        conn.authorizer = None
        outcome[op] = list(conn.execute("SELECT * FROM t ORDER BY id"))
    assert outcome[apsw.SQLITE_INSERT] == [(1, "u")]
    assert outcome[apsw.SQLITE_UPDATE] == [(1, "x"), (3, "z")]
    assert outcome[apsw.SQLITE_DELETE] == [(1, "u"), (3, "z")]


# --- what a trigger left in the schema does, and what REPLACE deletes (issue 30) ----------

LEFT = """
PRAGMA foreign_keys = ON;
CREATE TABLE par(id INTEGER PRIMARY KEY, name TEXT UNIQUE);
CREATE TABLE kid(p REFERENCES par(id) ON DELETE CASCADE);
CREATE TABLE g(a);
CREATE TABLE y(a);
CREATE TRIGGER ty AFTER INSERT ON y BEGIN DELETE FROM g; END;
CREATE TABLE x(a);
CREATE TRIGGER tx AFTER INSERT ON x BEGIN INSERT INTO y VALUES (1); DELETE FROM par; END;
"""


def test_a_trigger_fired_from_a_trigger_names_itself_and_a_key_action_names_nothing() -> None:
    """What a trigger's own body writes is named with its name; a trigger it fires names
    itself; a foreign key's action names nothing, even set off from inside a trigger. So a
    new trigger's own writes are told apart by name, and what they set off by preparing each
    of them on its own (`engine.rules.guard_schema`)."""
    g = guarded(LEFT, hidden=())
    g.run("EXPLAIN INSERT INTO x DEFAULT VALUES")
    writes = [c for c in g.calls if c[0] in ("INSERT", "DELETE")]
    assert writes == [
        ("INSERT", "x", None, "main", None),
        ("INSERT", "y", None, "main", "tx"),
        ("DELETE", "g", None, "main", "ty"),
        ("DELETE", "par", None, "main", "tx"),
        ("DELETE", "kid", None, "main", None),
    ]


def test_a_parent_that_may_replace_reports_its_childs_cascade_for_every_insert() -> None:
    """A plain INSERT into a table with ON CONFLICT REPLACE is prepared for the delete a
    conflict would cause: the child's cascade is reported whether or not a row conflicts,
    so only the rows the statement did change can tell (`engine.running.guard_rows`)."""
    g = guarded(LEFT.replace("name TEXT UNIQUE", "name TEXT UNIQUE ON CONFLICT REPLACE"), ())
    g.run("INSERT INTO par(name) VALUES ('new')")
    assert ("DELETE", "kid", None, "main", None) in g.calls
    g.run("INSERT INTO y(a) VALUES ('new')")
    assert ("DELETE", "kid", None, "main", None) not in g.calls


def test_with_recursive_triggers_a_replace_prepares_the_tables_delete_triggers() -> None:
    g = guarded(LEFT + "CREATE TRIGGER gone AFTER DELETE ON par BEGIN DELETE FROM g; END;", ())
    g.run("EXPLAIN INSERT OR REPLACE INTO par DEFAULT VALUES")
    assert ("DELETE", "g", None, "main", "gone") not in g.calls
    g.plain("PRAGMA recursive_triggers = ON")
    g.run("EXPLAIN INSERT OR REPLACE INTO par DEFAULT VALUES")
    assert ("DELETE", "g", None, "main", "gone") in g.calls


def test_the_firing_statements_conflict_clause_is_handed_to_the_trigger_body() -> None:
    """An application's INSERT OR REPLACE turns a trigger's plain INSERT into a REPLACE: an
    append that a trigger makes may delete a row, so no trigger the agent leaves may write
    an append-only table at all."""
    g = guarded(
        "CREATE TABLE log(k TEXT UNIQUE, v); INSERT INTO log VALUES ('a', 'first');"
        "CREATE TABLE src(k);"
        "CREATE TRIGGER t AFTER INSERT ON src BEGIN INSERT INTO log VALUES (new.k, 'new'); END;",
        hidden=(),
    )
    with pytest.raises(apsw.ConstraintError):
        g.plain("INSERT INTO src VALUES ('a')")
    g.plain("INSERT OR REPLACE INTO src VALUES ('a')")
    assert g.plain("SELECT * FROM log") == [("a", "new")]


def test_creating_a_table_with_keys_reports_each_key_as_a_create_index_of_it() -> None:
    g = guarded("", hidden=())
    g.run("CREATE TABLE t(k TEXT PRIMARY KEY, u UNIQUE, v)")
    assert g.ops("CREATE_INDEX") == [
        ("CREATE_INDEX", "sqlite_autoindex_t_1", "t", "main", None),
        ("CREATE_INDEX", "sqlite_autoindex_t_2", "t", "main", None),
    ]
    g.run("CREATE TABLE c AS SELECT 1 AS a")
    assert g.ops("INSERT") == [("INSERT", "sqlite_master", None, "main", None)]  # no row's


def test_an_update_of_a_generated_column_never_fires_its_trigger() -> None:
    """`UPDATE OF b` where b is generated: SQLite never fires it (b is never SET), so a
    trigger like it is one whose firing statements report nothing of it."""
    g = guarded(
        "CREATE TABLE t(a, b AS (a * 2)); CREATE TABLE log(x); INSERT INTO t(a) VALUES (1);"
        "CREATE TRIGGER tb AFTER UPDATE OF b ON t BEGIN INSERT INTO log VALUES (1); END;",
        hidden=(),
    )
    g.run("UPDATE t SET a = 5")
    assert [c for c in g.calls if c[4] == "tb"] == []
    assert g.plain("SELECT count(*) FROM log") == [(0,)]


REPLACING = """
CREATE TABLE e(id INTEGER PRIMARY KEY ON CONFLICT REPLACE, v);
CREATE TABLE t(k TEXT PRIMARY KEY ON CONFLICT REPLACE, v);
CREATE TABLE n(k TEXT PRIMARY KEY, u UNIQUE ON CONFLICT REPLACE);
CREATE TABLE w(k TEXT PRIMARY KEY ON CONFLICT REPLACE, v, g AS (v * 2)) WITHOUT ROWID;
INSERT INTO e VALUES (1, 'a'); INSERT INTO t VALUES ('x', 1); INSERT INTO n VALUES (NULL, 7);
INSERT INTO w VALUES ('x', 1);
"""


def test_a_preupdate_hook_sees_each_row_replace_deletes_even_one_it_overwrites() -> None:
    """Where the new row takes the old one's rowid SQLite overwrites it in place, and still
    tells the preupdate hook of a DELETE first; `rowid` is the deleted row's."""
    conn = apsw.Connection(":memory:")
    conn.execute(REPLACING)
    seen: list[tuple[str, str, int]] = []
    conn.preupdate_hook(lambda c: seen.append((c.op, c.table_name, c.rowid)), id="facts")
    conn.execute("INSERT INTO e VALUES (1, 'a'); INSERT INTO t VALUES ('x', 1);")
    conn.execute("INSERT INTO n VALUES ('k', 7)")
    assert seen == [
        ("DELETE", "e", 1), ("INSERT", "e", 1),
        ("DELETE", "t", 1), ("INSERT", "t", 2),
        ("DELETE", "n", 1), ("INSERT", "n", 2),
    ]  # fmt: skip


def test_a_preupdate_hook_cannot_give_a_row_with_a_virtual_generated_column() -> None:
    conn = apsw.Connection(":memory:")
    conn.execute(REPLACING)
    errors: list[str] = []

    def hook(change: apsw.PreUpdate) -> None:
        try:
            _ = change.old if change.op == "DELETE" else change.new
        except apsw.RangeError as error:
            errors.append(f"{change.op} {change.rowid} {error}")

    conn.preupdate_hook(hook, id="facts")
    conn.execute("INSERT INTO w VALUES ('x', 2)")
    assert errors == [
        "DELETE 0 column index out of range",
        "INSERT 0 column index out of range",
    ]


def test_a_session_leaves_out_a_row_put_back_as_it_was_and_a_row_whose_key_is_null() -> None:
    """The changeset of a REPLACE that puts the same row back under the same key is empty;
    one that replaces a row whose PRIMARY KEY is NULL holds only the new row. The second
    is why a call that changes such a row keeps no changeset (`engine.undo.keys`)."""
    conn = apsw.Connection(":memory:")
    conn.execute(REPLACING)
    for sql, expected in [
        ("INSERT INTO e VALUES (1, 'a')", []),
        ("INSERT INTO t VALUES ('x', 1)", []),
        ("INSERT INTO e VALUES (1, 'b')", [("UPDATE", "e")]),
        ("INSERT INTO n VALUES ('k', 7)", [("INSERT", "n")]),
    ]:
        conn.execute("BEGIN")
        session = apsw.Session(conn, "main")
        session.config(apsw.SQLITE_SESSION_OBJCONFIG_ROWID, 1)
        session.attach(None)
        conn.execute(sql)
        changes = [(c.op, c.name) for c in apsw.Changeset.iter(session.changeset())]
        session.close()
        conn.execute("ROLLBACK")
        assert changes == expected, sql


# --- the session extension (what undo is built on) -----------------------------------------


def test_a_session_changeset_of_the_agents_write_holds_the_real_hidden_value() -> None:
    """Leak unless kept from the agent: the changeset records the old row whole, the hidden
    column included, for an UPDATE of another column as for a DELETE; IGNORE plays no part."""
    g = guarded()
    session = apsw.Session(g.conn, "main")
    session.attach()
    g.run("UPDATE users SET name = 'x' WHERE id = 1")
    g.run("DELETE FROM users WHERE id = 2")
    changes = [(c.op, c.old) for c in apsw.Changeset.iter(session.changeset())]
    assert changes == [("UPDATE", (1, "ann", "333")), ("DELETE", (2, "bob", "111"))]
    session.close()
