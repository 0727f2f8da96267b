"""Undo of additive DDL: CREATE TABLE / INDEX / VIRTUAL TABLE in write_query, and create_view.

    capture  inside the call's write transaction: `main.sqlite_schema` before the statement
             (`capturing_schema`), then the rows it added (`created_since`): the table and its
             autoindexes, the virtual table and its shadow tables, the index, the view. For
             each table with a b-tree, the count and digest of the rows the call left in it
             (one scan: a CREATE TABLE ... AS SELECT makes rows); the dependants that stood
             already; and for create_view(replace=true) the SQL of the view it replaced. A
             statement that added nothing (IF NOT EXISTS of an existing object) offers no undo
    store    one `undo_changesets` row (tool, kind, the names made, `created` = the record as
             JSON, no chunks), in the same transaction (`store_created`)
    undo     inside the caller's IMMEDIATE transaction (`undo_created`): refuse when the record
             names a server object, when an object is gone or is another object now, when
             something else stands on it, when its rows are not those the call left
             (`engine.undo.ddl_checks` decides); otherwise drop what the call made with the
             server's own DROP statements (parts go with their owner), put a replaced view
             back, and check that exactly the recorded catalog rows are gone

On conflicts nothing has been written and the caller rolls back. `sqlite_sequence`, which
SQLite adds with the first AUTOINCREMENT table and never lets anyone drop, is not recorded.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

import apsw

from sqlgate.engine.names import fold_name
from sqlgate.engine.raw_text import RowReader, with_raw_text
from sqlgate.engine.sqltext import has_more_statements, quote_identifier
from sqlgate.engine.statements import inspect_statement
from sqlgate.engine.undo.checks import Conflict, TableShape, row_digest, table_shape
from sqlgate.engine.undo.ddl_checks import (
    CreatedObject,
    SchemaFacts,
    SchemaRow,
    content_conflicts,
    created_json,
    damaged,
    dependant_conflicts,
    dependants,
    identity_conflicts,
    parse_created,
    protected_conflicts,
    row_mark,
)

__all__ = [
    "CreatedObject",
    "SchemaCapture",
    "capturing_schema",
    "created_since",
    "parse_created",
    "schema_facts",
    "schema_rows",
    "store_created",
    "table_digest",
    "undo_created",
]

_DROP = {
    "view": "DROP VIEW",
    "trigger": "DROP TRIGGER",
    "index": "DROP INDEX",
    "table": "DROP TABLE",
}
_KINDS = {"virtual": "virtual table", "shadow": "shadow table"}


def schema_rows(conn: apsw.Connection) -> tuple[SchemaRow, ...]:
    """Every row of `main.sqlite_schema`, in rowid order."""
    return tuple(
        SchemaRow(int(rowid), str(kind), str(name), str(tbl), int(root), sql)
        for rowid, kind, name, tbl, root, sql in conn.execute(
            "SELECT rowid, type, name, tbl_name, rootpage, sql FROM main.sqlite_schema "
            "ORDER BY rowid"
        )
    )


def schema_facts(conn: apsw.Connection) -> SchemaFacts:
    """The catalog now, and every foreign key of "main" as (child, parent), folded."""
    keys = frozenset(
        (fold_name(str(child)), fold_name(str(parent)))
        for child, parent in conn.execute(
            'SELECT t.name, f."table" FROM pragma_table_list AS t, '
            "pragma_foreign_key_list(t.name, 'main') AS f "
            "WHERE t.schema = 'main' AND t.type = 'table'"
        )
    )
    return SchemaFacts(schema_rows(conn), keys)


def _ordered(shape: TableShape) -> tuple[str, int]:
    """A SELECT of every row of the table in an order that its content alone decides: by
    rowid (read with the row), or by primary key under BINARY (unique under its own
    collation, so unique under BINARY too). When columns take all three of the rowid's names,
    a scan of the table's own b-tree (NOT INDEXED) reads in rowid order all the same.
    With it, how many columns it gives."""
    table = f"main.{quote_identifier(shape.name)}"
    width = sum(1 for column in shape.columns if column[3] != 1)  # 1: a virtual table's hidden
    if shape.without_rowid:
        keys = [column[0] for column in shape.columns if column[2]]
        order = ", ".join(f"{quote_identifier(name)} COLLATE BINARY" for name in keys)
        return f"SELECT * FROM {table} ORDER BY {order}", width
    rowid = shape.rowid_name()
    if rowid is None:
        return f"SELECT * FROM {table} NOT INDEXED", width
    return f"SELECT {rowid}, * FROM {table} ORDER BY {rowid}", width + 1


def table_digest(conn: apsw.Connection, name: str) -> tuple[int, str]:
    """How many rows table `name` of "main" holds, and a digest of them all: every column's
    value and type (`engine.undo.checks`' row digest), and the rowid where the table has one. TEXT
    that is not UTF-8 is read as its bytes (`engine.raw_text`), with a digest of its own."""
    shape = table_shape(conn, name)
    if shape is None:
        raise ValueError(f"no table {name}")
    sql, width = _ordered(shape)

    def digest(rows: RowReader) -> tuple[int, str]:
        total = hashlib.sha256()
        count = 0
        for row in rows(conn, sql, width, [()]):
            total.update(row_digest(row))
            count += 1
        return count, total.hexdigest()

    return with_raw_text(digest)


def _replaced(new: list[SchemaRow], gone: list[SchemaRow]) -> dict[str, str | None] | None:
    """The SQL of each view the statement replaced by a view of the same name, by folded
    name; None when it removed anything else, which an undo that drops cannot give back."""
    made = {fold_name(row.name) for row in new if row.type == "view"}
    if any(row.type != "view" or fold_name(row.name) not in made for row in gone):
        return None
    return {fold_name(row.name): row.sql for row in gone}


def _object(
    conn: apsw.Connection,
    row: SchemaRow,
    new: list[SchemaRow],
    types: dict[str, str],
    replaced: dict[str, str | None],
) -> CreatedObject:
    kind, part_of, rows, digest = row.type, None, None, None
    if row.type == "table":
        kind = _KINDS.get(types.get(fold_name(row.name), ""), "table")
        if kind == "shadow table":  # its virtual table's, made by the same statement
            part_of = next(o.name for o in new if types.get(fold_name(o.name)) == "virtual")
        if row.rootpage:
            rows, digest = table_digest(conn, row.name)
    elif row.sql is None:
        part_of = row.tbl_name  # an autoindex: it goes with its table
    old = replaced.get(fold_name(row.name)) if row.type == "view" else None
    return CreatedObject(
        row.rowid, row.type, row.name, row.tbl_name, row.sql, kind, part_of, rows, digest,
        replaces=old,
    )  # fmt: skip


def created_since(
    conn: apsw.Connection, before: tuple[SchemaRow, ...]
) -> tuple[CreatedObject, ...]:
    """The catalog rows the statement added since `before` (call it in the same transaction,
    right after the statement), each with what its undo checks; () when it added none."""
    after = schema_rows(conn)
    was = {(row.rowid, row.identity()) for row in before}
    now = {(row.rowid, row.identity()) for row in after}
    new = [
        row
        for row in after
        if (row.rowid, row.identity()) not in was
        and not (row.type == "table" and fold_name(row.name).startswith("sqlite_"))
    ]
    replaced = _replaced(new, [row for row in before if (row.rowid, row.identity()) not in now])
    if replaced is None:
        return ()
    types = {
        fold_name(str(name)): str(kind)
        for name, kind in conn.execute(
            "SELECT name, type FROM pragma_table_list WHERE schema = 'main'"
        )
    }
    objects = tuple(_object(conn, row, new, types, replaced) for row in new)
    known: dict[int, list[str]] = {}
    for owner, row, _ in dependants(objects, schema_facts(conn)):
        known.setdefault(owner.rowid, []).append(row_mark(row))
    return tuple(replace(obj, known=tuple(known.get(obj.rowid, ()))) for obj in objects)


class SchemaCapture:
    """What `capturing_schema` saw: the catalog before, and what the block added."""

    def __init__(self, before: tuple[SchemaRow, ...]) -> None:
        self.before = before
        self.objects: tuple[CreatedObject, ...] = ()


@contextmanager
def capturing_schema(conn: apsw.Connection) -> Iterator[SchemaCapture]:
    """Record the catalog rows the block adds (call it inside the write transaction, around
    the one CREATE statement); `capture.objects` is filled when the block ends without error,
    and stays () when the statement added nothing."""
    capture = SchemaCapture(schema_rows(conn))
    yield capture
    capture.objects = created_since(conn, capture.before)


def store_created(
    conn: apsw.Connection,
    objects: tuple[CreatedObject, ...],
    *,
    ts: str,
    session: str,
    tool: str,
    kind: str,
) -> int:
    """Save the undo record of a CREATE in the current transaction; returns its id."""
    if not objects:
        raise ValueError("nothing was created: a call that changed nothing offers no undo")
    created = created_json(objects)
    names = [obj.name for obj in objects if obj.part_of is None]
    conn.execute(
        "INSERT INTO undo_changesets (ts, session, kind, tables, changes, bytes, tool, created) "
        "VALUES (?, ?, ?, ?, 0, ?, ?, ?)",
        (
            ts,
            session,
            kind,
            json.dumps(names),
            len(created.encode()),
            tool,
            created,
        ),
    )
    return int(conn.last_insert_rowid())


def undo_created(conn: apsw.Connection, created: str, protected: frozenset[str]) -> list[Conflict]:
    """Drop what the call recorded in `created` made, inside the caller's transaction. On
    conflicts nothing was written (the caller rolls back all the same); on none, the objects
    are gone and a replaced view is back."""
    try:
        objects = parse_created(created)
    except ValueError as exc:
        return [damaged(str(exc))]
    conflicts = protected_conflicts(objects, protected)
    if conflicts:
        return conflicts
    facts = schema_facts(conn)
    conflicts = identity_conflicts(objects, facts)
    if conflicts:  # another object may have the name: read no rows of it
        return conflicts
    contents = {obj.rowid: table_digest(conn, obj.name) for obj in objects if obj.rows is not None}
    conflicts = dependant_conflicts(objects, facts) + content_conflicts(objects, contents)
    if conflicts:
        return conflicts
    return _drop(conn, objects, facts.rows)


def _drop(
    conn: apsw.Connection, objects: tuple[CreatedObject, ...], before: tuple[SchemaRow, ...]
) -> list[Conflict]:
    tops = sorted((obj for obj in objects if obj.part_of is None), key=lambda o: _order(o.type))
    for obj in tops:
        try:
            conn.execute(f"{_DROP[obj.type]} main.{quote_identifier(obj.name)}")
        except apsw.Error as exc:
            reason = f"SQLite refused to drop it ({exc}); nothing was changed"
            return [Conflict("SCHEMA", obj.label, (), reason)]
    for obj in tops:
        if obj.replaces is not None:
            problem = _put_back(conn, obj, obj.replaces)
            if problem is not None:
                reason = f"the view it replaced cannot be put back ({problem}); nothing was changed"
                return [Conflict("SCHEMA", obj.label, (), reason)]
    return _exactly_dropped(objects, before, schema_rows(conn))


def _order(kind: str) -> int:
    """Dependants first: views and triggers, then indexes, then tables."""
    return list(_DROP).index(kind) if kind in _DROP else len(_DROP)


def _put_back(conn: apsw.Connection, obj: CreatedObject, sql: str) -> str | None:
    """Run the replaced view's CREATE VIEW again; what is wrong with it, or None."""
    statement = inspect_statement(sql)
    if statement.kind != "CREATE VIEW" or [fold_name(n) for n in statement.writes] != [
        fold_name(obj.name)
    ]:
        return f"its recorded SQL is not a CREATE VIEW of {obj.name}"
    cursor = conn.cursor()

    def first_only(_: apsw.Cursor, text: str, __: apsw.Bindings | None) -> bool:
        return not has_more_statements(sql[len(text) :])

    cursor.exec_trace = first_only
    try:
        cursor.execute(sql)
    except apsw.Error as exc:
        return str(exc)
    finally:
        cursor.close()
    return None


def _exactly_dropped(
    objects: tuple[CreatedObject, ...], before: tuple[SchemaRow, ...], after: tuple[SchemaRow, ...]
) -> list[Conflict]:
    """The last guard: the catalog is what it was less the recorded rows (and with each
    replaced view back); anything else is a conflict, and the caller rolls back."""
    ours = {obj.rowid for obj in objects}
    expected = {(row.rowid, row.identity()) for row in before if row.rowid not in ours}
    back = {(fold_name(obj.name), obj.replaces) for obj in objects if obj.replaces is not None}
    now = {
        (row.rowid, row.identity()) for row in after if (fold_name(row.name), row.sql) not in back
    }
    conflicts = []
    for _, (kind, name, _, _) in sorted(now - expected, key=repr):
        reason = "it was still there after the drop; nothing was changed"
        conflicts.append(Conflict("SCHEMA", f"{kind} {name}", (), reason))
    for _, (kind, name, _, _) in sorted(expected - now, key=repr):
        reason = f"dropping the call's objects also removed {kind} {name}; nothing was changed"
        conflicts.append(Conflict("SCHEMA", "undo", (), reason))
    return conflicts
