"""The console names who made each call (issue 22), over plain HTTP: the activity page's
actor column and filter (through `query_log_by_actor`, pages included), the actor of
`query_errors` and the actors of `query_patterns`, who asked for and who confirmed each
destructive call, and sessions that keep their actor readable where a list shortens them.

A row written before actors were recorded has none: it reads `-`, never as someone.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import apsw
import pytest
from scripts.ui_seed import LONG_MEMBER, MEMBERS, SCRIPT, SERVER_SESSION, member_session
from starlette.testclient import TestClient

from sqlgate.config import Settings
from sqlgate.engine.records.actors import Caller, Identity, acting_as, connection_tag
from sqlgate.service import Service
from sqlgate.surfaces.ui.app import build_ui_app
from sqlgate.surfaces.ui.console import Console
from sqlgate.surfaces.ui.summary import AuditSummary
from tests.records import connect_both
from tests.surfaces.ui.conftest import TOKEN, audit_plan

_ROW = re.compile(r"<tr><td>(\d+)</td>(.*?)</tr>", re.S)
_CELL = re.compile(r"<td>(.*?)</td>", re.S)
_TAGS = re.compile(r"<[^>]+>")


def rows(page: str) -> dict[int, list[str]]:
    """Each table row's cells as text (tags dropped, entities read), by its id."""
    found = {}
    for number, rest in _ROW.findall(page):
        cells = [html.unescape(_TAGS.sub("", cell)).strip() for cell in _CELL.findall(rest)]
        found[int(number)] = cells
    return found


def headers(page: str) -> list[str]:
    return [html.unescape(h) for h in re.findall(r"<th>(.*?)</th>", page)]


def actors_in_db(db: Path, sql: str, *params: object) -> list[tuple[object, ...]]:
    conn = connect_both(db, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return list(conn.execute(sql, params))
    finally:
        conn.close()


# -- activity -------------------------------------------------------------------------------
def test_activity_shows_each_calls_actor_and_dash_when_none_was_recorded(
    client: TestClient, seeded_db: Path
) -> None:
    recorded = dict(actors_in_db(seeded_db, "SELECT id, actor FROM query_log"))
    newest = client.get("/").text
    assert headers(newest)[:3] == ["id", "time (UTC)", "actor"]
    older = client.get("/?before=300").text  # the bulk history: some rows name no actor
    shown = {n: cells[1] for page in (newest, older) for n, cells in rows(page).items()}
    assert len(shown) == 100
    assert shown == {n: "-" if recorded[n] is None else recorded[n] for n in shown}
    assert "-" in shown.values()
    assert set(shown.values()) == {*MEMBERS, LONG_MEMBER, "local", "-"}


def test_activity_offers_every_recorded_actor_as_a_filter(client: TestClient) -> None:
    page = client.get("/").text
    form = page.split('<select name="actor">', 1)[1].split("</select>", 1)[0]
    options = re.findall(r'<option value="([^"]*)">([^<]*)</option>', form)
    assert options == [("", "any actor"), ("alice", "alice"), ("bob", "bob"),
                       (LONG_MEMBER, LONG_MEMBER), ("local", "local"),
                       ("-", "- (not recorded)")]  # fmt: skip


@pytest.mark.parametrize("actor", ["alice", "bob", "local", "-"])
def test_activity_actor_filter_pages_through_exactly_that_actors_calls(
    client: TestClient, seeded_db: Path, actor: str
) -> None:
    where = "actor IS NULL" if actor == "-" else "actor = ?"
    expected = [
        number
        for (number,) in actors_in_db(
            seeded_db,
            f"SELECT id FROM query_log WHERE {where} ORDER BY ts DESC, id DESC",
            *(() if actor == "-" else (actor,)),
        )
    ]
    seen: list[int] = []
    path = f"/?actor={actor}"
    while path:
        page = client.get(path).text
        found = rows(page)
        assert {cells[1] for cells in found.values()} <= {actor}
        seen += list(found)
        older = re.search(r'<a href="([^"]+)">older »</a>', page)
        path = html.unescape(older.group(1)) if older else ""
    assert seen == expected
    assert len(expected) > 50 or actor in ("local", "-")  # the members' take pages


def test_the_actor_filter_keeps_the_other_filters(client: TestClient) -> None:
    page = client.get("/?actor=alice&outcome=error").text
    found = rows(page)
    assert found
    assert {(cells[1], cells[4]) for cells in found.values()} == {("alice", "error")}
    assert 'name="actor"' in page
    assert '<option value="alice" selected>' in page


def test_an_unknown_actor_shows_no_calls(client: TestClient) -> None:
    assert rows(client.get("/?actor=nobody").text) == {}


@pytest.mark.parametrize(
    "query",
    [
        pytest.param({"actor": "alice"}, id="actor"),
        pytest.param({"actor": "-"}, id="not-recorded"),
        pytest.param({"actor": "alice", "tool": "read_query"}, id="actor-and-tool"),
        pytest.param({"actor": "alice", "outcome": "refused", "before": "120"}, id="page"),
        pytest.param({"actor": "bob", "since": "2026-11-27"}, id="since"),
    ],
)
def test_the_actor_filter_walks_query_log_by_actor_newest_first(
    seeded_db: Path, query: dict[str, str]
) -> None:
    """A page of one actor's calls reads that page, not all of the actor's calls."""
    plan = audit_plan(seeded_db, query, "id")
    assert "INDEX query_log_by_actor (actor=?" in plan
    assert "TEMP B-TREE" not in plan


# -- query_errors and query_patterns --------------------------------------------------------
def test_errors_show_the_actor_of_each_failed_call(client: TestClient, seeded_db: Path) -> None:
    page = client.get("/errors").text
    assert headers(page)[:3] == ["id", "time (UTC)", "actor"]
    recorded = dict(actors_in_db(seeded_db, "SELECT id, actor FROM query_errors"))
    shown = {number: cells[1] for number, cells in rows(page).items()}
    assert shown == {n: "-" if recorded[n] is None else recorded[n] for n in shown}
    assert "alice" in shown.values()


def test_patterns_show_the_actors_of_each_shape(client: TestClient, seeded_db: Path) -> None:
    page = client.get("/patterns").text
    assert "actors" in headers(page)
    view = {
        str(fingerprint): sorted(str(actors).split(",")) if actors else []
        for fingerprint, actors in actors_in_db(
            seeded_db, "SELECT fingerprint, actors FROM query_patterns WHERE calls > 1"
        )
    }
    shape = "SELECT name, note FROM customers WHERE id = ?"
    assert view[shape] == ["alice", "local"]
    row = next(r for r in page.split("<tr>") if html.escape(shape, quote=True) in r)
    assert "alice, local" in row


def test_the_summary_keeps_each_patterns_actors_as_the_view_does(seeded_db: Path) -> None:
    conn = connect_both(seeded_db, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        summary = AuditSummary()
        summary.refresh(conn)
        view = {
            str(fingerprint): set(str(actors).split(",")) if actors else set()
            for fingerprint, actors in conn.execute(
                "SELECT fingerprint, actors FROM query_patterns WHERE calls > 1"
            )
        }
    finally:
        conn.close()
    assert {p.fingerprint: p.actors for p in summary.repeated(10**6)} == view


# -- destructive calls ----------------------------------------------------------------------
@pytest.fixture
def confirmed(tmp_path: Path) -> Path:
    """Destructive calls: one by bob that carol confirmed (the detail `confirmed_by` the
    confirmation adds), one by the local agent asked of no one, and an old row of no actor."""
    db = tmp_path / "confirmed.db"
    with Service.open(Settings(db=db), session=SERVER_SESSION) as service:
        service.write_query("CREATE TABLE t (x)")
        service.write_query("INSERT INTO t VALUES (1), (2), (3)")
        service.destructive_query("DELETE FROM t WHERE x = 1", "local cleanup")
    conn = connect_both(db)
    try:
        insert = (
            "INSERT INTO query_log (ts, session, tool, query, ok, rows, duration_ms, detail, "
            "actor) VALUES (?, ?, 'destructive_query', ?, 1, 1, 1.0, ?, ?)"
        )
        conn.execute(insert, ("2026-12-01T00:00:00.000Z", "s-old", "DELETE FROM t WHERE x = 2",
                              json.dumps({"reason": "old"}), None))  # fmt: skip
        conn.execute(insert, ("2026-12-02T00:00:00.000Z", member_session("bob"),
                              "DELETE FROM t WHERE x = 3",
                              json.dumps({"reason": "bob's", "confirmed_by": f"carol{SCRIPT}"}),
                              "bob"))  # fmt: skip
    finally:
        conn.close()
    return db


def test_destructive_calls_show_who_asked_and_who_confirmed(confirmed: Path) -> None:
    console = Console.open(Settings(db=confirmed))
    try:
        with TestClient(
            build_ui_app(console, TOKEN, "127.0.0.1"), base_url="http://127.0.0.1"
        ) as signed_in:
            signed_in.get(f"/?token={TOKEN}")
            page = signed_in.get("/destructive").text
    finally:
        console.close()
    assert SCRIPT not in page
    titles = headers(page)
    asked, confirmed_by = titles.index("asked by"), titles.index("confirmed by")
    shown = {n: (cells[asked - 1], cells[confirmed_by - 1]) for n, cells in rows(page).items()}
    assert shown == {5: ("bob", f"carol{SCRIPT}"), 4: ("-", "-"), 3: ("local", "-")}


@pytest.mark.parametrize(
    ("detail", "shown"),
    [
        pytest.param({"confirmed_by": "carol"}, "carol", id="a-name"),
        pytest.param(
            {"confirmed_by": {"actor": "carol", "via": "elicitation"}},
            "carol",
            id="an-object-naming-its-actor",
        ),
        pytest.param({"confirmed_by": ""}, "-", id="empty"),
        pytest.param({"confirmed_by": None}, "-", id="null"),
        pytest.param({"reason": "no confirmation asked"}, "-", id="absent"),
        pytest.param({"confirmed_by": 7}, "7", id="another-value-as-json"),
    ],
)
def test_who_confirmed_is_read_from_the_audit_detail(detail: dict[str, object], shown: str) -> None:
    from sqlgate.surfaces.ui.destructive import confirmer

    assert confirmer(detail) == shown


# -- sessions that keep their actor ---------------------------------------------------------
def session_span(session: str, shown: str) -> str:
    return f'<span class="session" title="{session}">{shown}</span>'


LONG_SHORT = (  # the long member's session without sqlgate's start time: the actor whole
    f"s-…{SERVER_SESSION.rsplit('-', 1)[1]}/{LONG_MEMBER}/"
    + connection_tag(f"mcp-session-of-{LONG_MEMBER}")
)


def test_memory_pages_keep_a_long_actor_whole_in_shortened_sessions(client: TestClient) -> None:
    page = client.get("/memory").text
    assert f">{LONG_SHORT} (1)</text>" in page  # the timeline's label
    assert session_span(member_session(LONG_MEMBER), LONG_SHORT) in page  # the events' list


def test_a_session_that_fits_is_shown_whole(client: TestClient) -> None:
    page = client.get("/memory").text
    assert session_span(SERVER_SESSION, SERVER_SESSION) in page
    assert f">{SERVER_SESSION} (" in page


def test_activity_sessions_keep_their_actor(client: TestClient, seeded_db: Path) -> None:
    long_one = rows(client.get("/", params={"actor": LONG_MEMBER}).text)
    assert [cells[1:3] for cells in long_one.values()] == [[LONG_MEMBER, LONG_SHORT]]
    alices = {
        number
        for (number,) in actors_in_db(
            seeded_db, "SELECT id FROM query_log WHERE session = ?", member_session("alice")
        )
    }
    page = client.get("/", params={"actor": "alice", "session": member_session("alice")}).text
    assert set(rows(page)) == alices  # 40 characters: whole
    assert {cells[2] for cells in rows(page).values()} == {member_session("alice")}


def test_a_member_calls_appear_under_their_actor_as_they_arrive(tmp_path: Path) -> None:
    """A call made after the console opened is listed under its actor, and the filter's
    select learns the new actor."""
    from scripts.ui_seed import seed

    db = tmp_path / "grow.db"
    seed(db)
    console = Console.open(Settings(db=db))
    try:
        with TestClient(
            build_ui_app(console, TOKEN, "127.0.0.1"), base_url="http://127.0.0.1"
        ) as signed_in:
            signed_in.get(f"/?token={TOKEN}")
            assert '<option value="erin"' not in signed_in.get("/").text
            with Service.open(Settings(db=db), session=SERVER_SESSION) as writer:
                erin = Caller(Identity("erin", "read", "member"), member_session("erin"))
                with acting_as(erin):
                    writer.read_query("SELECT 1 AS by_erin")
            page = signed_in.get("/?actor=erin").text
    finally:
        console.close()
    assert '<option value="erin" selected>' in page
    assert [cells[1] for cells in rows(page).values()] == ["erin"]
