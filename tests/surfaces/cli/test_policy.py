"""`sqlgate policy check` and `sqlgate policy show`: the rules as serve reads them, checked
against the database without serving (it is only read), listed for people and scripts."""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest

from tests.surfaces.cli.helpers import error_line, invoke, json_lines, succeeded

pytestmark = pytest.mark.usefixtures("no_sqlgate_environment")

POLICY = """
[tables.users]
hide = ["ssn"]
notes = { ssn = "kept by billing" }
[tables.invoices]
mode = "protected"
"""


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "agent.db"
    conn = apsw.Connection(str(path))
    conn.execute("CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT, ssn TEXT)")
    conn.close()
    return path


@pytest.fixture
def policy(tmp_path: Path) -> Path:
    path = tmp_path / "policy.toml"
    path.write_text(POLICY, encoding="utf-8")
    return path


def test_check_of_rules_that_fit_says_ok_and_what_they_hold(db: Path, policy: Path) -> None:
    before = db.read_bytes()
    out = succeeded(invoke("policy", "check", "--policy", str(policy), "--db", str(db)))
    assert out.startswith("ok: 1 hidden column, 1 protected table, 0 append-only tables")
    assert f"they fit {db}" in out
    assert db.read_bytes() == before  # only read: no sqlgate tables added


def test_check_without_a_database_checks_the_form_only(tmp_path: Path, policy: Path) -> None:
    missing = tmp_path / "none.db"
    out = succeeded(invoke("policy", "check", "--policy", str(policy), "--db", str(missing)))
    assert "no database to check against" in out
    assert not missing.exists()


def test_check_lists_each_misfit_on_its_own_line_with_exit_8(db: Path, policy: Path) -> None:
    result = invoke(
        "policy", "check", "--policy", str(policy), "--db", str(db),
        "--hide-column", "users.nope", "--append-only-table", "invoices",
    )  # fmt: skip
    assert result.exit_code == 8
    lines = result.stderr.splitlines()
    assert len(lines) == 2
    assert "invoices is both protected and append-only" in lines[0]
    assert "users.nope names no column of users" in lines[1]


def test_check_of_a_malformed_file_is_one_line_naming_the_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[tables.users]\nhidden = ['ssn']\n", encoding="utf-8")
    line = error_line(invoke("policy", "check", "--policy", str(bad)), 8)
    assert f"{bad}, line 2: [tables.users] has an unknown key 'hidden'" in line


def test_show_lists_each_rule_and_whether_it_applies(db: Path, policy: Path) -> None:
    result = invoke("policy", "show", "--policy", str(policy), "--db", str(db), "--json")
    records = json_lines(succeeded(result))
    assert records == [
        {"rule": "hidden", "table": "users", "column": "ssn", "state": "applies"},
        {"rule": "protected", "table": "invoices", "column": None,
         "state": "table not created yet: applies once it is"},
        {"rule": "note", "table": "users", "column": "ssn", "state": "kept by billing"},
    ]  # fmt: skip


def test_show_in_a_pipe_is_tsv_and_with_no_rules_says_how_to_give_some(db: Path) -> None:
    out = succeeded(invoke("policy", "show", "--db", str(db), "--hide-column", "users.ssn"))
    assert out.splitlines() == ["rule\ttable\tcolumn\tstate", "hidden\tusers\tssn\tapplies"]
    empty = invoke("policy", "show", "--db", str(db))
    assert empty.exit_code == 0
    assert "no table rules: give --hide-column" in empty.stderr


def test_show_reads_the_rules_from_the_environment_as_serve_does(db: Path) -> None:
    result = invoke(
        "policy", "show", "--db", str(db), "--json",
        env={"SQLGATE_PROTECT_TABLES": "users, ledger"},
    )  # fmt: skip
    records = json_lines(succeeded(result))
    assert [(r["rule"], r["table"]) for r in records] == [
        ("protected", "users"), ("protected", "ledger"),
    ]  # fmt: skip
