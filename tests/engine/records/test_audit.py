"""The audit log: exactly one query_log row per tool call, and views over it."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import apsw
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sqlgate.engine.records.audit import MAX_QUERY_CHARS, utc_timestamp
from sqlgate.engine.running.textsearch import SearchRequest
from sqlgate.errors import NotFound, PolicyDenied, SqlError, SqlgateError
from sqlgate.service import Service
from tests.records import connect_both, records_path

Row = dict[str, Any]


def query_view(db: Path, name: str) -> list[Row]:
    """Every row of a server table or view, as dicts (read through a separate connection)."""
    conn = connect_both(db, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        names = [str(n) for (n,) in conn.execute("SELECT name FROM pragma_table_info(?)", (name,))]
        rows = conn.execute(f"SELECT * FROM {name}").fetchall()
        return [dict(zip(names, row, strict=True)) for row in rows]
    finally:
        conn.close()


def log_rows(db: Path) -> list[Row]:
    return query_view(db, "query_log")


@pytest.fixture
def ready(service: Service) -> Service:
    service.write_query("CREATE TABLE t(id INTEGER PRIMARY KEY, body TEXT)")
    service.write_query("INSERT INTO t(body) VALUES ('alpha'), ('beta')")
    return service


Call = Callable[[Service], str]

SUCCEEDING: list[Any] = [
    pytest.param("read_query", lambda s: s.read_query("SELECT * FROM t"), id="read_query"),
    pytest.param(
        "write_query", lambda s: s.write_query("INSERT INTO t(body) VALUES ('c')"), id="write"
    ),
    pytest.param(
        "destructive_query",
        lambda s: s.destructive_query("DELETE FROM t WHERE id = 1", reason="tidy"),
        id="destructive_query",
    ),
    pytest.param("list_tables", lambda s: s.list_tables(), id="list_tables"),
    pytest.param("describe_table", lambda s: s.describe_table("t"), id="describe_table"),
    pytest.param("get_schema", lambda s: s.get_schema(), id="get_schema"),
    pytest.param(
        "create_view", lambda s: s.create_view("v", "SELECT body FROM t"), id="create_view"
    ),
    pytest.param(
        "search_text",
        lambda s: s.search_text(SearchRequest("alp", "t", where="id > 0")),
        id="search_text",
    ),
]

FAILING: list[Any] = [
    pytest.param("read_query", lambda s: s.read_query("SELECT * FROM nope"), id="read_query"),
    pytest.param("write_query", lambda s: s.write_query("DROP TABLE t"), id="write_query"),
    pytest.param(
        "destructive_query",
        lambda s: s.destructive_query("DROP TABLE query_log", reason="x"),
        id="destructive_query",
    ),
    pytest.param("describe_table", lambda s: s.describe_table("nope"), id="describe_table"),
    pytest.param("create_view", lambda s: s.create_view("v", "DELETE FROM t"), id="create_view"),
    pytest.param("search_text", lambda s: s.search_text(SearchRequest("(", "t")), id="search_text"),
]


@pytest.mark.parametrize(("tool", "call"), SUCCEEDING)
def test_each_successful_call_writes_exactly_one_ok_row(
    ready: Service, db_path: Path, tool: str, call: Call
) -> None:
    before = len(log_rows(db_path))
    call(ready)
    rows = log_rows(db_path)
    assert len(rows) == before + 1
    row = rows[-1]
    assert row["tool"] == tool
    assert row["ok"] == 1
    assert row["error"] is None
    assert row["session"] == "s-test"
    assert row["duration_ms"] >= 0
    assert row["rows"] is not None


@pytest.mark.parametrize(("tool", "call"), FAILING)
def test_each_failed_call_writes_exactly_one_row_with_its_error(
    ready: Service, db_path: Path, tool: str, call: Call
) -> None:
    before = len(log_rows(db_path))
    with pytest.raises(SqlgateError) as caught:
        call(ready)
    rows = log_rows(db_path)
    assert len(rows) == before + 1
    row = rows[-1]
    assert (row["tool"], row["ok"], row["error"]) == (tool, 0, str(caught.value))


def test_a_row_holds_query_rows_timestamp_and_fingerprint(ready: Service, db_path: Path) -> None:
    ready.read_query("select body from t where id = 1")
    row = log_rows(db_path)[-1]
    assert row["query"] == "select body from t where id = 1"
    assert row["rows"] == 1
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", row["ts"])
    detail = json.loads(row["detail"])
    assert detail["fingerprint"] == "SELECT body FROM t WHERE id = ?"
    assert detail["kind"] == "SELECT"


def test_destructive_rows_record_reason_and_undo_changeset(ready: Service, db_path: Path) -> None:
    ready.destructive_query("DELETE FROM t WHERE id = 2", reason="drop beta")
    detail = json.loads(log_rows(db_path)[-1]["detail"])
    assert detail["reason"] == "drop beta"
    assert isinstance(detail["undo"], int)
    assert "snapshot" not in detail


def test_destructive_ddl_records_reason_and_snapshot(ready: Service, db_path: Path) -> None:
    ready.destructive_query("DROP TABLE t", reason="drop it")
    detail = json.loads(log_rows(db_path)[-1]["detail"])
    assert detail["reason"] == "drop it"
    assert Path(detail["snapshot"]).exists()
    assert "undo" not in detail


def test_calls_without_sql_have_no_fingerprint(ready: Service, db_path: Path) -> None:
    ready.list_tables()
    row = log_rows(db_path)[-1]
    assert row["query"] is None
    assert row["detail"] is None or "fingerprint" not in json.loads(row["detail"])


def test_query_errors_lists_failures_newest_first(ready: Service, db_path: Path) -> None:
    for missing in ("a1", "a2", "a3"):
        with pytest.raises(SqlError):
            ready.read_query(f"SELECT * FROM {missing}")
    ready.read_query("SELECT 1")
    errors = query_view(db_path, "query_errors")
    assert [e["query"] for e in errors] == [
        "SELECT * FROM a3",
        "SELECT * FROM a2",
        "SELECT * FROM a1",
    ]
    assert all("no such table" in e["error"] for e in errors)


def test_query_patterns_group_statements_that_differ_only_in_literals(
    service: Service, db_path: Path
) -> None:
    with pytest.raises(SqlError):
        service.read_query("SELECT body FROM items WHERE id = 1")
    service.write_query("CREATE TABLE items(id INTEGER PRIMARY KEY, body TEXT)")
    service.read_query("SELECT body FROM items WHERE id = 2")
    service.read_query("SELECT  body\nFROM items WHERE id = 3")
    service.read_query("SELECT 'other'")
    patterns = {p["fingerprint"]: p for p in query_view(db_path, "query_patterns")}
    shape = patterns["SELECT body FROM items WHERE id = ?"]
    assert shape["calls"] == 3
    assert shape["failures"] == 1
    assert shape["example"] in {
        "SELECT body FROM items WHERE id = 1",
        "SELECT body FROM items WHERE id = 2",
        "SELECT  body\nFROM items WHERE id = 3",
    }
    same_shape = [r for r in log_rows(db_path) if r["query"] and "items WHERE id" in r["query"]]
    assert shape["last_used"] == max(r["ts"] for r in same_shape)
    assert patterns["SELECT ?"]["calls"] == 1
    assert next(iter(patterns)) == "SELECT body FROM items WHERE id = ?"  # most calls first


def test_a_failing_audit_write_never_loses_the_result(
    ready: Service, db_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    saboteur = apsw.Connection(str(records_path(db_path)))  # the audit log's file
    saboteur.execute(
        "CREATE TRIGGER sabotage BEFORE INSERT ON query_log "
        "BEGIN SELECT RAISE(ABORT, 'audit sabotaged'); END"
    )
    saboteur.close()
    before = len(log_rows(db_path))
    with caplog.at_level(logging.WARNING, logger="sqlgate.audit"):
        assert ready.read_query("SELECT body FROM t ORDER BY id") == "body\nalpha\nbeta\n# 2 rows"
    assert len(log_rows(db_path)) == before
    assert "audit sabotaged" in caplog.text


def test_a_failing_audit_write_keeps_the_tools_own_error(ready: Service, db_path: Path) -> None:
    saboteur = apsw.Connection(str(records_path(db_path)))  # the audit log's file
    saboteur.execute(
        "CREATE TRIGGER sabotage BEFORE INSERT ON query_log "
        "BEGIN SELECT RAISE(ABORT, 'audit sabotaged'); END"
    )
    saboteur.close()
    with pytest.raises(PolicyDenied, match="destructive_query"):
        ready.write_query("DROP TABLE t")


def test_a_closed_server_connection_does_not_break_tool_calls(ready: Service) -> None:
    ready.db.server.close()
    assert ready.read_query("SELECT count(*) AS n FROM t") == "n\n2\n# 1 row"
    with pytest.raises(NotFound):
        ready.describe_table("nope")


def test_no_audit_writes_nothing(make_service: Callable[..., Service], db_path: Path) -> None:
    service = make_service(audit=False)
    service.write_query("CREATE TABLE t(x)")
    service.read_query("SELECT * FROM t")
    with pytest.raises(PolicyDenied):
        service.write_query("DROP TABLE t")
    assert log_rows(db_path) == []


def test_a_query_that_cannot_be_fingerprinted_is_still_audited(
    ready: Service, db_path: Path
) -> None:
    query = 'SELECT "a\x00b" FROM t'
    with pytest.raises(SqlgateError):
        ready.read_query(query)
    row = log_rows(db_path)[-1]
    assert (row["tool"], row["ok"]) == ("read_query", 0)
    assert "fingerprint" in json.loads(row["detail"])


def test_long_queries_are_cut_in_the_log(ready: Service, db_path: Path) -> None:
    query = "SELECT 1 AS x" + " " * MAX_QUERY_CHARS + "-- end"
    ready.read_query(query)
    assert len(log_rows(db_path)[-1]["query"]) == MAX_QUERY_CHARS


def test_an_unexpected_failure_is_audited_and_surfaces_as_a_sqlgate_error(
    ready: Service, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_: object) -> object:
        raise RuntimeError("boom")

    monkeypatch.setattr(ready.sql, "read", broken)
    with pytest.raises(SqlgateError, match="internal error"):
        ready.read_query("SELECT 1")
    row = log_rows(db_path)[-1]
    assert (row["ok"], row["error"]) == (0, "internal error: RuntimeError")


def test_utc_timestamp_has_milliseconds_and_z() -> None:
    assert utc_timestamp(0) == "1970-01-01T00:00:00.000Z"
    assert utc_timestamp(1767225600.1234) == "2026-01-01T00:00:00.123Z"


def _datetime_timestamp(epoch_seconds: float) -> str:
    """The reference form: datetime's own conversion, cut to milliseconds."""
    moment = datetime.fromtimestamp(epoch_seconds, tz=timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


@settings(max_examples=300, deadline=None)
@given(st.floats(min_value=0, max_value=7_000_000_000, allow_nan=False))
def test_utc_timestamp_matches_datetimes_conversion(epoch_seconds: float) -> None:
    assert utc_timestamp(epoch_seconds) == _datetime_timestamp(epoch_seconds)


@pytest.mark.parametrize(
    "epoch_seconds",
    [
        pytest.param(1767225599.9999996, id="rounds-up-into-the-next-second"),
        pytest.param(1767225599.9995, id="just-below-a-whole-second"),
        pytest.param(1767225600.0005, id="half-a-millisecond"),
        pytest.param(951782400.0, id="leap-day-2000"),
        pytest.param(4102444799.999, id="last-millisecond-of-2099"),
    ],
)
def test_utc_timestamp_matches_datetime_at_edges(epoch_seconds: float) -> None:
    assert utc_timestamp(epoch_seconds) == _datetime_timestamp(epoch_seconds)
