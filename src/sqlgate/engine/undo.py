"""Row-level undo, capture side: the changeset of one destructive DML statement.

    plan     the dry prepare's authorizer facts name the tables the statement writes; a
             virtual table (fts5, rtree) or its shadow tables cannot be restored from a
             changeset under DEFENSIVE mode, so such a call takes a whole-file snapshot
    capture  inside the write transaction: `apsw.Session` on "main" (rowid tables without a
             declared PRIMARY KEY recorded by rowid), a progress handler that stops the
             statement once the session holds more than the budget, then `changeset()`
    store    in the SAME transaction, in chunks (the write connection's SQLITE_LIMIT_LENGTH
             is --max-value-bytes), with what the undo checks (`engine.undo_checks`: each
             table's identity and columns, a digest of each row an UPDATE left), pruned to
             the newest --snapshots-keep changesets

`UndoFallback` is how a step says "take a whole-file snapshot instead"; the caller rolls
back, snapshots and runs the statement again. The restore side is `engine.undo_restore`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import apsw

from sqlgate.engine.names import fold_name
from sqlgate.engine.policy import Operation
from sqlgate.engine.sqltext import quote_identifier
from sqlgate.engine.undo_checks import TableShape, row_digests, table_shape

__all__ = [
    "Capture",
    "StoredChangeset",
    "UndoFallback",
    "capturing",
    "chunk_size",
    "describe",
    "null_key_table",
    "store_changeset",
    "unrestorable_write",
    "written_tables",
]

PROGRESS_ID = "sqlgate-undo-budget"
PROGRESS_STEPS = 100
MAX_CHUNK = 512 * 1024
_ROW_WRITES = frozenset({"INSERT", "UPDATE", "DELETE"})
_MODULE_TABLES = (
    "SELECT name, type FROM pragma_table_list WHERE schema = 'main' "
    "AND type IN ('virtual', 'shadow')"
)


class UndoFallback(Exception):
    """Row-level undo cannot cover this call; `reason` goes into the audit detail."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class StoredChangeset:
    id: int
    tables: tuple[str, ...]
    changes: int
    bytes: int


def chunk_size(max_value_bytes: int) -> int:
    """Bytes per stored chunk: at most 512 KiB, and half the connection's length limit."""
    return max(1, min(MAX_CHUNK, max_value_bytes // 2))


def written_tables(operations: Iterable[Operation]) -> frozenset[str]:
    """Tables of "main" the statement (or its triggers) inserts, updates or deletes rows of,
    as the authorizer saw them while the statement was prepared; names folded (`fold_name`)."""
    return frozenset(
        fold_name(op.target)
        for op in operations
        if op.action in _ROW_WRITES and op.target and op.database in (None, "main")
    )


def unrestorable_write(conn: apsw.Connection, tables: frozenset[str]) -> str | None:
    """Why a changeset cannot restore what the statement writes, or None when it can."""
    for name, kind in conn.execute(_MODULE_TABLES):
        if fold_name(str(name)) in tables:
            what = "virtual table" if kind == "virtual" else "virtual table's shadow table"
            return f"it writes {name}, a {what} (fts5, rtree), which a changeset cannot restore"
    return None


def _with_foreign_keys_to(conn: apsw.Connection, tables: frozenset[str]) -> set[str]:
    """`tables` and every table whose foreign keys reach them (cascades change those)."""
    found = set(tables)
    edges = [
        (fold_name(str(child)), fold_name(str(parent)))
        for child, parent in conn.execute(
            'SELECT t.name, f."table" FROM pragma_table_list AS t, '
            "pragma_foreign_key_list(t.name) AS f WHERE t.schema = 'main' AND t.type = 'table'"
        )
    ]
    grew = True
    while grew:
        grew = False
        for child, parent in edges:
            if parent in found and child not in found:
                found.add(child)
                grew = True
    return found


def null_key_table(conn: apsw.Connection, tables: frozenset[str]) -> str | None:
    """A table among `tables` (and their foreign-key children) holding a row whose declared
    PRIMARY KEY has a NULL: the session extension silently skips such rows."""
    for table in sorted(_with_foreign_keys_to(conn, tables)):
        info = list(conn.execute("SELECT name, type, pk FROM pragma_table_info(?)", (table,)))
        keys = [(str(name), str(kind)) for name, kind, pk in info if pk]
        if not keys or (len(keys) == 1 and keys[0][1].upper() == "INTEGER"):
            continue  # recorded by rowid, or the key is the rowid: never NULL
        listed = conn.execute(
            "SELECT wr FROM pragma_table_list WHERE schema = 'main' AND name = ?", (table,)
        ).fetchone()
        if listed is None or listed[0]:
            continue  # WITHOUT ROWID: the key is NOT NULL
        test = " OR ".join(f"{quote_identifier(name)} IS NULL" for name, _ in keys)
        sql = f"SELECT 1 FROM main.{quote_identifier(table)} WHERE {test} LIMIT 1"
        if conn.execute(sql).fetchone() is not None:
            return table
    return None


class Capture:
    """What `capturing` recorded: the changeset, or that it outgrew the budget."""

    def __init__(self, session: apsw.Session, budget: int) -> None:
        self._session = session
        self.budget = budget
        self.overflow = False
        self.changeset = b""

    def too_big(self) -> bool:
        """Progress handler: True (stop the statement) once the session outgrows the budget."""
        if self._session.memory_used > self.budget:
            self.overflow = True
        return self.overflow


@contextmanager
def capturing(conn: apsw.Connection, budget: int) -> Iterator[Capture]:
    """Record every row change on "main" made inside the block (call it inside the write
    transaction, with no preupdate hook of ours installed: apsw crashes otherwise)."""
    session = apsw.Session(conn, "main")
    try:
        session.config(apsw.SQLITE_SESSION_OBJCONFIG_ROWID, 1)
        session.attach(None)
        capture = Capture(session, budget)
        conn.set_progress_handler(capture.too_big, PROGRESS_STEPS, id=PROGRESS_ID)
        try:
            yield capture
        finally:
            conn.set_progress_handler(None, id=PROGRESS_ID)
        if capture.overflow:
            return
        try:
            capture.changeset = session.changeset()
        except apsw.NoMemError:
            raise UndoFallback("the changeset did not fit in memory (--heap-limit-mb)") from None
    finally:
        session.close()


def describe(changeset: bytes) -> tuple[tuple[str, ...], int]:
    """The tables a changeset touches (in order of first change) and its number of rows."""
    tables: dict[str, None] = {}
    count = 0
    for change in apsw.Changeset.iter(changeset):
        tables.setdefault(change.name, None)
        count += 1
    return tuple(tables), count


def _shapes(conn: apsw.Connection, tables: tuple[str, ...]) -> dict[str, TableShape]:
    """Each changed table as it is now (in the call's transaction), under its folded name."""
    shapes: dict[str, TableShape] = {}
    for name in tables:
        shape = table_shape(conn, name)
        if shape is None:  # never: the statement just changed its rows
            raise UndoFallback(f"table {name} of the changeset was not found")
        shapes[fold_name(name)] = shape
    return shapes


def _chunks(data: bytes, chunk: int) -> Iterator[tuple[int, bytes]]:
    view = memoryview(data)
    for seq, start in enumerate(range(0, len(data), chunk)):
        yield seq, bytes(view[start : start + chunk])


def store_changeset(
    conn: apsw.Connection,
    changeset: bytes,
    *,
    ts: str,
    session: str,
    kind: str,
    chunk: int,
    keep: int,
) -> StoredChangeset:
    """Save `changeset`, with the table shapes and row states its undo checks, in the
    current transaction (right after the statement), and prune to the newest `keep`."""
    tables, changes = describe(changeset)
    shapes = _shapes(conn, tables)
    digests = row_digests(conn, changeset, shapes)
    if digests is None:
        raise UndoFallback(
            "a changed table has no rowid the undo can name (columns rowid, _rowid_ and oid)"
        )
    conn.execute(
        "INSERT INTO undo_changesets (ts, session, kind, tables, changes, bytes) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        (ts, session, kind, json.dumps(list(tables), ensure_ascii=False), changes, len(changeset)),
    )
    changeset_id = int(conn.last_insert_rowid())
    conn.executemany(
        "INSERT INTO undo_chunks (changeset_id, seq, data) VALUES (?, ?, ?)",
        ((changeset_id, seq, data) for seq, data in _chunks(changeset, chunk)),
    )
    conn.executemany(
        "INSERT INTO undo_table_shapes (changeset_id, name, schema_rowid, rootpage, shape) "
        "VALUES (?, ?, ?, ?, ?)",
        (
            (changeset_id, name, shape.schema_rowid, shape.rootpage, shape.to_json())
            for name, shape in ((name, shapes[fold_name(name)]) for name in tables)
        ),
    )
    conn.executemany(
        "INSERT INTO undo_row_states (changeset_id, seq, digests) VALUES (?, ?, ?)",
        ((changeset_id, seq, data) for seq, data in _chunks(digests, chunk)),
    )
    old = "SELECT id FROM undo_changesets ORDER BY id DESC LIMIT -1 OFFSET ?"
    for table in ("undo_chunks", "undo_table_shapes", "undo_row_states"):
        conn.execute(f"DELETE FROM {table} WHERE changeset_id IN ({old})", (keep,))
    conn.execute(f"DELETE FROM undo_changesets WHERE id IN ({old})", (keep,))
    return StoredChangeset(changeset_id, tables, changes, len(changeset))
