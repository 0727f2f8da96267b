"""Other database tools' commands are recognised whole, never inside a statement."""

from __future__ import annotations

import pytest

from sqlgate.engine.dialects import other_tool_command

KNOWN = [
    ("SHOW TABLES", "list_tables", None),
    ("show full tables;", "list_tables", None),
    ("\\dt", "list_tables", None),
    ("\\d", "list_tables", None),
    ("DESCRIBE users", "describe_table", "users"),
    ("DESC `users`;", "describe_table", "users"),
    ("EXPLAIN users", "describe_table", "users"),
    ("SHOW COLUMNS FROM shop.users", "describe_table", "users"),
    ("\\d+ users", "describe_table", "users"),
    ("EXEC sp_help 'users'", "describe_table", "users"),
    ("SHOW CREATE TABLE users", "get_schema", "users"),
    ("SHOW INDEX FROM users", "describe_table", "users"),
    ("SHOW DATABASES", "list_tables", None),
    ("USE shop", "no USE", None),
]


@pytest.mark.parametrize(("sql", "tool", "table"), KNOWN)
def test_a_command_names_its_tool(sql: str, tool: str, table: str | None) -> None:
    found = other_tool_command(sql)
    assert found is not None
    assert tool in found.tool
    assert found.table == table


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM users",
        "EXPLAIN SELECT 1",
        "EXPLAIN QUERY PLAN SELECT * FROM users",
        "SHOW TABLES; DROP TABLE users",
        "DESCRIBE users; DELETE FROM users",
        "SELECT 'SHOW TABLES'",
        "DESCRIBE " + "x" * 300,
    ],
)
def test_a_statement_is_not_a_command(sql: str) -> None:
    assert other_tool_command(sql) is None


def test_a_name_with_a_quote_is_bound_as_a_literal_in_the_query() -> None:
    found = other_tool_command("DESCRIBE users")
    assert found is not None
    assert found.query is not None
    assert "('users')" in found.query
