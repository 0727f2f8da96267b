"""The database file: whose it is, the connections sqlgate keeps on it, what is in it.

The package's front door: what other rooms may import (`engine.front_door`). Its
modules are private to it.

    file             One user database, sqlgate's records file beside it in its home, and the
                     connections sqlgate keeps on them.
    legacy           Moving a file of sqlgate 0.1.0 (its tables inside) to the records layout.
    ownership        Whose file is it: facts read from a database file without changing it, and the
                     pure judgement of whether sqlgate may add its tables to it (issue 19).
    introspect       What is in the database: list_tables, describe_table and get_schema.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlgate.engine.front_door import front_door

if TYPE_CHECKING:
    from sqlgate.engine.database.file import Database
    from sqlgate.engine.database.introspect import (
        Introspection,
        Relation,
        find_object,
        schema_objects,
    )
    from sqlgate.engine.database.legacy import MovePlan, MoveResult, plan_move
    from sqlgate.engine.database.ownership import (
        Owner,
        check_ownership,
        owner_of,
        read_facts,
        refusal,
        shown_path,
    )

__all__ = [
    "Database",
    "Introspection",
    "MovePlan",
    "MoveResult",
    "Owner",
    "Relation",
    "check_ownership",
    "find_object",
    "owner_of",
    "plan_move",
    "read_facts",
    "refusal",
    "schema_objects",
    "shown_path",
]

BEHIND_THE_DOOR = {
    "file": ("Database",),
    "introspect": ("Introspection", "Relation", "find_object", "schema_objects"),
    "legacy": ("MovePlan", "MoveResult", "plan_move"),
    "ownership": ("Owner", "check_ownership", "owner_of", "read_facts", "refusal", "shown_path"),
}

if not TYPE_CHECKING:
    __getattr__ = front_door(__name__, BEHIND_THE_DOOR)
