"""`sqlgate log` and `sqlgate stats` name who made each call (issue 22): the `actor` of every
query_log row, filtered by `--actor`, shown as a column on a terminal, in a pipe and in
`--json`. A row written before actors were recorded has none, and is shown as `-`, never as
someone. An actor read from the file is agent-controlled text like any other: it reaches the
terminal through the control-sequence-safe helpers.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from sqlgate.config import FLAGS, Settings
from sqlgate.engine.records.actors import (
    Caller,
    Identity,
    acting_as,
    caller_session,
    connection_tag,
)
from sqlgate.errors import SqlError
from sqlgate.service import Service
from sqlgate.surfaces.cli.app import main
from tests.records import connect_both
from tests.surfaces.cli.helpers import json_lines, succeeded

SERVER = "s-20261202T035830Z-471d28"
ALICE_SESSION = caller_session(SERVER, "Alice", "mcp-session-of-alice")
BOB_SESSION = caller_session(SERVER, "bob")  # protocol 2026-07-28: no Mcp-Session-Id
HOSTILE = "mallory\x1b[2K\u202e"  # written into the file by another program
TERMINAL = {"TTY_COMPATIBLE": "1"}
PIPED = {"TTY_COMPATIBLE": "0"}
_COLOUR = re.compile(r"\x1b\[[0-9;]*m")
# each row's actor as a person reads it: the controls as escapes, `-` for none recorded
ACTORS_SHOWN = {
    6: "mallory\\x1b[2K\\u202e", 5: "-", 4: "Alice", 3: "bob", 2: "Alice", 1: "local"}  # fmt: skip


@pytest.fixture(autouse=True)
def no_sqlgate_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for flag in FLAGS:
        monkeypatch.delenv(flag.env_var, raising=False)


def run(db: Path, *args: str, env: dict[str, str] | None = None, columns: int = 250) -> Result:
    return CliRunner().invoke(main, [args[0], "--db", str(db), *args[1:]],
                              env={"COLUMNS": str(columns), **(env or PIPED)},
                              prog_name="sqlgate")  # fmt: skip


def member(name: str, session: str) -> Caller:
    return Caller(Identity(name, "write", "member"), session)


@pytest.fixture
def team(db_path: Path) -> Path:
    """Calls 1-4 by the local agent, two members over HTTP (Alice's last one failed); 5 an
    old row with no actor; 6 a row another program wrote with controls in its actor."""
    service = Service.open(Settings(db=db_path), session=SERVER)
    service.read_query("SELECT 1 AS by_the_local_agent")
    with acting_as(member("Alice", ALICE_SESSION)):
        service.read_query("SELECT 2 AS by_alice")
    with acting_as(member("bob", BOB_SESSION)):
        service.write_query("CREATE TABLE notes (body TEXT)")
    with acting_as(member("Alice", ALICE_SESSION)), pytest.raises(SqlError):
        service.read_query("SELEC 3")
    service.close()
    conn = connect_both(db_path)
    try:
        insert = (
            "INSERT INTO query_log (ts, session, tool, query, ok, duration_ms, actor) "
            "VALUES (?, ?, 'read_query', ?, 1, 0.5, ?)"
        )
        conn.execute(insert, ("2026-11-01T00:00:00.000Z", "s-old", "SELECT 'old'", None))
        conn.execute(insert, ("2026-12-02T04:00:00.000Z", SERVER, "SELECT 'forged'", HOSTILE))
    finally:
        conn.close()
    return db_path


# -- log --json -----------------------------------------------------------------------------
def test_log_json_names_each_calls_actor_and_null_for_an_old_row(team: Path) -> None:
    calls = json_lines(succeeded(run(team, "log", "--json")))
    assert {call["id"]: call["actor"] for call in calls} == {
        6: HOSTILE, 5: None, 4: "Alice", 3: "bob", 2: "Alice", 1: "local"}  # fmt: skip
    sessions = {call["id"]: call["session"] for call in calls}
    assert (sessions[2], sessions[3], sessions[1]) == (ALICE_SESSION, BOB_SESSION, SERVER)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param("Alice", [4, 2], id="as-recorded"),
        pytest.param("alice", [4, 2], id="any-case-as-member-names"),
        pytest.param("ALICE", [4, 2], id="upper-case"),
        pytest.param("ali", [], id="exact-not-a-prefix"),
        pytest.param("Alice/", [], id="exact-not-a-session"),
        pytest.param("bob", [3], id="other-member"),
        pytest.param("local", [1], id="stdio"),
        pytest.param("-", [5], id="not-recorded"),
        pytest.param("nobody", [], id="unknown"),
    ],
)
def test_log_actor_filters_by_who_made_the_call(team: Path, name: str, expected: list[int]) -> None:
    calls = json_lines(succeeded(run(team, "log", "--json", "--actor", name)))
    assert [call["id"] for call in calls] == expected


def test_log_actor_combines_with_the_other_filters(team: Path) -> None:
    calls = json_lines(succeeded(run(team, "log", "--json", "--actor", "alice", "--errors")))
    assert [call["id"] for call in calls] == [4]
    limited = json_lines(succeeded(run(team, "log", "--json", "--actor", "alice", "--limit", "1")))
    assert [call["id"] for call in limited] == [4]


def test_log_says_when_no_call_of_an_actor_matches(team: Path) -> None:
    result = run(team, "log", "--actor", "nobody")
    assert (succeeded(result), result.stderr) == ("", "no calls in the audit log match\n")


# -- log in a pipe and on a terminal --------------------------------------------------------
def _cells(out: str, column: str) -> dict[int, str]:
    header, *records = out.splitlines()
    at = header.split("\t").index(column)
    return {int(record.split("\t")[0]): record.split("\t")[at] for record in records}


def test_log_in_a_pipe_has_an_actor_column_and_whole_sessions(team: Path) -> None:
    out = succeeded(run(team, "log"))
    assert out.splitlines()[0].split("\t")[:4] == ["id", "time (UTC)", "actor", "session"]
    assert _cells(out, "actor") == ACTORS_SHOWN
    assert _cells(out, "session")[2] == ALICE_SESSION
    assert "\x1b" not in out
    assert "\u202e" not in out


def _table_rows(out: str) -> dict[int, list[str]]:
    """Each table row's cells, a cell folded over several lines joined again (the actor and
    session have no spaces to wrap at)."""
    rows: dict[int, list[str]] = {}
    last: list[str] = []
    for line in _COLOUR.sub("", out).splitlines():
        cells = [cell.strip() for cell in line.split("│")[1:-1]]
        if cells and cells[0].isdigit():
            last = rows[int(cells[0])] = cells
        elif cells and last:
            last[:] = [before + more for before, more in zip(last, cells, strict=True)]
    return rows


@pytest.mark.parametrize("columns", [120, 160])
def test_log_table_shows_the_actor_within_120_columns(team: Path, columns: int) -> None:
    out = succeeded(run(team, "log", env=TERMINAL, columns=columns))
    plain = _COLOUR.sub("", out)
    assert max(len(line) for line in plain.splitlines()) <= columns
    assert "1 of " not in plain  # a table, not the record blocks
    header = next(line for line in plain.splitlines() if "┃ id " in line)
    assert [cell.strip() for cell in header.split("┃")[1:5]] == [
        "id", "time (UTC)", "actor", "session"]  # fmt: skip
    rows = _table_rows(out)
    assert {number: row[2] for number, row in rows.items()} == ACTORS_SHOWN
    assert "\u202e" not in out
    assert "\x1b[2K" not in out


def test_log_table_keeps_the_actor_inside_a_shortened_session(team: Path) -> None:
    out = succeeded(run(team, "log", "--actor", "alice", env=TERMINAL, columns=160))
    tag = connection_tag("mcp-session-of-alice")  # Alice is in the actor column beside
    assert {row[3] for row in _table_rows(out).values()} == {f"s-…471d28/…/{tag}"}


# -- stats ----------------------------------------------------------------------------------
def test_stats_json_counts_calls_per_actor(team: Path) -> None:
    import json

    report = json.loads(succeeded(run(team, "stats", "--json")))
    assert report["audit"]["actors"] == [
        {"actor": "Alice", "calls": 2, "ok": 1, "refused": 0, "error": 1},
        {"actor": "bob", "calls": 1, "ok": 1, "refused": 0, "error": 0},
        {"actor": "local", "calls": 1, "ok": 1, "refused": 0, "error": 0},
        {"actor": HOSTILE, "calls": 1, "ok": 1, "refused": 0, "error": 0},
        {"actor": None, "calls": 1, "ok": 1, "refused": 0, "error": 0},
    ]


@pytest.mark.parametrize("env", [TERMINAL, PIPED], ids=["terminal", "piped"])
def test_stats_shows_calls_per_actor_readably(team: Path, env: dict[str, str]) -> None:
    out = succeeded(run(team, "stats", env=env))
    assert "calls by actor" in out
    assert "Alice 2, bob 1, local 1, mallory\\x1b[2K\\u202e 1, - 1 (not recorded)" in out
    assert "\x1b[2K" not in out
