"""A statement SQLite refused, read as another dialect and written back in SQLite's.

Each dialect that may have written it (PostgreSQL, MySQL, SQL Server, DuckDB; the likeliest
first, by the signs in its text) parses it with sqlglot; the tree takes SQLite's shapes
(`shapes`) and is written as SQLite. Each distinct result is a candidate, in that order:
the caller keeps the first that SQLite prepares and the tool's policy accepts. Nothing here
runs SQL.

Only for statements SQLite refused: sqlglot's parser and dialects are imported the first
time one is read, never on the path of a statement that runs.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["DIALECT_NAMES", "Rewrite", "rewrites"]

log = logging.getLogger("sqlgate")

DIALECT_NAMES = {
    "postgres": "PostgreSQL",
    "mysql": "MySQL",
    "tsql": "SQL Server",
    "duckdb": "DuckDB",
}
_ORDER = ("postgres", "mysql", "tsql", "duckdb")
# signs of a dialect in the text, strongest first: the dialect is tried before the others
_SIGNS = (
    (
        "tsql",
        r"\bTOP\s*\(?\d|\bGETDATE\s*\(|\bDATEADD\s*\(|\bDATEDIFF\s*\(\s*\w+\s*,|"
        r"\bISNULL\s*\([^()]*,|\bNVARCHAR\b|\bLEN\s*\(|\bDATEPART\s*\(|\bN'|"
        r"\[dbo\]|\bdbo\.|\bEOMONTH\s*\(|\bCHARINDEX\s*\(|\bCROSS\s+APPLY\b|"
        r"^\s*UPDATE\s+\w+\s+SET\b.*\bFROM\b.*\bJOIN\b",
    ),
    (
        "mysql",
        r"`|\bAUTO_INCREMENT\b|\bDATE_FORMAT\s*\(|\bCURDATE\s*\(|\bDATE_(?:ADD|SUB)\s*\(|"
        r"\bSEPARATOR\b|\bDIV\b|\bIFNULL\s*\(|\bINTERVAL\s+\d+\s+[A-Z]+\b|\bREGEXP\b|"
        r"\bRLIKE\b|\bDUPLICATE\s+KEY\b|\bSTR_TO_DATE\s*\(|\bUNIX_TIMESTAMP\s*\(|"
        r"\bTIMESTAMPDIFF\s*\(|\bDAYNAME\s*\(|\bMONTHNAME\s*\(|\bJSON_UNQUOTE\s*\(|"
        r"^\s*(?:UPDATE|DELETE)\b[^;]*\bLIMIT\s+\d+\s*;?\s*$|^\s*UPDATE\s+\S+\s+\w+\s+JOIN\b",
    ),
    (
        "postgres",
        r"::|\bILIKE\b|\bSERIAL\b|\bDATE_TRUNC\s*\(|\bTO_CHAR\s*\(|"
        r"\bINTERVAL\s+'|\bARRAY\s*\[|\bgenerate_series\s*\(",
    ),
)
_SIGN_PATTERNS = tuple((dialect, re.compile(sign, re.IGNORECASE)) for dialect, sign in _SIGNS)

_DEFINITION = re.compile(r"\s*(?:CREATE|ALTER)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Rewrite:
    """A candidate: SQLite's statement, the dialect it was read as, and what differs."""

    sql: str
    dialect: str
    notes: tuple[str, ...]

    @property
    def dialect_name(self) -> str:
        return DIALECT_NAMES.get(self.dialect, self.dialect)


def dialect_order(sql: str) -> list[str]:
    """The dialects to read `sql` as, those whose signs it shows first."""
    first = [dialect for dialect, sign in _SIGN_PATTERNS if sign.search(sql)]
    return first + [dialect for dialect in _ORDER if dialect not in first]


def _spacing_folded(sql: str) -> str:
    """`sql` with its runs of white space as one space: two spellings of one statement."""
    return " ".join(sql.split())


class _Quiet(logging.Filter):
    """Drops sqlglot's warnings (a statement it reads as a bare command) while this thread
    reads a refused statement: they are not the server's to log. A filter, not a level, so
    that threads reading at once cannot leave sqlglot's logger silenced."""

    reading = threading.local()

    def filter(self, record: logging.LogRecord) -> bool:
        return not getattr(self.reading, "on", False)


_QUIET = _Quiet()
logging.getLogger("sqlglot").addFilter(_QUIET)


def _candidate(sql: str, dialect: str) -> Rewrite | None:
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    from sqlgate.engine.dialects.shapes import sqlite_shapes
    from sqlgate.engine.dialects.trees import NoRewrite

    try:
        trees = sqlglot.parse(sql, read=dialect)
    except (SqlglotError, RecursionError, ValueError):
        return None
    if len(trees) != 1 or trees[0] is None or isinstance(trees[0], exp.Command):
        return None
    notes: list[str] = []
    try:
        tree = sqlite_shapes(trees[0], dialect, notes)
        text = tree.sql(dialect="sqlite", unsupported_level=sqlglot.ErrorLevel.RAISE)
    except (NoRewrite, SqlglotError, RecursionError):
        return None
    except Exception:  # a shape meeting a tree it did not expect: no rewrite, never an error
        log.debug("no rewrite of %r as %s", sql, dialect, exc_info=True)
        return None
    if "\n" in text:
        return None  # a string holding a line break: no statement to send on one line
    return Rewrite(text, dialect, tuple(dict.fromkeys(notes)))


def rewrites(sql: str) -> Iterator[Rewrite]:
    """Each distinct SQLite statement `sql` becomes when read as a dialect, likeliest first;
    none that is `sql` itself. sqlglot's own warnings (a statement it reads as a bare
    command) stay out of the server's log."""
    from sqlgate.engine.dialects.ddl import mended_definition

    order = dialect_order(sql)
    if _DEFINITION.match(sql):  # a definition is mended word for word, never regenerated
        mended = mended_definition(sql)
        if mended is not None:
            yield Rewrite(mended[0].strip(), order[0], tuple(mended[1]))
        return
    seen = {_spacing_folded(sql)}
    for dialect in order:
        _QUIET.reading.on = True
        try:
            found = _candidate(sql, dialect)
        finally:
            _QUIET.reading.on = False
        if found is not None and _spacing_folded(found.sql) not in seen:
            seen.add(_spacing_folded(found.sql))
            yield found
