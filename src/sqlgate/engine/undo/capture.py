"""Row-level undo, capture side: the changeset of one statement, stored with what its undo checks.

The one capture routine that runs these steps, for write_query and destructive_query alike,
is `engine.running.writes` (`UndoKeeping.capture`).

    plan     the authorizer's facts name the tables the statement writes; a virtual table
             (fts5, rtree) or its shadow tables cannot be restored from a changeset under
             DEFENSIVE mode: destructive_query takes a whole-file snapshot of such a call
             (judged on its dry prepare), write_query refuses it
    capture  inside the write transaction: `apsw.Session` on "main" (rowid tables without a
             declared PRIMARY KEY recorded by rowid), a progress handler that stops the
             statement once the session holds more than the budget, then `changeset()`
    store    in the SAME transaction, in chunks (the write connection's SQLITE_LIMIT_LENGTH
             is --max-value-bytes), with what the undo checks (`engine.undo.checks`: each
             table's identity and columns, a digest of each row an UPDATE left)
    prune    destructive_query's changesets to the newest --snapshots-keep; write_query's to
             --write-undo-keep calls and --write-undo-mb in all (`engine.undo.writes`)

`UndoFallback` is how a step says "no changeset can undo this call": destructive_query rolls
back, snapshots and runs the statement again; write_query refuses it, rolled back
(`engine.running.writes`). Rows whose declared PRIMARY KEY holds NULL, which the session extension
skips, are found by `engine.undo.keys`. The restore side is `engine.undo.restore`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import apsw

from sqlgate.engine.names import fold_name
from sqlgate.engine.raw_text import text_codec
from sqlgate.engine.statements import Operation
from sqlgate.engine.undo.changesets import holds_raw_text, outline
from sqlgate.engine.undo.checks import TableShape, Updates, row_digests, table_shape

__all__ = [
    "SNAPSHOT_ADVICE",
    "SPLIT_ADVICE",
    "Capture",
    "Kept",
    "ShapeCache",
    "StoredChangeset",
    "Summary",
    "UndoFallback",
    "capturing",
    "chunk_size",
    "load_changeset",
    "prune_changesets",
    "prune_one",
    "store_changeset",
    "summarize",
    "unrestorable_write",
    "written_tables",
]

PROGRESS_ID = "sqlgate-undo-budget"
FORMAT = 2  # how new undo data is kept (undo_changesets.format, migration 8)
PROGRESS_STEPS = 100
MAX_CHUNK = 512 * 1024
_ROW_WRITES = frozenset({"INSERT", "UPDATE", "DELETE"})
_MODULE_TABLES = (
    "SELECT name, type FROM pragma_table_list WHERE schema = 'main' "
    "AND type IN ('virtual', 'shadow')"
)


# the next step write_query's refusal names (engine.running.writes): destructive_query snapshots
# first
SNAPSHOT_ADVICE = (
    "Run it with destructive_query, which takes a whole-file snapshot first (the person may be "
    "asked to approve it)"
)
SPLIT_ADVICE = (
    "Split it into smaller calls, or run it with destructive_query, which takes a whole-file "
    "snapshot first when the change is too large to keep row by row (the person may be asked "
    "to approve it)"
)


class UndoFallback(Exception):
    """Row-level undo cannot cover this call: `reason` goes into the audit detail (and
    destructive_query takes a whole-file snapshot instead); `advice` is the next step that
    write_query's refusal names."""

    def __init__(self, reason: str, advice: str = SNAPSHOT_ADVICE) -> None:
        super().__init__(reason)
        self.reason = reason
        self.advice = advice


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
            raise UndoFallback(
                "the changeset did not fit in memory (--heap-limit-mb)", SPLIT_ADVICE
            ) from None
    finally:
        session.close()


@dataclass(frozen=True)
class Summary:
    """A changeset read once: the tables it touches (in order of first change), its number
    of rows, how many of them are existing rows (UPDATEs and DELETEs), and the old values
    of its UPDATEs by table (what the row digests are looked up by)."""

    tables: tuple[str, ...]
    changes: int
    rewrites: int
    updates: Updates


def summarize(changeset: bytes) -> Summary:
    """Read `changeset` once (`engine.undo.changesets.outline`: any TEXT, UTF-8 or not)."""
    read = outline(changeset)
    return Summary(read.tables, read.changes, read.rewrites, read.updates)


def _shapes(
    conn: apsw.Connection, tables: tuple[str, ...], cache: ShapeCache
) -> dict[str, TableShape]:
    """Each changed table as it is now (in the call's transaction), under its folded name."""
    shapes: dict[str, TableShape] = {}
    for name in tables:
        shape = cache.shape(conn, name)
        if shape is None:  # never: the statement just changed its rows
            raise UndoFallback(f"table {name} of the changeset was not found")
        shapes[fold_name(name)] = shape
    return shapes


class ShapeCache:
    """Table shapes of one connection, read again only when `PRAGMA schema_version` moves
    (a write_query call keeps undo data on every call: reading the catalog each time would
    cost more than the statement)."""

    def __init__(self) -> None:
        self._version: int | None = None
        self._shapes: dict[str, TableShape | None] = {}
        self._json: dict[tuple[str, ...], str] = {}
        self._codec: str | None = None

    def codec(self, conn: apsw.Connection) -> str:
        """The codec of the database's text, read once (a file's encoding never changes
        once it holds a table)."""
        if self._codec is None:
            self._codec = text_codec(conn)
        return self._codec

    def rows_json(
        self, tables: tuple[str, ...], rows: Callable[[], list[tuple[str, int, int, str]]]
    ) -> str:
        """`rows()` (the shapes of `tables`, read through this cache) as JSON, made once."""
        text = self._json.get(tables)
        if text is None:
            text = self._json[tables] = json.dumps(rows(), ensure_ascii=False)
        return text

    def shape(self, conn: apsw.Connection, name: str) -> TableShape | None:
        version = int(conn.pragma("schema_version"))  # always one integer
        if version != self._version:
            self._version = version
            self._shapes = {}
            self._json = {}
        key = fold_name(name)
        if key not in self._shapes:
            self._shapes[key] = table_shape(conn, name)
        return self._shapes[key]


def _chunks(data: bytes, chunk: int) -> Iterator[tuple[int, bytes]]:
    view = memoryview(data)
    for seq, start in enumerate(range(0, len(data), chunk)):
        yield seq, bytes(view[start : start + chunk])


def store_changeset(
    conn: apsw.Connection,
    user: apsw.Connection,
    changeset: bytes,
    *,
    ts: str,
    session: str,
    kind: str,
    chunk: int,
    shapes: ShapeCache,
    summary: Summary,
    tool: str,
) -> StoredChangeset:
    """Save `changeset` on the records connection `conn`, in its current transaction, with
    the table shapes and row states its undo checks, read on `user` inside the change's own
    transaction (right after the statement). Pruning is `prune_changesets`.

    Format 2: data, shapes and row states go in the changeset's own row when each fits in
    one chunk, else in undo_chunks, undo_table_shapes and undo_row_states."""
    read = summary
    shaped, digests = _checked(user, changeset, read, shapes)

    def rows() -> list[tuple[str, int, int, str]]:
        return [
            (name, shape.schema_rowid, shape.rootpage, shape.to_json())
            for name, shape in ((name, shaped[fold_name(name)]) for name in read.tables)
        ]

    shapes_json = shapes.rows_json(read.tables, rows)
    inline_data = len(changeset) <= chunk
    inline_shapes = len(shapes_json.encode("utf-8")) <= chunk
    inline_digests = len(digests) <= chunk
    conn.execute(
        "INSERT INTO undo_changesets (ts, session, kind, tables, changes, bytes, tool, format, "
        "data, shapes, digests) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            ts,
            session,
            kind,
            json.dumps(list(read.tables), ensure_ascii=False),
            read.changes,
            len(changeset),
            tool,
            FORMAT,
            changeset if inline_data else None,
            shapes_json if inline_shapes else None,
            digests if inline_digests else None,
        ),
    )
    changeset_id = int(conn.last_insert_rowid())
    _store_apart(
        conn,
        changeset_id,
        chunk,
        data=None if inline_data else changeset,
        shape_rows=None if inline_shapes else rows(),
        digests=None if inline_digests else digests,
    )
    return StoredChangeset(changeset_id, read.tables, read.changes, len(changeset))


def _checked(
    conn: apsw.Connection, changeset: bytes, read: Summary, shapes: ShapeCache
) -> tuple[dict[str, TableShape], bytes]:
    """The changed tables' shapes (by folded name) and the row states an undo checks;
    `UndoFallback` when no changeset can give those rows back exactly."""
    if shapes.codec(conn) != "utf-8" and holds_raw_text(changeset):
        # the session hands a UTF-16 database's text over as UTF-8: a lone surrogate becomes
        # bytes that SQLite turns into U+FFFD when the changeset is applied
        raise UndoFallback(
            "a changed row holds text that is not valid UTF-16 (a lone surrogate), which the "
            "changeset of a UTF-16 database cannot give back exactly"
        )
    shaped = _shapes(conn, read.tables, shapes)
    # a table without a declared key whose columns take all three of the rowid's names: the
    # session extension cannot read its rows by rowid either, and records an UPDATE there as
    # a DELETE (its inverse would add a row), so no changeset of it is kept
    nameless = any(s.keyed_by_rowid() and s.rowid_name() is None for s in shaped.values())
    digests = (
        None
        if nameless
        else row_digests(conn, changeset, shaped, updates=read.updates, format=FORMAT)
    )
    if digests is None:
        raise UndoFallback(
            "a changed table has no rowid the undo can name (columns rowid, _rowid_ and oid)"
        )
    return shaped, digests


def _store_apart(
    conn: apsw.Connection,
    changeset_id: int,
    chunk: int,
    *,
    data: bytes | None,
    shape_rows: list[tuple[str, int, int, str]] | None,
    digests: bytes | None,
) -> None:
    """What did not fit in the changeset's own row: its data and row states in chunks, its
    table shapes one row each (None: kept inline)."""
    if data is not None:
        conn.executemany(
            "INSERT INTO undo_chunks (changeset_id, seq, data) VALUES (?, ?, ?)",
            ((changeset_id, seq, part) for seq, part in _chunks(data, chunk)),
        )
    if shape_rows is not None:
        conn.executemany(
            "INSERT INTO undo_table_shapes (changeset_id, name, schema_rowid, rootpage, shape) "
            "VALUES (?, ?, ?, ?, ?)",
            ((changeset_id, *row) for row in shape_rows),
        )
    if digests is not None:
        conn.executemany(
            "INSERT INTO undo_row_states (changeset_id, seq, digests) VALUES (?, ?, ?)",
            ((changeset_id, seq, part) for seq, part in _chunks(digests, chunk)),
        )


@dataclass(frozen=True)
class Kept:
    """One call's undo data as stored, joined again from wherever it was kept."""

    data: bytes
    shapes: dict[str, TableShape]  # by folded name
    digests: bytes
    format: int


def _joined(conn: apsw.Connection, table: str, column: str, changeset_id: int) -> bytes:
    sql = f"SELECT {column} FROM {table} WHERE changeset_id = ? ORDER BY seq"
    return b"".join(bytes(chunk) for (chunk,) in conn.execute(sql, (changeset_id,)))


def load_changeset(conn: apsw.Connection, changeset_id: int) -> Kept:
    """The undo data of changeset `changeset_id` (which exists)."""
    row = conn.execute(
        "SELECT format, data, shapes, digests FROM undo_changesets WHERE id = ?",
        (changeset_id,),
    ).fetchone()
    assert row is not None, "load_changeset is asked only for a changeset that exists"
    fmt, data, shapes_json, digests = row
    if shapes_json is not None:
        rows = [(str(n), int(r), int(p), str(t)) for n, r, p, t in json.loads(str(shapes_json))]
    else:
        rows = [
            (str(name), int(rowid), int(root), str(text))
            for name, rowid, root, text in conn.execute(
                "SELECT name, schema_rowid, rootpage, shape FROM undo_table_shapes "
                "WHERE changeset_id = ?",
                (changeset_id,),
            )
        ]
    return Kept(
        bytes(data) if data is not None else _joined(conn, "undo_chunks", "data", changeset_id),
        {fold_name(name): TableShape.from_row(name, r, p, t) for name, r, p, t in rows},
        bytes(digests)
        if digests is not None
        else _joined(conn, "undo_row_states", "digests", changeset_id),
        int(fmt),
    )


_UNDO_DATA_TABLES = ("undo_chunks", "undo_table_shapes", "undo_row_states")


def prune_changesets(
    conn: apsw.Connection, tools: tuple[str, ...], keep: int, max_bytes: int | None = None
) -> int:
    """Delete the oldest undo data of the calls of `tools` beyond the newest `keep` of them
    and, with `max_bytes`, beyond that many bytes in all; returns how many calls lost theirs."""
    marks = ", ".join("?" * len(tools))
    doomed = [
        (int(changeset_id),)
        for (changeset_id,) in conn.execute(
            "SELECT id FROM (SELECT id, row_number() OVER newest AS n, "
            "sum(bytes) OVER newest AS total FROM undo_changesets "
            f"WHERE tool IN ({marks}) WINDOW newest AS (ORDER BY id DESC)) "
            "WHERE n > ? OR total > ?",
            (*tools, keep, max_bytes if max_bytes is not None else 2**62),
        )
    ]
    for table in _UNDO_DATA_TABLES:
        conn.executemany(f"DELETE FROM {table} WHERE changeset_id = ?", doomed)
    conn.executemany("DELETE FROM undo_changesets WHERE id = ?", doomed)
    return len(doomed)


def prune_one(conn: apsw.Connection, changeset_id: int) -> None:
    """Delete the undo data of one call (a change that did not commit)."""
    for table in _UNDO_DATA_TABLES:
        conn.execute(f"DELETE FROM {table} WHERE changeset_id = ?", (changeset_id,))
    conn.execute("DELETE FROM undo_changesets WHERE id = ?", (changeset_id,))
