"""Row-level undo: one capture for every tool that writes, one restore.

The package's front door: what other rooms may import (`engine.front_door`). Its
modules are private to it.

    capture          Row-level undo, capture side: the changeset of one statement, stored with what
                     its undo checks.
    checks           What an undo checks before it writes a row, and what the call records for it.
    ddl              Undo of additive DDL: CREATE TABLE / INDEX / VIRTUAL TABLE in write_query, and
                     create_view.
    ddl_checks       Undo of additive DDL, the record and the decisions: what a CREATE made, and
                     what stands in the way of dropping it again.
    keys             Rows a changeset cannot record: those whose declared PRIMARY KEY holds NULL
                     (issue 30).
    states           Which changesets were applied back (the console's destructive page).
    restore          Row-level undo, restore side: `sqlgate undo AUDIT_ID` and `sqlgate undo
                     --list`.
    lookup           Which undo data a call kept: the call the user named (`UndoTarget`), the
                     changeset its audit row points to, and the calls that can still be undone.
    writes           Row-level undo of write_query: every INSERT, UPDATE, upsert and REPLACE keeps
                     its changeset.
    relocate         Undo data that follows a table whose b-tree moved (a 0.1.0 file's move).
    changesets       A reader of the session extension's changesets that survives text that is not
                     UTF-8.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlgate.engine.front_door import front_door

if TYPE_CHECKING:
    from sqlgate.engine.undo.capture import (
        SPLIT_ADVICE,
        ShapeCache,
        StoredChangeset,
        Summary,
        UndoFallback,
        capturing,
        chunk_size,
        prune_changesets,
        prune_one,
        store_changeset,
        summarize,
        unrestorable_write,
        written_tables,
    )
    from sqlgate.engine.undo.changesets import read_changeset
    from sqlgate.engine.undo.ddl import capturing_schema, store_created
    from sqlgate.engine.undo.ddl_checks import CreatedObject
    from sqlgate.engine.undo.keys import NullKeyWatch
    from sqlgate.engine.undo.lookup import UndoTarget
    from sqlgate.engine.undo.relocate import relocate_shapes
    from sqlgate.engine.undo.restore import UndoRestore
    from sqlgate.engine.undo.states import changeset_states
    from sqlgate.engine.undo.writes import WriteFacts, prune_writes

__all__ = [
    "SPLIT_ADVICE",
    "CreatedObject",
    "NullKeyWatch",
    "ShapeCache",
    "StoredChangeset",
    "Summary",
    "UndoFallback",
    "UndoRestore",
    "UndoTarget",
    "WriteFacts",
    "capturing",
    "capturing_schema",
    "changeset_states",
    "chunk_size",
    "prune_changesets",
    "prune_one",
    "prune_writes",
    "read_changeset",
    "relocate_shapes",
    "store_changeset",
    "store_created",
    "summarize",
    "unrestorable_write",
    "written_tables",
]

BEHIND_THE_DOOR = {
    "capture": (
        "SPLIT_ADVICE",
        "ShapeCache",
        "StoredChangeset",
        "Summary",
        "UndoFallback",
        "capturing",
        "chunk_size",
        "prune_changesets",
        "prune_one",
        "store_changeset",
        "summarize",
        "unrestorable_write",
        "written_tables",
    ),
    "changesets": ("read_changeset",),
    "ddl": ("capturing_schema", "store_created"),
    "ddl_checks": ("CreatedObject",),
    "keys": ("NullKeyWatch",),
    "lookup": ("UndoTarget",),
    "relocate": ("relocate_shapes",),
    "restore": ("UndoRestore",),
    "states": ("changeset_states",),
    "writes": ("WriteFacts", "prune_writes"),
}

if not TYPE_CHECKING:
    __getattr__ = front_door(__name__, BEHIND_THE_DOOR)
