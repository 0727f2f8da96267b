"""Which tool takes a statement, decided before SQLite runs it (over `engine.statements.preflight`).

`check_tier` refuses early, naming a tool that accepts the statement or saying that no tool
will; the authorizer still has the last word on every object a statement touches. The kinds
each tier takes, the statements never allowed and the advice texts live here.
"""

from __future__ import annotations

import functools
import re

from sqlgate.engine.names import fold_name
from sqlgate.engine.schema import protected_names
from sqlgate.engine.statements.auto_ids import auto_id_refusal
from sqlgate.engine.statements.policy import (
    SERVER_SCHEMA,
    Operation,
    Tier,
    decide,
    in_main,
    server_object_message,
)
from sqlgate.engine.statements.preflight import DML_KINDS, Statement
from sqlgate.errors import InvalidArgument, PolicyDenied

__all__ = [
    "DESTRUCTIVE_KINDS",
    "NEVER_KINDS",
    "READ_KINDS",
    "TEMP_INSTEAD",
    "WRITE_KINDS",
    "check_tier",
    "destructive_keeps",
    "home_tool",
    "unfiltered_update_message",
    "validate_new_name",
]


# kinds each tier accepts at preflight; the authorizer checks every object they touch
READ_KINDS = frozenset({"SELECT", "VALUES", "EXPLAIN", "PRAGMA", "WITH"})
# REINDEX rebuilds indexes from their tables and changes no row (docs/decisions.md)
WRITE_KINDS = frozenset(
    {"INSERT", "REPLACE", "UPDATE", "CREATE TABLE", "CREATE INDEX", "CREATE VIRTUAL TABLE",
     "ANALYZE", "REINDEX"}
)  # fmt: skip
DESTRUCTIVE_KINDS = WRITE_KINDS | {
    "DELETE", "DROP TABLE", "DROP INDEX", "DROP VIEW", "DROP TRIGGER", "ALTER TABLE",
    "CREATE TRIGGER",
}  # fmt: skip
_ONE_TRANSACTION = "no tool will run it: each call is its own transaction"
NEVER_KINDS = {
    "ATTACH": "ATTACH is never allowed, so no tool will run it: sqlgate serves one database file",
    "DETACH": "DETACH is never allowed: no tool will run it (nothing is ever attached)",
    "VACUUM": "VACUUM is never allowed, so no tool will run it (VACUUM INTO writes files; the "
    "server maintains the file)",
    "BEGIN": f"transaction control is never allowed: {_ONE_TRANSACTION}",
    "COMMIT": f"transaction control is never allowed: {_ONE_TRANSACTION}",
    "ROLLBACK": f"transaction control is never allowed: {_ONE_TRANSACTION}",
    "SAVEPOINT": f"SAVEPOINT is never allowed: {_ONE_TRANSACTION}",
    "RELEASE": f"RELEASE is never allowed: {_ONE_TRANSACTION}",
}
# what to use instead of a TEMP object of each type, in the tier that takes it
TEMP_INSTEAD = {
    "TABLE": "create a regular table with write_query (drop it with destructive_query when "
    "done), or compute the rows in a WITH clause of read_query",
    "VIEW": "save the SELECT as a view with create_view (it keeps a description for the next "
    "session), or run it in read_query",
    "INDEX": "create a regular index with write_query",
    "TRIGGER": "create a regular trigger with destructive_query",
}


def destructive_keeps(undo: str) -> str:
    """What destructive_query keeps to undo a row change, under `--undo` (rows or file)."""
    if undo == "file":
        return "destructive_query (it takes a whole-file snapshot first: --undo file)"
    return "destructive_query (it keeps the changed rows for undo)"


def unfiltered_update_message(target: str | None, undo: str = "rows") -> str:
    """The refusal of an UPDATE whose WHERE is missing or names no column of its table."""
    table = target or "its table"
    return (
        f"UPDATE without a WHERE on a column of {table} rewrites every row: use "
        f"{destructive_keeps(undo)}, or add a WHERE that names a column of {table} "
        "(describe_table lists them)"
    )


def home_tool(statement: Statement) -> str:
    """The tool that takes `statement`, by its kind (and its WHERE, for a row change)."""
    kind = statement.kind
    if kind in READ_KINDS:
        return "read_query"
    if kind == "CREATE VIEW":
        return "create_view"
    if kind in WRITE_KINDS and statement.has_where and not statement.fts_delete:
        return "write_query"
    return "destructive_query"


@functools.cache
def _server_names() -> frozenset[str]:
    """The schema registry's names: fixed for the life of the process, so built once."""
    return protected_names()


def check_tier(
    statement: Statement, tier: Tier, protected: frozenset[str] | None = None, undo: str = "rows"
) -> None:
    """Refuse early, naming the right tool, a statement this tier never takes.

    `protected` (folded server object names, `fold_name`) defaults to the schema's registry;
    `undo` is the --undo setting, which the advice to use destructive_query describes.
    """
    server_names = _server_names() if protected is None else protected
    _refuse_a_view_of_the_records(statement, tier)
    _refuse_in_any_tier(statement, server_names)
    if statement.kind == "UNKNOWN":
        if tier is Tier.WRITE:
            # its WHERE and FTS5 checks cannot be made on text preflight cannot read
            raise InvalidArgument(
                "write_query cannot read this statement: it does not start with an SQL verb, "
                "or a string, quoted name or comment is not closed; check the SQL"
            )
        return  # let SQLite report the syntax error in its own words
    _refuse_in_this_tier(statement, tier, server_names, undo)
    if statement.auto_id is not None:  # a key SQLite would leave NULL: the fix, never run
        raise InvalidArgument(auto_id_refusal(statement.auto_id))


def _refuse_in_any_tier(statement: Statement, server_names: frozenset[str]) -> None:
    """Refuse what no tier takes: a NUL, EXPLAIN of a change, the never-allowed kinds, TEMP
    objects, and statements that write a server object."""
    kind = statement.kind
    if statement.has_nul:
        raise InvalidArgument("the query contains a NUL character; remove it")
    explained = statement.explained
    # the read policy refuses what an EXPLAIN of a change prepares, and no other tool
    # takes EXPLAIN (an EXPLAIN of VACUUM prepares nothing the read policy refuses)
    if explained in DESTRUCTIVE_KINDS | {"CREATE VIEW"}:
        raise PolicyDenied(
            f"EXPLAIN of {explained} is not allowed: no tool will run it (read_query explains "
            "only queries, and the other tools take no EXPLAIN); EXPLAIN a SELECT in read_query"
        )
    if kind in NEVER_KINDS:
        raise PolicyDenied(NEVER_KINDS[kind])
    if " TEMP " in f" {kind} ":
        what = kind.rsplit(" ", 1)[-1]
        instead = TEMP_INSTEAD.get(what) if kind.startswith("CREATE") else None
        if kind.startswith("DROP"):
            instead = f"there is no TEMP {what.lower()} to drop: sqlgate never creates one"
        raise PolicyDenied(
            f"{kind} is not allowed: TEMP objects vanish and escape the audit, so no tool will "
            "make one" + (f"; {instead}" if instead else "")
        )
    for name in statement.writes:
        if fold_name(name) in server_names:
            raise PolicyDenied(
                f"{name} is a sqlgate server object: no object may take its name and no "
                "trigger may write it, so no tool will run this; agents may only read it "
                "(read_query)"
            )


def view_of_records_message(name: str) -> str:
    """The refusal of a view or trigger that would use an object of sqlgate's records."""
    shown = f"{SERVER_SCHEMA}.{name}"
    return (
        f"a view or trigger can neither use nor live in sqlgate's records ({shown}): SQLite "
        "keeps each one to the tables of its own database, and the records are read-only, so "
        f"no tool will make one; query {shown} directly with read_query"
    )


def _refuse_a_view_of_the_records(statement: Statement, tier: Tier) -> None:
    """Refuse a CREATE, DROP or ALTER of an object in sqlgate's records (with IF [NOT]
    EXISTS SQLite would answer one that is or is not there without asking the authorizer),
    and a view or trigger that names `sqlgate.x`, which SQLite refuses in its own words
    ("cannot reference objects in database sqlgate"): say what works instead."""
    if fold_name(statement.object_schema or "") == SERVER_SCHEMA:
        name = statement.target or next(iter(statement.writes), "")
        raise PolicyDenied(server_object_message(f"{SERVER_SCHEMA}.{name}"))
    makes_one = tier is Tier.VIEW or statement.kind in ("CREATE VIEW", "CREATE TRIGGER")
    if makes_one and statement.server_object is not None:
        raise PolicyDenied(view_of_records_message(statement.server_object))


def _refuse_in_this_tier(
    statement: Statement, tier: Tier, server_names: frozenset[str], undo: str
) -> None:
    """Refuse, naming the tool that takes it, a statement (of a known kind) this tier does not."""
    kind = statement.kind
    allowed = {
        Tier.READ: READ_KINDS,
        Tier.WRITE: WRITE_KINDS,
        Tier.DESTRUCTIVE: DESTRUCTIVE_KINDS,
        Tier.VIEW: READ_KINDS - {"PRAGMA", "EXPLAIN"},
    }[tier]
    if tier is Tier.WRITE and kind == "UPDATE" and not statement.has_where:
        raise PolicyDenied(unfiltered_update_message(statement.target, undo))
    if tier is Tier.WRITE and statement.fts_delete:
        raise PolicyDenied(
            "the FTS5 'delete-all'/'delete' command removes rows: use destructive_query"
        )
    if kind == "REINDEX" and statement.target is None and tier is not Tier.READ:
        raise PolicyDenied(
            "REINDEX without a name rebuilds every index, sqlgate's own among them, which only "
            "the server may touch, so no tool will run it: name a table or index of yours "
            "(REINDEX items)"
        )
    if kind == "CREATE VIEW" and tier is Tier.VIEW:
        raise InvalidArgument(
            "select_sql is the SELECT alone: leave out CREATE VIEW name AS (the name goes in name)"
        )
    if kind not in allowed:
        _refuse_in_every_tier(statement, server_names)
        home = home_tool(statement)
        if home == "create_view":
            home = "create_view (the view's name in name, the SELECT alone in select_sql)"
        raise PolicyDenied(f"{kind} is not allowed in {tier.value}; use {home}")


def _refuse_in_every_tier(statement: Statement, server_names: frozenset[str]) -> None:
    """Refuse, saying so, a statement that the tool it belongs to would refuse as well, so
    the advice never sends the agent to a second refusal."""
    kind = statement.kind
    acts = kind in DML_KINDS or kind.startswith("DROP ") or kind in ("ALTER TABLE", "REINDEX")
    # what it writes, drops, alters or rebuilds, or the table it indexes or triggers on
    for target in (statement.target if acts else None, statement.on_table):
        if target is not None and fold_name(target) in server_names:
            raise PolicyDenied(server_object_message(target))
    if statement.pragma is not None:
        name, value = statement.pragma
        verdict = decide(Tier.READ, Operation("PRAGMA", name, value), in_main(server_names))
        if not verdict.allowed:
            raise PolicyDenied(verdict.reason)


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


def validate_new_name(name: str, what: str, protected: frozenset[str]) -> str:
    """A name for a new object: plain letters, digits and `_`; not SQLite's, not the server's."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise InvalidArgument(
            f"{what} name {name!r} is invalid: use letters, digits and _ (not starting with a "
            "digit), at most 128 characters"
        )
    if fold_name(name).startswith("sqlite_"):
        raise InvalidArgument(f"{what} name {name!r} is reserved by SQLite (sqlite_ prefix)")
    if fold_name(name) in protected:
        raise PolicyDenied(f"{name} is a sqlgate server object; choose another name")
    return name
