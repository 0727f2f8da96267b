"""Row-level undo of write_query: every INSERT, UPDATE, upsert and REPLACE keeps its changeset.

    facts      per schema version, read once: the tables a changeset cannot restore (virtual
               tables and their shadow tables) and the rowid tables whose declared PRIMARY KEY
               may hold NULL (the session extension skips such rows: `engine.undo.keys`), so a
               plain call reads no catalog
    the guard  apsw refuses a preupdate hook beside a Session, so while undo data is kept the
               mass-rewrite guard counts the changeset instead: each UPDATE and DELETE in it is
               an existing row the statement (its triggers and foreign-key actions included)
               changed; REPLACE's deletes of conflicting rows are DELETEs there too
    pruning    in batches: every PRUNE_EVERY-th changeset, or one of more than 1/PRUNE_EVERY of
               the byte budget, prunes write_query's undo data to --write-undo-keep calls and
               --write-undo-mb in all, oldest first

When row-level undo cannot cover a call (`UndoFallback`), write_query refuses it, rolled
back (`engine.running.writes`); only a call with write undo turned off runs without undo data.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import apsw

from sqlgate.engine.names import fold_name
from sqlgate.engine.undo.capture import prune_changesets
from sqlgate.engine.undo.keys import NullableKey, nullable_keys

__all__ = ["PRUNE_EVERY", "WRITE_TOOLS", "WriteFacts", "prune_writes"]

PRUNE_EVERY = 128
WRITE_TOOLS = ("write_query", "create_view")
_MODULE_TABLES = (
    "SELECT name FROM pragma_table_list WHERE schema = 'main' AND type IN ('virtual', 'shadow')"
)


@dataclass
class WriteFacts:
    """What the write path needs of the schema, kept until `PRAGMA schema_version` moves."""

    _version: int | None = None
    module_tables: frozenset[str] = field(default_factory=frozenset)
    null_keys: tuple[NullableKey, ...] = ()

    def refresh(self, conn: apsw.Connection) -> WriteFacts:
        version = conn.pragma("schema_version")  # always one integer
        if version != self._version:
            self.module_tables = frozenset(
                fold_name(str(name)) for (name,) in conn.execute(_MODULE_TABLES)
            )
            self.null_keys = nullable_keys(conn)
            self._version = int(version)
        return self

    def unrestorable(self, tables: frozenset[str]) -> str | None:
        """Why a changeset cannot restore what the statement wrote, or None when it can."""
        for name in sorted(tables & self.module_tables):
            return (
                f"it writes {name}, a virtual table or its shadow table (fts5, rtree), which a "
                "changeset cannot restore"
            )
        return None


def prune_writes(
    conn: apsw.Connection, changeset_id: int, size: int, keep: int, max_bytes: int
) -> int:
    """Prune write_query's undo data when this changeset's turn (or size) says so."""
    if changeset_id % PRUNE_EVERY and size * PRUNE_EVERY <= max_bytes:
        return 0
    return prune_changesets(conn, WRITE_TOOLS, keep, max_bytes)
