"""The guarded rows a statement did change, seen by a preupdate hook or in a changeset, and
the words that name them (`engine.running.guard_rows`), on plain connections."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import apsw
import pytest

from sqlgate.engine.rules.live_rules import NO_RULES, LiveRules
from sqlgate.engine.running.guard_rows import HOOK_ID, RowWatch, guarding, refuse_changed_rows
from sqlgate.engine.statements.policy import Operation
from sqlgate.errors import PolicyDenied

SCHEMA = """
PRAGMA foreign_keys = ON;
CREATE TABLE ev(id INTEGER PRIMARY KEY ON CONFLICT REPLACE, code TEXT UNIQUE ON CONFLICT REPLACE,
                note TEXT);
CREATE TABLE ev_text(k TEXT PRIMARY KEY ON CONFLICT REPLACE, n REAL);
CREATE TABLE ev_pair(a INTEGER, b TEXT, v, PRIMARY KEY(a, b) ON CONFLICT REPLACE) WITHOUT ROWID;
CREATE TABLE ev_virtual(k TEXT PRIMARY KEY ON CONFLICT REPLACE, v INTEGER, w AS (v * 2))
    WITHOUT ROWID;
CREATE TABLE ev_stored(id INTEGER PRIMARY KEY, u TEXT UNIQUE ON CONFLICT REPLACE,
                       s AS (length(u)) STORED);
CREATE TABLE ev_bare(tag BLOB UNIQUE ON CONFLICT REPLACE, v);
CREATE TABLE ev_empty(id INTEGER PRIMARY KEY ON CONFLICT REPLACE, v);
CREATE TABLE acc(id INTEGER PRIMARY KEY, name TEXT UNIQUE ON CONFLICT REPLACE);
CREATE TABLE led(id INTEGER PRIMARY KEY, acc INTEGER REFERENCES acc(id) ON DELETE CASCADE,
                 secret TEXT);
CREATE TABLE ev_fk(id INTEGER PRIMARY KEY, acc INTEGER REFERENCES acc(id) ON DELETE SET NULL);
CREATE TABLE plain(id INTEGER PRIMARY KEY ON CONFLICT REPLACE, v);
CREATE VIRTUAL TABLE ev_fts USING fts5(body);
INSERT INTO ev VALUES (1, 'x', 'it''s'), (2, 'y', NULL);
INSERT INTO ev_text VALUES ('a', 1.5), ('b', 2.5);
INSERT INTO ev_pair VALUES (1, 'a', x'00ff');
INSERT INTO ev_virtual VALUES ('a', 1);
INSERT INTO ev_stored(id, u) VALUES (1, 'long');
INSERT INTO ev_bare VALUES (x'01', 1);
INSERT INTO acc VALUES (1, 'cash'), (2, 'bank'), (3, 'spare');
INSERT INTO ev_fk VALUES (1, 2);
INSERT INTO led VALUES (7, 1, 'pin');
INSERT INTO plain VALUES (1, 'p');
INSERT INTO ev_fts(rowid, body) VALUES (1, 'one');
INSERT INTO ev_fts(rowid, body) VALUES (2, 'two');
"""
APPEND_ONLY = frozenset(
    {
        "ev",
        "ev_text",
        "ev_pair",
        "ev_virtual",
        "ev_stored",
        "ev_bare",
        "ev_empty",
        "ev_fts",
        "ev_fk",
    }
)
SHADOWS = {f"ev_fts_{s}": "ev_fts" for s in ("data", "idx", "content", "docsize", "config")}
RULES = LiveRules(
    protected=frozenset({"led"}),
    append_only=APPEND_ONLY,
    hidden={"led": frozenset({"secret"}), "ev_stored": frozenset({"u"})},
    shadow_of=SHADOWS,
    shown={"ev": "Ev"},
)


@pytest.fixture
def conn() -> Iterator[apsw.Connection]:
    connection = apsw.Connection(":memory:")
    connection.execute(SCHEMA)
    connection.execute("BEGIN")
    yield connection
    connection.execute("ROLLBACK")
    connection.close()


@contextmanager
def watched(conn: apsw.Connection, rules: LiveRules = RULES) -> Iterator[RowWatch]:
    watch = RowWatch(conn, rules)
    conn.preupdate_hook(watch, id="test")
    try:
        yield watch
    finally:
        conn.preupdate_hook(None, id="test")


def session_refusal(conn: apsw.Connection, sql: str) -> str | None:
    """The changeset witness's refusal of `sql`, or None."""
    session = apsw.Session(conn, "main")
    session.config(apsw.SQLITE_SESSION_OBJCONFIG_ROWID, 1)
    session.attach(None)
    conn.execute(sql)
    changeset = session.changeset()
    session.close()
    facts = [Operation("INSERT", table) for table in sorted(APPEND_ONLY | {"led"})]
    facts.append(Operation("UPDATE", "ev_fk", "acc"))  # the foreign key's SET NULL
    try:
        refuse_changed_rows(conn, changeset, RULES, facts)
    except PolicyDenied as refused:
        return str(refused)
    return None


def watch_refusal(conn: apsw.Connection, sql: str) -> str | None:
    """The preupdate witness's refusal of `sql`, or None."""
    with watched(conn) as watch:
        conn.execute(sql)
    try:
        watch.refuse()
    except PolicyDenied as refused:
        return str(refused)
    return None


# (statement, None when no guarded row it changed is refused, or words of the refusal)
CASES = [
    pytest.param("INSERT INTO ev(code) VALUES ('new')", None, id="append"),
    pytest.param("INSERT INTO ev VALUES (1, 'z', 'n')", "Ev is append-only by the server's policy: "
                 "the statement would delete its existing row id = 1 (REPLACE deletes it: the new "
                 "row repeats its id = 1)", id="integer-key"),
    pytest.param("INSERT INTO ev(code, note) VALUES ('x', 'n')",
                 "its existing row id = 1 (REPLACE deletes it: the new row repeats its code = 'x')",
                 id="unique-column"),
    pytest.param("INSERT INTO ev VALUES (1, 'x', 'it''s')", None, id="put-back-as-it-was"),
    pytest.param("INSERT INTO ev(code) VALUES ('n1'), ('n1')", None, id="new-rows-replace-new"),
    pytest.param("INSERT INTO ev VALUES (-5, 'm', NULL), (-5, 'n', NULL)", None,
                 id="new-rows-below-the-highest"),
    pytest.param("INSERT INTO ev VALUES (5, 'q', NULL), (1, 'r', NULL)", "id = 1",
                 id="second-row-replaces"),
    pytest.param("INSERT INTO ev_text VALUES ('a', 9)", "row k = 'a'", id="text-key"),
    pytest.param("INSERT INTO ev_text VALUES ('b', 2.5)", None, id="text-key-put-back"),
    pytest.param("INSERT INTO ev_pair VALUES (1, 'a', 'z')", "row a = 1, b = 'a' (REPLACE",
                 id="without-rowid"),
    pytest.param("INSERT INTO ev_pair VALUES (1, 'b', 'z'), (1, 'b', 'w')", None,
                 id="without-rowid-new-rows"),
    pytest.param("INSERT INTO ev_pair VALUES (1, 'a', x'00ff')", None, id="without-rowid-put-back"),
    pytest.param("INSERT INTO ev_stored(id, u) VALUES (2, 'long')",
                 "row id = 1 (REPLACE deletes it: the new row repeats its u = (hidden))",
                 id="hidden-key"),
    pytest.param("INSERT OR REPLACE INTO ev_bare(rowid, tag, v) VALUES (1, x'01', 1)", None,
                 id="no-primary-key-put-back-under-its-rowid"),
    pytest.param("INSERT INTO ev_bare VALUES (x'01', 2)",
                 "row rowid = 1 (REPLACE deletes it: the new row repeats its tag = x'01')",
                 id="blob-key-no-primary-key"),
    pytest.param("INSERT INTO ev_empty VALUES (1, 'a'), (1, 'b')", None, id="was-empty"),
    pytest.param("INSERT INTO acc(name) VALUES ('cash')",
                 "led is protected by the server's policy: the statement would delete its row "
                 "id = 7 (by a foreign key's action", id="cascade-into-protected"),
    pytest.param("INSERT INTO acc(name) VALUES ('bank')",
                 "ev_fk is append-only by the server's policy: the statement would change its "
                 "existing row id = 1 (by a foreign key's action", id="set-null-in-append-only"),
    pytest.param("INSERT INTO acc(name) VALUES ('spare')", None, id="cascade-of-nothing"),
    pytest.param("INSERT INTO plain VALUES (1, 'q')", None, id="not-guarded"),
    pytest.param("DELETE FROM ev WHERE id = 2", "its existing row id = 2 (by a foreign key",
                 id="delete-names-no-conflict"),
]  # fmt: skip


@pytest.mark.parametrize(("sql", "refusal"), CASES)
@pytest.mark.parametrize("witness", [watch_refusal, session_refusal])
def test_both_witnesses_refuse_the_same_changes(
    conn: apsw.Connection, witness: object, sql: str, refusal: str | None
) -> None:
    assert callable(witness)
    found = witness(conn, sql)
    if refusal is None:
        assert found is None
    else:
        assert found is not None
        assert found.startswith("refused and rolled back: ")
        assert refusal in found
        assert "pin" not in found  # led.secret is hidden


@pytest.mark.parametrize(
    ("sql", "refusal"),
    [
        pytest.param("INSERT INTO ev_virtual VALUES ('a', 2)",
                     "its existing row (its key could not be read) (by a", id="virtual-column"),
        pytest.param("INSERT INTO ev_virtual VALUES ('b', 2), ('b', 3)",
                     "(its key could not be read)", id="virtual-column-new-rows"),
        pytest.param("INSERT OR REPLACE INTO ev_fts(rowid, body) VALUES (1, 'z')",
                     "ev_fts is append-only by the server's policy: the statement would delete its "
                     "existing row rowid = 1", id="fts5-replace"),
        pytest.param("INSERT INTO ev_fts(body) VALUES ('two')", None, id="fts5-append"),
        pytest.param("INSERT INTO ev_fts(ev_fts) VALUES ('optimize')", None,
                     id="fts5-rewrites-its-index-only"),
        pytest.param("INSERT INTO ev(code) VALUES (CAST(x'ff' AS TEXT))", None, id="not-utf8"),
    ],
)  # fmt: skip
def test_what_only_the_hook_sees(conn: apsw.Connection, sql: str, refusal: str | None) -> None:
    """A table with a VIRTUAL generated column gives the hook no values (the watch cannot
    tell a new row from an old one: it refuses), a virtual table's rows are its shadow's
    (no changeset ever holds them: such a write keeps no undo data)."""
    found = watch_refusal(conn, sql)
    if refusal is None:
        assert found is None
    else:
        assert found is not None
        assert refusal in found


def test_a_long_value_is_abridged_and_a_float_shown_as_written(conn: apsw.Connection) -> None:
    conn.execute("INSERT INTO ev_text VALUES (?, 1)", ("k" * 100,))
    found = watch_refusal(conn, f"INSERT INTO ev_text VALUES ('{'k' * 100}', 2)")
    assert found is not None
    assert "row k = '" + "k" * 39 + "… (102 characters)" in found
    conn.execute("CREATE TABLE ev_real(r REAL PRIMARY KEY ON CONFLICT REPLACE, v)")
    conn.execute("INSERT INTO ev_real VALUES (2.5, 1)")
    rules = LiveRules(append_only=frozenset({"ev_real"}))
    with watched(conn, rules) as watch:
        conn.execute("INSERT INTO ev_real VALUES (2.5, 2)")
    with pytest.raises(PolicyDenied, match=r"row r = 2\.5 \("):
        watch.refuse()


def changeset_of(conn: apsw.Connection, sql: str) -> bytes:
    session = apsw.Session(conn, "main")
    session.config(apsw.SQLITE_SESSION_OBJCONFIG_ROWID, 1)
    session.attach(None)
    conn.execute(sql)
    changeset = session.changeset()
    session.close()
    return changeset


def test_a_session_skips_the_facts_that_name_no_guarded_table(conn: apsw.Connection) -> None:
    changeset = changeset_of(conn, "INSERT INTO ev VALUES (1, 'z', 'n')")
    refuse_changed_rows(conn, changeset, RULES, [Operation("INSERT", "plain")])
    refuse_changed_rows(conn, changeset, RULES, [Operation("SELECT", "ev")])
    unnamed = [Operation("UPDATE"), Operation("DELETE")]  # SQLite named no table
    with pytest.raises(PolicyDenied, match="would delete its existing row id = 1"):
        refuse_changed_rows(conn, changeset, RULES, [*unnamed, Operation("INSERT", "EV")])


def test_a_protected_rows_insert_in_a_changeset_is_refused(conn: apsw.Connection) -> None:
    """The authorizer refuses it first; the changeset says so too, as an addition."""
    changeset = changeset_of(conn, "INSERT INTO led VALUES (8, NULL, 'pin2')")
    with pytest.raises(PolicyDenied) as refused:
        refuse_changed_rows(conn, changeset, RULES, [Operation("INSERT", "led")])
    assert "led is protected by the server's policy: the statement would add its row id = 8" in (
        str(refused.value)
    )


def test_a_changeset_of_another_shape_names_the_row_as_it_can(conn: apsw.Connection) -> None:
    """A changeset whose rows do not fit the table's columns now (a table of another
    shape under the name) gives no values: the row is named by what is left."""
    keyed = changeset_of(conn, "INSERT INTO ev VALUES (1, 'z', 'n')")
    bare = changeset_of(conn, "INSERT INTO ev_bare VALUES (x'01', 2)")
    conn.execute("DROP TABLE ev; CREATE TABLE ev(id INTEGER PRIMARY KEY, a, b, c, d)")
    conn.execute("DROP TABLE ev_bare; CREATE TABLE ev_bare(tag, v, w, x)")
    with pytest.raises(PolicyDenied, match=r"its existing row \(its key could not be read\)"):
        refuse_changed_rows(conn, keyed, RULES, [Operation("INSERT", "ev")])
    with pytest.raises(PolicyDenied, match=r"its existing row \(its key could not be read\)"):
        refuse_changed_rows(conn, bare, RULES, [Operation("INSERT", "ev_bare")])


def test_the_watch_remembers_only_new_rows_where_old_ones_could_have_been(
    conn: apsw.Connection,
) -> None:
    """Rows above the highest rowid there was are new whatever happens: only a new row at
    or below it is remembered (so a large append costs no memory); every new row of a
    WITHOUT ROWID table is."""
    with watched(conn) as watch:
        conn.execute("INSERT INTO ev(code) VALUES ('a1'), ('a2'), ('a3')")
        conn.execute("INSERT INTO ev VALUES (-5, 'b', NULL), (0, 'c', NULL)")
        conn.execute("INSERT INTO ev_empty VALUES (1, 'a'), (2, 'b')")
        conn.execute("INSERT INTO ev_pair VALUES (2, 'x', 1), (3, 'y', 2)")
    assert watch.tables["ev"].fresh == {-5, 0}
    assert watch.tables["ev_empty"].fresh == set()
    assert watch.tables["ev_pair"].fresh == {(2, "x"), (3, "y")}
    assert watch.changes == []


def test_the_watch_refuses_a_protected_rows_insert(conn: apsw.Connection) -> None:
    with watched(conn) as watch:
        conn.execute("INSERT INTO led VALUES (8, NULL, 'pin2')")
    with pytest.raises(PolicyDenied, match="would add its row id = 8"):
        watch.refuse()


def test_a_row_whose_key_is_null_is_its_rowid(conn: apsw.Connection) -> None:
    """Put back with the same values, a row whose PRIMARY KEY holds NULL is still not the
    row it was: it has another rowid (a session never records such a row: row-level undo
    steps aside for such a table, and the watch judges it)."""
    conn.execute("CREATE TABLE ev_null(k TEXT PRIMARY KEY, w UNIQUE ON CONFLICT REPLACE, v)")
    conn.execute("INSERT INTO ev_null VALUES (NULL, 'x', 'same')")
    rules = LiveRules(append_only=frozenset({"ev_null"}))
    with watched(conn, rules) as watch:
        conn.execute("INSERT INTO ev_null VALUES (NULL, 'x', 'same')")
    with pytest.raises(PolicyDenied, match=r"its existing row rowid = 1 \(REPLACE deletes it: "
                       r"the new row repeats its w = 'x'\)"):  # fmt: skip
        watch.refuse()


def test_guarding_watches_only_while_a_table_is_guarded(conn: apsw.Connection) -> None:
    with guarding(conn, NO_RULES):
        conn.execute("INSERT INTO ev VALUES (1, 'z', 'n')")  # nothing guarded: nothing refused
    with pytest.raises(PolicyDenied, match="Ev is append-only"), guarding(conn, RULES):
        conn.execute("INSERT INTO ev VALUES (2, 'z', 'n')")
    with pytest.raises(PolicyDenied, match="trigger t would"), guarding(conn, RULES):
        conn.execute("CREATE TRIGGER t AFTER INSERT ON plain BEGIN DELETE FROM led; END")


def test_guarding_takes_its_hook_away_whatever_happens(conn: apsw.Connection) -> None:
    seen: list[str] = []
    conn.preupdate_hook(lambda change: seen.append(change.op), id=HOOK_ID)  # ours, replaced

    def failing_statement() -> None:
        with guarding(conn, RULES):
            conn.execute("INSERT INTO ev VALUES (3, 'z', 'n')")
            raise ZeroDivisionError

    with pytest.raises(ZeroDivisionError):
        failing_statement()
    conn.execute("INSERT INTO ev VALUES (1, 'w', 'n')")  # no hook of that id is left
    assert seen == []


def test_the_watch_holds_little_whatever_the_statement(
    conn: apsw.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It keeps the first changes it judges, and refuses when there were more, even if
    those it kept were put back as they were; it remembers so many new rows a table, and
    counts a row past those as one that was there."""
    monkeypatch.setattr("sqlgate.engine.running.guard_rows.MAX_CHANGES", 2)
    monkeypatch.setattr("sqlgate.engine.running.guard_rows.MAX_FRESH", 2)
    conn.execute("INSERT INTO ev_text VALUES ('c', 3.5)")
    with watched(conn) as watch:
        conn.execute("INSERT INTO ev_text VALUES ('a', 1.5), ('b', 2.5)")  # both put back
    watch.refuse()
    with watched(conn) as watch:
        conn.execute("INSERT INTO ev_text VALUES ('a', 1.5), ('b', 2.5), ('c', 3.5)")
    assert len(watch.changes) == 2
    assert watch.seen == 3
    with pytest.raises(PolicyDenied, match="its existing row k = 'a'"):
        watch.refuse()
    with watched(conn) as watch:
        conn.execute("INSERT INTO ev_pair VALUES (7, 'a', 1), (8, 'a', 1), (9, 'a', 1)")
        conn.execute("INSERT INTO ev_pair VALUES (7, 'a', 2), (9, 'a', 2)")
    assert watch.tables["ev_pair"].fresh == {(7, "a"), (8, "a")}
    with pytest.raises(PolicyDenied, match="its existing row a = 9, b = 'a'"):
        watch.refuse()


def test_the_watch_keeps_a_hundred_changes_and_a_hundred_thousand_new_rows(
    conn: apsw.Connection,
) -> None:
    conn.execute(
        "CREATE TABLE ev_many(k INTEGER PRIMARY KEY ON CONFLICT REPLACE, v);"
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 101) "
        "INSERT INTO ev_many SELECT i, 'same' FROM n"
    )
    rules = LiveRules(append_only=frozenset({"ev_many", "ev_pair"}))
    for rows, refused in ((100, False), (101, True)):
        with watched(conn, rules) as watch:
            conn.execute(f"INSERT INTO ev_many SELECT k, v FROM ev_many WHERE k <= {rows}")
        if refused:
            with pytest.raises(PolicyDenied, match="its existing row k = 1 "):
                watch.refuse()
        else:
            watch.refuse()  # every row put back as it was
    with watched(conn, rules) as watch:
        conn.execute(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100001) "
            "INSERT INTO ev_pair SELECT i + 10, 'new', 1 FROM n"
        )
        conn.execute("INSERT INTO ev_pair VALUES (100010, 'new', 2)")  # the 100,000th: known
        watch.refuse()
        conn.execute("INSERT INTO ev_pair VALUES (100011, 'new', 2)")  # one past: unknown
    with pytest.raises(PolicyDenied, match="its existing row a = 100011, b = 'new'"):
        watch.refuse()


@pytest.fixture
def raw(conn: apsw.Connection) -> apsw.Connection:
    """Guarded rows another program stored with text that is not UTF-8 (issue 30)."""
    conn.execute("CREATE TABLE ev_raw(k TEXT PRIMARY KEY ON CONFLICT REPLACE, v)")
    conn.execute("INSERT INTO ev_raw VALUES (CAST(x'ff61' AS TEXT), CAST(x'fe' AS TEXT))")
    conn.execute("CREATE TABLE ev_raw_v(id INTEGER PRIMARY KEY ON CONFLICT REPLACE, v)")
    conn.execute("INSERT INTO ev_raw_v VALUES (1, CAST(x'fe' AS TEXT))")
    return conn


RAW_RULES = LiveRules(append_only=frozenset({"ev_raw", "ev_raw_v", "ev_text"}))


def raw_session_refusal(conn: apsw.Connection, sql: str) -> str:
    session = apsw.Session(conn, "main")
    session.config(apsw.SQLITE_SESSION_OBJCONFIG_ROWID, 1)
    session.attach(None)
    conn.execute(sql)
    changeset = session.changeset()
    session.close()
    facts = [Operation("INSERT", table) for table in sorted(RAW_RULES.append_only)]
    with pytest.raises(PolicyDenied) as refused:
        refuse_changed_rows(conn, changeset, RAW_RULES, facts)
    return str(refused.value)


def raw_watch_refusal(conn: apsw.Connection, sql: str) -> str:
    with watched(conn, RAW_RULES) as watch:
        conn.execute(sql)
    with pytest.raises(PolicyDenied) as refused:
        watch.refuse()
    return str(refused.value)


@pytest.mark.parametrize(
    ("sql", "session", "watch"),
    [
        pytest.param(
            "INSERT INTO ev_raw VALUES (CAST(x'ff61' AS TEXT), 'new')",
            "row k = CAST(x'ff61' AS TEXT) (REPLACE deletes it: the new row repeats its "
            "k = CAST(x'ff61' AS TEXT))",
            "row rowid = 1",
            id="a-key-that-is-not-utf8",
        ),
        pytest.param(
            "INSERT INTO ev_raw_v VALUES (1, 'new')",
            "row id = 1 (REPLACE deletes it: the new row repeats its id = 1)",
            "row rowid = 1",
            id="a-value-that-is-not-utf8",
        ),
        pytest.param(
            "INSERT INTO ev_text VALUES ('a', CAST(x'ff' AS TEXT))",
            "row k = 'a' (REPLACE deletes it: the new row repeats its k = 'a')",
            "row k = 'a' (REPLACE deletes it: the new row repeats its k = 'a')",
            id="replaced-by-a-row-that-is-not-utf8",
        ),
    ],
)
def test_rows_holding_text_that_is_not_utf8_are_refused_by_both_witnesses(
    raw: apsw.Connection, sql: str, session: str, watch: str
) -> None:
    raw.execute("SAVEPOINT one")
    assert session in raw_session_refusal(raw, sql)
    raw.execute("ROLLBACK TO one")
    assert watch in raw_watch_refusal(raw, sql)


def test_a_long_key_that_is_not_utf8_is_abridged(raw: apsw.Connection) -> None:
    raw.execute("INSERT INTO ev_raw VALUES (CAST(? AS TEXT), 1)", (b"\xff" * 400,))
    said = raw_session_refusal(raw, f"INSERT INTO ev_raw VALUES (CAST(x'{'ff' * 400}' AS TEXT), 2)")
    assert "k = CAST(x'ffff" in said
    assert len(said) < 700


def test_a_protected_rows_insert_that_is_not_utf8_is_named_by_its_key(
    raw: apsw.Connection,
) -> None:
    changeset = changeset_of(raw, "INSERT INTO ev_raw VALUES (CAST(x'fe61' AS TEXT), 1)")
    rules = LiveRules(protected=frozenset({"ev_raw"}))
    with pytest.raises(PolicyDenied) as refused:
        refuse_changed_rows(raw, changeset, rules, [Operation("INSERT", "ev_raw")])
    assert "would add its row k = CAST(x'fe61' AS TEXT)" in str(refused.value)
