"""Service: the tools composed from Settings, each call audited, closed as a context manager."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

import apsw
import pytest

from sqlgate.config import Settings
from sqlgate.engine.limits import CallControl
from sqlgate.engine.running.queries import Outcome
from sqlgate.engine.running.textsearch import SearchRequest
from sqlgate.errors import (
    InvalidArgument,
    NotFound,
    PolicyDenied,
    QueryTimeout,
    SqlgateError,
    StartupError,
)
from sqlgate.service import Service, new_session_id
from tests.conftest import FakeClock
from tests.records import connect_both
from tests.undo_hint import plain

SESSION = re.compile(r"s-\d{8}T\d{6}Z-[0-9a-f]{6}")


def audit_rows(db: Path) -> list[tuple[str, int, str | None]]:
    conn = connect_both(db, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return [
            (str(tool), int(ok), session)
            for tool, ok, session in conn.execute(
                "SELECT tool, ok, session FROM query_log ORDER BY id"
            )
        ]
    finally:
        conn.close()


@pytest.fixture
def ready(service: Service) -> Service:
    service.write_query("CREATE TABLE t(id INTEGER PRIMARY KEY, body TEXT)")
    service.write_query("INSERT INTO t(body) VALUES (?), (?)", ["alpha", "beta"])
    return service


# -- sessions ------------------------------------------------------------------------------


def test_session_ids_carry_the_utc_time_and_a_random_part() -> None:
    moment = datetime(2026, 3, 4, 5, 6, 7, tzinfo=timezone.utc)
    first, second = new_session_id(moment), new_session_id(moment)
    assert first.startswith("s-20260304T050607Z-")
    assert SESSION.fullmatch(first)
    assert first != second


def test_a_new_session_id_uses_the_current_time() -> None:
    assert SESSION.fullmatch(new_session_id())


def test_open_without_a_session_makes_one(settings: Settings) -> None:
    with Service.open(settings) as service:
        assert SESSION.fullmatch(service.session)
        service.list_tables()
        assert audit_rows(settings.db)[-1][2] == service.session


def test_the_given_session_is_recorded_on_every_row(ready: Service, db_path: Path) -> None:
    assert {session for _, _, session in audit_rows(db_path)} == {"s-test"}


# -- each tool -------------------------------------------------------------------------------


def test_read_query_returns_csv_and_honours_limit_and_params(ready: Service) -> None:
    assert ready.read_query("SELECT body FROM t ORDER BY id") == "body\nalpha\nbeta\n# 2 rows"
    assert ready.read_query("SELECT body FROM t ORDER BY id", limit=1) == (
        "body\nalpha\n# 1 row (truncated: row limit 1)"
    )
    assert ready.read_query("SELECT body FROM t WHERE id = :id", params={"id": 2}) == (
        "body\nbeta\n# 1 row"
    )


def test_write_query_reports_rows_and_last_rowid(ready: Service) -> None:
    assert plain(ready.write_query("INSERT INTO t(body) VALUES ('c')")) == (
        "ok: 1 row affected (last_insert_rowid=3)"
    )
    assert plain(ready.write_query("UPDATE t SET body = 'z' WHERE id > ?", [1])) == (
        "ok: 2 rows affected"
    )


def test_destructive_query_needs_a_reason_and_names_its_undo(ready: Service) -> None:
    with pytest.raises(InvalidArgument, match="reason"):
        ready.destructive_query("DELETE FROM t", reason=" ")
    out = ready.destructive_query("DELETE FROM t WHERE id = 1", reason="remove alpha")
    assert re.fullmatch(r"ok: 1 row affected; undo: sqlgate undo \d+@[0-9a-f]{8} --db \S+", out)


def test_destructive_ddl_snapshots(ready: Service) -> None:
    out = ready.destructive_query("DROP TABLE t", reason="remove the table")
    assert out.startswith("ok: DROP TABLE done; snapshot: ")
    assert Path(out.split("snapshot: ", 1)[1].split("; restore: ")[0]).is_file()


def test_destructive_query_confirm_can_veto(ready: Service) -> None:
    def veto() -> None:
        raise PolicyDenied("the user said no")

    with pytest.raises(PolicyDenied, match="said no"):
        ready.destructive_query("DROP TABLE t", reason="cleanup", confirm=veto)
    assert ready.read_query("SELECT count(*) AS n FROM t") == "n\n2\n# 1 row"


def test_introspection_tools(ready: Service) -> None:
    assert "t,table,0,2" in ready.list_tables().splitlines()
    assert ready.describe_table("t").startswith("# table t\n# columns\n")
    # sqlgate's tables live in the records (issue 33): the user's schema, then what was left out
    schema = ready.get_schema().splitlines()
    assert schema[0] == "CREATE TABLE t(id INTEGER PRIMARY KEY, body TEXT);"
    assert schema[1].startswith("# left out: the server's 15 tables and views (sqlgate.claims,")
    with pytest.raises(NotFound):
        ready.describe_table("missing")


def test_create_view_and_search_text(ready: Service) -> None:
    assert plain(ready.create_view("bodies", "SELECT id, body FROM t", "All bodies.")) == (
        "ok: view bodies created"
    )
    result = ready.search_text(SearchRequest("ph", "bodies", key_column="id"))
    assert result.splitlines()[1] == "1,body,alpha"
    narrowed = ready.search_text(SearchRequest("a", "t", where="id = ?"), params=[2])
    assert narrowed.splitlines()[1:-1] == ["2,body,beta"]


def test_a_cancelled_call_is_stopped_and_audited(ready: Service, db_path: Path) -> None:
    control = CallControl()
    control.cancel()
    with pytest.raises(QueryTimeout, match="cancelled"):
        ready.read_query("SELECT * FROM t", control=control)
    assert audit_rows(db_path)[-1][:2] == ("read_query", 0)


def test_the_injected_wall_clock_stamps_every_row_the_call_writes(
    settings: Settings, db_path: Path
) -> None:
    at = 1_700_000_000.0  # 2023-11-14T22:13:20Z
    with Service.open(settings, session="s-test", wall_clock=lambda: at) as service:
        service.write_query("CREATE TABLE t (x)")
        service.append_event("a note", "note", [])
    conn = connect_both(db_path)
    try:
        stamps = {row[0] for row in conn.execute(
            "SELECT ts FROM query_log UNION SELECT ts FROM memory_events")}  # fmt: skip
    finally:
        conn.close()
    assert stamps == {"2023-11-14T22:13:20.000Z"}


def test_the_injected_clock_drives_the_deadline(
    make_service: Callable[..., Service],
) -> None:
    service = make_service(clock_=FakeClock(step=1.0), query_timeout=3.0)
    with pytest.raises(QueryTimeout, match="--query-timeout"):
        service.read_query(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000) "
            "SELECT count(*) FROM n"
        )


# -- the audited call -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "call"),
    [
        pytest.param("read_query", lambda s: s.read_query("SELECT 1"), id="read"),
        pytest.param("read_query", lambda s: s.read_query("DROP TABLE t"), id="read-refused"),
        pytest.param("write_query", lambda s: s.write_query("SELECT 1"), id="write-refused"),
        pytest.param("list_tables", lambda s: s.list_tables(), id="list"),
        pytest.param("describe_table", lambda s: s.describe_table("nope"), id="describe-missing"),
        pytest.param("get_schema", lambda s: s.get_schema(True), id="schema"),
        pytest.param("create_view", lambda s: s.create_view("1x", "SELECT 1"), id="view-bad"),
        pytest.param("search_text", lambda s: s.search_text(SearchRequest("a", "t")), id="search"),
    ],
)
def test_every_call_is_audited_once_whatever_happens(
    ready: Service, db_path: Path, tool: str, call: Callable[[Service], str]
) -> None:
    before = len(audit_rows(db_path))
    try:
        call(ready)
        expected_ok = 1
    except SqlgateError:
        expected_ok = 0
    rows = audit_rows(db_path)
    assert len(rows) == before + 1
    assert rows[-1][:2] == (tool, expected_ok)


def test_call_audits_in_finally_even_when_work_raises(ready: Service, db_path: Path) -> None:
    def work(_: object) -> Outcome:
        raise InvalidArgument("bad input")

    with pytest.raises(InvalidArgument):
        ready.call("custom_tool", work, query="SELECT 1")
    assert audit_rows(db_path)[-1][:2] == ("custom_tool", 0)


def test_call_turns_an_unexpected_exception_into_a_sqlgate_error(
    ready: Service, db_path: Path
) -> None:
    def work(_: object) -> Outcome:
        raise KeyError("internal detail")

    with pytest.raises(SqlgateError, match="internal error") as caught:
        ready.call("custom_tool", work)
    assert "internal detail" not in str(caught.value)
    assert audit_rows(db_path)[-1][:2] == ("custom_tool", 0)


def test_call_returns_the_outcome_text(ready: Service, db_path: Path) -> None:
    assert ready.call("custom_tool", lambda _: Outcome("done", 3, {"k": "v"})) == "done"
    assert audit_rows(db_path)[-1][:2] == ("custom_tool", 1)


# -- opening and closing ------------------------------------------------------------------------


def test_service_is_a_context_manager_that_closes(settings: Settings) -> None:
    with Service.open(settings) as service:
        service.list_tables()
    for conn in (service.db.server, service.db.reader, service.db.writer):
        with pytest.raises(apsw.ConnectionClosedError):
            conn.execute("SELECT 1")


def test_close_twice_is_harmless(settings: Settings) -> None:
    service = Service.open(settings)
    service.close()
    service.close()


def test_close_from_another_thread_closes_every_connection(settings: Settings) -> None:
    service = Service.open(settings)
    closer = threading.Thread(target=service.close)
    closer.start()
    closer.join(timeout=30)
    assert not closer.is_alive()
    with pytest.raises(apsw.ConnectionClosedError):
        service.db.reader.execute("SELECT 1")


def test_open_refuses_a_bad_database_with_a_startup_error(tmp_path: Path) -> None:
    path = tmp_path / "not.db"
    path.write_text("plain text")
    with pytest.raises(StartupError):
        Service.open(Settings(db=path))


def test_open_can_create_the_parent_folder(tmp_path: Path) -> None:
    settings = Settings(db=tmp_path / "deep" / "er" / "agent.db")
    with Service.open(settings, create_parent=True) as service:
        assert service.settings == settings
    assert settings.db.is_file()


def test_a_refused_claim_leaves_no_secret_in_the_audit_log(service: Service, db_path: Path) -> None:
    token = "ghp_" + "a1b2c3d4e5" * 4  # publish-gate: allow
    with pytest.raises(InvalidArgument):
        service.claim_add(token, "fact", "holds a token")
    with connect_both(db_path) as conn:
        (detail,) = conn.execute(
            "SELECT detail FROM query_log WHERE tool = 'claim_add' ORDER BY id DESC LIMIT 1"
        ).fetchone()
    assert token not in detail
    assert "[REDACTED:github-token]" in detail


def _last_detail(db: Path) -> dict[str, object]:
    import json

    conn = connect_both(db, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        (text,) = conn.execute("SELECT detail FROM query_log ORDER BY id DESC LIMIT 1").fetchone()
    finally:
        conn.close()
    return dict(json.loads(text))


def test_a_refusal_is_marked_in_the_audit_detail_and_other_failures_are_not(
    ready: Service, db_path: Path
) -> None:
    with pytest.raises(PolicyDenied):
        ready.write_query("DROP TABLE t")
    assert _last_detail(db_path)["refused"] is True
    with pytest.raises(SqlgateError):
        ready.read_query("SELECT * FROM no_such_table")
    assert "refused" not in _last_detail(db_path)


def test_bound_parameters_are_kept_in_the_audit_detail(ready: Service, db_path: Path) -> None:
    ready.read_query("SELECT * FROM t WHERE body = ?", params=["alpha"])
    assert _last_detail(db_path)["params"] == '["alpha"]'
    ready.read_query("SELECT 1")
    assert "params" not in _last_detail(db_path)
