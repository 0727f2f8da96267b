"""The state no refused call may change, captured so two captures can be compared.

    part          what is captured, in both files: the user's (main) and sqlgate's records
                  (sqlgate), each key prefixed with its schema
    tables        every row of every real table: user tables (one may be named like a
                  server table: it is the user's), FTS5/rtree shadow tables, sqlite_sequence
                  and sqlite_stat*, sqlgate's records (sqlgate.query_log aside)
    query_log     sqlgate.query_log's rows in id order: older rows must stay byte-identical,
                  and each call appends exactly one row (the audit of the call itself)
    schema        every sqlite_schema row (type, name, tbl_name, rootpage, sql) of both
    pragmas       file-level settings of both: user_version, application_id, ...
    files         every file under the watched folder (the database's folder and the folder
                  ATTACH / VACUUM INTO attacks point at) and under the records folder
                  (records, audit queue, witness, snapshots), the latter as `records/...`
    connections   the hardening of the service's reader and writer: limits, DBCONFIG flags,
                  pragmas, no transaction left open, no authorizer left installed

The database is read through its own read-only connection, never through the service.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw

from sqlgate.service import Service
from tests.records import connect_both

__all__ = [
    "DatabaseState",
    "appended_log_rows",
    "assert_records_unchanged",
    "assert_unchanged",
    "capture",
]

Row = tuple[Any, ...]

FILE_PRAGMAS = (
    "user_version", "application_id", "schema_version", "journal_mode", "page_size",
    "auto_vacuum", "encoding", "freelist_count",
)  # fmt: skip
CONNECTION_PRAGMAS = (
    "query_only", "foreign_keys", "recursive_triggers", "writable_schema", "trusted_schema",
    "ignore_check_constraints", "defer_foreign_keys", "reverse_unordered_selects",
    "legacy_alter_table", "cell_size_check", "automatic_index", "mmap_size", "journal_mode",
    "busy_timeout",
)  # fmt: skip
CONNECTION_CONFIGS = (
    "SQLITE_DBCONFIG_DEFENSIVE", "SQLITE_DBCONFIG_TRUSTED_SCHEMA",
    "SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION", "SQLITE_DBCONFIG_ENABLE_ATTACH_CREATE",
    "SQLITE_DBCONFIG_ENABLE_ATTACH_WRITE", "SQLITE_DBCONFIG_WRITABLE_SCHEMA",
    "SQLITE_DBCONFIG_DQS_DDL", "SQLITE_DBCONFIG_ENABLE_FKEY", "SQLITE_DBCONFIG_ENABLE_TRIGGER",
)  # fmt: skip
CONNECTION_LIMITS = (
    "SQLITE_LIMIT_ATTACHED", "SQLITE_LIMIT_LENGTH", "SQLITE_LIMIT_SQL_LENGTH",
    "SQLITE_LIMIT_COLUMN", "SQLITE_LIMIT_EXPR_DEPTH", "SQLITE_LIMIT_COMPOUND_SELECT",
    "SQLITE_LIMIT_VDBE_OP", "SQLITE_LIMIT_FUNCTION_ARG", "SQLITE_LIMIT_TRIGGER_DEPTH",
    "SQLITE_LIMIT_LIKE_PATTERN_LENGTH", "SQLITE_LIMIT_VARIABLE_NUMBER",
)  # fmt: skip


@dataclass(frozen=True)
class DatabaseState:
    tables: dict[str, list[Row]]
    query_log: list[Row]
    schema: list[Row]
    pragmas: dict[str, Any]
    files: frozenset[str]
    connections: dict[str, dict[str, Any]]


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


SCHEMAS = ("main", "sqlgate")
AUDIT_LOG = ("sqlgate", "query_log")  # grows by one row a call: compared apart


def _tables(conn: apsw.Connection, schema: str) -> dict[str, list[Row]]:
    names = [
        str(name)
        for (name,) in conn.execute(
            f"SELECT name FROM {schema}.sqlite_schema WHERE type = 'table' "
            "AND coalesce(sql, '') NOT LIKE 'CREATE VIRTUAL%'"
        )
        if (schema, name) != AUDIT_LOG
    ]
    return {
        f"{schema}.{name}": sorted(
            (tuple(row) for row in conn.execute(f"SELECT * FROM {schema}.{_quote(name)}")),
            key=repr,
        )
        for name in names
    }


def _files(folder: Path, label: str = "") -> frozenset[str]:
    return frozenset(
        label + str(path.relative_to(folder)) for path in folder.rglob("*") if not path.is_dir()
    )


def _connection_state(conn: apsw.Connection) -> dict[str, Any]:
    state: dict[str, Any] = {
        name: conn.execute(f"PRAGMA {name}").fetchall() for name in CONNECTION_PRAGMAS
    }
    state.update({name: conn.config(getattr(apsw, name), -1) for name in CONNECTION_CONFIGS})
    state.update({name: conn.limit(getattr(apsw, name), -1) for name in CONNECTION_LIMITS})
    state["in_transaction"] = conn.in_transaction
    state["authorizer"] = conn.authorizer
    return state


def capture(service: Service, watched: Path) -> DatabaseState:
    """Everything a refused call must leave as it was; `watched` is the folder to list."""
    conn = connect_both(service.db.path, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        tables = {k: v for schema in SCHEMAS for k, v in _tables(conn, schema).items()}
        query_log = [
            tuple(row) for row in conn.execute("SELECT * FROM sqlgate.query_log ORDER BY id")
        ]
        schema = sorted(
            (
                (schema, *row)
                for schema in SCHEMAS
                for row in conn.execute(f"SELECT * FROM {schema}.sqlite_schema")
            ),
            key=repr,
        )
        pragmas = {
            f"{schema}.{name}": conn.execute(f"PRAGMA {schema}.{name}").fetchall()
            for schema in SCHEMAS
            for name in FILE_PRAGMAS
        }
    finally:
        conn.close()
    files = _files(watched) | _files(service.settings.records.folder, "records/")
    connections = {
        "reader": _connection_state(service.db.reader),
        "writer": _connection_state(service.db.writer),
    }
    return DatabaseState(tables, query_log, schema, pragmas, files, connections)


def appended_log_rows(before: DatabaseState, after: DatabaseState) -> list[Mapping[str, Any]]:
    """The query_log rows written since `before`, as column -> value."""
    columns = ("id", "ts", "session", "tool", "query", "ok", "rows", "error", "duration_ms")
    return [
        dict(zip(columns, row, strict=False)) for row in after.query_log[len(before.query_log) :]
    ]


def assert_unchanged(before: DatabaseState, after: DatabaseState, *, calls: int = 1) -> None:
    """Nothing changed but the audit log, which grew by exactly one row per call."""
    assert after.tables == before.tables
    assert after.schema == before.schema
    assert after.pragmas == before.pragmas
    assert after.files == before.files
    assert after.connections == before.connections
    assert after.query_log[: len(before.query_log)] == before.query_log
    assert len(after.query_log) == len(before.query_log) + calls


# what a successful change of the user's file adds to the records: its undo data
UNDO_TABLES = "sqlgate.undo_"


def assert_records_unchanged(before: DatabaseState, after: DatabaseState) -> None:
    """sqlgate's records as they were, whatever the call did to the user's file: every table
    (the undo data aside, which a change of the user's keeps), the schema, the file settings
    but its free pages; the audit log grew by exactly one row."""

    def records(state: DatabaseState) -> tuple[object, ...]:
        tables = {
            key: rows
            for key, rows in state.tables.items()
            if key.startswith("sqlgate.") and not key.startswith(UNDO_TABLES)
        }
        schema = [row for row in state.schema if row[0] == "sqlgate"]
        pragmas = {
            key: value
            for key, value in state.pragmas.items()
            if key.startswith("sqlgate.") and key != "sqlgate.freelist_count"
        }
        return tables, schema, pragmas

    assert records(after) == records(before)
    assert after.query_log[: len(before.query_log)] == before.query_log
    assert len(after.query_log) == len(before.query_log) + 1
