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


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ('"a"b', '"a"b'),  # quotes that do not close the name are part of it
        ("ab]", "ab]"),
        ("[a]b", "[a]b"),
        ("main", "main"),  # a table called main
        ("sqlgate", "sqlgate"),
        ("x" * 200, "x" * 200),
        ("caf\x80", "caf\x80"),
    ],
)
def test_table_names_at_the_edges(text: str, name: str) -> None:
    assert parse_table_name(text) == name


@pytest.mark.parametrize(
    ("parse", "text", "words"),
    [
        (parse_table_name, '""', "has an empty table name"),
        (parse_table_name, "[]", "has an empty table name"),
        (parse_table_name, '"".t', "has an empty schema name"),
        (parse_table_name, "x" * 201, "has a table name that is too long"),
        (parse_table_name, "a\x7fb", "has a table name that is too long or holds control"),
        (parse_table_name, "a\x1fb", "has a table name that is too long or holds control"),
        (parse_column_name, 'main."".c', "has an empty table name"),
        (parse_column_name, 't.""', "has an empty column name"),
        (parse_column_name, "t.c\x7f", "has a column name that is too long or holds control"),
        (parse_column_name, "[].t.c", "has an empty schema name"),
    ],
)
def test_what_is_wrong_with_a_name_is_said(parse: object, text: str, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        parse(text)  # type: ignore[operator]


@pytest.mark.parametrize(
    "rules",
    [
        TableRules(hidden=(ColumnRule("a", "b"),)),
        TableRules(protected=("p",)),
        TableRules(append_only=("e",)),
    ],
)
def test_any_one_rule_makes_rules(rules: TableRules) -> None:
    assert rules
    assert not TableRules(notes=(("t", None, "a note is no rule"),))


def test_merged_rules_keep_both_sides_in_order() -> None:
    first = TableRules(append_only=("a",), notes=(("a", None, "first"),))
    second = TableRules(append_only=("b",), notes=(("b", "c", "second"),))
    merged = first.merged(second)
    assert merged.append_only == ("a", "b")
    assert merged.notes == (("a", None, "first"), ("b", "c", "second"))
