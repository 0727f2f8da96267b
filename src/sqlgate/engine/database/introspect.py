"""What is in the database: list_tables, describe_table and get_schema.

All SQL here is the server's own; names come from the schema and are quoted, never
formatted in from an argument. Shadow tables of virtual tables are hidden: they are a
module's bookkeeping, not the agent's data.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import apsw

from sqlgate.engine.csvout import csv_line, csv_reply
from sqlgate.engine.database.file import Database
from sqlgate.engine.framing import FramedReply, counted, inline
from sqlgate.engine.limits import CallControl, Clock, Deadline, watched
from sqlgate.engine.names import SERVER_SCHEMA, fold_name, same_name
from sqlgate.engine.rules import schema_notes, table_notes
from sqlgate.engine.sqltext import quote_identifier
from sqlgate.errors import InvalidArgument, NotFound, QueryTimeout

__all__ = ["Introspection", "Relation", "find_object", "schema_objects"]


@dataclass(frozen=True)
class Relation:
    """A table, view or virtual table a query reads from: the user's (schema "main") or
    the server's own (schema `sqlgate`, the records attached read-only: `system`)."""

    name: str
    type: str  # table, view, virtual
    system: bool
    schema: str = "main"

    @property
    def shown(self) -> str:
        """The name as the agent writes it: `sqlgate.query_log` for a server object."""
        return self.name if self.schema == "main" else f"{self.schema}.{self.name}"

    @property
    def quoted(self) -> str:
        """The name quoted for SQL, with its schema when it is not main."""
        name = quote_identifier(self.name)
        return name if self.schema == "main" else f"{self.schema}.{name}"

    def pragma(self, name: str) -> str:
        """`PRAGMA schema.name("table")` of this relation."""
        return f"PRAGMA {self.schema}.{name}({quote_identifier(self.name)})"


def schema_objects(conn: apsw.Connection, protected: frozenset[str]) -> list[Relation]:
    """Tables, views and virtual tables of "main" by name, then (when attached) those of
    sqlgate's records by name; `system` for server objects."""
    rows = conn.execute(
        "SELECT schema, name, type FROM pragma_table_list WHERE schema IN ('main', ?) "
        "AND type IN ('table', 'view', 'virtual') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' "
        "ORDER BY schema <> 'main', name",
        (SERVER_SCHEMA,),
    )
    return [
        Relation(str(n), str(t), str(sc) != "main" or fold_name(str(n)) in protected, str(sc))
        for sc, n, t in rows
    ]


def find_object(conn: apsw.Connection, name: object, protected: frozenset[str]) -> Relation:
    """The table or view called `name` (exact, then as SQLite matches names; a name of the
    user's before a server object's, as SQLite resolves them; `sqlgate.x` names a server
    object), or NotFound."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidArgument("table must be the name of a table or view")
    objects = schema_objects(conn, protected)
    for matches in (str.__eq__, same_name):
        for obj in objects:
            if matches(obj.name, name) or matches(obj.shown, name):
                return obj
        if "." in name:  # `sqlgate.query_log` as SQLite matches a qualified name
            schema, _, bare = name.partition(".")
            for obj in objects:
                if same_name(obj.schema, schema) and matches(obj.name, bare):
                    return obj
    raise NotFound(f"no table or view named {name!r}; call list_tables to see what exists")


_SCHEMA_SQL = """
SELECT type, name, tbl_name, sql FROM main.sqlite_schema
WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'
ORDER BY CASE type WHEN 'table' THEN 0 WHEN 'index' THEN 1 WHEN 'view' THEN 2 ELSE 3 END, name
"""


_SERVER_SCHEMA_SQL = f"""
SELECT type, name, tbl_name, sql FROM {SERVER_SCHEMA}.sqlite_schema
WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND name NOT IN (
    SELECT name FROM pragma_table_list WHERE schema = '{SERVER_SCHEMA}' AND type = 'shadow')
ORDER BY CASE type WHEN 'table' THEN 0 WHEN 'index' THEN 1 WHEN 'view' THEN 2 ELSE 3 END, name
"""


def _server_schema(conn: apsw.Connection) -> list[tuple[object, ...]]:
    """The records' objects (schema `sqlgate`) when the connection has them attached."""
    attached = conn.execute(
        "SELECT 1 FROM pragma_database_list WHERE name = ?", (SERVER_SCHEMA,)
    ).fetchone()
    if attached is None:
        return []
    return [(SERVER_SCHEMA, *row) for row in conn.execute(_SERVER_SCHEMA_SQL)]


class Introspection:
    def __init__(
        self, db: Database, deadline_seconds: float, clock: Clock = time.monotonic
    ) -> None:
        self.db = db
        self.deadline_seconds = deadline_seconds
        self.clock = clock

    def list_tables(self, include_row_counts: bool, control: CallControl) -> tuple[str, int]:
        cells = self.db.settings.max_cell_chars
        lines = [csv_line(("name", "type", "system", "rows"), cells)]
        with self.db.reading() as conn:
            objects = schema_objects(conn, self.db.protected)
            for obj in objects:
                rows: int | None = None
                if include_row_counts and obj.type != "view":
                    rows = self._count(conn, obj, control)
                lines.append(csv_line((obj.shown, obj.type, int(obj.system), rows), cells))
        return csv_reply(
            lines, f"# {counted(len(objects), 'table or view', 'tables and views')}"
        ), len(objects)

    def _count(self, conn: apsw.Connection, obj: Relation, control: CallControl) -> int | None:
        try:
            with watched(conn, Deadline(self.deadline_seconds, self.clock), control):
                (count,) = next(conn.execute(f"SELECT count(*) FROM {obj.quoted}"))
            return int(count)
        except QueryTimeout:
            if control.cancelled:
                raise
            return None  # too big to count in the budget: the cell stays empty

    def describe_table(self, table: object) -> tuple[str, int]:
        cells = self.db.settings.max_cell_chars
        with self.db.reading() as conn:
            obj = find_object(conn, table, self.db.protected)
            columns = list(
                conn.execute(
                    'SELECT cid, name, type, "notnull", dflt_value, pk, hidden '
                    "FROM pragma_table_xinfo(?, ?) WHERE hidden IN (0, 2, 3)",
                    (obj.name, obj.schema),
                )
            )
            fks = list(conn.execute(obj.pragma("foreign_key_list")))
            indexes = list(conn.execute(obj.pragma("index_list")))
            live = self.db.live_rules(conn)
            index_columns = {
                str(idx[1]): ",".join(
                    "<expression>" if c[2] is None else str(c[2])
                    for c in conn.execute(
                        Relation(str(idx[1]), "index", obj.system, obj.schema).pragma("index_info")
                    )
                )
                for idx in indexes
            }
        reply = FramedReply()
        system = " (server object, read-only)" if obj.system else ""
        reply.server(f"# {obj.type} {inline(obj.shown)}{system}\n# columns")
        out = [csv_line(("cid", "name", "type", "notnull", "default", "pk"), cells)]
        out.extend(csv_line(row[:6], cells) for row in columns)
        reply.data("".join(out).removesuffix("\n"))
        notes = (
            table_notes(live, self.db.rules.rules, obj.name, [str(r[1]) for r in columns])
            if obj.schema == "main"
            else []
        )
        if notes:
            reply.server("\n".join(notes))
        if fks:
            header = ("id", "seq", "table", "from", "to", "on_update", "on_delete")
            out = [csv_line(header, cells), *(csv_line(row[:7], cells) for row in fks)]
            reply.server("# foreign keys").data("".join(out).removesuffix("\n"))
        if indexes:
            out = [csv_line(("name", "unique", "origin", "partial", "columns"), cells)]
            out.extend(
                csv_line((i[1], i[2], i[3], i[4], index_columns[str(i[1])]), cells) for i in indexes
            )
            reply.server("# indexes").data("".join(out).removesuffix("\n"))
        return reply.render(), len(columns)

    def get_schema(self, include_system: bool) -> tuple[str, int]:
        with self.db.reading() as conn:
            shadows = self.db.shadow_tables(conn)
            rows = [("main", *row) for row in conn.execute(_SCHEMA_SQL)]
            rows.extend(_server_schema(conn))
            live = self.db.live_rules(conn)
        statements = []
        left_out: list[str] = []  # the server's tables and views not shown
        for schema, kind, name, table, sql in rows:
            lowered, parent = fold_name(str(name)), fold_name(str(table))
            if schema == "main" and (lowered in shadows or parent in shadows):
                continue
            system = schema != "main" or lowered in self.db.protected or parent in self.db.protected
            if system and not include_system:
                if kind in ("table", "view"):
                    left_out.append(str(name) if schema == "main" else f"{schema}.{name}")
                continue
            statements.append(str(sql).strip() + ";")
        reply = FramedReply()
        if statements:
            # stored SQL is data: fenced when a line of it (a comment, a string) looks like ours
            reply.data("\n\n".join(statements))
        else:
            reply.server("# the database has no tables or views yet; create one with write_query")
        notes = schema_notes(live, self.db.rules.rules)
        if notes:
            reply.server("\n".join(notes))
        if left_out:
            names = ", ".join(inline(name) for name in sorted(left_out))
            reply.server(
                "# left out: the server's "
                f"{counted(len(left_out), 'table or view', 'tables and views')} ({names}) and "
                "their indexes and triggers; get_schema(include_system=true) shows them, "
                "read_query reads them"
            )
        return reply.render(), len(statements)
