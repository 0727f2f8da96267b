"""Statements that change nothing: a `DROP <kind> IF EXISTS` of what the main schema does not
hold, a `CREATE <kind> IF NOT EXISTS` of a name it holds. Their answers say so, and name
what is there (names compared as SQLite compares them)."""

from __future__ import annotations

import apsw

from sqlgate.engine.names import fold_name
from sqlgate.engine.statements import create_if_not_exists, drop_if_exists

__all__ = ["NO_NEW", "already_there", "nothing_created", "nothing_to_drop"]

# the catalog types a DROP <kind> IF EXISTS looks for (SQLite errors on the other type of a
# table/view pair, so either counts as present)
_DROPPED_TYPES = {
    "TABLE": ("table", "view"),
    "VIEW": ("table", "view"),
    "INDEX": ("index",),
    "TRIGGER": ("trigger",),
}
NO_NEW = {"nothing_created": True}  # the audit detail of a CREATE ... IF NOT EXISTS no-op
# the catalog types whose object makes a CREATE <kind> IF NOT EXISTS a no-op (a table's
# name taken by an index, or an index's by a table, is SQLite's error instead)
_CREATED_TYPES = {
    "TABLE": ("table", "view"),
    "VIRTUAL TABLE": ("table", "view"),
    "INDEX": ("index",),
    "TRIGGER": ("trigger",),
}


def nothing_to_drop(conn: apsw.Connection, sql: str) -> str | None:
    """The answer to a `DROP <kind> IF EXISTS` of an object the main schema does not hold
    (names compared as SQLite compares them); None when there is something to drop."""
    drop = drop_if_exists(sql)
    if drop is None or (drop.schema is not None and fold_name(drop.schema) != "main"):
        return None
    if _in_main(conn, _DROPPED_TYPES[drop.kind], drop.name) is not None:
        return None
    what = drop.kind.lower()
    return (
        f"ok: nothing to drop: no {what} `{_shown(drop.name)}`; nothing was run and no "
        "snapshot was taken"
    )


def _shown(name: str) -> str:
    """`name` with what would break the answer's line written as escapes."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in name)


def already_there(conn: apsw.Connection, sql: str) -> tuple[str, str] | None:
    """(type, name) of what the main schema holds under the name a `CREATE <kind> IF NOT
    EXISTS` gives (compared as SQLite compares names); None when the CREATE would create."""
    create = create_if_not_exists(sql)
    if create is None or (create.schema is not None and fold_name(create.schema) != "main"):
        return None
    return _in_main(conn, _CREATED_TYPES[create.kind], create.name)


def _in_main(conn: apsw.Connection, types: tuple[str, ...], name: str) -> tuple[str, str] | None:
    """(type, name) of the object of one of `types` the main schema holds under `name`
    (compared as SQLite compares names), or None."""
    marks = ", ".join("?" * len(types))
    found = conn.execute(
        f"SELECT type, name FROM main.sqlite_schema WHERE type IN ({marks}) "
        "AND name = ? COLLATE NOCASE LIMIT 1",
        (*types, name),
    ).fetchone()
    return None if found is None else (str(found[0]), str(found[1]))


def nothing_created(existing: tuple[str, str], tail: str) -> str:
    """The answer to a CREATE ... IF NOT EXISTS of what `existing` (type, name) is."""
    kind, name = existing
    see = f"describe_table {_shown(name)}" if kind in ("table", "view") else "get_schema"
    return (
        f"ok: nothing created: {kind} `{_shown(name)}` already exists and IF NOT EXISTS left it "
        f"as it is, whatever its definition ({see} shows it); {tail}"
    )
