"""Table and column names in rules, read as SQLite reads them; rules merged once each."""

from __future__ import annotations

import pytest

from sqlgate.engine.rules.table_rules import (
    ColumnRule,
    TableRules,
    parse_column_name,
    parse_table_name,
)


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("users.ssn", ColumnRule("users", "ssn")),
        (" main.users.ssn ", ColumnRule("users", "ssn")),
        ('"My Table"."a.b"', ColumnRule("My Table", "a.b")),
        ("`t`.[c]", ColumnRule("t", "c")),
        ("'t'.'c'", ColumnRule("t", "c")),
        ('"a""b".c', ColumnRule('a"b', "c")),
        ("MAIN.t.c", ColumnRule("t", "c")),
        ("temp.t.c", None),
        ("users", None),
        ("a.b.c.d", None),
        ("users.", None),
        ('"users.ssn', None),
        ("t." + "c" * 201, None),
    ],
)
def test_column_names(text: str, rule: ColumnRule | None) -> None:
    if rule is None:
        with pytest.raises(ValueError, match=r"must name a column|empty|unclosed|too long"):
            parse_column_name(text)
    else:
        assert parse_column_name(text) == rule


@pytest.mark.parametrize(
    ("text", "name"),
    [("invoices", "invoices"), ("main.invoices", "invoices"), ('"Event Log"', "Event Log"),
     ("a.b", None), ("", None), ("x\x07", None)],
)  # fmt: skip
def test_table_names(text: str, name: str | None) -> None:
    if name is None:
        with pytest.raises(ValueError, match=r"must name one table|empty|control"):
            parse_table_name(text)
    else:
        assert parse_table_name(text) == name


def test_a_rule_is_keyed_as_sqlite_folds_names_and_merged_once() -> None:
    assert ColumnRule("Users", "SSN").key == ("users", "ssn")
    assert str(ColumnRule("Users", "SSN")) == "Users.SSN"
    first = TableRules(hidden=(ColumnRule("Users", "SSN"),), protected=("Ledger",))
    second = TableRules(hidden=(ColumnRule("users", "ssn"), ColumnRule("u", "x")),
                        protected=("ledger", "b"), append_only=("e",),
                        notes=(("u", None, "n"),))  # fmt: skip
    merged = first.merged(second)
    assert merged.hidden == (ColumnRule("Users", "SSN"), ColumnRule("u", "x"))
    assert merged.protected == ("Ledger", "b")
    assert merged.append_only == ("e",)
    assert merged.notes == (("u", None, "n"),)
    assert not TableRules()
    assert TableRules(append_only=("e",))
