"""search_text: SQL narrows the rows (under the read policy), RE2 finds the matches.

RE2 runs in time linear in the text, so no pattern can hang the server, and the scan
itself runs under the same deadline and cancellation as any read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import apsw
import re2

from sqlgate.engine.csvout import csv_line
from sqlgate.engine.execute import Bindings, RunContext, run_statement
from sqlgate.engine.introspect import SchemaObject, find_object
from sqlgate.engine.limits import CallControl, Deadline
from sqlgate.engine.policy import Tier
from sqlgate.engine.queries import Outcome, SqlTiers
from sqlgate.engine.sqltext import check_condition, quote_identifier
from sqlgate.errors import InvalidArgument

__all__ = ["SearchRequest", "TextSearch"]

MAX_PATTERN_CHARS = 1000
MAX_CONTEXT_CHARS = 1000
RE2_MAX_MEM = 8 << 20


@dataclass(frozen=True)
class SearchRequest:
    pattern: str
    table: str
    columns: Sequence[str] | None = None
    where: str | None = None
    key_column: str | None = None
    limit: int = 100
    ignore_case: bool = False
    fixed_strings: bool = False
    context_chars: int = 80


def _compile(request: SearchRequest) -> Any:
    if not isinstance(request.pattern, str) or not request.pattern:
        raise InvalidArgument("pattern is empty: pass the text or RE2 regular expression to find")
    if len(request.pattern) > MAX_PATTERN_CHARS:
        raise InvalidArgument(f"pattern is longer than {MAX_PATTERN_CHARS} characters")
    options = re2.Options()
    options.case_sensitive = not request.ignore_case
    options.log_errors = False
    options.max_mem = RE2_MAX_MEM
    options.literal = request.fixed_strings
    try:
        return re2.compile(request.pattern, options)
    except re2.error as exc:
        message = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise InvalidArgument(
            f"pattern is not a valid RE2 expression ({message}); pass fixed_strings=true to "
            "search for the text literally"
        ) from None


def _snippet(text: str, start: int, end: int, context: int) -> str:
    left = max(0, start - context)
    right = min(len(text), end + context)
    shown = " ".join(text[left:right].split())
    return ("…" if left else "") + shown + ("…" if right < len(text) else "")


class TextSearch:
    def __init__(self, tiers: SqlTiers) -> None:
        self.tiers = tiers
        self.db = tiers.db

    def _columns(self, conn: apsw.Connection, table: str) -> list[str]:
        return [
            str(row[0])
            for row in conn.execute("SELECT name FROM pragma_table_info(?) ORDER BY cid", (table,))
        ]

    def _has_rowid(self, conn: apsw.Connection, obj: SchemaObject) -> bool:
        """Tables have a rowid unless WITHOUT ROWID; fts5 and rtree tables have one too."""
        if obj.type == "view":
            return False
        rows = conn.execute(
            "SELECT wr FROM pragma_table_list WHERE schema = 'main' AND name = ?", (obj.name,)
        )
        return not any(wr for (wr,) in rows)

    def _primary_key(self, conn: apsw.Connection, table: str) -> list[str]:
        rows = conn.execute(
            "SELECT name FROM pragma_table_info(?) WHERE pk > 0 ORDER BY pk", (table,)
        )
        return [str(name) for (name,) in rows]

    def _resolve(self, request: SearchRequest) -> tuple[str, list[str], str]:
        """(table, columns to search, key expression already quoted)."""
        with self.db.reading() as conn:
            obj = find_object(conn, request.table, self.db.protected)
            available = self._columns(conn, obj.name)
            has_rowid = self._has_rowid(conn, obj)
            primary_key = self._primary_key(conn, obj.name)
        lookup = {name.lower(): name for name in available}
        if request.columns is None:
            chosen = available
        else:
            if isinstance(request.columns, str) or not all(
                isinstance(c, str) for c in request.columns
            ):
                raise InvalidArgument("columns must be a list of column names")
            missing = [c for c in request.columns if c.lower() not in lookup]
            if missing:
                raise InvalidArgument(
                    f"no column {', '.join(map(repr, missing))} in {obj.name}; it has: "
                    f"{', '.join(available)}"
                )
            chosen = [lookup[c.lower()] for c in request.columns]
        if not chosen:
            raise InvalidArgument(f"{obj.name} has no columns to search")
        # `rowid` stays bare: quoted, SQLite would read it as a string where there is no rowid
        if request.key_column is None:
            key = "rowid" if has_rowid else quote_identifier((primary_key or chosen)[0])
        elif not isinstance(request.key_column, str):
            raise InvalidArgument("key_column must be a column name")
        elif request.key_column.lower() in lookup:
            key = quote_identifier(lookup[request.key_column.lower()])
        elif request.key_column.lower() == "rowid" and has_rowid:
            key = "rowid"
        else:
            raise InvalidArgument(
                f"key_column {request.key_column!r} is not a column of {obj.name}; it has: "
                f"{', '.join(available)}"
            )
        return obj.name, chosen, key

    def search(self, request: SearchRequest, bindings: Bindings, control: CallControl) -> Outcome:
        caps = self.tiers.caps
        limit = request.limit
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= caps.rows:
            raise InvalidArgument(f"limit must be a whole number from 1 to {caps.rows}")
        context = request.context_chars
        if (
            not isinstance(context, int)
            or isinstance(context, bool)
            or not 0 <= context <= MAX_CONTEXT_CHARS
        ):
            raise InvalidArgument(f"context_chars must be from 0 to {MAX_CONTEXT_CHARS}")
        regex = _compile(request)
        table, columns, key = self._resolve(request)
        selected = ", ".join([key, *(quote_identifier(c) for c in columns)])
        sql = f"SELECT {selected} FROM {quote_identifier(table)}"
        if request.where is not None:
            if not isinstance(request.where, str) or not request.where.strip():
                raise InvalidArgument("where must be an SQL condition, e.g. \"status = 'open'\"")
            # the agent's condition runs as agent SQL: read policy, one statement, read-only
            sql += f" WHERE (\n{check_condition(request.where)}\n)"
        header = csv_line(("key", "column", "snippet"), caps.cell_chars)
        state = {"matches": 0, "rows": 0, "scanned": 0, "bytes": len(header.encode())}
        lines = [header]
        stopped: list[str] = []  # why the scan stopped before the last row, if it did

        def consume(cursor: apsw.Cursor) -> None:
            """Read rows until the result is full: at `limit` matches, or when the next
            match would not fit the byte cap. Nothing more could be shown, so the rest of
            the table is not read just to count (the totals then say so)."""
            for row in cursor:
                state["scanned"] += 1
                row_matched = False
                for column, value in zip(columns, row[1:], strict=False):
                    if not isinstance(value, str):
                        if value is None or isinstance(value, bytes):
                            continue
                        value = str(value)
                    for match in regex.finditer(value):
                        start, end = match.span()
                        snippet = _snippet(value, start, end, request.context_chars)
                        line = csv_line((row[0], column, snippet), caps.cell_chars)
                        if state["bytes"] + len(line.encode()) > caps.bytes:
                            stopped.append(
                                f"the {caps.bytes}-byte result cap after {state['scanned']} "
                                "rows scanned; the next match did not fit"
                            )
                            state["rows"] += int(row_matched)
                            return
                        row_matched = True
                        state["matches"] += 1
                        lines.append(line)
                        state["bytes"] += len(line.encode())
                        if state["matches"] >= limit:
                            stopped.append(
                                f"limit {limit} after {state['scanned']} rows scanned; "
                                "more may match"
                            )
                            state["rows"] += 1
                            return
                state["rows"] += int(row_matched)

        with self.db.reading() as conn:
            deadline = Deadline(self.tiers.settings.query_timeout, self.tiers.clock)
            ctx = RunContext(conn, Tier.READ, self.db.protected, deadline, control)
            run_statement(ctx, sql, bindings, consume)
        shown = len(lines) - 1
        if stopped:
            trailer = f"# {shown} matches shown (stopped at {stopped[0]})"
        else:
            trailer = (
                f"# {shown} matches shown; {state['matches']} matches in {state['rows']} rows "
                f"of {state['scanned']} scanned"
            )
        detail = {"matches": state["matches"], "scanned": state["scanned"], "complete": not stopped}
        return Outcome("".join(lines) + trailer, shown, detail)
