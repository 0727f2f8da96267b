"""The next step an agent is told after an error in SQLite's words: matched on those words,
the first match wins. Shared by the statement runner (`engine.running.execute`) and the
answer to another dialect's statement whose SQLite form fails too
(`engine.running.other_dialects`)."""

from __future__ import annotations

__all__ = ["next_step"]

# (words in SQLite's message, the next step to suggest): the first match wins
SQLITE_HINTS = (
    ("no such table", "call list_tables to see which tables exist"),
    (
        "no such column",
        "call describe_table to see the columns; write text values in 'single quotes' "
        "(double quotes name a column)",
    ),
    ("has no column named", "call describe_table to see the columns"),
    ("values were supplied", "give one value per column, or name the columns you fill"),
    ("syntax error", "check the SQL; sqlgate speaks SQLite's dialect"),
    ("readonly database", "read_query is read-only; use write_query to change data"),
    ("query_only", "read_query is read-only; use write_query to change data"),
    ("UNIQUE constraint failed", "the row already exists; use an upsert (ON CONFLICT) to update"),
    ("constraint failed", "call describe_table to see the table's constraints and foreign keys"),
    ("datatype mismatch", "call describe_table to see the column types"),
    (
        "object name reserved for internal use",
        "SQLite keeps that name for a virtual table's shadow tables (a full-text index in "
        "main or in sqlgate's records ends in _data, _idx, _content, _docsize, _config): "
        "choose another name",
    ),
    (
        "unable to identify the object to be reindexed",
        "REINDEX names a collation, a table or an index of yours: call get_schema to see them "
        "(sqlgate's records are read-only and never reindexed)",
    ),
)
DEFAULT_HINT = "fix the statement and call again; get_schema shows every definition"


def next_step(message: str) -> str:
    """What to do after SQLite said `message`."""
    return next((hint for needle, hint in SQLITE_HINTS if needle in message), DEFAULT_HINT)
