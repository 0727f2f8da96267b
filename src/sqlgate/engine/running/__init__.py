"""Running statements for the tools and shaping their answers.

The package's front door: what other rooms may import (`engine.front_door`). Its
modules are private to it.

    execute          Running agent SQL: one statement, prepared uncached under the tier's
                     authorizer.
    runner           One statement of a tier on a connection: read for its tier, its context, its
                     rows, its line.
    queries          The three SQL tiers: read, write and destructive statements from start to
                     result.
    writes           The write path with its undo data (issue 19): one capture for every tool that
                     changes rows, and write_query's statements, each kept with what undoes it in
                     its own transaction.
    destructive      destructive_query: a statement checked on a dry prepare, then run with what
                     undoes it.
    if_exists        Statements that change nothing: a `DROP <kind> IF EXISTS` of what the main
                     schema does not hold, a `CREATE <kind> IF NOT EXISTS` of a name it holds.
    guard_rows       Rows of guarded tables a statement did change, judged after it ran, before its
                     COMMIT.
    where_check      write_query's check that an UPDATE's WHERE can filter: the facts, then
                     `engine.statements.where`.
    textsearch       search_text: SQL narrows the rows (under the read policy), RE2 finds the
                     matches.
    views            Saved views: a SELECT kept under a name, with its description, as a reusable
                     skill.
    outcome          What a finished call hands back: the text the agent reads and the audit row's
                     facts, and the notes the write tiers add to its first line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlgate.engine.front_door import front_door

if TYPE_CHECKING:
    from sqlgate.engine.running.execute import Bindings, busy_error, normalize_params
    from sqlgate.engine.running.outcome import Outcome
    from sqlgate.engine.running.queries import SqlTiers
    from sqlgate.engine.running.textsearch import SearchRequest, TextSearch
    from sqlgate.engine.running.views import ViewSaver

__all__ = [
    "Bindings",
    "Outcome",
    "SearchRequest",
    "SqlTiers",
    "TextSearch",
    "ViewSaver",
    "busy_error",
    "normalize_params",
]

BEHIND_THE_DOOR = {
    "execute": ("Bindings", "busy_error", "normalize_params"),
    "outcome": ("Outcome",),
    "queries": ("SqlTiers",),
    "textsearch": ("SearchRequest", "TextSearch"),
    "views": ("ViewSaver",),
}

if not TYPE_CHECKING:
    __getattr__ = front_door(__name__, BEHIND_THE_DOOR)
