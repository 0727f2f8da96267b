"""The dialect corpus of issue 34 and its runner: statements agents write in PostgreSQL, MySQL,
SQL Server and DuckDB, each with the SQLite statement that gives the intended result, run
through a `Service` on a small app database and scored.

An item is sent as written with its tool. It succeeds on the first try when the answer holds
the expected rows (a read's result rows; a write's database state after it) and no note. When
the answer offers a statement (`Send instead: ...` in an error's text, or a trailer line
`# note: ... send instead: ...` on a read), the runner follows it once with the tool it names
(`send instead, as destructive_query: ...`) and compares again. Rows compare by value (2 and
2.0 alike), in order when the expected statement ends in an ORDER BY, else as a multiset;
an item with `"compare": "first_column"` (a command such as `SHOW TABLES` or `DESCRIBE t`)
compares the names of its listing only. sqlglot's plain transpile of the
same text, run with the same tool, is the anchor. Items marked `no_rewrite` must get no offer
at all: any is noise.

Reads share one `Service` on one copy of the database (a read changes nothing); every call of
a write tool gets a fresh copy of its own and a `Service` on it. Pure library code: the tests
(tests/engine/test_dialect_corpus.py) and the bench (bench/dialects_bench.py) call it.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import re
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw

from sqlgate.config import Settings
from sqlgate.errors import SqlgateError
from sqlgate.service import Service

__all__ = [
    "COMPARES",
    "CORPUS",
    "DIALECTS",
    "TOOLS",
    "Answer",
    "Corpus",
    "Item",
    "Outcome",
    "Rewrite",
    "Score",
    "Workspace",
    "first_column",
    "is_ordered",
    "load",
    "normal",
    "result_rows",
    "rewrite_in_error",
    "rewrite_in_note",
    "run",
    "same_rows",
    "scores",
]

CORPUS = Path(__file__).resolve().parent / "data" / "dialect_corpus.json"
DIALECTS = ("postgres", "mysql", "tsql", "duckdb", "sqlite")
TOOLS = ("read_query", "write_query", "destructive_query")
SEND_INSTEAD = re.compile(r"[Ss]end instead(?:, as (\w+))?: ")
NOTE = "# note: "
TRAILER = "# "
COMPARES = ("rows", "first_column")
MUST_NOT = "must-not"  # the score row of the items that must get no rewrite
Rows = tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Item:
    """One statement of the corpus (tests/data/dialect_corpus.json): `sql` in `dialect`, sent
    with `tool`; `expect` the SQLite statement giving the intended result (sent with
    `expect_tool`, the same tool unless named: TRUNCATE's DELETE needs destructive_query), or
    None on a `no_rewrite` item, which must get no rewrite nor note (`fails` when it fails for
    a reason no rewrite fixes: a missing name, a policy refusal). `trap`: runs in SQLite as
    sent and gives another result; `valid_as_is`: already gives the expected one; `empty_ok`:
    an empty expected result is meant; `compare`: "rows", or "first_column" for a command's
    listing."""

    id: str
    dialect: str
    source: str
    tool: str
    sql: str
    expect: str | None
    expect_tool: str
    no_rewrite: bool = False
    trap: bool = False
    valid_as_is: bool = False
    empty_ok: bool = False
    fails: bool = False
    compare: str = "rows"  # or "first_column": a command's listing, its names only

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Item:
        return cls(
            id=raw["id"],
            dialect=raw["dialect"],
            source=raw["source"],
            tool=raw["tool"],
            sql=raw["sql"],
            expect=raw.get("expect"),
            expect_tool=raw.get("expect_tool", raw["tool"]),
            no_rewrite=bool(raw.get("no_rewrite", False)),
            trap=bool(raw.get("trap", False)),
            valid_as_is=bool(raw.get("valid_as_is", False)),
            empty_ok=bool(raw.get("empty_ok", False)),
            fails=bool(raw.get("fails", False)),
            compare=raw.get("compare", "rows"),
        )


@dataclass(frozen=True)
class Corpus:
    schema: tuple[str, ...]
    items: tuple[Item, ...]


def load(path: Path = CORPUS) -> Corpus:
    raw = json.loads(path.read_text(encoding="utf-8"))
    return Corpus(tuple(raw["schema"]), tuple(Item.from_json(i) for i in raw["items"]))


# -- reading answers ---------------------------------------------------------------------
@dataclass(frozen=True)
class Rewrite:
    """A statement an answer offers, and the tool it is for."""

    tool: str
    sql: str


@dataclass(frozen=True)
class Answer:
    """What one call gave: its rows (a read's result rows, a write's database state after
    it) or its error text, and the statement the answer offers, if any."""

    rows: Rows | None
    error: str | None
    rewrite: Rewrite | None


def rewrite_in_error(text: str, tool: str) -> Rewrite | None:
    """The statement after the first `send instead[, as TOOL]: ` of an error's text, to its
    end; for TOOL when named, else for `tool` (the one that answered)."""
    found = SEND_INSTEAD.search(text)
    if found is None:
        return None
    sql = text[found.end() :].strip()
    return Rewrite(found.group(1) or tool, sql) if sql else None


def rewrite_in_note(text: str, tool: str) -> Rewrite | None:
    """The statement of a success's trailer line `# note: ... send instead: <statement>`."""
    for line in text.splitlines():
        if line.startswith(NOTE):
            rewrite = rewrite_in_error(line, tool)
            if rewrite is not None:
                return rewrite
    return None


def normal(cell: object) -> str:
    """A value as the comparison sees it: NULL and '' alike (the CSV answer writes both
    empty), numbers by value (2, 2.0 and 2.00 alike, rounded to 9 digits), text as it is."""
    if cell is None:
        return ""
    if isinstance(cell, bytes):
        return cell.hex()
    text = str(cell)
    try:
        number = float(text)
    except ValueError:
        return text
    if number != number or number in (float("inf"), float("-inf")):
        return text
    return repr(round(number, 9) + 0.0)


def result_rows(text: str) -> Rows:
    """The rows of a read's CSV answer: no header, no `# ` trailer line, values normalised."""
    body = "\n".join(line for line in text.splitlines() if not line.startswith(TRAILER))
    records = list(csv.reader(io.StringIO(body)))
    # a blank line is a row of one NULL or empty value (csv reads it as no cell at all)
    return tuple(tuple(normal(cell) for cell in record or [""]) for record in records[1:])


_TOP_ORDER_BY = re.compile(r"\bORDER\s+BY\b[^()]*$", re.IGNORECASE)


def is_ordered(sql: str) -> bool:
    """Whether a read's row order is part of its result: an ORDER BY outside any
    parentheses at its end (before LIMIT/OFFSET)."""
    return _TOP_ORDER_BY.search(sql.strip().rstrip(";")) is not None


def first_column(rows: Rows) -> Rows:
    """What a command's listing is compared by (`SHOW TABLES`, `DESCRIBE t`, `\\d t`): the
    names in its first column, whichever other columns the statement shows beside them."""
    return tuple(row[:1] for row in rows)


def same_rows(got: Rows | None, want: Rows | None, ordered: bool) -> bool:
    if got is None or want is None:
        return False
    return got == want if ordered else sorted(got) == sorted(want)


# -- running -----------------------------------------------------------------------------
def dump(path: Path) -> Rows:
    """The state of the database at `path`: per table and view its name and columns (name,
    primary-key rank), then each table's rows in order."""
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        out: list[tuple[str, ...]] = []
        objects = conn.execute(
            "SELECT type, name FROM sqlite_schema WHERE type IN ('table', 'view')"
            " AND name NOT LIKE 'sqlite_%' ORDER BY name"
        ).fetchall()
        for row in objects:
            kind, name = str(row[0]), str(row[1])
            columns = conn.execute("SELECT name, pk FROM pragma_table_info(?)", (name,))
            out.append((kind, name, *(f"{c}:{pk}" for c, pk in columns)))
            if kind == "table":
                quoted = '"' + name.replace('"', '""') + '"'
                width = len(out[-1]) - 2
                order = ", ".join(str(i + 1) for i in range(width))
                rows = conn.execute(f"SELECT * FROM {quoted} ORDER BY {order}").fetchall()
                out += [tuple(normal(v) for v in row) for row in rows]
        return tuple(out)
    finally:
        conn.close()


class Workspace:
    """A folder holding the fixture database, one `Service` for reads on a copy of it, and
    fresh copies for each call of a write tool (records kept in the folder: a project)."""

    def __init__(self, schema: Sequence[str], folder: Path | None = None) -> None:
        self._made = folder is None
        if folder is None:
            folder = Path(tempfile.mkdtemp(prefix="sqlgate-dialects-"))
        self.folder = folder
        (self.folder / ".git").mkdir(exist_ok=True)  # a project: records in folder/.sqlgate
        self.fixture = self.folder / "fixture.db"
        conn = apsw.Connection(str(self.fixture))
        with conn:
            for statement in schema:
                conn.execute(statement)
        conn.close()
        self.initial = dump(self.fixture)
        shutil.copyfile(self.fixture, self.folder / "reads.db")
        self.reads = Service.open(Settings(db=self.folder / "reads.db"), session="bench")
        self._copies = 0

    def close(self) -> None:
        self.reads.close()
        if self._made:
            shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def call(self, tool: str, sql: str) -> Answer:
        """Send `sql` with `tool`: a read on the shared database, a write on a fresh copy."""
        if tool == "read_query":
            try:
                text = self.reads.read_query(sql)
            except SqlgateError as exc:
                return Answer(None, str(exc), rewrite_in_error(str(exc), tool))
            return Answer(result_rows(text), None, rewrite_in_note(text, tool))
        return self._write(tool, sql)

    def _write(self, tool: str, sql: str) -> Answer:
        self._copies += 1
        path = self.folder / f"write-{self._copies}.db"
        shutil.copyfile(self.fixture, path)
        service = Service.open(Settings(db=path), session="bench")
        try:
            if tool == "write_query":
                text = service.write_query(sql)
            elif tool == "destructive_query":
                text = service.destructive_query(sql, "dialect corpus")
            else:
                raise ValueError(f"unknown tool {tool!r}")
        except SqlgateError as exc:
            return Answer(None, str(exc), rewrite_in_error(str(exc), tool))
        finally:
            service.close()
        return Answer(dump(path), None, rewrite_in_note(text, tool))


def transpiled(item: Item) -> str | None:
    """sqlglot's plain transpile of the item to SQLite (None when sqlglot refuses it)."""
    import sqlglot

    logging.getLogger("sqlglot").setLevel(logging.ERROR)  # its warnings of what it skips
    read = None if item.dialect == "sqlite" else item.dialect
    try:
        return sqlglot.transpile(item.sql, read=read, write="sqlite")[0]
    except (sqlglot.errors.SqlglotError, IndexError):
        return None


# -- scoring -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Outcome:
    """What the corpus measures of one item."""

    item: Item
    first: Answer
    expected: Answer | None  # None for a must-not item (expect null)
    followed: Answer | None  # the answer to the offered statement
    anchor: Answer | None  # sqlglot's transpile run with the item's tool

    def _matches(self, answer: Answer | None) -> bool:
        if answer is None or self.expected is None:
            return False
        ordered = self.item.tool != "read_query" or is_ordered(self.item.expect or "")
        got, want = answer.rows, self.expected.rows
        if self.item.compare == "first_column" and got is not None and want is not None:
            got, want = first_column(got), first_column(want)
        return same_rows(got, want, ordered)

    @property
    def offered(self) -> bool:
        return self.first.rewrite is not None

    @property
    def first_try(self) -> bool:
        return not self.offered and self._matches(self.first)

    @property
    def raw_match(self) -> bool:
        """The statement as sent gives the expected rows (note or not)."""
        return self._matches(self.first)

    @property
    def after_rewrite(self) -> bool:
        return not self.first_try and self.offered and self._matches(self.followed)

    @property
    def two_try(self) -> bool:
        return self.first_try or self.after_rewrite

    @property
    def wrong_rewrite(self) -> bool:
        """A statement offered that runs but gives another result."""
        followed = self.followed
        ran = followed is not None and followed.error is None
        return self.offered and ran and not self._matches(followed)

    @property
    def broken_rewrite(self) -> bool:
        followed = self.followed
        return self.offered and (followed is None or followed.error is not None)

    @property
    def silent(self) -> bool:
        """Ran, no note, another result than intended."""
        return self.first.error is None and not self.offered and not self._matches(self.first)

    @property
    def anchor_ok(self) -> bool:
        return self._matches(self.anchor)


def outcome(space: Workspace, item: Item, anchor: bool = True) -> Outcome:
    first = space.call(item.tool, item.sql)
    expected = None if item.expect is None else space.call(item.expect_tool, item.expect)
    offer = first.rewrite
    followed = None if offer is None else space.call(offer.tool, offer.sql)
    guess = transpiled(item) if anchor and item.expect is not None else None
    found = None
    if guess is not None:
        found = space.call(item.tool, guess)
    elif anchor and item.expect is not None:
        found = Answer(None, "sqlglot could not transpile it", None)
    return Outcome(item, first, expected, followed, found)


def run(corpus: Corpus, items: Iterable[Item] | None = None, anchor: bool = True) -> list[Outcome]:
    """Every item's outcome (or those of `items`), on one workspace."""
    with Workspace(corpus.schema) as space:
        return [outcome(space, item, anchor) for item in (items or corpus.items)]


@dataclass(frozen=True)
class Score:
    """One row of the table: a dialect's items, or the must-not items (`MUST_NOT`)."""

    group: str
    items: int
    first_try: int
    after_rewrite: int
    wrong_rewrite: int
    broken_rewrite: int
    no_rewrite: int
    silent: int
    anchor: int
    noise: int

    @property
    def two_try(self) -> int:
        return self.first_try + self.after_rewrite

    def fraction(self, count: int) -> float:
        return count / self.items if self.items else 0.0


def _score(group: str, outcomes: Sequence[Outcome]) -> Score:
    return Score(
        group=group,
        items=len(outcomes),
        first_try=sum(o.first_try for o in outcomes),
        after_rewrite=sum(o.after_rewrite for o in outcomes),
        wrong_rewrite=sum(o.wrong_rewrite for o in outcomes if not o.item.no_rewrite),
        broken_rewrite=sum(o.broken_rewrite for o in outcomes if not o.item.no_rewrite),
        no_rewrite=sum(not o.first_try and not o.offered for o in outcomes),
        silent=sum(o.silent for o in outcomes if o.item.expect is not None),
        anchor=sum(o.anchor_ok for o in outcomes),
        noise=sum(o.offered for o in outcomes if o.item.no_rewrite),
    )


def scores(outcomes: Sequence[Outcome]) -> list[Score]:
    """A row per dialect (items that may get a rewrite), one for the must-not items, and
    `all` over the dialect rows."""
    measured = [o for o in outcomes if not o.item.no_rewrite]
    rows = [
        _score(dialect, [o for o in measured if o.item.dialect == dialect])
        for dialect in DIALECTS
        if any(o.item.dialect == dialect for o in measured)
    ]
    rows.append(_score("all", measured))
    rows.append(_score(MUST_NOT, [o for o in outcomes if o.item.no_rewrite]))
    return rows
