"""Every page over the seeded database, without a browser: what is shown, what the filters
change, that no payload reaches the page as markup, and the gate in front."""

from __future__ import annotations

import json
import re
from pathlib import Path

import apsw
import pytest
from scripts.ui_seed import BIG_CELL_CHARS, SCRIPT
from starlette.testclient import TestClient

from sqlgate.errors import SqlgateError
from sqlgate.surfaces.ui.access import CONTENT_SECURITY_POLICY, cookie_value
from sqlgate.surfaces.ui.activity import suggested_view
from sqlgate.surfaces.ui.app import build_ui_app
from sqlgate.surfaces.ui.console import Console
from sqlgate.surfaces.ui.destructive import undo_state
from sqlgate.surfaces.ui.summary import AuditSummary
from tests.records import connect_both
from tests.surfaces.ui.conftest import TOKEN, audit_plan

PAGES = ["/", "/errors", "/patterns", "/destructive", "/memory", "/claims", "/tables",
         "/tables/rows?name=customers", "/memory/event/1", "/memory?q=deploy"]  # fmt: skip
RAW = ("<script>alert", "<svg onload", "<img src=x", '" onmouseover="alert', "\u202e")


@pytest.mark.parametrize("path", PAGES)
def test_every_page_renders_and_no_payload_is_markup(client: TestClient, path: str) -> None:
    answer = client.get(path)
    assert answer.status_code == 200, answer.text[:500]
    for raw in RAW:
        assert raw not in answer.text, f"{raw!r} reached {path} unescaped"
    assert answer.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert answer.headers["x-content-type-options"] == "nosniff"
    assert answer.headers["referrer-policy"] == "no-referrer"
    # the only script is the console's own file
    assert re.findall(r"<script[^>]*>", answer.text) == ['<script src="/static/console.js" defer>']


def _ids(html: str) -> list[int]:
    return [int(i) for i in re.findall(r"<tr><td>(\d+)</td>", html)]


def test_activity_filters_change_what_is_shown(client: TestClient) -> None:
    everything = _ids(client.get("/").text)
    refused = client.get("/?outcome=refused").text
    assert len(everything) == 50
    assert 'class="outcome refused"' in refused
    assert 'class="outcome ok"' not in refused
    assert 'class="outcome error"' not in refused
    by_tool = client.get("/?tool=destructive_query").text
    assert "<td>destructive_query</td>" in by_tool
    assert "<td>read_query</td>" not in by_tool
    by_session = client.get("/", params={"session": SCRIPT}).text
    assert 0 < len(_ids(by_session)) < 5
    older = _ids(client.get(f"/?before={everything[-1]}").text)
    assert older
    assert max(older) < min(everything)


def test_activity_expands_a_call_to_statement_params_and_error(client: TestClient) -> None:
    page = client.get("/?tool=write_query").text
    assert "parameters" in page
    assert "[&quot;acme&quot;" in page
    failed = client.get("/?outcome=error", params={"session": SCRIPT}).text
    assert "near &quot;SELEC&quot;: syntax error" in failed


def test_a_bad_date_filter_is_a_400_page_naming_it(client: TestClient) -> None:
    answer = client.get("/?since=yesterday-ish")
    assert answer.status_code == 400
    assert "since" in answer.text


def test_the_1mb_cell_is_cut_with_a_note(client: TestClient) -> None:
    page = client.get("/tables/rows?name=customers")
    assert len(page.content) < 100_000
    assert f"…[+{BIG_CELL_CHARS + len(SCRIPT) - 2000:,} chars not shown]" in page.text


def test_patterns_offer_a_create_view_call(client: TestClient) -> None:
    page = client.get("/patterns").text
    assert "create_view(name=&quot;v_select" in page


def test_suggested_view_is_valid_call_text() -> None:
    text = suggested_view("SELECT * FROM t WHERE id = ?", 'SELECT "x" FROM t')
    assert text.startswith('create_view(name="v_select_from_t_where_id", select_sql=')
    assert json.dumps('SELECT "x" FROM t') in text


def test_destructive_calls_show_each_undo_state_and_command(
    client: TestClient, seeded_db: Path
) -> None:
    page = client.get("/destructive").text
    for state in ("undoable", "undone", "snapshot only"):
        assert f">{state}<" in page
    assert re.search(r"sqlgate undo \d+@[0-9a-f]{8} --db " + re.escape(str(seeded_db)), page)
    assert "sqlgate snapshots restore " in page
    assert "Snapshots" in page
    assert ".sqlite<" in page


@pytest.mark.parametrize(
    ("ok", "detail", "state"),
    [
        pytest.param(0, {"refused": True}, "refused", id="refused"),
        pytest.param(0, {}, "failed", id="failed"),
        pytest.param(1, {"undo": 7}, "undoable", id="undoable"),
        pytest.param(1, {"undo": 8}, "undone", id="undone"),
        pytest.param(1, {"undo": 9}, "expired", id="rotated-out"),
        pytest.param(1, {"snapshot": "/x/a.sqlite"}, "snapshot only", id="snapshot"),
        pytest.param(1, {"snapshot": "/x/gone.sqlite"}, "expired", id="snapshot-gone"),
    ],
)
def test_undo_state(ok: int, detail: dict[str, object], state: str) -> None:
    changesets = {7: (None, None), 8: ("2026-01-01T00:00:00.000Z", "cli-x")}
    found = undo_state(5, ok, detail, changesets, Path("/d b/x.db"), frozenset({"a.sqlite"}))
    assert found.state == state
    if state == "undoable":
        assert found.command == "sqlgate undo 5 --db '/d b/x.db'"


def test_memory_search_uses_memory_search(client: TestClient) -> None:
    page = client.get("/memory?q=runbook").text
    assert "deploy of billing-api went out" in page
    assert "no events match" in client.get("/memory?q=zzzznothing").text


def test_memory_shows_the_chain_verdict_once_verified(client: TestClient, console: Console) -> None:
    client.get("/memory")
    console.chain.wait(30)
    page = client.get("/memory").text
    assert "chain ok: verified up to event" in page
    assert "witnessed head: event" in page


def test_event_page_shows_hash_and_link(client: TestClient) -> None:
    page = client.get("/memory/event/2").text
    assert "links to the event before" in page
    assert re.search(r"<code>[0-9a-f]{64}</code>", page)
    assert client.get("/memory/event/999999").status_code == 404


def test_claims_show_curves_and_contradictions(client: TestClient) -> None:
    page = client.get("/claims").text
    assert "duplicate-rank" in page
    assert page.count('<svg class="curve"') >= 5
    assert "half-life 30 days" in page


def test_tables_lists_the_agents_tables_only(client: TestClient) -> None:
    page = client.get("/tables").text
    assert ">customers<" in page
    assert "query_log" not in page
    assert client.get("/tables/rows?name=query_log").status_code == 404


# -- the gate ----------------------------------------------------------------------------
@pytest.fixture
def fresh(console: Console) -> TestClient:
    return TestClient(build_ui_app(console, TOKEN, "127.0.0.1"), base_url="http://127.0.0.1:9")


def test_without_the_cookie_every_page_is_401(fresh: TestClient) -> None:
    for path in ("/", "/static/console.css", "/memory"):
        answer = fresh.get(path)
        assert answer.status_code == 401
        assert "?token=" in answer.text


def test_a_wrong_token_is_401_and_sets_no_cookie(fresh: TestClient) -> None:
    answer = fresh.get("/?token=wrong", follow_redirects=False)
    assert answer.status_code == 401
    assert "set-cookie" not in answer.headers


def test_the_token_is_exchanged_for_a_strict_httponly_cookie(fresh: TestClient) -> None:
    answer = fresh.get(f"/memory?q=deploy&token={TOKEN}", follow_redirects=False)
    assert answer.status_code == 303
    assert answer.headers["location"] == "/memory?q=deploy"
    cookie = answer.headers["set-cookie"]
    assert cookie.startswith(f"sqlgate_ui={cookie_value(TOKEN)};")
    assert "HttpOnly" in cookie
    assert "SameSite=Strict" in cookie
    assert TOKEN not in cookie
    assert fresh.get("/memory").status_code == 200


def test_the_token_stays_valid_until_the_console_stops(console: Console) -> None:
    """As `sqlgate ui --help` and the docs say (issue 30): not a one-time token; a second
    browser (or the same one after its cookie went) signs in with the same URL."""
    app = build_ui_app(console, TOKEN, "127.0.0.1")
    for _ in range(2):
        browser = TestClient(app, base_url="http://127.0.0.1:9")
        assert browser.get(f"/?token={TOKEN}", follow_redirects=False).status_code == 303
        assert browser.get("/").status_code == 200


def test_a_foreign_host_header_is_refused(fresh: TestClient) -> None:
    fresh.cookies.set("sqlgate_ui", cookie_value(TOKEN))
    assert fresh.get("/", headers={"host": "evil.example"}).status_code == 421
    assert fresh.get("/", headers={"host": "localhost:8766"}).status_code == 200


def test_only_get_is_served(fresh: TestClient) -> None:
    fresh.cookies.set("sqlgate_ui", cookie_value(TOKEN))
    assert fresh.post("/").status_code == 405


def test_the_console_writes_nothing_beside_the_database(tmp_path: Path) -> None:
    from scripts.ui_seed import seed

    from sqlgate.config import Settings

    db = tmp_path / "quiet.db"
    seed(db)
    before = {p.name: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    console = Console.open(Settings(db=db))
    try:
        with TestClient(
            build_ui_app(console, TOKEN, "127.0.0.1"), base_url="http://127.0.0.1"
        ) as c:
            c.get(f"/?token={TOKEN}")
            for path in PAGES:
                assert c.get(path).status_code in (200, 404)
            console.chain.wait(30)
            assert "chain ok" in c.get("/memory").text
    finally:
        console.close()
    after = {p.name: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    # SQLite's own shared-memory index (and an empty log) is what any reader of a WAL
    # database needs; everything else, the database and its witness included, is untouched
    created = {name: data for name, data in after.items() if name not in before}
    assert set(created) <= {"quiet.db-shm", "quiet.db-wal"}
    assert created.get("quiet.db-wal", b"") == b""
    assert {name: after[name] for name in before} == before


def _view_figures(conn: apsw.Connection) -> tuple[dict[str, tuple[int, int, str]], dict[str, int]]:
    patterns = {
        str(fp): (int(calls), int(failures), str(last))
        for fp, calls, failures, last in conn.execute(
            "SELECT fingerprint, calls, failures, last_used FROM query_patterns WHERE calls > 1"
        )
    }
    hours = dict(conn.execute("SELECT substr(ts, 1, 13), count(*) FROM query_log GROUP BY 1"))
    return patterns, hours


def _summary_figures(
    summary: AuditSummary,
) -> tuple[dict[str, tuple[int, int, str]], dict[str, int]]:
    patterns = {p.fingerprint: (p.calls, p.failures, p.last_used) for p in summary.repeated(10**6)}
    return patterns, {hour: sum(counts) for hour, counts in summary.hours.items()}


def test_the_summary_folded_in_by_id_equals_the_server_view(tmp_path: Path) -> None:
    from scripts.ui_seed import seed

    from sqlgate.config import Settings
    from sqlgate.service import Service

    db = tmp_path / "grow.db"
    seed(db)
    summary = AuditSummary()
    conn = connect_both(db, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        summary.refresh(conn)
        assert _summary_figures(summary) == _view_figures(conn)
        with Service.open(Settings(db=db)) as writer:  # more calls arrive
            for _ in range(3):
                writer.read_query("SELECT name FROM customers WHERE id = 1")
            with pytest.raises(SqlgateError):
                writer.read_query("SELECT name FROM customers WHERE id = 1 AND nope = 2")
        summary.refresh(conn)
        assert _summary_figures(summary) == _view_figures(conn)
        assert summary.high == conn.execute("SELECT max(id) FROM query_log").fetchone()[0]
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("query", "index"),
    [
        pytest.param({"tool": "read_query"}, "query_log_by_tool", id="tool"),
        pytest.param({"session": "s-1"}, "query_log_by_session", id="session"),
        pytest.param({"outcome": "refused"}, "query_log_failures", id="refused"),
        pytest.param({"outcome": "error", "before": "90"}, "query_log_failures", id="error-page"),
        pytest.param({}, "SCAN query_log", id="newest-by-rowid"),
    ],
)
def test_each_filter_walks_an_index_newest_first(
    seeded_db: Path, query: dict[str, str], index: str
) -> None:
    """Keyset pages never sort: the plan walks the rowid or an index, with no temp b-tree."""
    plan = audit_plan(seeded_db, query, "*")
    assert index in plan
    assert "TEMP B-TREE" not in plan


def test_a_tampered_chain_is_shown_broken_at_its_event(tmp_path: Path) -> None:
    from scripts.ui_seed import seed

    from sqlgate.config import Settings

    db = tmp_path / "tampered.db"
    seed(db)
    conn = connect_both(db)  # someone with the file, past the triggers
    conn.execute("DROP TRIGGER memory_events_no_update")
    conn.execute("UPDATE memory_events SET content = 'rewritten' WHERE id = 3")
    conn.close()
    console = Console.open(Settings(db=db))
    try:
        with TestClient(
            build_ui_app(console, TOKEN, "127.0.0.1"), base_url="http://127.0.0.1"
        ) as c:
            c.get(f"/?token={TOKEN}")
            c.get("/memory")
            console.chain.wait(30)
            page = c.get("/memory").text
    finally:
        console.close()
    assert "chain BROKEN at event 3" in page


def test_a_users_table_named_query_log_is_theirs_and_the_activity_is_sqlgates(
    tmp_path: Path,
) -> None:
    """The activity page reads sqlgate's records (`Console.reading`), the table browser the
    user's file (`Console.reading_tables`): a table of the user's named like sqlgate's audit
    log is shown as theirs, and never as sqlgate's calls."""
    from sqlgate.config import Settings
    from sqlgate.service import Service

    db = tmp_path / "app.db"
    app = apsw.Connection(str(db))
    app.execute(
        "CREATE TABLE query_log (id INTEGER PRIMARY KEY, note TEXT);"
        "INSERT INTO query_log (note) VALUES ('the apps own row zq81')"
    )
    app.close()
    with Service.open(Settings(db=db)) as service:
        assert "zq81" in service.read_query("SELECT note FROM query_log")  # the user's table
        service.write_query("CREATE TABLE marker_zq82 (x)")
    console = Console.open(Settings(db=db))
    try:
        with TestClient(
            build_ui_app(console, TOKEN, "127.0.0.1"), base_url="http://127.0.0.1"
        ) as c:
            c.get(f"/?token={TOKEN}")
            activity = c.get("/").text
            assert "CREATE TABLE marker_zq82" in activity  # sqlgate's calls
            assert "SELECT note FROM query_log" in activity
            assert "the apps own row" not in activity
            assert ">query_log<" in c.get("/tables").text  # the user's table, listed
            rows = c.get("/tables/rows?name=query_log")
            assert rows.status_code == 200
            assert "the apps own row zq81" in rows.text
            assert "marker_zq82" not in rows.text
    finally:
        console.close()
