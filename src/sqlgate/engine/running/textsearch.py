"""search_text: SQL narrows the rows (under the read policy), RE2 finds the matches.

RE2 runs in time linear in the text, but the factor grows with the pattern's program: a
few thousand instructions can cost tens of microseconds per byte. So the deadline holds
while matching too:

    patterns over 5000 RE2 instructions   refused at compile time, naming the problem
    each cell                             matched in windows of 2-256 KiB (smaller for
                                          bigger programs), the deadline checked between
    the deadline passes                   the scan stops and the answer says so:
                                          `(stopped at the 10 s time limit ...)`, with the
                                          matches found so far (also when SQLite was
                                          looking for the next row)
    ... before any row came back          QueryTimeout, as for any read: the SQL is too slow
    the client cancels                    QueryTimeout, as for any read

A match longer than half a window (1 KiB at least) that straddles two windows can be
missed or reported in part; shorter matches are found exactly as one pass would.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import apsw
import re2

from sqlgate.engine.csvout import csv_line, csv_reply
from sqlgate.engine.database import Relation, find_object
from sqlgate.engine.framing import counted, inline
from sqlgate.engine.limits import CallControl, Deadline, ResultCaps
from sqlgate.engine.names import fold_name
from sqlgate.engine.raw_text import RawText, UnreadableText, raw_rows, raw_select, text_codec
from sqlgate.engine.running.execute import Bindings, RunContext, run_statement
from sqlgate.engine.running.queries import Outcome, SqlTiers
from sqlgate.engine.sqltext import check_condition, quote_identifier
from sqlgate.engine.statements import Tier
from sqlgate.errors import InvalidArgument, PolicyDenied, QueryTimeout

__all__ = ["Matcher", "SearchRequest", "TextSearch"]

MAX_PATTERN_CHARS = 1000
MAX_CONTEXT_CHARS = 1000
RE2_MAX_MEM = 8 << 20
# RE2's slowest case costs about 10 ns per byte per program instruction: above this size a
# pattern is refused, and windows are sized so one costs ~WINDOW_WORK such steps (~0.1 s)
MAX_PROGRAM_SIZE = 5000
WINDOW_WORK = 8 << 20
MIN_WINDOW_BYTES = 2 << 10
MAX_WINDOW_BYTES = 256 << 10


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
        raise InvalidArgument(f"pattern is longer than {counted(MAX_PATTERN_CHARS, 'character')}")
    options = re2.Options()
    options.case_sensitive = not request.ignore_case
    options.log_errors = False
    options.max_mem = RE2_MAX_MEM
    options.literal = request.fixed_strings
    try:
        encoded = request.pattern.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidArgument(
            "pattern holds an unpaired UTF-16 surrogate (U+D800-U+DFFF), which is not text; "
            "send the pattern as valid Unicode"
        ) from None
    try:
        # compiled on UTF-8 bytes: cells are matched as bytes, in windows (see Matcher)
        regex = re2.compile(encoded, options)
    except re2.error as exc:
        message = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise InvalidArgument(
            f"pattern is not a valid RE2 expression ({message}); pass fixed_strings=true to "
            "search for the text literally"
        ) from None
    if regex.programsize > MAX_PROGRAM_SIZE:
        raise InvalidArgument(
            "pattern is too complex to search with: it compiles to "
            f"{counted(regex.programsize, 'RE2 instruction')}, over the limit of "
            f"{MAX_PROGRAM_SIZE}, mostly from counted "
            "repetition ({1,1000}, .{0,500}). Use fewer repetitions (e.g. {1,50}), a shorter "
            "pattern, or fixed_strings=true for plain text"
        )
    return regex


def _char_start(data: bytes, index: int) -> int:
    """`index`, moved back to the first byte of the UTF-8 character it falls in."""
    while 0 < index < len(data) and 0x80 <= data[index] < 0xC0:
        index -= 1
    return index


def _next_char(data: bytes, index: int) -> int:
    """The first byte of the character after the one starting at `index`."""
    index += 1
    while index < len(data) and 0x80 <= data[index] < 0xC0:
        index += 1
    return index


class Matcher:
    """RE2 over UTF-8 bytes in windows, so the deadline is checked between windows.

    One pass of `finditer` over a whole cell cannot be stopped: a 1 MB cell and a costly
    pattern took a minute. Each window is one RE2 call; the full cell stays RE2's context,
    so `^`, `$` and `\\b` see the real edges. A match that touches a window's end may go
    on: it is looked for again from its start. When a window holds no match, the next
    starts half a window back, so matches up to half a window long are never cut.
    """

    def __init__(self, regex: Any, deadline: Deadline, window: int | None = None) -> None:
        self.regex = regex
        self.deadline = deadline
        steps = max(1, int(regex.programsize))
        default = min(MAX_WINDOW_BYTES, max(MIN_WINDOW_BYTES, WINDOW_WORK // steps))
        self.window = window or default

    def spans(self, data: bytes) -> Iterator[tuple[int, int]]:
        """(start, end) byte offsets of the matches in `data`, as `finditer` would give them.

        Raises QueryTimeout when the deadline passes between two windows.
        """
        size, pos = len(data), 0
        while pos <= size:
            if self.deadline.expired():
                raise QueryTimeout("the deadline passed while matching")
            end = size if size - pos <= self.window else _char_start(data, pos + self.window)
            match = self.regex.search(data, pos, end)
            if match is None:
                if end == size:
                    return
                pos = max(_char_start(data, end - self.window // 2), _next_char(data, pos))
                continue
            start, stop = match.span()
            if stop == end < size and start > pos:
                pos = start  # it may go on past this window: look again from its start
                continue
            yield start, stop
            pos = stop if stop > start else _next_char(data, stop)


def _snippet(data: bytes, start: int, end: int, context: int) -> str:
    """The match at bytes [start, end) with `context` characters either side, whitespace
    folded, `…` where the cell goes on. At most 4 bytes make a character, so 4 per
    character (and 3 for a cut one) are enough to decode."""
    reach = 4 * context + 3
    before_from = max(0, start - reach)
    before = data[before_from:start].decode("utf-8", "replace")
    shown_before = before[max(0, len(before) - context) :] if context else ""
    more_left = before_from > 0 or len(before) > context
    after_to = min(len(data), end + reach)
    after = data[end:after_to].decode("utf-8", "replace")
    more_right = after_to < len(data) or len(after) > context
    middle = data[start:end].decode("utf-8", "replace")
    shown = " ".join((shown_before + middle + after[:context]).split())
    return ("…" if more_left else "") + shown + ("…" if more_right else "")


def _searched(value: object) -> str:
    """A value that is not text, as the text searched: a number as Python spells it, TEXT
    that is not UTF-8 with each byte that is not as U+FFFD (the snippet shows it so)."""
    if isinstance(value, RawText):
        return value.text()
    return str(value)


def _cell_bytes(value: object) -> bytes | None:
    """A cell's text as UTF-8 bytes to match; None for NULL and BLOB, which are not searched."""
    if not isinstance(value, str):
        if value is None or isinstance(value, bytes):
            return None
        value = _searched(value)
    return value.encode("utf-8", "surrogatepass")


def _checked_limit(request: SearchRequest, max_rows: int) -> int:
    """The number of matches to show; refuses a bad `limit` or `context_chars`."""
    limit = request.limit
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise InvalidArgument(f"limit must be a whole number from 1 to {max_rows}")
    context = request.context_chars
    if (
        not isinstance(context, int)
        or isinstance(context, bool)
        or not 0 <= context <= MAX_CONTEXT_CHARS
    ):
        raise InvalidArgument(f"context_chars must be from 0 to {MAX_CONTEXT_CHARS}")
    return min(limit, max_rows)  # as read_query: above --max-rows, lowered to it


def _select_sql(request: SearchRequest, table: str, columns: list[str], key: str) -> str:
    """The SELECT of the key and the searched columns, with the agent's condition if any
    (`table` quoted, with its schema when it is not main)."""
    selected = ", ".join([key, *(quote_identifier(c) for c in columns)])
    sql = f"SELECT {selected} FROM {table}"
    if request.where is not None:
        if not isinstance(request.where, str) or not request.where.strip():
            raise InvalidArgument("where must be an SQL condition, e.g. \"status = 'open'\"")
        # the agent's condition runs as agent SQL: read policy, one statement, read-only
        sql += f" WHERE (\n{check_condition(request.where)}\n)"
    return sql


@dataclass(frozen=True)
class _Columns:
    """A table's columns as search_text sees them (`hidden`: folded names of hidden ones)."""

    table: str  # as the agent names it (`sqlgate.query_log` for a server table)
    available: list[str]
    hidden: set[str]
    has_rowid: bool
    primary_key: list[str]
    origin: str
    source: str  # quoted for SQL, with its schema when it is not main

    @property
    def lookup(self) -> dict[str, str]:
        return {fold_name(name): name for name in self.available}

    @property
    def visible(self) -> list[str]:
        return [c for c in self.available if fold_name(c) not in self.hidden]


def _refuse_hidden(request: SearchRequest, cols: _Columns) -> None:
    """Refuse a search that names a hidden column, as key or as a column to search."""
    named = [request.key_column] if isinstance(request.key_column, str) else []
    if isinstance(request.columns, (list, tuple)):
        named += [c for c in request.columns if isinstance(c, str)]
    lookup = cols.lookup
    refused = [lookup[fold_name(c)] for c in named if fold_name(c) in cols.hidden]
    if refused:
        shown = [inline(c) for c in cols.visible]
        raise PolicyDenied(
            f"refused: {', '.join(map(inline, dict.fromkeys(refused)))} of "
            f"{inline(cols.table)} is hidden by {cols.origin}: no tool will search or show "
            f"it; search the other columns ({', '.join(shown) or 'none'})"
        )


def _chosen_columns(request: SearchRequest, cols: _Columns) -> list[str]:
    """The columns to search: the ones named, or every visible one."""
    if request.columns is None:
        chosen = cols.visible
    else:
        if isinstance(request.columns, str) or not all(isinstance(c, str) for c in request.columns):
            raise InvalidArgument("columns must be a list of column names")
        lookup = cols.lookup
        missing = [c for c in request.columns if fold_name(c) not in lookup]
        if missing:
            raise InvalidArgument(
                f"no column {', '.join(map(repr, missing))} in {inline(cols.table)}; it has: "
                f"{', '.join(map(inline, cols.visible))}"
            )
        chosen = [lookup[fold_name(c)] for c in request.columns]
    if not chosen:
        raise InvalidArgument(f"{inline(cols.table)} has no columns to search")
    return chosen


def _key(request: SearchRequest, cols: _Columns, chosen: list[str]) -> str:
    """The key expression each match is shown with, quoted: the rowid, the first column of
    the primary key, or the first searched column; `key_column` when given."""
    # `rowid` stays bare: quoted, SQLite would read it as a string where there is no rowid
    if request.key_column is None:
        if cols.has_rowid:
            return "rowid"
        return quote_identifier((cols.primary_key or chosen)[0])
    if not isinstance(request.key_column, str):
        raise InvalidArgument("key_column must be a column name")
    lookup = cols.lookup
    if fold_name(request.key_column) in lookup:
        return quote_identifier(lookup[fold_name(request.key_column)])
    if fold_name(request.key_column) == "rowid" and cols.has_rowid:
        return "rowid"
    raise InvalidArgument(
        f"key_column {request.key_column!r} is not a column of {inline(cols.table)}; "
        f"it has: {', '.join(map(inline, cols.visible))}"
    )


class _Scan:
    """One scan's result: the CSV lines, the counts, and why it stopped early, if it did.

    `consume` reads rows until the result is full: at `limit` matches, or when the next
    match would not fit the byte cap. Nothing more could be shown, so the rest of the table
    is not read just to count (the totals then say so). The deadline stops it too, between
    rows and between windows of a cell.
    """

    def __init__(
        self, columns: list[str], matcher: Matcher, limit: int, context: int, caps: ResultCaps
    ) -> None:
        self.columns = columns
        self.matcher = matcher
        self.limit = limit
        self.context = context
        self.caps = caps
        self.header = csv_line(("key", "column", "snippet"), caps.cell_chars)
        # how rows are read: as apsw reads them, or again with TEXT as bytes (raw_rows)
        self.read: Callable[[apsw.Cursor], Iterator[Sequence[Any]]] = iter
        self.reset()

    def reset(self) -> None:
        """Back to no row scanned, to scan again."""
        self.matches = self.rows = self.scanned = 0
        self.bytes = len(self.header.encode())
        self.lines = [self.header]
        self.stopped: list[str] = []  # why the scan stopped before the last row, if it did

    def out_of_time(self, where: str) -> None:
        seconds = self.matcher.deadline.seconds
        self.stopped.append(
            f"the {seconds:g} s time limit (--query-timeout) {where}; more may match"
        )

    def consume(self, cursor: apsw.Cursor) -> None:
        for row in self.read(cursor):
            self.scanned += 1
            matched, full = self._row(row)
            self.rows += int(matched)
            if full:
                return
            if self.matcher.deadline.expired():
                self.out_of_time(f"after {counted(self.scanned, 'row')} scanned")
                return

    def _row(self, row: Sequence[Any]) -> tuple[bool, bool]:
        """Whether the row matched, and whether the scan stops at it."""
        matched = False
        window, search = self.matcher.window, self.matcher.regex.search
        for column, value in zip(self.columns, row[1:], strict=False):
            data = _cell_bytes(value)
            if data is None or (len(data) <= window and search(data) is None):
                continue  # one RE2 call settles a short cell without a match
            try:
                for start, end in self.matcher.spans(data):
                    snippet = _snippet(data, start, end, self.context)
                    line = csv_line((row[0], column, snippet), self.caps.cell_chars)
                    if self.bytes + len(line.encode()) > self.caps.bytes:
                        self.stopped.append(
                            f"the {self.caps.bytes}-byte result cap after "
                            f"{counted(self.scanned, 'row')} scanned; the next match did not fit"
                        )
                        return matched, True
                    matched = True
                    self.matches += 1
                    self.lines.append(line)
                    self.bytes += len(line.encode())
                    if self.matches >= self.limit:
                        self.stopped.append(
                            f"limit {self.limit} after {counted(self.scanned, 'row')} "
                            "scanned; more may match"
                        )
                        return True, True
            except QueryTimeout:
                self.out_of_time(f"partway through row {self.scanned}")
                return matched, True
        return matched, False

    def outcome(self) -> Outcome:
        shown = len(self.lines) - 1
        if self.stopped:
            trailer = f"# {counted(shown, 'match', 'matches')} shown (stopped at {self.stopped[0]})"
        else:
            trailer = (
                f"# {counted(shown, 'match', 'matches')} shown; "
                f"{counted(self.matches, 'match', 'matches')} in "
                f"{counted(self.rows, 'row')} of {self.scanned} scanned"
            )
        detail = {"matches": self.matches, "scanned": self.scanned, "complete": not self.stopped}
        return Outcome(csv_reply(self.lines, trailer), shown, detail)


class TextSearch:
    def __init__(self, tiers: SqlTiers) -> None:
        self.tiers = tiers
        self.db = tiers.db

    def _columns(self, conn: apsw.Connection, obj: Relation) -> list[str]:
        return [
            str(row[0])
            for row in conn.execute(
                "SELECT name FROM pragma_table_info(?, ?) ORDER BY cid", (obj.name, obj.schema)
            )
        ]

    def _has_rowid(self, conn: apsw.Connection, obj: Relation) -> bool:
        """Tables have a rowid unless WITHOUT ROWID; fts5 and rtree tables have one too."""
        if obj.type == "view":
            return False
        rows = conn.execute(
            "SELECT wr FROM pragma_table_list WHERE schema = ? AND name = ?",
            (obj.schema, obj.name),
        )
        return not any(wr for (wr,) in rows)

    def _primary_key(self, conn: apsw.Connection, obj: Relation) -> list[str]:
        rows = conn.execute(
            "SELECT name FROM pragma_table_info(?, ?) WHERE pk > 0 ORDER BY pk",
            (obj.name, obj.schema),
        )
        return [str(name) for (name,) in rows]

    def _table_columns(self, name: str) -> _Columns:
        """The named table's columns, which are hidden, its rowid and its primary key."""
        with self.db.reading() as conn:
            obj = find_object(conn, name, self.db.protected)
            available = self._columns(conn, obj)
            has_rowid = self._has_rowid(conn, obj)
            primary_key = self._primary_key(conn, obj)
            live = self.db.live_rules(conn)
        hidden = {fold_name(c) for c in available if live.is_hidden(obj.name, c)}
        visible_key = [c for c in primary_key if fold_name(c) not in hidden]
        return _Columns(
            obj.shown, available, hidden, has_rowid, visible_key, live.origin, obj.quoted
        )

    def _resolve(self, request: SearchRequest) -> tuple[str, list[str], str]:
        """(table, columns to search, key expression already quoted)."""
        cols = self._table_columns(request.table)
        _refuse_hidden(request, cols)
        chosen = _chosen_columns(request, cols)
        return cols.source, chosen, _key(request, cols, chosen)

    def search(self, request: SearchRequest, bindings: Bindings, control: CallControl) -> Outcome:
        caps = self.tiers.caps
        limit = _checked_limit(request, caps.rows)
        regex = _compile(request)
        table, columns, key = self._resolve(request)
        sql = _select_sql(request, table, columns, key)
        deadline = Deadline(self.tiers.settings.query_timeout, self.tiers.clock)
        scan = _Scan(columns, Matcher(regex, deadline), limit, request.context_chars, caps)
        with self.db.reading() as conn:
            ctx = RunContext(
                conn, Tier.READ, self.db.protected, deadline, control,
                rules=self.db.live_rules(conn),
            )  # fmt: skip
            if request.where is not None:
                ctx.sent = ("where", request.where)
            try:
                try:
                    run_statement(ctx, sql, bindings, scan.consume)
                except UnreadableText:  # TEXT that is not UTF-8: the scan again, such as bytes
                    scan.reset()
                    codec = text_codec(conn)
                    scan.read = lambda cursor: raw_rows(cursor, codec)
                    again = RunContext(
                        conn, Tier.READ, self.db.protected, deadline, control, sent=ctx.sent,
                        rules=ctx.rules,
                    )  # fmt: skip
                    raw = raw_select(ctx.statement, 1 + len(columns))
                    run_statement(again, raw, bindings, scan.consume)
            except QueryTimeout:
                if control.cancelled or not scan.scanned:
                    raise  # nothing to show: the statement itself is too slow, as in read_query
                # the deadline stopped SQLite while it looked for the next row
                scan.out_of_time(f"after {counted(scan.scanned, 'row')} scanned")
        return scan.outcome()
