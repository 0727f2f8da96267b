"""The --policy file: its form checked key by key, and its fit to the schema."""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest

from sqlgate.config import Settings
from sqlgate.engine.rules.policy_file import (
    check_against,
    load_policy,
    parse_policy,
    rules_from_settings,
)
from sqlgate.engine.rules.table_rules import ColumnRule, TableRules
from sqlgate.errors import InvalidArgument, StartupError

GOOD = """
[tables.users]
hide = ["ssn", "password_hash"]
note = "customer accounts"
notes = { ssn = "kept for billing" }

[tables.invoices]
mode = "protected"

[tables."Event Log"]
mode = "append-only"
"""


def test_a_good_file_gives_its_rules_and_notes(tmp_path: Path) -> None:
    rules, problems = parse_policy(tmp_path / "p.toml", GOOD)
    assert problems == []
    assert rules.hidden == (ColumnRule("users", "ssn"), ColumnRule("users", "password_hash"))
    assert rules.protected == ("invoices",)
    assert rules.append_only == ("Event Log",)
    assert rules.notes == (
        ("users", None, "customer accounts"),
        ("users", "ssn", "kept for billing"),
    )


@pytest.mark.parametrize(
    ("text", "words", "line"),
    [
        ("[tables.users]\nhid = ['a']\n", "unknown key 'hid'; the keys are hide, mode", 2),
        ("[tables.users]\nmode = 'readonly'\n", 'mode must be "protected" or "append-only"', 2),
        ("[tables.users]\nhide = 'ssn'\n", "hide must be a list of column names", 2),
        ("[tables.users]\nhide = ['']\n", "hide must be a list of column names", 2),
        ("[tables.users]\nnote = 3\n", "note must be a non-empty string", 2),
        ('[tables.users]\nnote = "a\\nb"\n', "note must be one line", 2),
        ("[tables.users]\nnotes = 'x'\n", "notes must map columns to text", 2),
        ("version = 1\n", "unknown key 'version'", 1),
        ("tables = 3\n", "tables must be sections", 1),
        ("[tables]\nusers = 3\n", "tables.users must be a section", None),
        ("[tables.users\n", "is not valid TOML", None),
    ],
)
def test_each_problem_names_the_file_the_line_and_what_to_fix(
    tmp_path: Path, text: str, words: str, line: int | None
) -> None:
    _, problems = parse_policy(tmp_path / "p.toml", text)
    (problem,) = problems
    assert words in problem.message
    assert problem.where == str(tmp_path / "p.toml") + (f", line {line}" if line else "")


def test_every_problem_of_a_file_is_listed_at_once(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text("[tables.a]\nmode = 'x'\n[tables.b]\nhid = []\n", encoding="utf-8")
    with pytest.raises(StartupError, match=r"2 problems.*\(1\).*mode must.*\(2\).*unknown key"):
        load_policy(path)


def test_a_missing_or_unreadable_file_says_so(tmp_path: Path) -> None:
    with pytest.raises(StartupError, match="no such file"):
        load_policy(tmp_path / "none.toml")
    (tmp_path / "bin.toml").write_bytes(b"\xff\xfe")
    with pytest.raises(StartupError, match="cannot be read"):
        load_policy(tmp_path / "bin.toml")


def test_the_flags_and_the_file_are_merged_each_rule_once(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text(GOOD, encoding="utf-8")
    settings = Settings(
        db=tmp_path / "a.db", hide_column=("Users.SSN", "api_keys.secret"),
        protect_table=("invoices",), policy=path,
    )  # fmt: skip
    rules = rules_from_settings(settings)
    assert [str(r) for r in rules.hidden] == ["Users.SSN", "api_keys.secret", "users.password_hash"]
    assert rules.protected == ("invoices",)


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("hide_column", ("users",), "--hide-column 'users' must name a column as TABLE.COLUMN"),
        ("hide_column", ("a.b.c",), "must name a column as TABLE.COLUMN"),
        ("hide_column", ('"a.b',), "has an unclosed quote"),
        ("protect_table", ("a.b",), "--protect-table 'a.b' must name one table"),
        ("append_only_table", ("x\x01",), "control characters"),
    ],
)
def test_a_flag_value_of_the_wrong_form_names_the_flag(
    tmp_path: Path, field: str, value: tuple[str, ...], words: str
) -> None:
    with pytest.raises(InvalidArgument, match=words.replace("(", r"\(")):
        rules_from_settings(Settings(db=tmp_path / "a.db", **{field: value}))


def test_the_rules_must_fit_the_schema_of_existing_tables() -> None:
    conn = apsw.Connection(":memory:")
    conn.execute(
        "CREATE TABLE users(id INTEGER PRIMARY KEY, ssn TEXT);"
        "CREATE TABLE events(id INTEGER PRIMARY KEY, secret TEXT NOT NULL, soft TEXT NOT NULL "
        "DEFAULT '')"
    )
    rules = TableRules(
        hidden=(
            ColumnRule("users", "nope"), ColumnRule("USERS", "SSN"), ColumnRule("later", "x"),
            ColumnRule("events", "secret"), ColumnRule("events", "soft"),
        ),
        protected=("both",), append_only=("events", "Both"),
    )  # fmt: skip
    problems = [p.message for p in check_against(conn, rules)]
    assert len(problems) == 3
    assert "Both is both protected and append-only" in problems[0]
    assert "users.nope names no column of users (its columns: id, ssn)" in problems[1]
    assert "events.secret is hidden, but events is append-only" in problems[2]
    assert check_against(conn, TableRules(hidden=(ColumnRule("users", "ssn"),))) == []
