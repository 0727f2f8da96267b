"""Every column of every server table is classified, once, against the migrated schema: a
table or column a later migration adds fails here until it is (engine/server_columns.py)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import apsw
import pytest

from sqlgate.engine import server_columns
from sqlgate.engine.schema import FTS5_SHADOW_SUFFIXES, LITESTREAM_TABLES, REGISTRY, migrate
from tests.records import connect_both


def headings() -> dict[str, Mapping[str, frozenset[str]]]:
    """The three headings, read when a test runs (never a copy made at import)."""
    return {
        name: getattr(server_columns, name)
        for name in ("ROW_VALUES", "CALLER_TEXT", "SERVER_FACTS")
    }


@pytest.fixture(scope="module")
def conn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[apsw.Connection]:
    connection = connect_both(tmp_path_factory.mktemp("columns") / "server.db")
    migrate(connection)
    connection.execute(  # Litestream's own tables, as Litestream makes them
        "CREATE TABLE _litestream_seq (id INTEGER PRIMARY KEY, seq INTEGER);"
        "CREATE TABLE _litestream_lock (id INTEGER);"
    )
    yield connection
    connection.close()


def _server_tables() -> list[str]:
    names = []
    for obj in REGISTRY:
        if obj.kind == "table":
            names.append(obj.name)
        elif obj.kind == "fts5":
            names += [obj.name, *(obj.name + suffix for suffix in FTS5_SHADOW_SUFFIXES)]
    return names


def _columns(conn: apsw.Connection, table: str) -> set[str]:
    return {str(c) for (c,) in conn.execute("SELECT name FROM pragma_table_xinfo(?)", (table,))}


def test_every_table_of_the_migrated_schema_is_a_server_table(conn: apsw.Connection) -> None:
    present = {
        str(n) for (n,) in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")
    }
    assert present == set(_server_tables()) - {"memory_events_fts_content"} | set(LITESTREAM_TABLES)


@pytest.mark.parametrize("table", [*_server_tables(), *LITESTREAM_TABLES])
def test_each_column_of_each_server_table_has_exactly_one_heading(
    conn: apsw.Connection, table: str
) -> None:
    columns = _columns(conn, table)
    if not columns:  # an fts5 shadow table SQLite does not make (external content)
        assert all(table not in heading for heading in headings().values())
        return
    for column in sorted(columns):
        under = [name for name, heading in headings().items() if column in heading.get(table, ())]
        assert len(under) == 1, f"{table}.{column} is under {under or 'no heading'}"


def test_no_heading_names_a_column_the_schema_lacks(conn: apsw.Connection) -> None:
    for name, heading in headings().items():
        for table, columns in heading.items():
            assert columns <= _columns(conn, table), (name, table, columns)
