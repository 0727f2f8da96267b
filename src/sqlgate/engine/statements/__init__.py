"""Reading one statement and judging it by the tier policy.

The package's front door: what other rooms may import (`engine.front_door`). Its
modules are private to it.

    preflight        Reading a statement before SQLite runs it, with sqlglot's SQLite tokenizer.
    auto_ids         A primary key spelled as another dialect's auto-generated id, which SQLite
                     would not number.
    double_quotes    A double-quoted string read as a missing column, and the statement with single
                     quotes.
    policy           The safety policy as data: which tier may do what, to which objects.
    tier_check       Which tool takes a statement, decided before SQLite runs it (over
                     `engine.statements.preflight`).
    where            Whether a WHERE can filter: does it name a column of the table the statement
                     changes?
    foreign_keys     What a failed foreign key was about, read from the schema, for the agent's next
                     step.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlgate.engine.front_door import front_door

if TYPE_CHECKING:
    from sqlgate.engine.statements.double_quotes import double_quoted_string, single_quoted
    from sqlgate.engine.statements.foreign_keys import deferred_key_advice, foreign_key_advice
    from sqlgate.engine.statements.policy import (
        ALLOW,
        CATALOG,
        ROW_ACTIONS,
        SERVER_SCHEMA,
        WRITE_ACTIONS,
        Decision,
        Operation,
        Protected,
        Reference,
        Tier,
        database_of,
        decide,
        decide_reference,
        in_main,
        server_object_message,
    )
    from sqlgate.engine.statements.preflight import (
        Statement,
        create_if_not_exists,
        drop_if_exists,
        emptied_table,
        inspect_statement,
    )
    from sqlgate.engine.statements.tier_check import (
        check_tier,
        destructive_keeps,
        home_tool,
        unfiltered_update_message,
        validate_new_name,
    )
    from sqlgate.engine.statements.where import Change, read_change, where_filters

__all__ = [
    "ALLOW",
    "CATALOG",
    "ROW_ACTIONS",
    "SERVER_SCHEMA",
    "WRITE_ACTIONS",
    "Change",
    "Decision",
    "Operation",
    "Protected",
    "Reference",
    "Statement",
    "Tier",
    "check_tier",
    "create_if_not_exists",
    "database_of",
    "decide",
    "decide_reference",
    "deferred_key_advice",
    "destructive_keeps",
    "double_quoted_string",
    "drop_if_exists",
    "emptied_table",
    "foreign_key_advice",
    "home_tool",
    "in_main",
    "inspect_statement",
    "read_change",
    "server_object_message",
    "single_quoted",
    "unfiltered_update_message",
    "validate_new_name",
    "where_filters",
]

BEHIND_THE_DOOR = {
    "double_quotes": ("double_quoted_string", "single_quoted"),
    "foreign_keys": ("deferred_key_advice", "foreign_key_advice"),
    "policy": (
        "ALLOW",
        "CATALOG",
        "Decision",
        "Operation",
        "Protected",
        "ROW_ACTIONS",
        "Reference",
        "SERVER_SCHEMA",
        "Tier",
        "WRITE_ACTIONS",
        "database_of",
        "decide",
        "decide_reference",
        "in_main",
        "server_object_message",
    ),
    "preflight": (
        "Statement",
        "create_if_not_exists",
        "drop_if_exists",
        "emptied_table",
        "inspect_statement",
    ),
    "tier_check": (
        "check_tier",
        "destructive_keeps",
        "home_tool",
        "unfiltered_update_message",
        "validate_new_name",
    ),
    "where": ("Change", "read_change", "where_filters"),
}

if not TYPE_CHECKING:
    __getattr__ = front_door(__name__, BEHIND_THE_DOOR)
