"""Hardening of the connections: each named step is in force on the connection that needs it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import apsw
import pytest

from sqlgate.config import Settings
from sqlgate.engine.connect import (
    SQLITE_HEADER,
    apply_process_limits,
    check_database_file,
    immediate_transaction,
)
from sqlgate.engine.database.file import Database
from sqlgate.errors import SqlError, StartupError


@pytest.fixture
def db(settings: Settings) -> Iterator[Database]:
    database = Database.open(settings)
    yield database
    database.close()


def config(conn: apsw.Connection, op: int) -> int:
    return int(conn.config(op, -1))


AGENT = [pytest.param("writer", id="writer"), pytest.param("reader", id="reader")]


@pytest.mark.parametrize("which", AGENT)
def test_agent_connections_are_defensive_untrusted_and_without_extensions(
    db: Database, which: str
) -> None:
    conn: apsw.Connection = getattr(db, which)
    assert config(conn, apsw.SQLITE_DBCONFIG_DEFENSIVE) == 1
    assert config(conn, apsw.SQLITE_DBCONFIG_TRUSTED_SCHEMA) == 0
    assert config(conn, apsw.SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION) == 0
    assert conn.pragma("mmap_size") == 0


@pytest.mark.parametrize("which", AGENT)
@pytest.mark.parametrize(
    ("limit", "expected"),
    [
        pytest.param(apsw.SQLITE_LIMIT_ATTACHED, 0, id="attached"),
        pytest.param(apsw.SQLITE_LIMIT_LENGTH, 12345, id="length-from-settings"),
        pytest.param(apsw.SQLITE_LIMIT_SQL_LENGTH, 1_000_000, id="sql-length"),
        pytest.param(apsw.SQLITE_LIMIT_COLUMN, 2000, id="column"),
        pytest.param(apsw.SQLITE_LIMIT_EXPR_DEPTH, 200, id="expr-depth"),
        pytest.param(apsw.SQLITE_LIMIT_COMPOUND_SELECT, 100, id="compound-select"),
        pytest.param(apsw.SQLITE_LIMIT_VDBE_OP, 250_000, id="vdbe-op"),
        pytest.param(apsw.SQLITE_LIMIT_FUNCTION_ARG, 100, id="function-arg"),
        pytest.param(apsw.SQLITE_LIMIT_TRIGGER_DEPTH, 10, id="trigger-depth"),
        pytest.param(apsw.SQLITE_LIMIT_LIKE_PATTERN_LENGTH, 1000, id="like-pattern"),
    ],
)
def test_agent_connections_have_lowered_limits(
    settings: Settings, which: str, limit: int, expected: int
) -> None:
    database = Database.open(replace(settings, max_value_bytes=12345))
    try:
        conn: apsw.Connection = getattr(database, which)
        assert conn.limit(limit, -1) == expected
    finally:
        database.close()


def test_the_writer_refuses_attach_even_without_the_authorizer(db: Database) -> None:
    with pytest.raises(apsw.SQLError, match="too many attached"):
        db.writer.execute("ATTACH ':memory:' AS other")


def test_the_writer_refuses_load_extension_even_without_the_authorizer(db: Database) -> None:
    with pytest.raises(apsw.SQLError):
        db.writer.execute("SELECT load_extension('anything')")


def test_defensive_mode_keeps_the_catalog_safe_even_with_writable_schema(db: Database) -> None:
    db.writer.execute("PRAGMA writable_schema = 1")
    with pytest.raises(apsw.SQLError, match="may not be modified"):
        db.writer.execute("UPDATE sqlite_master SET sql = 'x'")


def test_the_writer_enforces_foreign_keys_and_refuses_double_quoted_ddl_strings(
    db: Database,
) -> None:
    assert db.writer.pragma("foreign_keys") == 1
    assert config(db.writer, apsw.SQLITE_DBCONFIG_DQS_DDL) == 0
    with pytest.raises(apsw.SQLError):
        db.writer.execute('CREATE TABLE t(a DEFAULT "not a string", CHECK ("missing" > 0))')


def test_the_reader_is_read_only_and_query_only(db: Database) -> None:
    assert db.reader.readonly("main")
    assert db.reader.pragma("query_only") == 1
    with pytest.raises(apsw.ReadOnlyError):
        db.reader.execute("CREATE TABLE t(a)")


def test_the_writer_is_writable_and_not_query_only(db: Database) -> None:
    assert not db.writer.readonly("main")
    assert db.writer.pragma("query_only") == 0


@pytest.mark.parametrize("which", ["server", "writer", "reader"])
def test_every_connection_uses_wal_and_the_busy_timeout(db: Database, which: str) -> None:
    conn: apsw.Connection = getattr(db, which)
    assert conn.pragma("journal_mode") == "wal"
    assert conn.pragma("busy_timeout") == 5000


def test_the_process_heap_limit_follows_settings(settings: Settings) -> None:
    previous = apsw.hard_heap_limit(-1)
    try:
        apply_process_limits(replace(settings, heap_limit_mb=48))
        assert apsw.hard_heap_limit(-1) == 48 * 1024 * 1024
    finally:
        apsw.hard_heap_limit(previous)


# -- check_database_file ------------------------------------------------------------------------


def test_a_new_file_in_an_existing_folder_passes(tmp_path: Path) -> None:
    check_database_file(tmp_path / "new.db")


def test_an_empty_file_passes_as_a_new_database(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    path.touch()
    check_database_file(path)


def test_a_sqlite_file_passes(tmp_path: Path) -> None:
    path = tmp_path / "ok.db"
    conn = apsw.Connection(str(path))
    conn.execute("CREATE TABLE t(a)")
    conn.close()
    assert path.read_bytes().startswith(SQLITE_HEADER)
    check_database_file(path)


@pytest.mark.parametrize(
    ("make", "phrase"),
    [
        pytest.param(lambda p: p.write_bytes(b"hello, not a database"), "not a SQLite", id="text"),
        pytest.param(lambda p: p.write_bytes(SQLITE_HEADER[:-1]), "not a SQLite", id="short"),
        pytest.param(lambda p: p.mkdir(), "directory", id="directory"),
    ],
)
def test_paths_that_cannot_be_a_database_are_refused(
    tmp_path: Path, make: object, phrase: str
) -> None:
    path = tmp_path / "x.db"
    make(path)  # type: ignore[operator]
    with pytest.raises(StartupError, match=phrase):
        check_database_file(path)


def test_a_missing_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(StartupError, match="does not exist"):
        check_database_file(tmp_path / "missing" / "x.db")


# -- immediate_transaction ------------------------------------------------------------------------


def test_immediate_transaction_commits_on_success(tmp_path: Path) -> None:
    conn = apsw.Connection(str(tmp_path / "tx.db"))
    conn.execute("CREATE TABLE t(a)")
    with immediate_transaction(conn):
        assert conn.in_transaction
        conn.execute("INSERT INTO t VALUES (1)")
    assert not conn.in_transaction
    assert conn.execute("SELECT a FROM t").fetchall() == [(1,)]
    conn.close()


def test_immediate_transaction_rolls_back_on_error(tmp_path: Path) -> None:
    conn = apsw.Connection(str(tmp_path / "tx.db"))
    conn.execute("CREATE TABLE t(a)")

    def insert_then_fail() -> None:
        with immediate_transaction(conn):
            conn.execute("INSERT INTO t VALUES (1)")
            raise RuntimeError("stop")

    with pytest.raises(RuntimeError):
        insert_then_fail()
    assert not conn.in_transaction
    assert conn.execute("SELECT count(*) FROM t").fetchall() == [(0,)]
    conn.close()


def test_the_reader_sorts_in_memory_so_big_sorts_hit_the_heap_limit_not_the_disk(
    db: Database,
) -> None:
    assert db.reader.pragma("temp_store") == 2  # MEMORY


@pytest.mark.parametrize("which", ["reader", "writer"])
def test_agent_connections_read_double_quotes_as_names_only(db: Database, which: str) -> None:
    conn = getattr(db, which)
    with pytest.raises(apsw.SQLError, match="no such column"):
        conn.execute('SELECT "not_a_column"').fetchall()


def test_immediate_transaction_rolls_back_a_commit_that_fails(tmp_path: Path) -> None:
    conn = apsw.Connection(str(tmp_path / "t.db"))
    conn.execute(
        "PRAGMA foreign_keys = ON; CREATE TABLE p (id INTEGER PRIMARY KEY);"
        "CREATE TABLE c (p REFERENCES p (id) DEFERRABLE INITIALLY DEFERRED)"
    )
    refused = pytest.raises(SqlError, match=r"^SQLite error: FOREIGN KEY constraint failed at COM")
    with refused, immediate_transaction(conn):  # only the COMMIT sees the broken reference
        conn.execute("INSERT INTO c VALUES (42)")
    assert not conn.in_transaction
    with immediate_transaction(conn):  # the next call's BEGIN works
        conn.execute("INSERT INTO p VALUES (1)")
    assert conn.execute("SELECT count(*) FROM c").fetchone() == (0,)


@pytest.mark.parametrize("which", AGENT)
def test_both_agent_connections_enforce_foreign_keys_so_reading_the_pragma_tells_the_truth(
    db: Database, which: str
) -> None:
    conn: apsw.Connection = getattr(db, which)
    assert conn.pragma("foreign_keys") == 1
    assert conn.execute("SELECT foreign_keys FROM pragma_foreign_keys").fetchall() == [(1,)]
