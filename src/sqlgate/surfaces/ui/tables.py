"""Tables: the user's tables and views with row counts, and a read-only page of rows with
`read_query`'s caps: at most --max-rows rows a page (and 50), --max-result-bytes of text,
each cell cut at --max-cell-chars with a note of how much was cut.

Rows are paged by rowid (`after=<rowid>`, keyset) where the table has one; a view or a
WITHOUT ROWID table is paged with OFFSET, capped at MAX_OFFSET rows in.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import apsw

from sqlgate.config import Settings
from sqlgate.errors import QueryTimeout
from sqlgate.service import (
    CallControl,
    Deadline,
    LiveRules,
    PolicyRecorder,
    Tier,
    counted,
    quote_identifier,
    raw_rows,
    raw_select,
    recording,
    schema_objects,
    text_codec,
    watched,
)
from sqlgate.surfaces.ui.console import Console
from sqlgate.surfaces.ui.html import Markup, bounded, el, href
from sqlgate.surfaces.ui.layout import Page, cut_note, table

__all__ = ["rows_page", "tables_page"]

PAGE_ROWS = 50
MAX_OFFSET = 100_000
COUNT_SECONDS = 0.05  # a count that takes longer is left blank: the page stays fast


def _user_objects(console: Console, conn: apsw.Connection) -> list[tuple[str, str]]:
    db = console.service.db
    shadow = db.shadow_tables(conn)
    return [
        (obj.name, obj.type)
        for obj in schema_objects(conn, db.protected)
        if not obj.system and obj.name.lower() not in shadow
    ]


def _count(conn: apsw.Connection, name: str) -> int | None:
    try:
        with watched(conn, Deadline(COUNT_SECONDS), CallControl()):
            (count,) = next(conn.execute(f"SELECT count(*) FROM {quote_identifier(name)}"))
        return int(count)
    except (QueryTimeout, apsw.Error):
        return None


def tables_page(console: Console, query: Mapping[str, str]) -> Page:
    with console.reading_tables() as conn:
        objects = _user_objects(console, conn)
        rows = [
            [el("a", {"href": href("/tables/rows", {"name": name})}, name), kind,
             _count(conn, name) if kind != "view" else None]
            for name, kind in objects
        ]  # fmt: skip
    body = el("div", None,
              el("p", {"class": "note"}, "The agent's tables and views (sqlgate's own tables "
                 "are on the other pages). Counts that take more than 50 ms are left blank."),
              table(("name", "type", "rows"), rows, empty="no tables yet"))  # fmt: skip
    return Page("Tables", "/tables", body)


def _has_rowid(conn: apsw.Connection, quoted: str) -> bool:
    try:
        conn.execute(f"SELECT rowid FROM {quoted} LIMIT 0").fetchall()
    except apsw.SQLError:
        return False
    return True


def _read(
    console: Console, conn: apsw.Connection, live: LiveRules, sql: str, params: tuple[Any, ...]
) -> tuple[list[str], list[tuple[Any, ...]], list[str]]:
    """(columns, rows, hidden columns) of the page's SELECT. With hidden columns in force it
    is read as the agent reads it: under the read tier's authorizer (prepared uncached, as
    the authorizer is asked only when a statement is prepared), a hidden column as NULL.
    When a value is TEXT that is not UTF-8 the page is read again with such text as bytes
    (`engine.raw_text`): it shows as `CAST(x'…' AS TEXT)`, as read_query shows it."""
    settings = console.settings
    described: list[str] = []
    with watched(conn, Deadline(settings.query_timeout), CallControl()):
        try:
            return _fetch(console, conn, live, (sql, params), described, None)
        except UnicodeDecodeError:
            again = (raw_select(sql, len(described)), params)
            return _fetch(console, conn, live, again, described, text_codec(conn))


def _fetch(
    console: Console,
    conn: apsw.Connection,
    live: LiveRules,
    statement: tuple[str, tuple[Any, ...]],
    described: list[str],
    codec: str | None,
) -> tuple[list[str], list[tuple[Any, ...]], list[str]]:
    """`_read`'s rows of one statement: as apsw reads them (`codec` None, and `described`
    gets the columns), or those of a `raw_select` with its TEXT decoded with `codec`."""

    def rows(cursor: apsw.Cursor) -> list[tuple[Any, ...]]:
        if codec is not None:
            return list(raw_rows(cursor, codec))
        described[:] = [d[0] for d in cursor.getdescription()]
        return list(cursor)

    sql, params = statement
    if not (live.hidden or live.sealed):
        fetched = rows(conn.execute(sql, params))
        return described[1:], fetched, []
    recorder = PolicyRecorder(Tier.READ, console.service.db.protected, live)
    with recording(conn, recorder):
        cursor = conn.cursor()
        cursor.execute(sql, params, can_cache=False)
        fetched = rows(cursor)
    hidden = [f"{live.name_of(table)}.{column}" for table, column in recorder.hidden_reads]
    return described[1:], fetched, sorted(set(hidden))


def _cells(fetched: list[tuple[Any, ...]], settings: Settings) -> tuple[list[list[object]], bool]:
    """The cells of `fetched` (after their first, the rowid), each cut at --max-cell-chars,
    and whether the rows stop early at --max-result-bytes."""
    shown: list[list[object]] = []
    used = 0
    for row in fetched:
        cells: list[object] = []
        for value in row[1:]:
            text, cut = bounded(value, settings.max_cell_chars)
            used += len(text.encode("utf-8", "surrogatepass"))
            cells.append(el("span", {"class": "null"}, "NULL") if value is None
                         else Markup(el("span", None, text) + cut_note(cut)))  # fmt: skip
        shown.append(cells)
        if used > settings.max_result_bytes:
            return shown, True
    return shown, False


def rows_page(console: Console, query: Mapping[str, str]) -> Page | None:
    name = query.get("name") or ""
    settings = console.settings
    size = max(1, min(PAGE_ROWS, settings.max_rows))
    with console.reading_tables() as conn:
        if (name, "view") not in _user_objects(console, conn) and name not in {
            n for n, _ in _user_objects(console, conn)
        }:
            return None
        quoted = quote_identifier(name)
        keyed = _has_rowid(conn, quoted)
        after = query.get("after", "")
        offset = min(int(query.get("offset", "0") or 0) if query.get("offset", "").isdigit()
                     else 0, MAX_OFFSET)  # fmt: skip
        live = console.service.db.live_rules(conn)
        if keyed:
            where = "WHERE rowid > ?" if after.lstrip("-").isdigit() else ""
            params: tuple[Any, ...] = (int(after),) if where else ()
            sql = f"SELECT rowid, * FROM {quoted} {where} ORDER BY rowid LIMIT ?"
            params = (*params, size + 1)
        else:
            sql, params = f"SELECT NULL, * FROM {quoted} LIMIT ? OFFSET ?", (size + 1, offset)
        try:
            columns, fetched, hidden = _read(console, conn, live, sql, params)
        except apsw.AuthError:  # every column of it is hidden by the user's rules
            columns, fetched, hidden = [], [], ["every column"]
    more = len(fetched) > size
    fetched = fetched[:size]
    shown, byte_cut = _cells(fetched, settings)
    notes = [f"{counted(len(shown), 'row')} shown"]
    if hidden:
        notes.append(f"hidden by policy, shown as NULL: {', '.join(hidden)}")
    if byte_cut:
        notes.append(
            f"truncated: {counted(settings.max_result_bytes, 'byte')} (--max-result-bytes)"
        )
    nxt: str | None = None
    if (more or byte_cut) and shown:
        if keyed:
            last = fetched[len(shown) - 1][0]
            nxt = href("/tables/rows", {"name": name, "after": last})
        elif offset + len(shown) <= MAX_OFFSET:
            nxt = href("/tables/rows", {"name": name, "offset": offset + len(shown)})
    body = el("div", None,
              el("p", {"class": "pager"}, el("a", {"href": "/tables"}, "« all tables"),
                 el("a", {"href": href("/tables/rows", {"name": name})}, "first page"),
                 el("a", {"href": nxt}, "next page »") if nxt else None),
              el("p", {"class": "note"}, "; ".join(notes) + f"; cells cut at "
                 f"{counted(settings.max_cell_chars, 'character')} (--max-cell-chars)"),
              el("div", {"class": "scroll"}, table(columns, shown, empty="no rows")))  # fmt: skip
    return Page(f"Rows of {name}", "/tables", body)
