"""SQL text as SQLite reads it: statement boundaries, fingerprints, identifier quoting."""

from __future__ import annotations

import apsw
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sqlgate.engine.sqltext import (
    check_condition,
    fingerprint,
    has_more_statements,
    quote_identifier,
)
from sqlgate.errors import InvalidArgument


@pytest.mark.parametrize(
    ("rest", "more"),
    [
        pytest.param("", False, id="nothing"),
        pytest.param("   \n\t", False, id="space"),
        pytest.param(";", False, id="semicolon"),
        pytest.param(" ; ;\n;", False, id="semicolons"),
        pytest.param("-- done", False, id="line-comment"),
        pytest.param("; -- done\n", False, id="semicolon-comment"),
        pytest.param("/* c */ ;", False, id="block-comment"),
        pytest.param("/* ; SELECT 2 */", False, id="statement-inside-comment"),
        pytest.param("-- ; DROP TABLE t", False, id="statement-inside-line-comment"),
        pytest.param("SELECT 2", True, id="statement"),
        pytest.param("; SELECT 2", True, id="semicolon-statement"),
        pytest.param("-- c\nDROP TABLE t", True, id="comment-then-statement"),
        pytest.param("'a;b'", True, id="string-with-semicolon"),
        pytest.param("'unterminated", True, id="unterminated-string"),
    ],
)
def test_has_more_statements(rest: str, more: bool) -> None:
    assert has_more_statements(rest) is more


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        pytest.param("SELECT * FROM t WHERE id = 5", "SELECT * FROM t WHERE id = ?", id="number"),
        pytest.param("select * from t where id = 'x';", "SELECT * FROM t WHERE id = ?", id="str"),
        pytest.param("SELECT  *\n FROM   t", "SELECT * FROM t", id="space-folded"),
        pytest.param("SELECT x'00ff'", "SELECT ?", id="blob-literal"),
        pytest.param("SELECT 1.5e3, -- note\n 'a''b'", "SELECT ?+", id="literal-list"),
        pytest.param("SELECT * FROM t WHERE b = ?", "SELECT * FROM t WHERE b = ?", id="param"),
    ],
)
def test_fingerprint_replaces_literals(sql: str, expected: str) -> None:
    assert fingerprint(sql) == expected


@pytest.mark.parametrize(
    ("first", "second"),
    [
        pytest.param("SELECT * FROM t WHERE id = 1", "select * from t where id = 2", id="case"),
        pytest.param("SELECT 'a' AS x", "SELECT 'something else'  AS x ;", id="strings"),
        pytest.param(
            "SELECT a FROM t WHERE id IN (1, 2, 3)", "SELECT a FROM t WHERE id IN (4,5)", id="in"
        ),
        pytest.param(
            "SELECT a FROM t WHERE b = 1.5 AND c = 'x'",
            "SELECT a FROM t\nWHERE b = 2e9 AND c = ''",
            id="mixed-literals",
        ),
    ],
)
def test_fingerprint_groups_the_same_shape(first: str, second: str) -> None:
    assert fingerprint(first) == fingerprint(second)


def test_fingerprint_folds_in_lists_of_any_length() -> None:
    assert fingerprint("SELECT a FROM t WHERE id IN (5)") == fingerprint(
        "SELECT a FROM t WHERE id IN (5, 6)"
    )


@pytest.mark.parametrize(
    ("first", "second"),
    [
        pytest.param("SELECT a FROM t", "SELECT b FROM t", id="columns"),
        pytest.param("SELECT a FROM t", "SELECT a FROM u", id="tables"),
        pytest.param("SELECT a FROM t WHERE x = 1", "SELECT a FROM t WHERE y = 1", id="where"),
    ],
)
def test_fingerprint_keeps_different_shapes_apart(first: str, second: str) -> None:
    assert fingerprint(first) != fingerprint(second)


@pytest.mark.parametrize(
    "garbage",
    [
        pytest.param("SELECT 'unterminated", id="unterminated-string"),
        pytest.param('SELECT "unterminated', id="unterminated-identifier"),
        pytest.param("SELECT [unterminated", id="unterminated-bracket"),
        pytest.param("/* unterminated", id="unterminated-comment"),
        pytest.param("\x00\x01\x02", id="control-chars"),
        pytest.param("'", id="one-quote"),
        pytest.param("", id="empty"),
    ],
)
def test_fingerprint_never_raises_on_garbage(garbage: str) -> None:
    assert isinstance(fingerprint(garbage), str)


def test_fingerprint_of_a_bracketed_nul_name_is_its_text() -> None:
    assert fingerprint("[\x00]") == "\x00"  # hypothesis found it: quoting refused the NUL


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=200))
def test_fingerprint_never_raises_on_any_text(text: str) -> None:
    assert isinstance(fingerprint(text), str)


@pytest.mark.parametrize(
    ("name", "quoted"),
    [
        pytest.param("plain", '"plain"', id="plain"),
        pytest.param("with space", '"with space"', id="space"),
        pytest.param('a"b', '"a""b"', id="inner-quote"),
        pytest.param('"', '""""', id="only-quote"),
        pytest.param("select", '"select"', id="keyword"),
        pytest.param("", '""', id="empty"),
    ],
)
def test_quote_identifier(name: str, quoted: str) -> None:
    assert quote_identifier(name) == quoted


def test_quote_identifier_refuses_nul() -> None:
    with pytest.raises(InvalidArgument, match="NUL"):
        quote_identifier("a\x00b")


@settings(max_examples=100, deadline=None)
@given(st.text(min_size=1, max_size=40).filter(lambda s: "\x00" not in s))
def test_quoted_identifier_names_exactly_that_column_in_sqlite(name: str) -> None:
    conn = apsw.Connection(":memory:")
    try:
        cursor = conn.execute(f"SELECT 1 AS {quote_identifier(name)}")
        assert [column for column, _ in cursor.get_description()] == [name]
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        pytest.param("SELECT :id, @x, $y, ?1, ?", "SELECT :id, @x, $y, ?1, ?", id="placeholders"),
        pytest.param("SELECT a FROM t WHERE id IN (5)", "SELECT a FROM t WHERE id IN(?+)", id="in"),
    ],
)
def test_fingerprint_keeps_placeholders_as_written(sql: str, expected: str) -> None:
    assert fingerprint(sql) == expected


def test_fingerprint_of_a_long_statement_is_not_cached_but_still_computed() -> None:
    long_sql = "SELECT " + ", ".join(str(n) for n in range(5000))
    assert fingerprint(long_sql) == "SELECT ?+"
    assert fingerprint(long_sql) == "SELECT ?+"


@pytest.mark.parametrize(
    "condition",
    [
        pytest.param("status = 'open'", id="plain"),
        pytest.param("(a = 1 OR b = ')') AND c IN (1, 2)", id="brackets-in-strings"),
        pytest.param("note LIKE '%/*%'", id="comment-opener-in-a-string"),
        pytest.param("a = 1 -- trailing note", id="line-comment"),
        pytest.param("a = 1 /* closed */", id="closed-comment"),
    ],
)
def test_check_condition_accepts_one_condition(condition: str) -> None:
    assert check_condition(condition) == condition


@pytest.mark.parametrize(
    ("condition", "phrase"),
    [
        pytest.param("1) UNION SELECT 1, sql FROM sqlite_schema /*", "bracket", id="escape"),
        pytest.param("(1", "open", id="unclosed-bracket"),
        pytest.param("1 /* unclosed", "comment", id="unclosed-comment"),
        pytest.param("a = 'unclosed", "unclosed string", id="unclosed-string"),
        pytest.param("1; DROP TABLE t", "';'", id="second-statement"),
        pytest.param("a = 1\x00", "NUL", id="nul"),
    ],
)
def test_check_condition_refuses_what_would_escape_its_brackets(
    condition: str, phrase: str
) -> None:
    with pytest.raises(InvalidArgument, match=phrase):
        check_condition(condition)
