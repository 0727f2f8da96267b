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


# -- the division trap, as a property: the note is given where SQLite's answer differs from
# the dialect's, and the statement it offers gives the dialect's answer
DECIMAL_TYPES = ["NUMERIC", "DECIMAL", "DECIMAL(10, 2)", "DECIMAL (8,3)", "DEC", "NUMBER", "MONEY",
                 "numeric(5)"]  # fmt: skip
REAL_TYPES = ["REAL", "FLOAT", "DOUBLE", "FLOAT8", "FLOAT4"]
INTEGER_TYPES = ["INTEGER", "INT", "BIGINT"]


def _operand(value: int, kind: str | None) -> str:
    return str(value) if kind is None else f"CAST({value} AS {kind})"


def _value(sql: str) -> object:
    import apsw

    return apsw.Connection(":memory:").execute(sql).fetchone()[0]


@given(
    st.integers(-50, 50),
    st.integers(1, 9),
    st.sampled_from([None, *DECIMAL_TYPES, *REAL_TYPES, *INTEGER_TYPES]),
    st.sampled_from([None, *DECIMAL_TYPES, *REAL_TYPES, *INTEGER_TYPES]),
    st.sampled_from(["", " ", "\n"]),
)
def test_a_division_note_gives_the_dialects_answer(
    a: int, b: int, left: str | None, right: str | None, gap: str
) -> None:
    sql = f"SELECT {_operand(a, left)}{gap}/{gap}{_operand(b, right)}"
    fractional = {left, right} & {*DECIMAL_TYPES, *REAL_TYPES}
    intended = a / b if fractional else int(a / b)  # PostgreSQL's: decimals divide exactly
    _judged_division(sql, left, right, intended)


def _judged_division(sql: str, left: str | None, right: str | None, intended: float) -> None:
    kinds = {left, right}
    wanted = bool(kinds & set(DECIMAL_TYPES)) and not kinds & set(REAL_TYPES)
    found = trap(sql)
    assert (found is not None) is wanted, sql  # a note exactly where SQLite differs
    if found is None:
        assert _value(sql) == intended  # no note: SQLite answers as the dialect does
    else:
        assert "divides integers" in found.why
        assert abs(float(_value(found.sql)) - intended) < 1e-9  # type: ignore[arg-type]


KINDS = [None, "NUMERIC", "DECIMAL(10, 2)", "DECIMAL (8,3)", "DEC", "NUMBER", "MONEY", "REAL",
         "FLOAT", "DOUBLE", "FLOAT4", "FLOAT8", "INTEGER"]  # fmt: skip


@pytest.mark.parametrize("left", KINDS)
@pytest.mark.parametrize("right", KINDS)
def test_every_pair_of_operand_types(left: str | None, right: str | None) -> None:
    fractional = {left, right} & {*DECIMAL_TYPES, *REAL_TYPES}
    intended = 7 / 2 if fractional else 3
    sql = f"SELECT {_operand(7, left)} / {_operand(2, right)}"
    _judged_division(sql, left, right, intended)


SHAPES = [
    ("SELECT CAST((7 + 1) AS NUMERIC) / 3", "SELECT CAST((7 + 1) AS REAL) / 3"),
    ("SELECT abs(7) / CAST(2 AS NUMERIC)", "SELECT abs(7) / CAST(2 AS REAL)"),
    ("SELECT CAST(7 AS NUMERIC(10, 2)) / CAST(2 AS NUMERIC)",
     "SELECT CAST(7 AS REAL) / CAST(2 AS REAL)"),
    ("SELECT (CAST(7 AS NUMERIC)) / 2", None),  # the parenthesis hides the cast: no note
    ("SELECT 7 AS numeric, 2 / 1", None),  # an alias named numeric is no cast
    ("SELECT CAST(7 AS NUMERIC", None),  # unclosed: nothing to mend
    ("SELECT 1 / CAST(2 AS NUMERIC", None),
    ("SELECT 2.5 / CAST(2 AS NUMERIC)", None),
    ("SELECT CAST(7 AS NUMERIC) / 2e0", None),
]  # fmt: skip


@pytest.mark.parametrize(("sql", "fixed"), SHAPES)
def test_the_division_trap_reads_the_casts_shapes(sql: str, fixed: str | None) -> None:
    found = trap(sql)
    assert (found.sql if found is not None else None) == fixed


@given(
    st.sampled_from(["DATE", "date", "DATETIME", "TIMESTAMP", "TIME"]),
    st.sampled_from(["2024-03-05 10:11:12", "1999-12-31 23:59:59"]),
)
def test_a_date_cast_note_gives_the_date(kind: str, text: str) -> None:
    found = trap(f"SELECT CAST('{text}' AS {kind})")
    assert found is not None
    day, clock = text.split()
    expected = {"DATE": day, "DATETIME": text, "TIMESTAMP": text, "TIME": clock}
    assert _value(found.sql) == expected[kind.upper()]


def test_every_dotnet_code_is_read() -> None:
    found = trap("SELECT FORMAT(at, 'yyyy-MM-dd HH:mm:ss') FROM t")
    assert found is not None
    assert found.sql == "SELECT strftime('%Y-%m-%d %H:%M:%S', at) FROM t"
    assert trap("SELECT FORMAT(at, 'dddd MMM') FROM t") is None  # names: no code for them


@pytest.mark.parametrize(
    ("sql", "sign"),
    [
        ("select cast(a as date) from t", True),
        ("SELECT Cast(a AS DATE) FROM t", True),
        ("SELECT CAST(a AS NUMERIC) FROM t", True),
        ("SELECT CAST(a AS INTEGER) FROM t", False),
        ("select strftime(at, '%Y') from t", True),
        ("SELECT STRFTIME(at, '%Y') FROM t", True),
        ("SELECT strftime('%Y', at) FROM t", False),
        ("select format(d, 'yyyy') from t", True),
        ("SELECT FORMAT(d, 'yyyy-MM') FROM t", True),
        ("SELECT format('%d', n) FROM t", False),
        ("SELECT 'a' + b FROM t", True),
        ("SELECT a + 'b' FROM t", True),
        ("SELECT a + b, 'c' FROM t", False),
        ("SELECT name[1:2] FROM t", True),
        ("SELECT [name] FROM t WHERE a = ':'", False),
        ("SELECT a / b FROM t", False),
    ],
)
def test_the_signs_each_spelling(sql: str, sign: bool) -> None:
    assert has_sign(sql) is sign


@pytest.mark.parametrize(
    ("sql", "fixed"),
    [
        ("SELECT CAST((1 + 1) AS REAL) / CAST(2 AS NUMERIC)", None),
        ("SELECT CAST(2 AS NUMERIC) / CAST((1 + 1) AS REAL)", None),
        ("SELECT CAST(2 AS NUMERIC) / CAST((1 + 1) AS INTEGER)",
         "SELECT CAST(2 AS REAL) / CAST((1 + 1) AS INTEGER)"),
        ("SELECT (1 + 1) / CAST(2 AS NUMERIC)", "SELECT (1 + 1) / CAST(2 AS REAL)"),
        ("SELECT x.a / CAST(2 AS DEC) FROM x", "SELECT x.a / CAST(2 AS REAL) FROM x"),
    ],
)  # fmt: skip
def test_the_other_operand_of_a_division_is_read_whole(sql: str, fixed: str | None) -> None:
    found = trap(sql)
    assert (found.sql if found is not None else None) == fixed
