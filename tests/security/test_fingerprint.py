"""The fingerprint notices every kind of change it is trusted to catch.

Each change is made behind sqlgate's back (a plain connection, the file system, a pragma on
the service's own connection), so these tests show the suite's "nothing changed" can fail.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import apsw
import pytest

from tests.records import connect_both
from tests.security.conftest import SAME_NAMES, World
from tests.security.fingerprint import (
    DatabaseState,
    appended_log_rows,
    assert_records_unchanged,
    assert_unchanged,
)


def _plain(world: World, sql: str) -> None:
    conn = connect_both(world.service.db.path)
    try:
        conn.execute(sql)
    finally:
        conn.close()


# sqlgate's records, in a file of their own (issue 33): every one of these is noticed too
RECORDS_CHANGES: list[tuple[str, Callable[[World], object]]] = [
    ("records-row", lambda w: _plain(w, "INSERT INTO sqlgate.server_info VALUES ('k', 'v')")),
    ("records-schema", lambda w: _plain(w, "CREATE TABLE sqlgate.extra(a)")),
    ("records-index-dropped", lambda w: _plain(w, "DROP INDEX sqlgate.memory_events_by_ts")),
    ("records-user-version", lambda w: _plain(w, "PRAGMA sqlgate.user_version = 99")),
    ("records-folder", lambda w: (w.service.settings.records.folder / "x").write_bytes(b"x")),
]

CHANGES: list[tuple[str, Callable[[World], object]]] = [
    ("user-row", lambda w: _plain(w, "UPDATE items SET qty = 99 WHERE id = 1")),
    ("user-row-added", lambda w: _plain(w, "INSERT INTO notes(body) VALUES ('x')")),
    ("fts-contents", lambda w: _plain(w, "INSERT INTO docs(title, body) VALUES ('a', 'b')")),
    ("contentless-fts", lambda w: _plain(w, "INSERT INTO tokens(tokens) VALUES ('delete-all')")),
    ("rtree", lambda w: _plain(w, "UPDATE boxes SET maxx = 99 WHERE id = 1")),
    ("sequence", lambda w: _plain(w, "UPDATE sqlite_sequence SET seq = 0")),
    ("schema", lambda w: _plain(w, "CREATE TABLE extra(a)")),
    ("trigger-dropped", lambda w: _plain(w, "DROP TRIGGER query_log_no_update")),
    *RECORDS_CHANGES,
    ("user-version", lambda w: _plain(w, "PRAGMA user_version = 99")),
    ("application-id", lambda w: _plain(w, "PRAGMA application_id = 7")),
    ("file-outside", lambda w: (w.outside / "evil.db").write_bytes(b"x")),
    ("file-beside-db", lambda w: (w.root / "db" / "copy.db").write_bytes(b"x")),
    ("reader-query-only", lambda w: w.service.db.reader.pragma("query_only", False)),
    ("writer-foreign-keys", lambda w: w.service.db.writer.pragma("foreign_keys", False)),
    ("writer-recursive-triggers", lambda w: w.service.db.writer.pragma("recursive_triggers", 1)),
    ("writer-attach-limit", lambda w: w.service.db.writer.limit(apsw.SQLITE_LIMIT_ATTACHED, 10)),
    (
        "reader-defensive",
        lambda w: w.service.db.reader.config(apsw.SQLITE_DBCONFIG_DEFENSIVE, 0),
    ),
    ("writer-open-transaction", lambda w: w.service.db.writer.execute("BEGIN")),
]


@pytest.mark.parametrize("change", [c for _, c in CHANGES], ids=[name for name, _ in CHANGES])
def test_a_change_behind_sqlgates_back_is_noticed(
    world: World, change: Callable[[World], object]
) -> None:
    before = world.state()
    world.service.read_query("SELECT 1")  # the one audited call
    change(world)
    with pytest.raises(AssertionError):
        assert_unchanged(before, world.state())


@pytest.mark.parametrize(
    "change",
    [c for name, c in RECORDS_CHANGES if name != "records-folder"],
    ids=[name for name, _ in RECORDS_CHANGES if name != "records-folder"],
)
def test_a_change_to_the_records_is_noticed_whatever_the_users_file_did(
    world: World, change: Callable[[World], object]
) -> None:
    before = world.state()
    world.service.read_query("SELECT 1")
    change(world)
    with pytest.raises(AssertionError):
        assert_records_unchanged(before, world.state())


@pytest.mark.parametrize("world", [SAME_NAMES], indirect=True)
def test_a_change_to_the_apps_own_query_log_is_no_change_to_the_records(world: World) -> None:
    before = world.state()
    assert "ok" in world.service.write_query("INSERT INTO query_log(tool) VALUES ('app')")
    after = world.state()
    assert len(after.tables["main.query_log"]) == len(before.tables["main.query_log"]) + 1
    assert_records_unchanged(before, after)


def test_an_unchanged_database_passes(world: World) -> None:
    before = world.state()
    world.service.read_query("SELECT 1")
    assert_unchanged(before, world.state())


def test_the_audit_log_must_grow_by_exactly_one_row_per_call(world: World) -> None:
    before = world.state()
    with pytest.raises(AssertionError):
        assert_unchanged(before, world.state())  # no call: no row
    world.service.read_query("SELECT 1")
    world.service.read_query("SELECT 2")
    with pytest.raises(AssertionError):
        assert_unchanged(before, world.state())  # two calls: two rows
    assert_unchanged(before, world.state(), calls=2)


def test_an_older_audit_row_rewritten_is_noticed(world: World) -> None:
    before = world.state()
    world.service.read_query("SELECT 1")
    after = world.state()
    first = (before.query_log[0][0] + 1000, *before.query_log[0][1:])
    rewritten: DatabaseState = dataclasses.replace(after, query_log=[first, *after.query_log[1:]])
    with pytest.raises(AssertionError):
        assert_unchanged(before, rewritten)


def test_appended_rows_describe_the_call(world: World) -> None:
    before = world.state()
    world.service.read_query("SELECT 1")
    (row,) = appended_log_rows(before, world.state())
    assert (row["tool"], row["query"], row["ok"]) == ("read_query", "SELECT 1", 1)
