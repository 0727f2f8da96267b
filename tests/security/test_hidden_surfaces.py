"""Red team, the surfaces around SQL (issue 23 §1): a hidden column's value never reaches the
agent through describe_table, get_schema, search_text, the audit log or the memory tools,
nor a person through the web console's table pages, whose readers would otherwise show it.

Each test plants a distinctive value and looks for it in everything the surface returns.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest
from starlette.testclient import TestClient

from sqlgate.config import Settings
from sqlgate.engine.running.textsearch import SearchRequest
from sqlgate.errors import PolicyDenied
from sqlgate.service import Service
from sqlgate.surfaces.ui.app import build_ui_app
from sqlgate.surfaces.ui.console import Console
from tests.conftest import FakeClock
from tests.records import connect_both

SECRET = "999-13-5813"
TOKEN = "t" * 32


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    policy = tmp_path / "policy.toml"
    policy.write_text(
        '[tables.people]\nhide = ["ssn"]\nnotes = { ssn = "kept by payroll" }\n',
        encoding="utf-8",
    )
    return Settings(db=tmp_path / "agent.db", policy=policy, protect_table=("payroll",))


@pytest.fixture
def hidden(settings: Settings, clock: FakeClock) -> Iterator[Service]:
    service = Service.open(settings, clock=clock, session="s-hide")
    service.write_query("CREATE TABLE people(id INTEGER PRIMARY KEY, name TEXT, ssn TEXT)")
    service.create_view("people_v", "SELECT name, ssn FROM people", "people with ssn")
    app = apsw.Connection(str(settings.db))  # the value comes from elsewhere: the app's own
    try:  # connection (the agent could not write it)
        app.execute(
            "INSERT INTO people(name, ssn) VALUES ('ann', ?), ('bo', ?)", (SECRET, SECRET + "0")
        )
    finally:
        app.close()
    yield service
    service.close()


def test_describe_table_shows_the_column_exists_and_is_hidden_never_a_value(
    hidden: Service,
) -> None:
    text = hidden.describe_table("people")
    assert "2,ssn,TEXT" in text
    assert "# hidden by policy (reads as NULL, never written): ssn" in text
    assert '# note on ssn: "kept by payroll"' in text
    assert SECRET not in text


def test_get_schema_names_every_rule_and_note(hidden: Service) -> None:
    text = hidden.get_schema()
    assert "people.ssn hidden" in text
    assert "payroll protected (read only)" in text
    assert SECRET not in text


def test_search_text_never_searches_a_hidden_column(hidden: Service) -> None:
    found = hidden.search_text(SearchRequest(pattern="999", table="people"))
    assert SECRET not in found
    assert found.splitlines()[0] == "key,column,snippet"
    assert "ssn" not in found.split("\n# ")[0]
    for request in (
        SearchRequest(pattern="999", table="people", columns=["name", "SSN"]),
        SearchRequest(pattern="999", table="people", key_column="ssn"),
    ):
        with pytest.raises(PolicyDenied, match=r"ssn of people is hidden.*search the other"):
            hidden.search_text(request)
    # through a view, the authorizer reads it as NULL: nothing matches
    assert SECRET not in hidden.search_text(SearchRequest(pattern="999", table="people_v"))


def test_the_audit_log_and_memory_never_hold_the_value(hidden: Service) -> None:
    hidden.read_query("SELECT * FROM people")
    hidden.read_query("SELECT ssn FROM people_v WHERE ssn LIKE '999%'")
    hidden.append_event("looked at people", kind="note")
    everything = hidden.read_query("SELECT * FROM query_log", limit=1000)
    assert SECRET not in everything
    assert SECRET not in hidden.memory_search("999")
    assert SECRET not in hidden.get_resume_context()


def test_the_consoles_table_pages_show_the_column_as_null_and_say_why(
    hidden: Service, settings: Settings
) -> None:
    console = Console.open(settings)
    try:
        app = build_ui_app(console, TOKEN, "127.0.0.1")
        with TestClient(app, base_url="http://127.0.0.1:8766") as client:
            client.get(f"/?token={TOKEN}", follow_redirects=False)
            for name in ("people", "people_v"):
                page = client.get(f"/tables/rows?name={name}")
                assert page.status_code == 200
                assert SECRET not in page.text
                assert "ann" in page.text
                assert "hidden by policy, shown as NULL: people.ssn" in page.text
    finally:
        console.close()


def test_a_result_that_read_a_hidden_column_says_so_in_its_last_line(hidden: Service) -> None:
    answer = hidden.read_query("SELECT name, ssn FROM people_v ORDER BY name")
    assert answer.splitlines() == [
        "name,ssn", "ann,", "bo,", "# 2 rows", "# hidden by policy: people.ssn",
    ]  # fmt: skip
    assert "hidden by policy" not in hidden.read_query("SELECT name FROM people")


def test_the_rule_follows_a_rename_by_the_agent_or_another_program(hidden: Service) -> None:
    hidden.read_query("SELECT count(*) FROM people")
    hidden.destructive_query("ALTER TABLE people RENAME TO staff", reason="rename")
    assert SECRET not in hidden.read_query("SELECT ssn FROM staff")
    other = connect_both(hidden.db.path)
    other.execute("ALTER TABLE staff RENAME TO crew")
    other.close()
    answer = hidden.read_query("SELECT * FROM crew")
    assert SECRET not in answer
    assert "# hidden by policy: people.ssn" in answer


def test_a_hidden_column_renamed_away_by_another_program_fails_closed(hidden: Service) -> None:
    other = connect_both(hidden.db.path)
    other.execute("ALTER TABLE people RENAME COLUMN ssn TO tax_id")
    other.close()
    answer = hidden.read_query("SELECT name, tax_id FROM people")
    assert SECRET not in answer
    assert "ann" not in answer  # every column of the table now reads as NULL


def test_undo_data_reads_as_null_and_undo_call_still_restores(hidden: Service) -> None:
    answer = hidden.write_query("UPDATE people SET name = 'zed' WHERE name = 'ann'")
    call = answer.split("sqlgate undo ", 1)[1].split(" ", 1)[0]  # `N@database`
    dump = hidden.read_query("SELECT hex(data) FROM undo_chunks") + hidden.read_query(
        "SELECT hex(digests) FROM undo_row_states"
    )
    assert SECRET.encode().hex().upper() not in dump.upper()
    assert hidden.undo_call(call, reason="put ann back").startswith("undone")
    rows = hidden.db.writer.execute("SELECT name, ssn FROM people ORDER BY id").fetchall()
    assert rows == [("ann", SECRET), ("bo", SECRET + "0")]
