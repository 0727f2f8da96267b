"""A table's definition is mended word for word, never regenerated."""

from __future__ import annotations

import pytest

from sqlgate.engine.dialects import added_column, mended_definition
from sqlgate.engine.dialects.ddl import ON_UPDATE_NOTE

MENDED = [
    ("CREATE TABLE t(at TIMESTAMP DEFAULT NOW())",
     "CREATE TABLE t(at TIMESTAMP DEFAULT CURRENT_TIMESTAMP)", []),
    ("CREATE TABLE t(at DATETIME DEFAULT GETDATE(), b INT CHECK (b > 0) UNIQUE)",
     "CREATE TABLE t(at DATETIME DEFAULT CURRENT_TIMESTAMP, b INT CHECK (b > 0) UNIQUE)", []),
    ("CREATE TABLE t(at TIMESTAMP DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP)",
     "CREATE TABLE t(at TIMESTAMP DEFAULT CURRENT_TIMESTAMP)", [ON_UPDATE_NOTE]),
    ("CREATE TABLE t(a INT COMMENT 'it''s a') ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
     "CREATE TABLE t(a INT)", []),
    ("ALTER TABLE t ADD COLUMN at TIMESTAMP DEFAULT now()",
     "ALTER TABLE t ADD COLUMN at TIMESTAMP DEFAULT CURRENT_TIMESTAMP", []),
]  # fmt: skip


@pytest.mark.parametrize(("sql", "mended", "notes"), MENDED)
def test_a_definition_is_mended_in_place(sql: str, mended: str, notes: list[str]) -> None:
    assert mended_definition(sql) == (mended, notes)


@pytest.mark.parametrize(
    "sql",
    [
        "CREATE TABLE t(a INT DEFAULT 0, b TEXT COLLATE NOCASE)",
        "SELECT NOW()",
        "CREATE TABLE t(a TEXT DEFAULT 'NOW()')",
        "CREATE INDEX i ON t(a)",
    ],
)
def test_a_definition_that_needs_nothing_is_left(sql: str) -> None:
    assert mended_definition(sql) is None


def test_add_column_if_not_exists_names_table_and_column() -> None:
    found = added_column('ALTER TABLE "users" ADD COLUMN IF NOT EXISTS `phone` TEXT NOT NULL')
    assert found is not None
    assert (found.table, found.column) == ("users", "phone")
    assert found.sql == 'ALTER TABLE "users" ADD COLUMN `phone` TEXT NOT NULL'
    assert added_column("ALTER TABLE users ADD COLUMN phone TEXT") is None
