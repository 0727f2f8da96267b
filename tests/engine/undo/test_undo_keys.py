"""Rows a changeset cannot record (issue 30): a row whose declared PRIMARY KEY holds NULL.

The session extension skips every change to such a row. Whether a call is affected is
decided by the rows it changes, never by what other rows or tables hold: a write that
changes no such row keeps its undo data and `undo` restores it exactly; write_query refuses
one that does, with nothing changed, and destructive_query takes a whole-file snapshot
for it."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from sqlgate.engine.undo.keys import nullable_keys
from sqlgate.errors import NotUndoable, PolicyDenied, SqlgateError
from sqlgate.service import Service
from tests.engine.undo.test_undo import direct, dump

UNDO = re.compile(r"; undo: sqlgate undo (?P<ref>\d+@[0-9a-f]{8}) --db ")

# every kind of key, and a NULL-key row wherever SQLite lets one be (not in strict_key,
# clustered, plain: there the key is NOT NULL or the rowid)
SCHEMA = """
CREATE TABLE plain (id INTEGER PRIMARY KEY, v TEXT);
INSERT INTO plain VALUES (1, 'one'), (2, 'two'), (3, 'three');
CREATE TABLE named (k TEXT PRIMARY KEY, u INT UNIQUE, v TEXT);
INSERT INTO named VALUES ('a', 1, 'keyed'), (NULL, 2, 'no key');
CREATE TABLE counted (n INT PRIMARY KEY, v REAL);
INSERT INTO counted VALUES (1, 1.5), (NULL, 2.5);
CREATE TABLE paired (a TEXT NOT NULL, b INTEGER, v BLOB, PRIMARY KEY (a, b));
INSERT INTO paired VALUES ('x', 1, x'01'), ('x', NULL, x'02');
CREATE TABLE strict_key (k TEXT NOT NULL PRIMARY KEY, v);
INSERT INTO strict_key VALUES ('s', 1);
CREATE TABLE backwards (id INTEGER PRIMARY KEY DESC, v TEXT);
INSERT INTO backwards VALUES (1, 'one'), (NULL, 'no id');
CREATE TABLE clustered (k TEXT PRIMARY KEY, v) WITHOUT ROWID;
INSERT INTO clustered VALUES ('w', 1);
CREATE TABLE loose (a, v);
INSERT INTO loose VALUES (NULL, 1), (1, 2);
CREATE TABLE "Odd Name-ü" ("key col" TEXT PRIMARY KEY, "v q" TEXT);
INSERT INTO "Odd Name-ü" VALUES ('q', 'quoted'), (NULL, 'no key');
CREATE TABLE parent (id TEXT PRIMARY KEY, name TEXT);
INSERT INTO parent VALUES ('p1', 'first'), ('p2', 'second');
CREATE TABLE child (tag TEXT, parent_id TEXT
    REFERENCES parent (id) ON UPDATE CASCADE ON DELETE SET NULL, PRIMARY KEY (tag, parent_id));
INSERT INTO child VALUES ('c1', 'p1'), ('c2', 'p2'), (NULL, 'p2');
CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);
CREATE TRIGGER notes_mirrored AFTER INSERT ON notes
    BEGIN INSERT INTO named (k, v) VALUES (NEW.body, 'mirrored'); END;
CREATE TRIGGER plain_touches AFTER UPDATE OF v ON plain WHEN NEW.v = 'touch'
    BEGIN UPDATE counted SET v = v + 1 WHERE n IS NULL; END;
"""


@pytest.fixture
def keys(make_service: Callable[..., Service], db_path: Path) -> Service:
    service = make_service()
    with direct(db_path) as conn:
        conn.execute(SCHEMA)
    return service


def content(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    """`dump`, but a table with a declared key other than the rowid is compared by its
    rows alone: the key names its rows there, and an undo that puts back a deleted row puts
    it back by its key (its rowid, which VACUUM renumbers too, is new)."""
    with direct(db) as conn:
        keyed = {
            str(name)
            for (name,) in conn.execute(
                "SELECT t.name FROM pragma_table_list AS t WHERE EXISTS (SELECT 1 FROM "
                "pragma_index_list(t.name) AS i WHERE i.origin = 'pk')"
            )
        }
    return {
        table: sorted(row[1:] for row in rows) if table in keyed else rows
        for table, rows in dump(db).items()
    }


def ref(out: str) -> str:
    found = UNDO.search(out)
    assert found, out
    return found["ref"]


def case(sql: str, id: str) -> Any:
    return pytest.param(sql, id=id)


# writes that change no row with a NULL key, while such rows sit in other tables and in
# the very table written
KEPT = [
    case("INSERT INTO named VALUES ('b', 3, 'new')", "insert-text-key"),
    case("INSERT INTO counted VALUES (2, 3.5)", "insert-int-key"),
    case("INSERT INTO paired VALUES ('y', 2, x'03')", "insert-composite-key"),
    case("INSERT INTO strict_key VALUES ('t', 2)", "insert-not-null-key"),
    case("INSERT INTO plain (v) VALUES ('four')", "insert-integer-primary-key"),
    case("INSERT INTO backwards VALUES (2, 'two')", "insert-integer-primary-key-desc"),
    case("INSERT INTO clustered VALUES ('x', 2)", "insert-without-rowid"),
    case("INSERT INTO loose VALUES (NULL, 3)", "insert-no-declared-key"),
    case("""INSERT INTO "Odd Name-ü" VALUES ('r', 'new')""", "insert-quoted-name"),
    case("INSERT INTO named (k, v) SELECT 'p' || id, v FROM plain", "insert-select"),
    case("UPDATE named SET v = 'changed' WHERE k = 'a'", "update-text-key-row"),
    case("UPDATE counted SET v = 9 WHERE n = 1", "update-int-key-row"),
    case("UPDATE paired SET v = x'ff' WHERE b = 1", "update-composite-key-row"),
    case("UPDATE backwards SET v = 'x' WHERE id = 1", "update-desc-key-row"),
    case("UPDATE plain SET v = 'changed' WHERE id > 0", "update-another-table"),
    case("""UPDATE "Odd Name-ü" SET "v q" = 'x' WHERE "key col" = 'q'""", "update-quoted"),
    case(
        "INSERT INTO named VALUES ('a', 1, 'upserted') "
        "ON CONFLICT (k) DO UPDATE SET v = excluded.v",
        "upsert",
    ),
    case("REPLACE INTO counted VALUES (1, 7.5)", "replace-a-keyed-row"),
    case("INSERT INTO notes (body) VALUES ('m')", "trigger-writes-a-keyed-row"),
    case("UPDATE plain SET v = 'no touch' WHERE id = 1", "trigger-not-fired"),
    case("UPDATE parent SET id = 'p9' WHERE id = 'p1'", "foreign-key-cascade"),
]


@pytest.mark.parametrize("sql", KEPT)
def test_a_write_that_changes_no_null_key_row_keeps_its_undo(
    keys: Service, db_path: Path, sql: str
) -> None:
    before = content(db_path)
    out = keys.write_query(sql)
    call = ref(out)
    assert content(db_path) != before
    keys.undo(call)
    assert content(db_path) == before


# writes that change a row whose key holds NULL, before or after the statement
REFUSED = [
    case("INSERT INTO named (v) VALUES ('no key either')", "insert-null-text-key"),
    case("INSERT INTO counted VALUES (NULL, 4.5)", "insert-null-int-key"),
    case("INSERT INTO paired VALUES ('y', NULL, x'04')", "insert-null-in-composite-key"),
    case("INSERT INTO backwards (v) VALUES ('no id either')", "insert-null-desc-key"),
    case("""INSERT INTO "Odd Name-ü" ("v q") VALUES ('none')""", "insert-null-quoted"),
    case(
        "INSERT INTO named (k, v) SELECT nullif(v, v), v FROM plain WHERE id = 1",
        "insert-select-null",
    ),
    case("UPDATE named SET v = 'changed' WHERE k IS NULL", "update-a-null-key-row"),
    case("UPDATE counted SET n = 5 WHERE n IS NULL", "update-key-from-null"),
    case("UPDATE paired SET b = NULL WHERE b = 1", "update-key-to-null"),
    case("UPDATE paired SET v = x'00' WHERE a = 'x'", "update-both-rows"),
    case("UPDATE backwards SET v = 'x' WHERE id IS NULL", "update-desc-null-row"),
    case("""UPDATE "Odd Name-ü" SET "v q" = 'x' WHERE "key col" IS NULL""", "update-quoted"),
    case(
        "INSERT INTO named VALUES ('z', 2, 'taken') ON CONFLICT (u) DO UPDATE SET v = 'upserted'",
        "upsert-updates-a-null-key-row",
    ),
    case("REPLACE INTO named VALUES ('z', 2, 'replaced')", "replace-deletes-a-null-key-row"),
    case("INSERT INTO notes (body) VALUES (NULL)", "trigger-inserts-a-null-key"),
    case("UPDATE plain SET v = 'touch' WHERE id = 1", "trigger-updates-a-null-key-row"),
    case("UPDATE parent SET id = 'p8' WHERE id = 'p2'", "foreign-key-cascade-into-one"),
    case("REPLACE INTO parent VALUES ('p1', 'renamed')", "foreign-key-sets-a-key-null"),
]


@pytest.mark.parametrize("sql", REFUSED)
def test_a_write_that_changes_a_null_key_row_is_refused_with_nothing_changed(
    keys: Service, db_path: Path, sql: str
) -> None:
    before = content(db_path)
    with pytest.raises(NotUndoable, match="PRIMARY KEY") as refused:
        keys.write_query(sql)
    assert isinstance(refused.value, PolicyDenied)
    assert "destructive_query" in str(refused.value)
    assert content(db_path) == before
    with direct(db_path) as conn:
        (error, detail) = conn.execute(
            "SELECT error, detail FROM query_log ORDER BY id DESC LIMIT 1"
        ).fetchone()
    assert error == str(refused.value)
    assert json.loads(detail)["refused"] is True


@pytest.mark.parametrize("sql", REFUSED)
def test_destructive_query_takes_a_snapshot_for_it_and_says_so(
    keys: Service, db_path: Path, sql: str
) -> None:
    out = keys.destructive_query(sql, reason="a NULL key")
    assert "; snapshot: " in out
    assert "undo:" not in out
    with direct(db_path) as conn:
        (detail,) = conn.execute("SELECT detail FROM query_log ORDER BY id DESC LIMIT 1").fetchone()
    assert "PRIMARY KEY" in json.loads(detail)["undo_fallback"]


@pytest.mark.parametrize(
    "sql",
    [
        case("DELETE FROM named WHERE k = 'a'", "delete-a-keyed-row-beside-a-null-one"),
        case("DELETE FROM paired WHERE b = 1", "delete-composite-keyed-row"),
        case("UPDATE counted SET v = 0 WHERE n = 1", "update-beside-a-null-key"),
        case("DELETE FROM plain WHERE id = 2", "delete-in-another-table"),
    ],
)
def test_destructive_query_keeps_rows_when_no_null_key_row_changes(
    keys: Service, db_path: Path, sql: str
) -> None:
    before = content(db_path)
    out = keys.destructive_query(sql, reason="r")
    keys.undo(ref(out))
    assert content(db_path) == before


def test_the_refusal_names_the_table_its_key_and_the_next_steps(keys: Service) -> None:
    with pytest.raises(NotUndoable) as refused:
        keys.write_query("UPDATE paired SET v = x'00' WHERE b IS NULL")
    assert str(refused.value) == (
        "refused and rolled back, nothing was changed: write_query keeps what undoes every "
        "change it makes, and cannot for this one: it changes a row of paired whose PRIMARY "
        "KEY (a, b) holds NULL, which a changeset skips (SQLite lets a key other than an "
        "INTEGER PRIMARY KEY hold NULL). Run it with destructive_query, which takes a "
        "whole-file snapshot first (the person may be asked to approve it). To make such rows "
        'undoable, give each a key (UPDATE "paired" SET ... WHERE "a" IS NULL OR "b" IS NULL: '
        "itself such a change, so through destructive_query)"
    )


@pytest.mark.parametrize(
    ("sql", "made"),
    [
        pytest.param("INSERT INTO named (v) VALUES ('new')", True, id="insert-without-a-key"),
        pytest.param("INSERT INTO paired (a, v) VALUES ('y', x'03')", True, id="insert-half-a-key"),
        pytest.param("UPDATE counted SET n = NULL WHERE n = 1", True, id="a-key-set-to-null"),
        pytest.param("INSERT INTO notes (body) VALUES (NULL)", True, id="a-trigger-inserts-one"),
        pytest.param(
            "UPDATE counted SET n = CASE WHEN n IS NULL THEN 5 END WHERE v > 0",
            True,
            id="keys-swapped-as-many-null-as-before",
        ),
        pytest.param(
            "INSERT INTO unnamed (rowid, v) VALUES (NULL, 'second')",
            True,
            id="rows-no-rowid-names-one-more",
        ),
        pytest.param(
            "UPDATE unnamed SET v = 'changed' WHERE rowid IS NULL",
            False,
            id="rows-no-rowid-names-one-changed",
        ),
        pytest.param(
            "UPDATE counted SET v = 0 WHERE n IS NULL", False, id="update-an-existing-one"
        ),
        pytest.param("UPDATE named SET k = 'b' WHERE k IS NULL", False, id="give-one-a-key"),
        pytest.param(
            "INSERT OR REPLACE INTO named VALUES ('z', 2, 'r')", False, id="replace-deletes-one"
        ),
    ],
)
def test_a_statement_that_makes_a_null_key_is_told_to_give_it_a_value(
    keys: Service, db_path: Path, sql: str, made: bool
) -> None:
    """A row the statement itself leaves with a NULL key: the statement can name the key
    (and keep its undo); a row that already had one can only get a key through
    destructive_query."""
    with direct(db_path) as conn:  # its columns take every name of the rowid
        conn.execute("CREATE TABLE unnamed (rowid TEXT PRIMARY KEY, _rowid_, oid, v)")
        conn.execute("INSERT INTO unnamed (v) VALUES ('first')")
    with pytest.raises(NotUndoable) as refused:
        keys.write_query(sql)
    text = str(refused.value)
    assert ("a value in the statement itself" in text) is made
    assert "Run it with destructive_query" in text or "run it with destructive_query" in text
    assert "itself such a change, so through destructive_query" in text


def test_the_issue_s_example_keeps_undo_for_every_other_table(
    make_service: Callable[..., Service], db_path: Path
) -> None:
    service = make_service()
    service.write_query("CREATE TABLE a (id INTEGER PRIMARY KEY, v TEXT)")
    service.write_query("INSERT INTO a (v) VALUES ('1'), ('2'), ('3')")
    service.write_query("CREATE TABLE b (k TEXT PRIMARY KEY, v TEXT)")
    with pytest.raises(NotUndoable, match="a row of b whose PRIMARY KEY \\(k\\) holds NULL"):
        service.write_query("INSERT INTO b (v) VALUES ('no key')")
    service.destructive_query("INSERT INTO b (v) VALUES ('no key')", reason="the owner wants it")
    before = content(db_path)
    out = service.write_query("UPDATE a SET v = 'changed' WHERE id > 0")
    assert out.startswith("ok: 3 rows affected; undo: sqlgate undo ")
    service.undo_call(ref(out), reason="wrong rows")
    assert content(db_path) == before


def test_a_null_key_row_another_program_adds_mid_session_is_seen(
    keys: Service, db_path: Path
) -> None:
    """The tables that may hold such rows are read per schema version; the rows per call."""
    keys.write_query("UPDATE strict_key SET v = 2 WHERE k = 's'")
    with direct(db_path) as conn:
        conn.execute(
            "CREATE TABLE later (k TEXT PRIMARY KEY, v); INSERT INTO later VALUES (NULL, 1)"
        )
    with pytest.raises(NotUndoable, match="a row of later whose PRIMARY KEY \\(k\\)"):
        keys.write_query("UPDATE later SET v = 2 WHERE v = 1")
    with direct(db_path) as conn:
        conn.execute("INSERT INTO named VALUES (NULL, 9, 'another')")
    with pytest.raises(NotUndoable, match="a row of named"):
        keys.write_query("UPDATE named SET v = 'x' WHERE u = 9")


def test_without_write_undo_a_null_key_write_runs_and_says_none_was_kept(
    make_service: Callable[..., Service], db_path: Path
) -> None:
    service = make_service(write_undo_keep=0)
    with direct(db_path) as conn:
        conn.execute(SCHEMA)
    out = service.write_query("INSERT INTO named (v) VALUES ('no key')")
    assert (
        out == "ok: 1 row affected (last_insert_rowid=3); undo: none kept (--write-undo-keep is 0)"
    )


def test_a_table_whose_columns_take_the_rowid_names_is_judged_by_its_null_key_rows(
    make_service: Callable[..., Service], db_path: Path
) -> None:
    """Its rows cannot be named by rowid: its NULL-key rows are compared by their values,
    so a keyed write keeps its undo, and a change to such a row is refused."""
    service = make_service()
    with direct(db_path) as conn:
        conn.execute(
            'CREATE TABLE "all names" (rowid TEXT PRIMARY KEY, _rowid_, oid);'
            "INSERT INTO \"all names\" VALUES ('r', 1, 2)"
        )
    before = content(db_path)
    out = service.write_query("""UPDATE "all names" SET oid = 3 WHERE rowid = 'r'""")
    service.undo(ref(out))
    assert content(db_path) == before
    with pytest.raises(NotUndoable, match="a row of all names"):
        service.write_query("""INSERT INTO "all names" VALUES (NULL, 1, 2)""")
    with direct(db_path) as conn:
        conn.execute("""INSERT INTO "all names" VALUES (NULL, 1, 2), (NULL, 1, 3)""")
    before = content(db_path)
    out = service.write_query("""UPDATE "all names" SET oid = 4 WHERE rowid = 'r'""")
    service.undo(ref(out))
    assert content(db_path) == before
    with pytest.raises(NotUndoable, match="a row of all names"):
        service.write_query("""UPDATE "all names" SET oid = 4 WHERE rowid IS NULL AND oid = 2""")
    assert content(db_path) == before


# -- which tables may hold such a row (engine.undo.keys.nullable_keys) ----------------------


@pytest.mark.parametrize(
    ("ddl", "keys"),
    [
        pytest.param("CREATE TABLE t (k TEXT PRIMARY KEY, v)", ("k",), id="text"),
        pytest.param("CREATE TABLE t (k INT PRIMARY KEY)", ("k",), id="int-is-not-integer"),
        pytest.param("CREATE TABLE t (k PRIMARY KEY)", ("k",), id="no-type"),
        pytest.param("CREATE TABLE t (id INTEGER PRIMARY KEY DESC)", ("id",), id="integer-desc"),
        pytest.param("CREATE TABLE t (id INTEGER PRIMARY KEY)", None, id="integer-is-rowid"),
        pytest.param("CREATE TABLE t (id integer primary key)", None, id="lower-case"),
        pytest.param(
            "CREATE TABLE t (id INTEGER, v, PRIMARY KEY (id DESC))", None, id="constraint-desc"
        ),
        pytest.param(
            "CREATE TABLE t (a NOT NULL, b, PRIMARY KEY (b, a))", ("b", "a"), id="key-order"
        ),
        pytest.param(
            "CREATE TABLE t (a NOT NULL, b NOT NULL, PRIMARY KEY (a, b))", None, id="not-null"
        ),
        pytest.param("CREATE TABLE t (k TEXT NOT NULL PRIMARY KEY)", None, id="not-null-one"),
        pytest.param("CREATE TABLE t (k TEXT PRIMARY KEY) WITHOUT ROWID", None, id="clustered"),
        pytest.param("CREATE TABLE t (a, b)", None, id="no-key"),
        pytest.param("CREATE TABLE t (a UNIQUE, b)", None, id="unique-is-no-key"),
        pytest.param("CREATE VIRTUAL TABLE t USING fts5 (body)", None, id="virtual"),
        pytest.param("CREATE VIEW t AS SELECT 1 AS k", None, id="view"),
    ],
)
def test_which_tables_may_hold_a_null_key(ddl: str, keys: tuple[str, ...] | None) -> None:
    conn = apsw.Connection(":memory:")
    conn.execute(ddl)
    found = {key.table: key.keys for key in nullable_keys(conn)}
    assert found == ({} if keys is None else {"t": keys})


def image(column: str) -> str:
    return (
        f'typeof("{column}"), CASE WHEN typeof("{column}") = \'text\' '
        f'THEN CAST("{column}" AS BLOB) ELSE "{column}" END'
    )


@pytest.mark.parametrize(
    ("columns", "probe"),
    [
        pytest.param(
            '"k k" PRIMARY KEY, v AS (1)',
            f'SELECT rowid, {image("k k")} FROM main."T t" WHERE "k k" IS NULL',
            id="rowid",
        ),
        pytest.param(
            "ROWID, b, PRIMARY KEY (b, ROWID)",
            f'SELECT _rowid_, {image("ROWID")}, {image("b")} FROM main."T t" '
            'WHERE "b" IS NULL OR "ROWID" IS NULL',
            id="_rowid_",
        ),
        pytest.param(
            "rowid PRIMARY KEY, _ROWID_ AS (1)",
            f'SELECT oid, {image("rowid")} FROM main."T t" WHERE "rowid" IS NULL',
            id="a-generated-column-takes-one",
        ),
        pytest.param(
            "rowid PRIMARY KEY, _rowid_, Oid",
            f'SELECT NULL, {image("rowid")}, {image("_rowid_")}, {image("Oid")} FROM main."T t" '
            'WHERE "rowid" IS NULL',
            id="no-name-left",
        ),
    ],
)
def test_rows_are_read_whole_and_named_by_a_rowid_name_no_column_takes(
    columns: str, probe: str
) -> None:
    conn = apsw.Connection(":memory:")
    conn.execute(f'CREATE TABLE "T t" ({columns})')
    (found,) = nullable_keys(conn)
    assert found.probe == probe


def test_a_null_key_row_is_compared_as_stored_and_its_text_never_decoded(
    keys: Service, db_path: Path
) -> None:
    """A value of another type that Python calls equal (1 and 1.0) is a change; text that is
    not valid UTF-8 is compared by its bytes; a write of what a row held is no change."""
    with direct(db_path) as conn:
        conn.execute("INSERT INTO named VALUES (NULL, 5, CAST(x'ff61' AS TEXT))")
    with pytest.raises(NotUndoable, match="a row of counted"):
        keys.write_query("UPDATE counted SET v = 2 WHERE n IS NULL AND v = 2.5 + 0")
    with pytest.raises(NotUndoable, match="a row of named"):
        keys.write_query("UPDATE named SET v = CAST(x'ff62' AS TEXT) WHERE u = 5")
    out = keys.write_query("UPDATE named SET v = v WHERE k IS NULL")
    assert out == "ok: 2 rows affected; no value changed, so there is nothing to undo"
    with direct(db_path) as conn:  # paired.v (BLOB) keeps each value's type
        conn.execute("UPDATE paired SET v = 2.0 WHERE b IS NULL")
    with pytest.raises(NotUndoable, match="a row of paired"):
        keys.write_query("UPDATE paired SET v = 2 WHERE b IS NULL")
    assert keys.read_query("SELECT typeof(v) FROM paired WHERE b IS NULL") == (
        "typeof(v)\nreal\n# 1 row"
    )


# -- the property: undo kept and exact, or refused with nothing changed ---------------------

KEY_KINDS = {  # the key column, and a table constraint
    "text": ("k TEXT PRIMARY KEY", ""),
    "int": ("k INT PRIMARY KEY", ""),
    "integer-desc": ("k INTEGER PRIMARY KEY DESC", ""),
    "composite": ("k INT", ", PRIMARY KEY (j, k)"),
    "rowid": ("k INTEGER PRIMARY KEY", ""),
}
KEYS = st.one_of(st.none(), st.integers(min_value=0, max_value=4))
UNIQUES = st.integers(min_value=0, max_value=6)


@st.composite
def writes(draw: st.DrawFn) -> tuple[str, list[Any]]:
    """A write to t whose every matched row changes (no write that sets what was there)."""
    key, unique = draw(KEYS), draw(UNIQUES)
    return draw(
        st.sampled_from(
            [
                ("INSERT INTO t (k, u, v) VALUES (?, ?, 'new')", [key, unique]),
                ("UPDATE t SET v = v || '+' WHERE k = ?", [key]),
                ("UPDATE t SET v = v || '+' WHERE k IS NULL", []),
                ("UPDATE t SET v = v || '+' WHERE u = ?", [unique]),
                ("UPDATE t SET k = ?, v = v || '+' WHERE u = ?", [key, unique]),
                ("REPLACE INTO t (k, u, v) VALUES (?, ?, 'replaced')", [key, unique]),
                (
                    "INSERT INTO t (k, u, v) VALUES (?, ?, 'new') "
                    "ON CONFLICT (u) DO UPDATE SET v = v || '+'",
                    [key, unique],
                ),
            ]
        )
    )


def null_key_rows(conn: apsw.Connection) -> set[tuple[Any, ...]]:
    return {tuple(row) for row in conn.execute("SELECT rowid, * FROM t WHERE k IS NULL")}


def changes_a_null_key_row(db: Path, sql: str, params: list[Any]) -> bool | None:
    """Whether `sql` changes a row of t whose key holds NULL, before or after, run on a
    plain connection and rolled back; None when SQLite refuses it."""
    with direct(db) as conn:
        conn.execute("BEGIN")
        try:
            before = null_key_rows(conn)
            try:
                conn.execute(sql, params)
            except (apsw.ConstraintError, apsw.MismatchError):
                return None
            return null_key_rows(conn) != before
        finally:
            conn.execute("ROLLBACK")


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    kind=st.sampled_from(sorted(KEY_KINDS)),
    rows=st.lists(st.tuples(KEYS, UNIQUES), max_size=8),
    write=writes(),
)
def test_a_write_keeps_an_exact_undo_or_is_refused_with_nothing_changed(
    service: Service, kind: str, rows: list[tuple[Any, int]], write: tuple[str, list[Any]]
) -> None:
    db = service.settings.db
    with direct(db) as conn:
        conn.execute("DROP TABLE IF EXISTS t; DROP TABLE IF EXISTS other")
        key, constraint = KEY_KINDS[kind]
        conn.execute(
            f"CREATE TABLE t (j TEXT NOT NULL DEFAULT 'j', {key}, u INT UNIQUE, "
            f"v TEXT NOT NULL DEFAULT 'v'{constraint})"
        )
        conn.executemany("INSERT OR IGNORE INTO t (k, u) VALUES (?, ?)", rows)
        conn.execute(  # a NULL-key row no write here touches
            "CREATE TABLE other (k TEXT PRIMARY KEY, v); INSERT INTO other VALUES (NULL, 1)"
        )
    sql, params = write
    expected = changes_a_null_key_row(db, sql, params)
    before = content(db)
    try:
        out = service.write_query(sql, params)
    except NotUndoable:
        event("refused")
        assert expected is True
        assert content(db) == before
        return
    except SqlgateError:
        event("SQLite refused it")
        assert expected is None
        assert content(db) == before
        return
    assert expected is False, out
    event("kept" if UNDO.search(out) else "changed nothing")
    if UNDO.search(out):
        service.undo(ref(out))
    assert content(db) == before
