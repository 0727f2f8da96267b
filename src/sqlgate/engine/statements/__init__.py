"""Reading one statement and judging it by the tier policy.

The package's front door: what other rooms may import. Its modules are private to it.

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

import importlib
from typing import TYPE_CHECKING, Any

from sqlgate.engine.statements.double_quotes import double_quoted_string, single_quoted
from sqlgate.engine.statements.foreign_keys import deferred_key_advice, foreign_key_advice
from sqlgate.engine.statements.policy import (
    ALLOW,
    CATALOG,
    ROW_ACTIONS,
    WRITE_ACTIONS,
    Operation,
    Reference,
    Tier,
    Verdict,
    decide,
    decide_reference,
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
    unfiltered_update_message,
    validate_new_name,
)

if TYPE_CHECKING:
    from sqlgate.engine.statements.where import Change, read_change, where_filters

# `where` imports sqlglot's parser (about 100 ms): its names load when first taken, so a
# command that reads no WHERE never pays for it (tests/surfaces/cli/test_import_graph.py).
LOADED_WHEN_TAKEN = {"Change": "where", "read_change": "where", "where_filters": "where"}


def __getattr__(name: str) -> Any:
    module = LOADED_WHEN_TAKEN.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


__all__ = [
    "ALLOW",
    "CATALOG",
    "ROW_ACTIONS",
    "WRITE_ACTIONS",
    "Change",
    "Operation",
    "Reference",
    "Statement",
    "Tier",
    "Verdict",
    "check_tier",
    "create_if_not_exists",
    "decide",
    "decide_reference",
    "deferred_key_advice",
    "destructive_keeps",
    "double_quoted_string",
    "drop_if_exists",
    "emptied_table",
    "foreign_key_advice",
    "inspect_statement",
    "read_change",
    "single_quoted",
    "unfiltered_update_message",
    "validate_new_name",
    "where_filters",
]
