"""REPLACE into a guarded table's world: refused only when it would delete a row (issue 30 §4).

An append-only table whose definition says `ON CONFLICT REPLACE` (on an INTEGER PRIMARY
KEY, a TEXT key, a UNIQUE column, a WITHOUT ROWID composite key, a BLOB key of a table
without a PRIMARY KEY), a statement of its own that says REPLACE, a trigger that inserts, and
a parent whose REPLACE would reach a guarded child through a foreign key's action. An INSERT
that conflicts with nothing is an append and runs; one that would delete (or rewrite) an
existing row of a guarded table is refused and rolled back, naming the row. Each case runs
on every path a write can take: write_query with its undo data (a changeset), without it
(`--write-undo-keep 0`, `--no-audit`), and destructive_query (a changeset, or a whole-file
snapshot with `--undo file`). On main b73da57 every INSERT into such a table was refused,
conflict or not: the ALLOWED rows failed first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from sqlgate.config import Settings
from sqlgate.errors import NotUndoable, PolicyDenied
from sqlgate.service import Service
from tests.conftest import FakeClock

SCHEMA = """
PRAGMA foreign_keys = ON;
CREATE TABLE ev_int(id INTEGER PRIMARY KEY ON CONFLICT REPLACE, v TEXT);
CREATE TABLE ev_text(k TEXT PRIMARY KEY ON CONFLICT REPLACE, n INTEGER);
CREATE TABLE ev_uniq(id INTEGER PRIMARY KEY, code TEXT, amount REAL,
                     UNIQUE(code) ON CONFLICT REPLACE);
CREATE TABLE ev_pair(a INTEGER, b TEXT, v, PRIMARY KEY(a, b) ON CONFLICT REPLACE) WITHOUT ROWID;
CREATE TABLE ev_blob(tag BLOB UNIQUE ON CONFLICT REPLACE, v);
CREATE TABLE ev_plain(id INTEGER PRIMARY KEY, k TEXT UNIQUE, v);
CREATE TABLE ev_nullkey(k TEXT PRIMARY KEY, u INTEGER UNIQUE ON CONFLICT REPLACE, v);
CREATE TABLE acc(id INTEGER PRIMARY KEY, name TEXT UNIQUE ON CONFLICT REPLACE);
CREATE TABLE led(id INTEGER PRIMARY KEY, acc INTEGER REFERENCES acc(id) ON DELETE CASCADE);
CREATE TABLE ev_fk(id INTEGER PRIMARY KEY, acc INTEGER REFERENCES acc(id) ON DELETE SET NULL);
CREATE TABLE vendor(id INTEGER PRIMARY KEY, name TEXT UNIQUE ON CONFLICT REPLACE);
CREATE TABLE ev_vendor(id INTEGER PRIMARY KEY,
                       vendor INTEGER REFERENCES vendor(id) ON DELETE SET NULL);
CREATE VIRTUAL TABLE ev_fts USING fts5(body);
CREATE TABLE src(a TEXT);
CREATE TRIGGER src_logs AFTER INSERT ON src BEGIN
    INSERT INTO ev_uniq(code, amount) VALUES (new.a, 0);
END;
CREATE TRIGGER src_replaces AFTER UPDATE ON src BEGIN
    REPLACE INTO ev_text VALUES (new.a, 0);
END;
INSERT INTO ev_int VALUES (1, 'a'), (2, 'b');
INSERT INTO ev_text VALUES ('a', 1), ('b', 2);
INSERT INTO ev_uniq VALUES (1, 'x', 1.5);
INSERT INTO ev_pair VALUES (1, 'a', 'v');
INSERT INTO ev_blob VALUES (x'01', 1);
INSERT INTO ev_plain VALUES (1, 'a', 'v');
INSERT INTO ev_nullkey VALUES (NULL, 7, 'n'), ('k', 8, 'm');
INSERT INTO acc VALUES (1, 'cash'), (2, 'bank'), (3, 'spare');
INSERT INTO led VALUES (1, 1);
INSERT INTO ev_fk VALUES (1, 2);
INSERT INTO vendor VALUES (1, 'acme'), (2, 'idle');
INSERT INTO ev_vendor VALUES (5, 1);
INSERT INTO ev_fts(rowid, body) VALUES (1, 'one'), (2, 'two');
INSERT INTO src VALUES ('seed');
"""
APPEND_ONLY = (
    "ev_int", "ev_text", "ev_uniq", "ev_pair", "ev_blob", "ev_plain", "ev_nullkey", "ev_fk",
    "ev_fts", "ev_vendor",
)  # fmt: skip
BY_ROWID = ("ev_blob", "ev_fts")  # no PRIMARY KEY: a row is its rowid
GUARDED = (*APPEND_ONLY, "led")

Tool = Callable[[Service, str], str]


def write(service: Service, sql: str) -> str:
    return service.write_query(sql)


def destructive(service: Service, sql: str) -> str:
    return service.destructive_query(sql, reason="red team")


# every path a write takes: (tool, settings)
PATHS = {
    "write_query with undo": (write, {}),
    "write_query --write-undo-keep 0": (write, {"write_undo_keep": 0}),
    "write_query --no-audit": (write, {"audit": False}),
    "destructive_query with undo": (destructive, {}),
    "destructive_query --undo file": (destructive, {"undo": "file"}),
    "destructive_query --no-audit": (destructive, {"audit": False}),
}


@pytest.fixture(params=sorted(PATHS))
def path(
    request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock
) -> Iterator[tuple[Service, Tool]]:
    tool, extra = PATHS[request.param]
    settings = Settings(
        db=tmp_path / "agent.db",
        protect_table=("led",),
        append_only_table=APPEND_ONLY,
        confirm="never",
        **extra,
    )
    service = Service.open(settings, clock=clock, session="s-replace")
    with service.db.writer:
        service.db.writer.execute(SCHEMA)
    yield service, tool
    service.close()


def rows_of(service: Service) -> dict[str, set[tuple[Any, ...]]]:
    """Each guarded table's rows as its key names them: by rowid where it has no PRIMARY
    KEY (BY_ROWID), else by their columns (a TEXT key's rowid is SQLite's own)."""
    conn = service.db.writer
    return {
        t: set(conn.execute(f"SELECT {'rowid, ' if t in BY_ROWID else ''}* FROM {t}"))
        for t in GUARDED
    }


# (statement, words the refusal names: the table and the row it would delete or rewrite)
REFUSED = [
    pytest.param("INSERT INTO ev_int VALUES (1, 'z')", ("ev_int", "id = 1"), id="int-key"),
    pytest.param("REPLACE INTO ev_int VALUES (2, 'z')", ("ev_int", "id = 2"), id="replace-verb"),
    pytest.param("INSERT INTO ev_int(id, v) SELECT id, 'copy' FROM ev_int", ("ev_int",),
                 id="insert-select-over-every-row"),
    pytest.param("WITH x AS (SELECT 1 AS id) REPLACE INTO ev_int SELECT id, 'w' FROM x",
                 ("ev_int", "id = 1"), id="with-replace"),
    pytest.param("INSERT INTO ev_text VALUES ('a', 99)", ("ev_text", "k = 'a'"), id="text-key"),
    pytest.param("INSERT INTO ev_uniq(code, amount) VALUES ('x', 9)",
                 ("ev_uniq", "code = 'x'", "id = 1"), id="unique-column"),
    pytest.param("INSERT INTO ev_uniq(code) VALUES ('new1'), ('x')", ("ev_uniq", "code = 'x'"),
                 id="second-row-conflicts"),
    pytest.param("INSERT INTO ev_pair VALUES (1, 'a', 'new')", ("ev_pair", "a = 1, b = 'a'"),
                 id="without-rowid-pair"),
    pytest.param("INSERT INTO ev_blob VALUES (x'01', 5)", ("ev_blob", "tag = x'01'"),
                 id="blob-key-no-primary-key"),
    pytest.param("INSERT INTO ev_blob VALUES (x'01', 1)", ("ev_blob", "rowid = 1"),
                 id="same-values-new-rowid"),
    pytest.param("INSERT INTO ev_nullkey(k, u, v) VALUES ('y', 7, 'r')",
                 ("ev_nullkey", "u = 7"), id="row-with-null-primary-key"),
    pytest.param("INSERT OR REPLACE INTO ev_plain VALUES (5, 'a', 'w')", ("ev_plain", "k = 'a'"),
                 id="statement-says-replace"),
    pytest.param("INSERT OR REPLACE INTO ev_fts(rowid, body) VALUES (1, 'z')",
                 ("ev_fts", "rowid = 1"), id="fts5-replace"),
    pytest.param("INSERT INTO src VALUES ('x')", ("ev_uniq", "code = 'x'"),
                 id="trigger-insert-conflicts"),
    pytest.param("UPDATE src SET a = 'a' WHERE a = 'seed'", ("ev_text", "k = 'a'"),
                 id="trigger-replace-conflicts"),
    pytest.param("INSERT INTO vendor(name) VALUES ('acme')", ("ev_vendor is append-only", "id = 5"),
                 id="parent-replace-sets-null-in-every-tier"),
    pytest.param("INSERT INTO acc(name) VALUES ('cash')", ("led is protected", "id = 1"),
                 id="parent-replace-cascades-into-protected"),
    pytest.param("INSERT INTO acc(name) VALUES ('bank')", ("ev_fk is append-only", "id = 1"),
                 id="parent-replace-sets-null-in-append-only"),
]  # fmt: skip
# a parent's (acc's) REPLACE may delete rows of a child: write_query never deletes, whatever
# the child (the tier's rule, which names destructive_query), so these are judged there


@pytest.mark.parametrize(("sql", "words"), REFUSED)
def test_a_statement_that_would_delete_or_rewrite_a_guarded_row_is_refused(
    path: tuple[Service, Tool], sql: str, words: tuple[str, ...]
) -> None:
    service, tool = path
    before = rows_of(service)
    with pytest.raises(PolicyDenied) as refused:
        tool(service, sql)
    message = str(refused.value)
    if tool is write and " acc(" in sql:
        assert "DELETE needs destructive_query" in message  # PARENT: the tier's rule first
        assert rows_of(service) == before
        return
    for word in words:
        assert word in message
    assert "no tool will" in message
    assert "nothing was changed" in message
    assert rows_of(service) == before


ALLOWED = [
    pytest.param("INSERT INTO ev_int(v) VALUES ('c')", id="int-key-new"),
    pytest.param("INSERT INTO ev_int VALUES (10, 'c')", id="int-key-given"),
    pytest.param("INSERT OR REPLACE INTO ev_int VALUES (11, 'd')", id="replace-verb-no-conflict"),
    pytest.param("REPLACE INTO ev_text VALUES ('c', 3)", id="text-key-new"),
    pytest.param("INSERT INTO ev_int VALUES (1, 'a')", id="same-row-same-key"),
    pytest.param("INSERT INTO ev_text VALUES ('b', 2)", id="same-row-same-text-key"),
    pytest.param("INSERT INTO ev_uniq(code, amount) VALUES ('y', 2.5)", id="unique-new"),
    pytest.param("INSERT INTO ev_uniq(code) VALUES ('n1'), ('n1')",
                 id="new-rows-replace-each-other"),
    pytest.param("INSERT INTO ev_pair VALUES (1, 'b', 'w'), (2, 'a', 'w')", id="without-rowid-new"),
    pytest.param("INSERT INTO ev_blob VALUES (x'02', 2)", id="blob-new"),
    pytest.param("INSERT INTO ev_nullkey(k, u, v) VALUES ('z', 9, 'q')", id="nullable-key-new"),
    pytest.param("INSERT OR IGNORE INTO ev_int VALUES (1, 'zz')", id="or-ignore-conflict"),
    pytest.param("INSERT INTO ev_int VALUES (1, 'zz') ON CONFLICT DO NOTHING", id="do-nothing"),
    pytest.param("INSERT OR REPLACE INTO ev_plain VALUES (7, 'q', 'w')", id="plain-replace-new"),
    pytest.param("INSERT INTO ev_fts(body) VALUES ('three')", id="fts5-new"),
    pytest.param("INSERT OR REPLACE INTO ev_fts(rowid, body) VALUES (9, 'n')",
                 id="fts5-replace-new"),
    pytest.param("INSERT INTO src VALUES ('fresh')", id="trigger-insert-new"),
    pytest.param("UPDATE src SET a = 'c' WHERE a = 'seed'", id="trigger-replace-new"),
    pytest.param("INSERT INTO vendor(name) VALUES ('new')", id="set-null-parent-no-conflict"),
    pytest.param("INSERT INTO vendor(name) VALUES ('idle')", id="set-null-parent-no-child"),
    pytest.param("INSERT INTO acc(name) VALUES ('new')", id="parent-insert-no-conflict"),
    pytest.param("INSERT INTO acc(name) VALUES ('spare')", id="parent-replace-no-guarded-child"),
]  # fmt: skip


@pytest.mark.parametrize("sql", ALLOWED)
def test_an_insert_that_deletes_no_guarded_row_runs(path: tuple[Service, Tool], sql: str) -> None:
    service, tool = path
    before = rows_of(service)
    if tool is write and " acc(" in sql:
        with pytest.raises(PolicyDenied, match="DELETE needs destructive_query"):
            tool(service, sql)  # PARENT: the tier's rule first
        return
    settings = service.settings
    if tool is write and "ev_fts" in sql and settings.write_undo_keep and settings.audit:
        with pytest.raises(NotUndoable, match="destructive_query"):
            tool(service, sql)  # no changeset restores a virtual table's rows
        assert rows_of(service) == before
        return
    answer = tool(service, sql)
    assert answer.startswith("ok")
    after = rows_of(service)
    for table, rows in before.items():
        assert rows <= after[table], table  # every row it held is still there, as it was
