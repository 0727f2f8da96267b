"""`sqlgate verify|log|stats|export|tools` through click's CliRunner.

Each database is seeded through `Service` (as the server would write it), then read by the
commands: readable output by default, JSON with `--json`, and exit codes a script can trust
(0 fine, 2 a bad argument, 3 no such database, 9 a broken chain). A broken chain is made
the way an attacker with the file would: a direct connection drops the append-only trigger
and edits an event.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlgate.config import FLAGS, Settings
from sqlgate.errors import PolicyDenied, SqlError
from sqlgate.memory import verification
from sqlgate.memory.chain import event_hash
from sqlgate.service import Service
from sqlgate.surfaces.cli.app import main
from sqlgate.surfaces.cli.export import EXPORT_TABLES
from sqlgate.surfaces.cli.inspection import CHAIN_BROKEN_EXIT
from sqlgate.surfaces.mcp.server import CLAIMS_TOOLS, MEMORY_TOOLS, SQL_TOOLS
from tests.records import connect_both
from tests.surfaces.cli.helpers import error_line, json_lines, read, succeeded

SEEDED_EVENTS = 5  # 3 appended + 2 written by claim_add and claim_confirm
SEEDED_CALLS = 10  # audit rows the seed leaves in query_log


@pytest.fixture(autouse=True)
def no_sqlgate_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings from the developer's shell must not leak into these tests."""
    for flag in FLAGS:
        monkeypatch.delenv(flag.env_var, raising=False)


TERMINAL = {"TTY_COMPATIBLE": "1"}  # rich (and so the listings) treat stdout as a terminal


def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    # a wide terminal, so table rows stay on one line
    return CliRunner().invoke(main, list(args), env={"COLUMNS": "250", **(env or {})},
                              prog_name="sqlgate")  # fmt: skip


def run(db: Path, command: str, *args: str, env: dict[str, str] | None = None) -> Result:
    return invoke(command, "--db", str(db), *args, env=env)


def child_env() -> dict[str, str]:
    """This environment without SQLGATE_* settings, with this checkout's sqlgate importable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SQLGATE_")}
    src = str(Path(__file__).resolve().parents[3] / "src")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [src, env.get("PYTHONPATH")]))
    return env


def audit_rows(db: Path) -> int:
    return int(read(db, "SELECT count(*) FROM query_log")[0][0])


def tamper(db: Path, event_id: int, content: str) -> None:
    """Edit an event behind the server's back: drop the trigger that forbids it first."""
    conn = connect_both(db)
    try:
        conn.execute("DROP TRIGGER memory_events_no_update")
        conn.execute("UPDATE memory_events SET content = ? WHERE id = ?", (content, event_id))
    finally:
        conn.close()


@pytest.fixture
def seeded(make_service: Callable[..., Service], db_path: Path) -> Path:
    """A database with a user table, a failed call, events, a checkpoint and a claim."""
    service = make_service()
    service.write_query("CREATE TABLE notes (body TEXT)")
    service.write_query("INSERT INTO notes VALUES (?), (?)", ["[bold]markup[/bold]", "plain"])
    service.read_query("SELECT '[red]x[/red]' AS shown")
    with pytest.raises(SqlError):
        service.read_query("SELEC broken")
    for text, tags in (("first [red]note[/red]", ["alpha"]), ("second, héllo", []),
                       ("third", ["alpha", "beta"])):  # fmt: skip
        service.append_event(text, "note", tags)
    service.checkpoint("three notes written")
    added = json.loads(service.claim_add("acme", "priority", "acme is #1", "slow", 0.8, 1))
    service.claim_confirm(added["id"])
    service.close()
    assert audit_rows(db_path) == SEEDED_CALLS
    return db_path


@pytest.fixture
def empty_db(make_service: Callable[..., Service], db_path: Path) -> Path:
    make_service().close()
    return db_path


# -- verify ----------------------------------------------------------------------------------
def test_verify_reports_a_whole_chain_and_exits_0(seeded: Path) -> None:
    out = succeeded(run(seeded, "verify"))
    assert out.startswith(f"chain ok: {SEEDED_EVENTS} events, head {SEEDED_EVENTS} ")


def test_verify_json_names_the_head_hash_stored_in_the_database(seeded: Path) -> None:
    status = json.loads(succeeded(run(seeded, "verify", "--json")))
    ((head_hash,),) = read(seeded, "SELECT hash FROM memory_events ORDER BY id DESC LIMIT 1")
    assert status == {"ok": True, "events": SEEDED_EVENTS, "head_id": SEEDED_EVENTS,
                      "head_hash": head_hash}  # fmt: skip


def test_verify_of_a_database_without_events_is_ok(empty_db: Path) -> None:
    assert succeeded(run(empty_db, "verify")) == "chain ok: no events yet\n"
    assert json.loads(succeeded(run(empty_db, "verify", "--json")))["ok"] is True


@pytest.mark.parametrize("as_json", [pytest.param(False, id="readable"),
                                     pytest.param(True, id="json")])  # fmt: skip
def test_verify_exits_9_and_names_the_edited_event_when_the_chain_is_broken(
    seeded: Path, as_json: bool
) -> None:
    tamper(seeded, 2, "forged")
    result = run(seeded, "verify", *(["--json"] if as_json else []))
    assert result.exit_code == CHAIN_BROKEN_EXIT == 9, (result.stdout, result.stderr)
    if as_json:
        status = json.loads(result.stdout)
        assert status["ok"] is False
        assert status["first_broken_id"] == 2
        assert status["reason"].startswith("content changed")
    else:
        assert result.stdout.startswith("chain BROKEN at event 2: content changed")


def test_verify_of_a_missing_database_exits_3_and_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.db"
    assert "no database at" in error_line(run(missing, "verify"), 3)
    assert not missing.exists()


def test_verify_draws_its_progress_bar_on_stderr_only_for_a_terminal(seeded: Path) -> None:
    piped = run(seeded, "verify")
    assert piped.stderr == ""
    # rich treats the output as a terminal when TTY_COMPATIBLE=1
    shown = run(seeded, "verify", env={"TTY_COMPATIBLE": "1"})
    assert shown.exit_code == 0
    assert "verifying the memory chain" in shown.stderr
    assert shown.stdout == piped.stdout


def test_verify_progress_callback_counts_up_to_the_head_and_changes_no_verdict(
    make_service: Callable[..., Service], monkeypatch: pytest.MonkeyPatch
) -> None:
    service = make_service()
    for number in range(5):
        service.append_event(f"event {number}")
    monkeypatch.setattr(verification, "_PROGRESS_EVERY", 2)
    calls: list[tuple[int, int]] = []
    with_progress = service.memory.chain.verify(progress=lambda done, total: calls.append(
        (done, total)))  # fmt: skip
    assert calls == [(0, 5), (2, 5), (4, 5), (5, 5)]
    assert with_progress == service.memory.chain.verify()


def test_verify_progress_is_not_called_to_the_end_of_a_broken_chain(
    make_service: Callable[..., Service], db_path: Path
) -> None:
    service = make_service()
    for number in range(3):
        service.append_event(f"event {number}")
    tamper(db_path, 2, "forged")
    calls: list[tuple[int, int]] = []
    status = service.memory.chain.verify(progress=lambda done, total: calls.append(
        (done, total)))  # fmt: skip
    assert status.first_broken_id == 2
    assert (3, 3) not in calls


# -- log -------------------------------------------------------------------------------------
def test_log_json_lists_every_call_newest_first_with_parsed_detail(seeded: Path) -> None:
    calls = json_lines(succeeded(run(seeded, "log", "--json")))
    assert [call["id"] for call in calls] == list(range(SEEDED_CALLS, 0, -1))
    assert calls[-1]["tool"] == "write_query"
    assert calls[-1]["query"] == "CREATE TABLE notes (body TEXT)"
    assert calls[-1]["ok"] is True
    assert isinstance(calls[-1]["detail"], dict)
    assert set(calls[0]) == {"id", "ts", "actor", "session", "tool", "query", "ok", "outcome",
                             "rows", "error", "duration_ms", "detail"}  # fmt: skip
    assert {call["actor"] for call in calls} == {"local"}  # the service's own caller


@pytest.mark.parametrize(
    ("flags", "expected_tools"),
    [
        pytest.param(("--errors",), ["read_query"], id="errors"),
        pytest.param(("--tool", "append_event"), ["append_event"] * 3, id="tool"),
        pytest.param(("--tool", "no_such_tool"), [], id="unknown-tool"),
        pytest.param(("--limit", "2"), ["claim_confirm", "claim_add"], id="limit"),
        pytest.param(("--limit", "0"), None, id="limit-0-is-all"),
        pytest.param(("--since", "2100-01-01"), [], id="since-future"),
        pytest.param(("--since", "2000-01-01T00:00:00Z"), None, id="since-past"),
        pytest.param(("--errors", "--tool", "write_query"), [], id="filters-combine"),
    ],
)
def test_log_filters(
    seeded: Path, flags: tuple[str, ...], expected_tools: list[str] | None
) -> None:
    calls = json_lines(succeeded(run(seeded, "log", "--json", *flags)))
    if expected_tools is None:
        assert len(calls) == SEEDED_CALLS
    else:
        assert [call["tool"] for call in calls] == expected_tools


def test_log_since_includes_the_call_at_that_moment(seeded: Path) -> None:
    (moment,) = read(seeded, "SELECT ts FROM query_log WHERE id = 5")[0]
    calls = json_lines(succeeded(run(seeded, "log", "--json", "--since", moment)))
    assert min(call["id"] for call in calls) <= 5
    assert all(call["ts"] >= moment for call in calls)


def test_log_table_shows_statements_errors_and_markup_as_typed(seeded: Path) -> None:
    out = succeeded(run(seeded, "log", env=TERMINAL))
    assert "audit log, newest first" in out
    assert "INSERT INTO notes VALUES (?), (?)" in out
    assert "SELECT '[red]x[/red]' AS shown" in out  # rich markup is not interpreted
    assert 'near "SELEC": syntax error' in out
    assert "entity=acme" in out  # a call without SQL shows its detail


def test_log_prints_one_line_when_nothing_matches(seeded: Path) -> None:
    on_terminal = run(seeded, "log", "--tool", "nope", env=TERMINAL)
    assert succeeded(on_terminal) == "no calls in the audit log match\n"
    piped = run(seeded, "log", "--tool", "nope")  # stdout stays empty for the script
    assert (succeeded(piped), piped.stderr) == ("", "no calls in the audit log match\n")
    assert succeeded(run(seeded, "log", "--json", "--tool", "nope")) == ""


@pytest.mark.parametrize(
    "flags",
    [pytest.param(("--since", "yesterday"), id="since"),
     pytest.param(("--limit", "-1"), id="limit")],
)  # fmt: skip
def test_log_refuses_a_bad_argument_with_exit_2(seeded: Path, flags: tuple[str, ...]) -> None:
    assert run(seeded, "log", *flags).exit_code == 2


@pytest.mark.parametrize("command", ["log", "stats", "verify", "export"])
def test_inspecting_adds_nothing_to_the_audit_log(seeded: Path, command: str) -> None:
    succeeded(run(seeded, command))
    assert audit_rows(seeded) == SEEDED_CALLS


@pytest.fixture
def outcomes(make_service: Callable[..., Service], db_path: Path) -> Path:
    """Calls of each outcome: ok (1, 2), refused by policy (3), error from SQLite (4)."""
    service = make_service()
    service.write_query("CREATE TABLE notes (body TEXT)")
    service.read_query("SELECT count(*) FROM notes")
    with pytest.raises(PolicyDenied):
        service.read_query("DELETE FROM notes")
    with pytest.raises(SqlError):
        service.read_query("SELEC broken")
    service.close()
    return db_path


def test_log_json_names_each_calls_outcome_as_the_console_does(outcomes: Path) -> None:
    calls = json_lines(succeeded(run(outcomes, "log", "--json")))
    assert [(call["id"], call["outcome"]) for call in calls] == [
        (4, "error"), (3, "refused"), (2, "ok"), (1, "ok")]  # fmt: skip


def test_log_tsv_shows_a_policy_refusal_as_refused_not_error(outcomes: Path) -> None:
    header, *records = succeeded(run(outcomes, "log")).splitlines()
    column = header.split("\t").index("outcome")
    assert [record.split("\t")[column] for record in records] == ["error", "refused", "ok", "ok"]


def test_log_table_shows_a_policy_refusal_as_refused_not_error(outcomes: Path) -> None:
    lines = succeeded(run(outcomes, "log", env=TERMINAL)).splitlines()
    cells = [[cell.strip() for cell in line.split("│")] for line in lines if "│" in line]
    outcome_of = {row[1]: row[6] for row in cells if row[1].isdigit()}
    assert outcome_of == {"4": "error", "3": "refused", "2": "ok", "1": "ok"}


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        pytest.param(("--errors",), [4, 3], id="errors-is-refused-and-error"),
        pytest.param(("--outcome", "refused"), [3], id="refused"),
        pytest.param(("--outcome", "error"), [4], id="error"),
        pytest.param(("--outcome", "ok"), [2, 1], id="ok"),
        pytest.param(("--outcome", "ok", "--errors"), [], id="ok-and-errors"),
    ],
)
def test_log_filters_by_outcome(
    outcomes: Path, flags: tuple[str, ...], expected: list[int]
) -> None:
    calls = json_lines(succeeded(run(outcomes, "log", "--json", *flags)))
    assert [call["id"] for call in calls] == expected


def test_log_help_says_that_errors_includes_refusals() -> None:
    out = succeeded(invoke("log", "--help"))
    assert "refused" in out.split("--errors", 1)[1].split("--", 1)[0]


def test_stats_counts_calls_by_the_consoles_three_outcomes(outcomes: Path) -> None:
    report = json.loads(succeeded(run(outcomes, "stats", "--json")))
    assert report["audit"] == {
        "calls": 4, "ok": 2, "refused": 1, "error": 1, "queued": 0,
        "actors": [{"actor": "local", "calls": 4, "ok": 2, "refused": 1, "error": 1}],
    }  # fmt: skip
    assert "4 (2 ok, 1 refused, 1 error)" in succeeded(run(outcomes, "stats"))


# -- stats -----------------------------------------------------------------------------------
def test_stats_json_counts_memory_claims_audit_and_table_rows(seeded: Path) -> None:
    report = json.loads(succeeded(run(seeded, "stats", "--json")))
    memory = report["memory"]
    assert memory["events"] == SEEDED_EVENTS
    assert memory["checkpoints"] == 1
    assert memory["kinds"] == {"note": 3, "claim": 2}
    assert memory["chain"]["ok"] is True
    assert report["claims"] == {"active": 1}
    assert report["audit"] == {
        "calls": SEEDED_CALLS, "ok": SEEDED_CALLS - 1, "refused": 0, "error": 1, "queued": 0,
        "actors": [{"actor": "local", "calls": SEEDED_CALLS, "ok": SEEDED_CALLS - 1,
                    "refused": 0, "error": 1}],
    }  # fmt: skip
    tables = {item["name"]: item for item in report["tables"]}
    assert tables["notes"] == {"name": "notes", "type": "table", "system": False, "rows": 2}
    # the tables are the database's own: sqlgate's are in its records (counted above)
    assert not {"memory_events", "claims_history", "query_log", "query_errors"} & set(tables)


@pytest.mark.parametrize("env", [TERMINAL, None], ids=["terminal", "piped"])
def test_stats_table_is_readable(seeded: Path, env: dict[str, str] | None) -> None:
    out = succeeded(run(seeded, "stats", env=env))
    for label in (
        "events",
        "checkpoints",
        "chain (incremental check)",
        "ok up to event 5",
        "active 1",
        "audited calls",
        "10 (9 ok, 0 refused, 1 error)",
        "notes",
    ):
        assert label in out, label  # fmt: skip
    if env is None:  # piped: `item<TAB>value` lines, then the tables as TSV
        assert "events\t5" in out.splitlines()
        assert "table\ttype\tserver\trows" in out.splitlines()


# -- export ----------------------------------------------------------------------------------
def test_export_writes_a_header_then_one_typed_line_per_row(seeded: Path) -> None:
    lines = json_lines(succeeded(run(seeded, "export")))
    header, rows = lines[0], lines[1:]
    assert header["type"] == "export"
    assert header["counts"] == {"event": 5, "checkpoint": 1, "claim": 1, "claim_history": 2}
    assert [row["type"] for row in rows] == ["event"] * 5 + ["checkpoint", "claim"] + [
        "claim_history"
    ] * 2


def test_export_round_trips_every_row_of_the_database(seeded: Path) -> None:
    rows = json_lines(succeeded(run(seeded, "export")))[1:]
    for table, kind, json_columns in EXPORT_TABLES:
        exported = [row for row in rows if row["type"] == kind]
        stored = read(seeded, f"SELECT * FROM {table} ORDER BY id")
        info = read(seeded, f"SELECT name FROM pragma_table_info('{table}') ORDER BY cid")
        columns = [name for (name,) in info]
        assert len(exported) == len(stored)
        for record, row in zip(exported, stored, strict=True):
            for column, value in zip(columns, row, strict=True):
                expected = json.loads(value) if column in json_columns else value
                assert record[column] == expected, (table, column)


def test_exported_events_re_verify_with_the_hash_contract(seeded: Path) -> None:
    events = [row for row in json_lines(succeeded(run(seeded, "export"))) if row["type"] == "event"]
    previous = "0" * 64
    for event in events:
        assert event["prev_hash"] == previous
        digest = event_hash(event["id"], event["ts"], event["session"], event["kind"],
                            event["content"], event["tags"], event["prev_hash"])  # fmt: skip
        assert digest == event["hash"]
        previous = digest


def test_export_to_a_file_writes_the_same_lines_and_leaves_no_temporary_file(
    seeded: Path, tmp_path: Path
) -> None:
    out = tmp_path / "exports" / "memory.jsonl"
    out.parent.mkdir()
    result = run(seeded, "export", "--out", str(out))
    assert succeeded(result) == ""
    assert result.stderr.startswith(f"exported to {out}: event 5, checkpoint 1")
    from_stdout = json_lines(succeeded(run(seeded, "export")))
    from_file = json_lines(out.read_text(encoding="utf-8"))
    assert from_file[1:] == from_stdout[1:]
    assert [path.name for path in out.parent.iterdir()] == ["memory.jsonl"]


def test_export_into_a_missing_folder_exits_2_and_writes_nothing(
    seeded: Path, tmp_path: Path
) -> None:
    out = tmp_path / "missing" / "memory.jsonl"
    assert "cannot write" in error_line(run(seeded, "export", "--out", str(out)), 2)
    assert not out.parent.exists()


def test_export_of_a_missing_database_exits_3(tmp_path: Path) -> None:
    assert "no database at" in error_line(run(tmp_path / "none.db", "export"), 3)


EVENT_TEXT = st.text(
    st.characters(exclude_categories=("Cc", "Cs")), min_size=1, max_size=40
).filter(str.strip)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(contents=st.lists(EVENT_TEXT, min_size=1, max_size=4))
def test_export_keeps_any_event_text_exactly_as_stored(tmp_path: Path, contents: list[str]) -> None:
    db = Path(tempfile.mkdtemp(dir=tmp_path)) / "any.db"
    with Service.open(Settings(db=db, redact="off")) as service:
        for content in contents:
            service.append_event(content)
    stored = [row[0] for row in read(db, "SELECT content FROM memory_events ORDER BY id")]
    events = [row for row in json_lines(succeeded(run(db, "export"))) if row["type"] == "event"]
    assert [event["content"] for event in events] == stored


# -- tools -----------------------------------------------------------------------------------
ALL_TOOLS = SQL_TOOLS + MEMORY_TOOLS + CLAIMS_TOOLS


def test_tools_json_lists_every_announced_tool_with_its_group_and_annotations() -> None:
    report = json.loads(succeeded(invoke("tools", "--json")))
    assert "size" not in report
    listed = {tool["name"]: tool for tool in report["tools"]}
    assert sorted(listed) == sorted(ALL_TOOLS)
    assert listed["destructive_query"]["group"] == "sql"
    assert listed["destructive_query"]["annotations"]["destructiveHint"] is True
    assert listed["read_query"]["annotations"]["readOnlyHint"] is True
    assert listed["append_event"]["group"] == "memory"
    assert all(tool["description"] and "\n" not in tool["description"] for tool in listed.values())


def test_tools_announces_only_the_chosen_groups() -> None:
    report = json.loads(succeeded(invoke("tools", "--tools", "memory,claims", "--json")))
    assert sorted(tool["name"] for tool in report["tools"]) == sorted(MEMORY_TOOLS + CLAIMS_TOOLS)


def test_tools_size_adds_up_per_tool_group_and_protocol() -> None:
    size = json.loads(succeeded(invoke("tools", "--size", "--json")))["size"]
    assert set(size["groups"]) == {"sql", "memory", "claims"}
    assert size["by_protocol"][size["protocol"]] == size["total"]
    assert len(size["by_protocol"]) == 2
    # each group alone repeats the result's envelope, so the groups add up to a bit more
    assert size["total"] < sum(size["groups"].values()) < size["total"] + 100
    one_group = json.loads(succeeded(invoke("tools", "--tools", "sql", "--size", "--json")))
    assert one_group["size"]["total"] == one_group["size"]["groups"]["sql"] == size["groups"]["sql"]
    per_tool = sum(tool["bytes"] for tool in one_group["tools"])
    assert per_tool + len(SQL_TOOLS) - 1 + len('{"tools":[]}') == one_group["size"]["total"]


def test_tools_table_is_readable_with_and_without_size() -> None:
    plain = succeeded(invoke("tools", "--tools", "sql", env=TERMINAL))
    assert "9 tools announced" in plain
    assert "read-only, idempotent" in plain
    assert "destructive" in plain
    assert "tools/list" not in plain
    sized = succeeded(invoke("tools", "--tools", "sql", "--size", env=TERMINAL))
    assert "tools/list result:" in sized
    assert "each group announced alone: sql" in sized


def test_tools_refuses_an_unknown_group_with_exit_2() -> None:
    assert invoke("tools", "--tools", "bogus").exit_code == 2


@pytest.mark.stdio
def test_tools_size_equals_the_bytes_a_stdio_client_receives(tmp_path: Path) -> None:
    size = json.loads(succeeded(invoke("tools", "--size", "--json")))["size"]
    server = subprocess.Popen(
        [sys.executable, "-m", "sqlgate", "serve", "--db", str(tmp_path / "wire.db")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        env=child_env(), text=True, encoding="utf-8",
    )  # fmt: skip
    assert server.stdin is not None
    assert server.stdout is not None
    try:
        for message in (
            {"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": size["protocol"], "capabilities": {},
                        "clientInfo": {"name": "test", "version": "1"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}},
        ):  # fmt: skip
            server.stdin.write(json.dumps(message) + "\n")
            server.stdin.flush()
        replies = [json.loads(server.stdout.readline()) for _ in range(2)]
    finally:
        server.stdin.close()
        server.wait(timeout=30)
    assert replies[0]["result"]["protocolVersion"] == size["protocol"]
    wire = json.dumps(replies[1]["result"], ensure_ascii=False, separators=(",", ":"))
    assert len(wire.encode("utf-8")) == size["total"]


def test_settings_for_the_temporary_tools_database_leave_the_real_one_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = tmp_path / "real.db"
    monkeypatch.setenv("SQLGATE_DB", str(real))
    succeeded(invoke("tools", "--tools", "sql"))
    assert not real.exists()
