"""The silent traps: a sign in the text, read in SQLite's tokens, and the statement that
gives the intended result."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sqlgate.engine.dialects import trap
from sqlgate.engine.dialects.traps import has_sign

CASES = [
    ("SELECT CAST(a AS NUMERIC) / CAST(b AS NUMERIC) FROM t",
     "SELECT CAST(a AS REAL) / CAST(b AS REAL) FROM t"),
    ("SELECT CAST(a AS DECIMAL(10, 2)) / b FROM t", "SELECT CAST(a AS REAL) / b FROM t"),
    ("SELECT a / CAST(b AS dec) FROM t", "SELECT a / CAST(b AS REAL) FROM t"),
    ("SELECT CAST(at AS DATE) FROM t", "SELECT date(at) FROM t"),
    ("SELECT CAST(at AS TIMESTAMP) FROM t", "SELECT datetime(at) FROM t"),
    ("SELECT first + ' ' + last FROM t", "SELECT first || ' ' || last FROM t"),
    ("SELECT 'Mr. ' + name FROM t", "SELECT 'Mr. ' || name FROM t"),
    ("SELECT FORMAT(at, 'yyyy-MM') FROM t", "SELECT strftime('%Y-%m', at) FROM t"),
    ("SELECT strftime(t.at, '%Y') FROM t", "SELECT strftime('%Y', t.at) FROM t"),
    ("SELECT name[2:4] FROM t", "SELECT substr(name, 2, 3) FROM t"),
]  # fmt: skip


@pytest.mark.parametrize(("sql", "fixed"), CASES)
def test_a_trap_is_named_with_the_statement_that_avoids_it(sql: str, fixed: str) -> None:
    found = trap(sql)
    assert found is not None
    assert found.sql == fixed
    assert trap(fixed) is None  # the fixed statement falls into nothing


NONE = [
    "SELECT CAST(a AS NUMERIC) FROM t",  # no division: the cast changes nothing that shows
    "SELECT CAST(a AS NUMERIC) + 1 FROM t",
    "SELECT CAST(a AS REAL) / b FROM t",
    "SELECT '5' + 1 FROM t",  # SQLite's own arithmetic on a number in text
    "SELECT a + b FROM t",
    "SELECT 'as date' FROM t",
    "SELECT x FROM t WHERE note = 'CAST(a AS DATE)'",
    "SELECT a -- CAST(a AS DATE)\n FROM t",
    "SELECT format('%d rows', n) FROM t",
    "SELECT strftime('%Y', at) FROM t",
    "SELECT 'name[1:3]' FROM t",
    "SELECT [name] FROM t",
]


@pytest.mark.parametrize("sql", NONE)
def test_no_trap_without_its_sign_in_the_statement(sql: str) -> None:
    assert trap(sql) is None


@given(st.text(alphabet=st.sampled_from(list('abcdefxyz ,()*=<>1290.;_\n\t"`[]|-'))))
def test_text_without_a_sign_costs_one_search_and_gets_nothing(sql: str) -> None:
    assert not has_sign(sql)
    assert trap(sql) is None


@given(st.sampled_from([sql for sql, _ in CASES]), st.sampled_from(["", " ", "  "]))
def test_the_fixed_statement_keeps_the_rest_of_the_text(sql: str, pad: str) -> None:
    found = trap(pad + sql + pad)
    assert found is not None
    assert found.sql.split(" FROM ")[-1] == sql.split(" FROM ")[-1]
