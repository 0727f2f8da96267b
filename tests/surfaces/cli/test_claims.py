"""`sqlgate claims …` through click's CliRunner, on the same database the server uses.

Readable output by default, one JSON object per line with `--json`, and the exit codes of
errors: 2 a bad argument, 3 an unknown claim id, 4 a retired claim. Decay is never waited
for: old claims are written through `Service` with a moment in the past, and "later" is
asked with `--as-of`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from sqlgate.config import FLAGS
from sqlgate.service import Service
from sqlgate.surfaces.cli.app import main
from tests.records import connect_both
from tests.surfaces.cli.helpers import error_line, json_lines, read, succeeded

FAR_FUTURE = "2100-01-01"
COMMANDS = ("add", "search", "stale", "contradictions", "confirm", "retract")


@pytest.fixture(autouse=True)
def no_sqlgate_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings from the developer's shell must not leak into these tests."""
    for flag in FLAGS:
        monkeypatch.delenv(flag.env_var, raising=False)


def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    # a wide terminal, so the tables keep each claim on one line
    return CliRunner().invoke(
        main, ["claims", *args], env={"COLUMNS": "200", **(env or {})}, prog_name="sqlgate"
    )


def run(db: Path, command: str, *args: str) -> Result:
    return invoke(command, "--db", str(db), *args)


def claim_count(db: Path) -> int:
    return int(read(db, "SELECT count(*) FROM claims")[0][0]) if db.exists() else 0


def days_ago(days: float) -> str:
    return (datetime.now(timezone.utc) - timedelta(days=days)).isoformat()


def add(db: Path, entity: str, kind: str, text: str, *extra: str) -> dict[str, Any]:
    result = run(db, "add", entity, kind, "slow", "0.8", text, "--json", *extra)
    (added,) = json_lines(succeeded(result))
    return added


@pytest.fixture
def aged(make_service: Callable[..., Service], db_path: Path) -> dict[str, int]:
    """Claims written through the service: one confirmed 60 days ago (slow: 0.20), one fresh."""
    service = make_service()
    old, _ = service.claims.add(
        "acme", "fact", "acme ships weekly", "slow", 0.8, confirmed_at=days_ago(60)
    )
    fresh, _ = service.claims.add("globex", "fact", "globex is in oslo", "slow", 0.8)
    service.close()
    return {"old": old.id, "fresh": fresh.id}


# -- the group -------------------------------------------------------------------------------------


def test_claims_help_lists_the_six_commands() -> None:
    output = succeeded(invoke("--help"))
    for command in COMMANDS:
        assert f"  {command} " in output


# -- add -------------------------------------------------------------------------------------------


def test_add_says_added_then_updated_for_the_same_claim(db_path: Path) -> None:
    first = run(db_path, "add", "acme", "priority", "slow", "0.8", "acme is #1", "--rank", "1")
    assert succeeded(first) == "added claim 1: acme is #1\n"
    again = run(db_path, "add", "acme", "priority", "stable", "0.9", "acme is #1", "--rank", "1")
    assert succeeded(again) == "updated claim 1: acme is #1\n"
    assert read(db_path, "SELECT id, volatility, confidence, rank FROM claims") == [
        (1, "stable", 0.9, 1)
    ]


def test_add_json_is_one_parseable_object(db_path: Path) -> None:
    added = add(db_path, "acme", "priority", "acme is priority one", "--rank", "2")
    assert added["created"] is True
    assert {k: added[k] for k in ("id", "entity", "kind", "claim", "rank", "state")} == {
        "id": 1, "entity": "acme", "kind": "priority", "claim": "acme is priority one",
        "rank": 2, "state": "active",
    }  # fmt: skip
    assert (added["volatility"], added["confidence"], added["effective_confidence"]) == (
        "slow", 0.8, 0.8,
    )  # fmt: skip
    assert added["last_confirmed"].endswith("Z")


@pytest.mark.parametrize(
    ("args", "phrase"),
    [
        pytest.param(("acme", "rumour", "slow", "0.8", "x"), "priority, status, fact, relationship",
                     id="unknown-kind"),
        pytest.param(("acme", "fact", "fast", "0.8", "x"), "stable, slow, volatile",
                     id="unknown-volatility"),
        pytest.param(("acme", "fact", "slow", "1.5", "x"), "from 0 to 1", id="confidence-above-1"),
        pytest.param(("--", "acme", "fact", "slow", "-0.1", "x"), "from 0 to 1",
                     id="confidence-below-0"),
        pytest.param(("acme", "status", "slow", "0.8", "x", "--rank", "1"),
                     "only for priority", id="rank-on-a-status"),
        pytest.param(("acme", "priority", "slow", "0.8", "x", "--rank", "0"), "rank 0",
                     id="rank-zero"),
        pytest.param(("acme", "fact", "slow", "0.8", "  "), "claim is empty", id="empty-text"),
        pytest.param(("", "fact", "slow", "0.8", "x"), "entity is empty", id="empty-entity"),
    ],
)  # fmt: skip
def test_add_refuses_a_bad_argument_with_exit_2_and_writes_nothing(
    db_path: Path, args: tuple[str, ...], phrase: str
) -> None:
    message = error_line(run(db_path, "add", *args), 2)
    assert phrase in message
    assert claim_count(db_path) == 0


@pytest.mark.parametrize(
    ("args", "phrase"),
    [
        pytest.param(("acme", "fact", "slow", "high", "x"), "CONFIDENCE", id="confidence-word"),
        pytest.param(("acme", "fact", "slow", "0.8", "x", "--rank", "one"), "--rank",
                     id="rank-word"),
        pytest.param(("acme", "fact", "slow", "0.8"), "TEXT", id="missing-text"),
    ],
)  # fmt: skip
def test_add_usage_errors_exit_2(db_path: Path, args: tuple[str, ...], phrase: str) -> None:
    result = run(db_path, "add", *args)
    assert result.exit_code == 2
    assert phrase in result.stderr
    assert claim_count(db_path) == 0


# -- search ----------------------------------------------------------------------------------------


def test_search_shows_a_table_of_matches_in_any_case(db_path: Path) -> None:
    add(db_path, "Acme", "priority", "acme is priority one", "--rank", "1")
    add(db_path, "launch", "status", "the launch is on schedule")
    add(db_path, "globex", "relationship", "globex partners with ACME")
    output = succeeded(run(db_path, "search", "aCmE"))  # piped: TSV, one claim per line
    header, *rows = output.splitlines()
    assert header.split("\t") == ["id", "entity", "kind", "claim", "rank", "confidence",
                                   "state", "last confirmed (UTC)"]  # fmt: skip
    assert [row.split("\t")[:4] for row in rows] == [
        ["1", "Acme", "priority", "acme is priority one"],
        ["3", "globex", "relationship", "globex partners with ACME"],
    ]
    assert all(row.split("\t")[5:7] == ["0.8", "active"] for row in rows)


def test_search_json_prints_one_claim_per_line(db_path: Path) -> None:
    add(db_path, "acme", "priority", "acme is priority one", "--rank", "1")
    add(db_path, "globex", "relationship", "globex partners with acme")
    found = json_lines(succeeded(run(db_path, "search", "acme", "--json")))
    assert [(c["id"], c["entity"], c["effective_confidence"]) for c in found] == [
        (1, "acme", 0.8),
        (2, "globex", 0.8),
    ]


def test_search_without_a_match_says_none(db_path: Path) -> None:
    add(db_path, "acme", "fact", "acme ships weekly")
    result = run(db_path, "search", "initech")
    assert (succeeded(result), result.stderr) == ("", "claims matching 'initech': none\n")
    assert succeeded(run(db_path, "search", "initech", "--json")) == ""


def test_search_for_nothing_exits_2(db_path: Path) -> None:
    add(db_path, "acme", "fact", "acme ships weekly")
    line = error_line(run(db_path, "search", " "), 2)
    assert "the text is empty" in line
    assert f"`sqlgate claims list --db {db_path.absolute()}`" in line  # the CLI's, not the tool's
    assert "claim_search" not in line


def test_search_of_a_missing_database_exits_3_and_creates_nothing(db_path: Path) -> None:
    assert "no database at" in error_line(run(db_path, "search", "acme"), 3)
    assert not db_path.exists()


# -- stale -----------------------------------------------------------------------------------------


def test_stale_lists_decayed_claims_and_marks_them(db_path: Path, aged: dict[str, int]) -> None:
    result = run(db_path, "stale")
    output = succeeded(result)
    _, row = output.splitlines()
    assert row.split("\t")[3] == "acme ships weekly"
    assert row.split("\t")[5] == "0.2"  # 0.8 after two slow half-lives
    assert "globex" not in output
    assert result.stderr == f"marked stale: {aged['old']}\n"  # piped: not in the records
    assert read(db_path, "SELECT id, state FROM claims ORDER BY id") == [
        (aged["old"], "stale"),
        (aged["fresh"], "active"),
    ]
    # asked again: listed again until confirmed or retracted (issue 30), not marked again
    again = run(db_path, "stale")
    assert succeeded(again) == output
    assert again.stderr == f"already stale: {aged['old']}\n"
    run(db_path, "retract", str(aged["old"]))
    last = run(db_path, "stale")
    assert (succeeded(last), last.stderr) == ("", "claims below 0.5: none\n")


def test_stale_json_and_a_threshold(db_path: Path, aged: dict[str, int]) -> None:
    assert succeeded(run(db_path, "stale", "0.1", "--json")) == ""
    assert read(db_path, "SELECT DISTINCT state FROM claims") == [("active",)]
    (listed,) = json_lines(succeeded(run(db_path, "stale", "0.25", "--json")))
    assert (listed["id"], listed["effective_confidence"]) == (aged["old"], 0.2)
    assert listed["claim"] == "acme ships weekly"


def test_stale_as_of_the_future_lists_all_and_writes_nothing(
    db_path: Path, aged: dict[str, int]
) -> None:
    before = read(db_path, "SELECT * FROM claims ORDER BY id")
    events = read(db_path, "SELECT count(*) FROM memory_events")
    listed = json_lines(succeeded(run(db_path, "stale", "--as-of", FAR_FUTURE, "--json")))
    assert [(c["id"], c["effective_confidence"]) for c in listed] == [
        (aged["old"], 0.05),  # oldest confirmation first, at the floor
        (aged["fresh"], 0.05),
    ]
    assert read(db_path, "SELECT * FROM claims ORDER BY id") == before
    assert read(db_path, "SELECT count(*) FROM memory_events") == events


@pytest.mark.parametrize(
    ("args", "code", "phrase"),
    [
        pytest.param(("1.5",), 2, "threshold", id="threshold-above-1"),
        pytest.param(("half",), 2, "THRESHOLD", id="threshold-word"),
        pytest.param(("--as-of", "soon"), 2, "ISO-8601", id="as-of-word"),
    ],
)
def test_stale_bad_arguments_exit_2(
    db_path: Path, aged: dict[str, int], args: tuple[str, ...], code: int, phrase: str
) -> None:
    result = run(db_path, "stale", *args)
    assert result.exit_code == code
    assert phrase in result.stderr
    assert read(db_path, "SELECT DISTINCT state FROM claims") == [("active",)]


# -- contradictions --------------------------------------------------------------------------------


def test_contradictions_name_the_rule_entities_and_claims_and_the_state_changes(
    db_path: Path,
) -> None:
    assert "no database at" in error_line(run(db_path, "contradictions"), 3)  # never created
    add(db_path, "acme", "priority", "acme is priority one", "--rank", "1")
    assert succeeded(run(db_path, "contradictions")) == "no contradictions among live claims\n"
    add(db_path, "globex", "priority", "globex is priority one", "--rank", "1")
    output = succeeded(run(db_path, "contradictions")).splitlines()
    assert output[0].startswith("duplicate-rank: acme, globex (claims 1, 2): ")
    assert output[1:] == ["claim 1: active -> contradicted", "claim 2: active -> contradicted"]
    assert read(db_path, "SELECT DISTINCT state FROM claims") == [("contradicted",)]


def test_contradictions_json_prints_the_findings_and_the_state_changes(db_path: Path) -> None:
    add(db_path, "launch", "status", "the launch is on schedule")
    add(db_path, "launch", "status", "the launch slipped")
    (answer,) = json_lines(succeeded(run(db_path, "contradictions", "--json")))
    (finding,) = answer["findings"]
    assert (finding["rule"], finding["entities"], finding["claim_ids"]) == (
        "status-conflict", ["launch"], [1, 2],
    )  # fmt: skip
    assert finding["detail"]
    assert [(c["id"], c["from"], c["to"]) for c in answer["state_changes"]] == [
        (1, "active", "contradicted"), (2, "active", "contradicted"),
    ]  # fmt: skip


def test_contradictions_with_an_observed_file_find_a_rank_drop(
    db_path: Path, tmp_path: Path
) -> None:
    add(db_path, "acme", "priority", "acme is priority one", "--rank", "1")
    observed = tmp_path / "observed.json"
    # claimed 1: worse than 3 in the valid periods 0, 2 and 3; period 1 (rank 1) is skipped
    signals = {"signals": [{"acme": [4, 1, 5, 6]}], "validPeriods": [True, False, True, True]}
    observed.write_text(json.dumps(signals), encoding="utf-8")
    output = succeeded(run(db_path, "contradictions", "--observed", str(observed)))
    assert output.startswith("rank-drop: acme (claims 1): claimed rank 1")
    as_of = succeeded(
        run(db_path, "contradictions", "--observed", str(observed), "--as-of", "2026-01-01")
    )
    assert as_of.startswith("rank-drop: acme")
    assert " -> " not in as_of  # asked "as of" a moment: no state change recorded


@pytest.mark.parametrize(
    ("content", "phrase"),
    [
        pytest.param('{"signals": [{"acme": [4]}]}', "observed must look like", id="no-periods"),
        pytest.param(
            '{"signals": [{"acme": [4, 5]}], "validPeriods": [true]}',
            "2 ranks for 1 period",
            id="lengths-differ",
        ),
        pytest.param(
            '{"signals": [{"acme": ["4"]}], "validPeriods": [true]}',
            "whole-number ranks",
            id="rank-as-text",
        ),
        pytest.param("not json at all", "cannot read", id="not-json"),
    ],
)
def test_contradictions_with_a_bad_observed_file_exit_2(
    db_path: Path, tmp_path: Path, content: str, phrase: str
) -> None:
    add(db_path, "acme", "priority", "acme is priority one", "--rank", "1")
    observed = tmp_path / "observed.json"
    observed.write_text(content, encoding="utf-8")
    assert phrase in error_line(run(db_path, "contradictions", "--observed", str(observed)), 2)


def test_contradictions_with_a_missing_observed_file_exit_2(db_path: Path, tmp_path: Path) -> None:
    result = run(db_path, "contradictions", "--observed", str(tmp_path / "absent.json"))
    assert result.exit_code == 2
    assert "absent.json" in result.stderr


# -- confirm and retract ---------------------------------------------------------------------------


def test_confirm_reactivates_a_stale_claim(db_path: Path, aged: dict[str, int]) -> None:
    succeeded(run(db_path, "stale"))
    old = str(aged["old"])
    assert succeeded(run(db_path, "confirm", old)) == f"confirmed claim {old}\n"
    confirming = run(db_path, "confirm", old, "--confidence", "0.6", "--json")
    (confirmed,) = json_lines(succeeded(confirming))
    assert (confirmed["state"], confirmed["confidence"]) == ("active", 0.6)
    assert confirmed["effective_confidence"] == 0.6


def test_retract_is_final(db_path: Path) -> None:
    add(db_path, "acme", "fact", "acme ships weekly")
    assert succeeded(run(db_path, "retract", "1")) == "retracted claim 1\n"
    (again,) = json_lines(succeeded(run(db_path, "retract", "1", "--json")))
    assert again["state"] == "retired"
    assert "retired" in error_line(run(db_path, "confirm", "1"), 4)
    readded = run(db_path, "add", "acme", "fact", "slow", "0.8", "acme ships weekly")
    assert "retired" in error_line(readded, 4)
    assert read(db_path, "SELECT id, state FROM claims") == [(1, "retired")]


@pytest.mark.parametrize("command", ["confirm", "retract"])
def test_an_unknown_claim_id_exits_3(db_path: Path, command: str) -> None:
    add(db_path, "acme", "fact", "acme ships weekly")
    message = error_line(run(db_path, command, "99"), 3)
    assert "no claim 99" in message
    assert read(db_path, "SELECT state FROM claims") == [("active",)]


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(("confirm", "abc"), id="confirm-word"),
        pytest.param(("retract", "1.5"), id="retract-fraction"),
        pytest.param(("confirm", "1", "--confidence", "2"), id="confidence-above-1"),
    ],
)
def test_a_bad_id_or_confidence_exits_2(db_path: Path, args: tuple[str, ...]) -> None:
    add(db_path, "acme", "fact", "acme ships weekly")
    assert run(db_path, *args).exit_code == 2


# -- the same database as the server ---------------------------------------------------------------


def test_a_claim_added_by_the_cli_is_seen_by_the_service(
    make_service: Callable[..., Service], db_path: Path
) -> None:
    added = invoke(
        "add", "acme", "priority", "slow", "0.8", "acme is priority one", "--rank", "1",
        env={"SQLGATE_DB": str(db_path)},
    )  # fmt: skip
    assert succeeded(added) == "added claim 1: acme is priority one\n"
    service = make_service()
    found = service.claim_search("priority one")
    assert "1,acme,priority,acme is priority one,1," in found
    # and the other way round: what the service adds, the CLI finds
    service.claim_add("globex", "fact", "globex is in oslo")
    searched = invoke("search", "oslo", "--json", env={"SQLGATE_DB": str(db_path)})
    listed = json_lines(succeeded(searched))
    assert [c["entity"] for c in listed] == ["globex"]
    # the CLI's changes are chain events too, under a session of its own
    verified = json.loads(service.verify_chain())
    assert verified["ok"] is True
    sessions = read(db_path, "SELECT session, kind FROM memory_events ORDER BY id")
    assert sessions[0][0].startswith("cli-")
    assert [kind for _, kind in sessions] == ["claim", "claim"]


def test_the_db_option_beats_the_environment_variable(db_path: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    result = invoke(
        "add", "acme", "fact", "slow", "0.8", "acme ships weekly", "--db", str(db_path),
        env={"SQLGATE_DB": str(other)},
    )  # fmt: skip
    succeeded(result)
    assert claim_count(db_path) == 1
    assert not other.exists()


def test_claim_text_that_looks_like_rich_markup_is_printed_as_typed(db_path: Path) -> None:
    add(db_path, "acme", "fact", "uses [/x] and [red]tags[/red]")
    output = succeeded(run(db_path, "search", "acme"))
    assert "[/x]" in output
    assert "[red]tags[/red]" in output


def test_a_busy_claims_add_waits_once_and_fails_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lock is waited for once (--busy-timeout): closing does not wait again to write
    the failed call's audit row, which stays queued for the next command (issue 22 found it
    in `members`; every CLI command opens the database the same way)."""

    from sqlgate.engine.records.audit import AuditLog

    db = tmp_path / "agent.db"
    add(db, "acme", "fact", "acme exists")
    waits: list[float] = []
    close = AuditLog.close

    def spy(log: AuditLog, wait: float) -> None:
        waits.append(wait)
        close(log, wait)

    monkeypatch.setattr(AuditLog, "close", spy)
    holder = connect_both(db)
    holder.execute("BEGIN IMMEDIATE")
    try:
        line = error_line(
            run(db, "add", "acme", "fact", "slow", "0.8", "acme is busy", "--busy-timeout",
                "0.05"), 5,
        )  # fmt: skip
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert "--busy-timeout" in line
    assert waits == [0.0]
