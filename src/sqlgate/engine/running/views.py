"""Saved views: a SELECT kept under a name, with its description, as a reusable skill.

The description is stored inside the view's own SQL as `--` comment lines right after
`AS`, so it travels with the view (get_schema shows it, a copied file keeps it) and can
never end the comment early: every line break in it starts a new `--` line.
"""

from __future__ import annotations

import re

import apsw

from sqlgate.engine.database import find_object
from sqlgate.engine.framing import counted
from sqlgate.engine.limits import CallControl, Deadline
from sqlgate.engine.running.execute import RunContext, run_statement
from sqlgate.engine.running.queries import SqlTiers
from sqlgate.engine.sqltext import quote_identifier
from sqlgate.engine.statements import (
    Statement,
    Tier,
    check_tier,
    inspect_statement,
    validate_new_name,
)
from sqlgate.engine.undo import capturing_schema
from sqlgate.errors import InvalidArgument, NotFound, PolicyDenied

__all__ = ["MAX_DESCRIPTION_CHARS", "ViewSaver", "description_comment"]

MAX_DESCRIPTION_CHARS = 2000
RECORDS_SCHEMA = "sqlgate"  # the schema name the records are attached under
_LINE_BREAKS = re.compile(r"\r\n|[\r\n\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
_FORBIDDEN_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")


def description_comment(description: str) -> str:
    """The description as `-- ` lines, each ending in a newline; empty when there is none."""
    if not isinstance(description, str):
        raise InvalidArgument("description must be text")
    if len(description) > MAX_DESCRIPTION_CHARS:
        raise InvalidArgument(
            f"description is longer than {counted(MAX_DESCRIPTION_CHARS, 'character')}"
        )
    if _FORBIDDEN_CONTROL.search(description):
        raise InvalidArgument("description contains control characters; use plain text")
    lines = [line.rstrip() for line in _LINE_BREAKS.split(description.strip())]
    return "".join(f"-- {line}\n" if line else "--\n" for line in lines if description.strip())


_CREATE_VIEW = Statement("CREATE VIEW")


def _strip_terminators(sql: str) -> str:
    text = sql.strip()
    while text.endswith(";"):
        text = text[:-1].rstrip()
    return text


def _refuse_records(conn: apsw.Connection, ctx: RunContext) -> None:
    """A view is kept in the user's file, and SQLite lets it read only that file: a SELECT
    over sqlgate's records (attached as `sqlgate`, reached by a plain name when the user's
    file has no such table) runs, but could never be saved. SQLite does not say which file
    a `count(*)` reads, so a plain name is looked up: the user's file first, as SQLite does."""
    for op in ctx.recorder.operations:
        if op.action != "READ" or not op.target or op.database not in (None, RECORDS_SCHEMA):
            continue
        if op.database is None and (
            _has_table(conn, "main", op.target) or not _has_table(conn, RECORDS_SCHEMA, op.target)
        ):
            continue
        raise PolicyDenied(
            f"refused: the view would read {RECORDS_SCHEMA}.{op.target}, one of sqlgate's "
            "records, which live in a file of their own: a view is kept in your database and "
            "SQLite lets it read only that file. Nothing was saved. Next: query "
            f"{RECORDS_SCHEMA}.{op.target} with read_query each time instead"
        )


def _has_table(conn: apsw.Connection, schema: str, name: str) -> bool:
    found = conn.execute(
        "SELECT 1 FROM pragma_table_list WHERE schema = ? AND name = ? COLLATE NOCASE",
        (schema, name),
    ).fetchone()
    return found is not None


class ViewSaver:
    def __init__(self, tiers: SqlTiers) -> None:
        self.tiers = tiers
        self.db = tiers.db

    def create_view(
        self,
        name: object,
        select_sql: object,
        description: object,
        replace: bool,
        control: CallControl,
    ) -> tuple[str, int | None]:
        """Save the view; returns the answer and the id of its undo record (`engine.undo.ddl`:
        the undo drops the view, or puts back the one it replaced), None when nothing changed."""
        view = validate_new_name(name, "view", self.db.protected)  # type: ignore[arg-type]
        comment = description_comment(description if description is not None else "")  # type: ignore[arg-type]
        body, statement = self.tiers.preflight(select_sql, Tier.VIEW)
        check_tier(statement, Tier.VIEW)
        body = _strip_terminators(body)
        # the SELECT must stand on its own under the read policy before it is saved
        with self.db.reading() as reader:
            ctx = RunContext(
                reader, Tier.READ, self.db.protected, self._deadline(), control,
                rules=self.db.live_rules(reader),
            )  # fmt: skip
            ctx.sent = ("select_sql", body)
            run_statement(ctx, f"EXPLAIN {body}", None, lambda cursor: None)
            _refuse_records(reader, ctx)
        create = f"CREATE VIEW {quote_identifier(view)} AS\n{comment}{body}"
        if inspect_statement(create).kind != "CREATE VIEW":
            raise InvalidArgument("select_sql must be a single SELECT")
        with self.db.writing() as conn:
            existing = self._existing(conn, view, replace)
            ctx = RunContext(
                conn, Tier.VIEW, self.db.protected, self._deadline(), control,
                rules=self.db.live_rules(conn),
            )  # fmt: skip
            writes = self.tiers.writes
            with writes.keeping.change(conn) as intent:
                with capturing_schema(conn) as created:
                    if existing is not None:
                        # SQLite reports dropping a view as a DELETE on it too, which the view
                        # tier refuses; this DROP is the server's own, of a checked user view
                        drop = RunContext(
                            conn, Tier.DESTRUCTIVE, self.db.protected, self._deadline(), control
                        )
                        run_statement(drop, f"DROP VIEW {quote_identifier(existing)}", None, list)
                    run_statement(ctx, create, None, list)
                undo_id = None
                keeps = writes.off_reason(_CREATE_VIEW) is None
                # a replace by the very same SQL in the same place creates nothing
                if created.objects and keeps:
                    undo_id = writes.keep_created(
                        intent, created.objects, "create_view", "CREATE VIEW"
                    )
        verb = "replaced" if existing is not None else "created"
        return f"ok: view {view} {verb}", undo_id

    def _deadline(self) -> Deadline:
        return Deadline(self.tiers.settings.query_timeout, self.tiers.clock)

    def _existing(self, conn: apsw.Connection, view: str, replace: bool) -> str | None:
        """Name of the view to replace, or None when the name is free."""
        try:
            obj = find_object(conn, view, self.db.protected)
        except NotFound:
            return None
        if obj.schema != "main":  # a name of sqlgate's records: free in the user's file
            return None
        if obj.type != "view":
            raise PolicyDenied(f"{obj.name} is a {obj.type}, not a view; choose another name")
        if not replace:
            raise InvalidArgument(
                f"view {obj.name} already exists; pass replace=true to replace it"
            )
        return obj.name
