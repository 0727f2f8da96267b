"""Reading a refused statement as each dialect: sqlglot's warnings stay out of the log while
it reads, and only then."""

from __future__ import annotations

import logging

import pytest
import sqlglot

from sqlgate.engine.dialects import rewrites
from sqlgate.engine.dialects.rewrite import dialect_order


def test_sqlglots_warnings_are_dropped_while_reading_and_only_then(
    caplog: pytest.LogCaptureFixture,
) -> None:
    level = logging.getLogger("sqlglot").level
    with caplog.at_level("WARNING", logger="sqlglot"):
        assert list(rewrites("SHOW TABLES")) == []  # sqlglot reads it as a bare command
        assert not caplog.records
        sqlglot.parse_one("SHOW TABLES", read="postgres")
    assert [record.name for record in caplog.records] == ["sqlglot"]
    assert logging.getLogger("sqlglot").level == level


@pytest.mark.parametrize(
    ("sql", "first"),
    [
        ("SELECT id::text FROM t", "postgres"),
        ("SELECT `id` FROM t", "mysql"),
        ("SELECT TOP 1 id FROM t", "tsql"),
        ("SELECT id FROM [dbo].[t] WHERE name = N'x'", "tsql"),
        ("UPDATE t SET a = 1 ORDER BY b LIMIT 1", "mysql"),
        ("SELECT 1", "postgres"),
    ],
)
def test_the_dialect_whose_signs_the_text_shows_is_read_first(sql: str, first: str) -> None:
    order = dialect_order(sql)
    assert order[0] == first
    assert sorted(order) == ["duckdb", "mysql", "postgres", "tsql"]
