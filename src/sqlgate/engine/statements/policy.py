"""The safety policy as data: which tier may do what, to which objects.

The authorizer (`engine.rules.authorizer`) only records what a statement does as `Operation`
facts; `decide` is a pure function of (tier, operation, protected objects) -> `Decision`.

    action          read  write  destr.  view   target rule
    SELECT/RECURSIVE  x     x      x      x     -
    READ              x     x      x      x     any table, server tables included
    FUNCTION          x     x      x      x     not load_extension & co.
    PRAGMA            x     x      x      x     introspection only, never a write
    INSERT/UPDATE     .     x      x      .     user tables
    catalog writes    .     x      x      x     sqlite_master rows written by allowed DDL
    DELETE            .     .      x      .     user tables
    module writes     x     x      x      .     nested bookkeeping of a virtual table module,
                                                never to server objects (read: prepared only,
                                                the read connection is read-only)
    EMPTY_TABLE       .     .      x      .     a module's DELETE without WHERE (FTS5
                                                'delete-all', 'rebuild'): user tables
    CREATE TABLE/IDX  .     x      x      .     new user names; index on a user table;
                                                no foreign key to a server object
    CREATE VTABLE     .     x      x      .     modules fts5, rtree
    ANALYZE           .     x      x      .     -; it may delete old sqlite_stat1/4 rows
    CREATE VIEW       .     .      .      x     new user name (create_view only)
    DROP VIEW         .     .      x      x     user views
    DROP/ALTER        .     .      x      .     user objects
    REINDEX           .     x      x      .     user indexes (write: CREATE INDEX fills one)
    CREATE TRIGGER    .     .      x      .     on user tables
    everything else   .     .      .      .     ATTACH, DETACH, transactions, savepoints,
                                                temp objects, unknown action codes

What SQLite stores but never reports to the authorizer is a second kind of fact: the
foreign keys of a table a statement created or altered (`Reference`, gathered after the
statement and before COMMIT). `decide_reference` refuses a key whose parent is a server
object: it would make the server's own deletes (pruning undo_changesets, say) fail or
cascade into the agent's rows. Reading server objects stays open to agent DDL (views,
external-content fts5 tables, trigger bodies that only read).

Names are compared as SQLite compares them (`engine.names.fold_name`): only A-Z fold.

Every rule is about (database, table): SQLite names the database of every fact about a
table, unqualified names included. Two databases are served:

    main      the user's file: every rule above; a server object there is one whose
              (database, folded name) is in `protected` (sqlgate's tables that still live
              in the user's file, until they move to the records file)
    sqlgate   sqlgate's records, attached read-only (`engine.connect`): every object in it is
              a server object, whatever its name. READ, SELECT, FUNCTION and the pragmas
              that only describe or read a setting are allowed to every tier; any other
              fact about it is refused (`server_object_message`, which names the schema)

Any other database is refused, but for the temp catalog's rows: ALTER TABLE ... RENAME reads
and rewrites them to fix temp triggers, and since temp objects are never allowed it is
always empty (direct DML on any catalog is refused by defensive mode).

A foreign key's parent is resolved by SQLite in its child's database only (REFERENCES takes
no schema), so an agent's key in main can never point into `sqlgate`; a key in any other
database is refused all the same (`decide_reference`). A view or trigger cannot read
another database either (SQLite: "cannot reference objects in database"); preflight
answers that first (`engine.statements.tier_check`).

EMPTY_TABLE is the one fact not from SQLite's authorizer: the statement tracer reports a
DELETE without WHERE that a virtual table module runs (see `engine.rules.authorizer`).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass

from sqlgate.engine.names import SERVER_SCHEMA, fold_name

__all__ = [
    "SERVER_SCHEMA",
    "Decision",
    "Operation",
    "Protected",
    "Reference",
    "Tier",
    "database_of",
    "decide",
    "decide_reference",
    "in_main",
    "server_object_message",
]

MAIN = "main"
# (database, folded name) of the server objects outside `SERVER_SCHEMA`
Protected = frozenset[tuple[str, str]]


class Tier(enum.Enum):
    """What the calling tool is allowed to do; `VIEW` is create_view's narrow tier."""

    READ = "read_query"
    WRITE = "write_query"
    DESTRUCTIVE = "destructive_query"
    VIEW = "create_view"


R, W, D, V = Tier.READ, Tier.WRITE, Tier.DESTRUCTIVE, Tier.VIEW
ALL = frozenset({R, W, D, V})


@dataclass(frozen=True)
class Operation:
    """One fact the authorizer saw: SQLite's action code and its arguments.

    `nested` marks a virtual table module's own bookkeeping, never text the agent wrote:
    facts SQLite reports while the statement runs (fts5 and pragma functions prepare their
    statements then), and writes to shadow tables outside any trigger, which rtree prepares
    while the agent's statement is being prepared (when it connects to its table).
    """

    action: str  # SQLite's name without the SQLITE_ prefix, e.g. "DROP_TABLE"
    target: str | None = None  # the object acted on (table, index, view, pragma, function)
    detail: str | None = None  # second argument: column, table of an index, pragma argument
    database: str | None = None
    inside: str | None = None  # trigger or view whose body caused this
    nested: bool = False


@dataclass(frozen=True)
class Reference:
    """A foreign key SQLite stored for an agent's table: `table`.`column` REFERENCES `parent`.

    SQLite's authorizer is never told the parent of a FOREIGN KEY (in CREATE TABLE or ALTER
    TABLE ADD COLUMN), so these are read from `pragma_foreign_key_list` after the statement.
    """

    table: str
    column: str
    parent: str
    database: str = MAIN  # the child's, and so the parent's: REFERENCES takes no schema


@dataclass(frozen=True)
class Decision:
    """A decision; `ignore`: allowed, but the value reads as NULL (SQLITE_IGNORE)."""

    allowed: bool
    reason: str = ""
    ignore: bool = False


ALLOW = Decision(True)

# Schema tables SQLite itself writes while running DDL; direct DML on them is refused by
# SQLite in defensive mode, so letting the authorizer pass them is not an opening.
CATALOG = frozenset({"sqlite_master", "sqlite_schema", "sqlite_temp_master", "sqlite_temp_schema"})
# SQLite's own bookkeeping tables that an agent could write to bend autoincrement or plans.
INTERNAL_PREFIX = "sqlite_"
# ANALYZE's statistics: it deletes a table's old rows before it writes new ones. A DELETE
# statement of the agent's own never reaches the write tier (preflight sends it on).
STATISTICS = frozenset({"sqlite_stat1", "sqlite_stat4"})

VTABLE_MODULES = frozenset({"fts5", "rtree", "rtree_i32"})
FORBIDDEN_FUNCTIONS = frozenset(
    {"load_extension", "fts3_tokenizer", "readfile", "writefile", "edit"}
)

# Pragmas that only describe; their argument (if any) names an object, never a new value.
INTROSPECTION_PRAGMAS = frozenset(
    {
        "table_info", "table_xinfo", "table_list", "index_list", "index_info", "index_xinfo",
        "foreign_key_list", "foreign_key_check", "collation_list", "function_list",
        "module_list", "pragma_list", "database_list", "compile_options", "integrity_check",
        "quick_check",
    }
)  # fmt: skip
# Settings pragmas that may be read (no argument) but never set.
READABLE_SETTINGS = frozenset(
    {
        "user_version", "application_id", "schema_version", "data_version", "page_size",
        "page_count", "freelist_count", "max_page_count", "journal_mode", "encoding",
        "foreign_keys", "auto_vacuum", "cache_size", "synchronous", "busy_timeout",
        "query_only", "recursive_triggers", "case_sensitive_like", "secure_delete",
        "temp_store", "locking_mode", "wal_autocheckpoint", "automatic_index", "defer_foreign_keys",
    }
)  # fmt: skip

# action -> (tiers allowed, what to tell the agent when its tier is not among them)
TIER_RULES: dict[str, tuple[frozenset[Tier], str]] = {
    "SELECT":         (ALL, ""),
    "RECURSIVE":      (ALL, ""),
    "READ":           (ALL, ""),
    "FUNCTION":       (ALL, ""),
    "PRAGMA":         (ALL, ""),
    "INSERT":         (frozenset({W, D}), "INSERT needs write_query"),
    "UPDATE":         (frozenset({W, D}), "UPDATE needs write_query"),
    "DELETE":         (frozenset({D}), "DELETE needs destructive_query"),
    "EMPTY_TABLE":    (frozenset({D}), "emptying a table (the FTS5 'delete-all' and 'rebuild' "
                                       "commands do) needs destructive_query"),
    "CREATE_TABLE":   (frozenset({W, D}), "CREATE TABLE needs write_query"),
    "CREATE_INDEX":   (frozenset({W, D}), "CREATE INDEX needs write_query"),
    "CREATE_VTABLE":  (frozenset({W, D}), "CREATE VIRTUAL TABLE needs write_query"),
    "ANALYZE":        (frozenset({W, D}), "ANALYZE needs write_query"),
    "CREATE_VIEW":    (frozenset({V}), "CREATE VIEW is done by create_view"),
    "DROP_VIEW":      (frozenset({D, V}), "DROP VIEW needs destructive_query"),
    "DROP_TABLE":     (frozenset({D}), "DROP TABLE needs destructive_query"),
    "DROP_INDEX":     (frozenset({D}), "DROP INDEX needs destructive_query"),
    "DROP_TRIGGER":   (frozenset({D}), "DROP TRIGGER needs destructive_query"),
    "DROP_VTABLE":    (frozenset({D}), "DROP TABLE needs destructive_query"),
    "ALTER_TABLE":    (frozenset({D}), "ALTER TABLE needs destructive_query"),
    # REINDEX rebuilds indexes and changes no row; CREATE INDEX reports filling its new
    # index as a REINDEX of it
    "REINDEX":        (frozenset({W, D}), "REINDEX needs write_query"),
    "CREATE_TRIGGER": (frozenset({D}), "CREATE TRIGGER needs destructive_query"),
}  # fmt: skip

# "no tool will" is the words of a refusal that no other tool would lift (tests read them)
_NO_TEMP = "TEMP objects are not allowed: no tool will create or drop one"
NEVER: dict[str, str] = {
    "ATTACH": "ATTACH (and VACUUM, which attaches) is never allowed, so no tool will run it: "
    "sqlgate serves one file",
    "DETACH": "DETACH is never allowed: no tool will run it (nothing is ever attached)",
    "TRANSACTION": "transaction control is never allowed, so no tool will run it: each call is "
    "its own transaction",
    "SAVEPOINT": "SAVEPOINT/RELEASE are never allowed, so no tool will run them: each call is "
    "its own transaction",
    "CREATE_TEMP_TABLE": f"{_NO_TEMP}; create a regular table with write_query",
    "CREATE_TEMP_INDEX": f"{_NO_TEMP}; create a regular index with write_query",
    "CREATE_TEMP_TRIGGER": f"{_NO_TEMP}; create a regular trigger with destructive_query",
    "CREATE_TEMP_VIEW": f"{_NO_TEMP}; save a view with create_view",
    "DROP_TEMP_TABLE": _NO_TEMP,
    "DROP_TEMP_INDEX": _NO_TEMP,
    "DROP_TEMP_TRIGGER": _NO_TEMP,
    "DROP_TEMP_VIEW": _NO_TEMP,
    "COPY": "COPY is not allowed: no tool will run it",
}

WRITE_ACTIONS = frozenset({"INSERT", "UPDATE", "DELETE"})
# facts whose target is a table whose rows change
ROW_ACTIONS = WRITE_ACTIONS | {"EMPTY_TABLE"}
# actions whose first argument names the object acted on
NAMED_OBJECT_ACTIONS = frozenset(
    {
        "CREATE_TABLE", "CREATE_VTABLE", "CREATE_VIEW", "DROP_VIEW", "DROP_TABLE",
        "DROP_VTABLE", "DROP_INDEX", "DROP_TRIGGER", "REINDEX",
    }
)  # fmt: skip


def in_main(names: Iterable[str]) -> Protected:
    """`protected` for server objects of these names in the main database."""
    return frozenset((MAIN, fold_name(name)) for name in names)


def _is_protected(name: str | None, protected: Protected) -> bool:
    """Whether `name` in the main database is a server object."""
    return name is not None and (MAIN, fold_name(name)) in protected


def server_object_message(name: str) -> str:
    """The refusal of a write to a server object, in every tool (`name` as the agent should
    write it: `sqlgate.query_log` for the records' objects)."""
    return (
        f"{name} is a sqlgate server object: only the server writes, alters, drops, indexes or "
        "attaches triggers to it, and no tool will; agents may read it (read_query)"
    )


def _check_pragma(op: Operation) -> Decision:
    name = fold_name(op.target or "")
    if name in INTROSPECTION_PRAGMAS:
        return ALLOW
    if name in READABLE_SETTINGS and op.detail is None:
        return ALLOW
    if name in READABLE_SETTINGS:
        return Decision(
            False,
            f"PRAGMA {name} may be read but never set through sqlgate: no tool will set it (the "
            f"server owns the connection's settings); read it with `PRAGMA {name}` in read_query",
        )
    return Decision(
        False,
        f"PRAGMA {name} is not allowed: no tool will run it; only introspection pragmas "
        "(table_info, index_list, foreign_key_list, ...) and reading settings are, in read_query",
    )


def _check_target(tier: Tier, op: Operation, protected: Protected) -> Decision:
    """Rules about which object an allowed action may touch."""
    action, target = op.action, (op.target or "")
    lowered = fold_name(target)
    if action in ROW_ACTIONS:
        if lowered in CATALOG:
            return ALLOW
        if _is_protected(target, protected):
            return Decision(False, server_object_message(target))
        if lowered.startswith(INTERNAL_PREFIX) and tier is not Tier.DESTRUCTIVE:
            return Decision(False, f"{target} is SQLite's own bookkeeping; use destructive_query")
        return ALLOW
    if action == "CREATE_INDEX":  # target: index name, detail: table
        if _is_protected(op.detail, protected):
            return Decision(False, server_object_message(op.detail or ""))
        if _is_protected(target, protected):
            return Decision(False, server_object_message(target))
        return ALLOW
    if action == "CREATE_TRIGGER":  # target: trigger name, detail: table
        table = op.detail or ""
        if _is_protected(table, protected) or fold_name(table).startswith(INTERNAL_PREFIX):
            return Decision(False, server_object_message(table))
        if _is_protected(target, protected):
            return Decision(False, server_object_message(target))
        return ALLOW
    if action == "ALTER_TABLE":  # target: database, detail: table
        if _is_protected(op.detail, protected):
            return Decision(False, server_object_message(op.detail or ""))
        return ALLOW
    if action == "CREATE_VTABLE" and fold_name(op.detail or "") not in VTABLE_MODULES:
        modules = ", ".join(sorted(VTABLE_MODULES))
        return Decision(
            False,
            f"virtual table module {op.detail!r} is not allowed: no tool will create one; use "
            f"one of {modules}",
        )
    if action in NAMED_OBJECT_ACTIONS and _is_protected(target, protected):
        return Decision(False, server_object_message(target))
    if action == "FUNCTION" and fold_name(op.detail or "") in FORBIDDEN_FUNCTIONS:
        return Decision(False, f"function {op.detail}() is never allowed: no tool will call it")
    if action == "PRAGMA":
        return _check_pragma(op)
    return ALLOW


def database_of(op: Operation) -> str | None:
    """The database a fact is about (None: no table, or SQLite did not say)."""
    # ALTER_TABLE names (database, table) first; its fourth argument holds the column that
    # ALTER TABLE ... DROP COLUMN drops, not a database
    return op.target if op.action == "ALTER_TABLE" else op.database


# what every tier may do with the records: read them, and describe them
SERVER_READS = frozenset({"SELECT", "RECURSIVE", "READ", "FUNCTION"})
# the facts whose second argument is the table they act on (the first: an index or trigger)
_ON_TABLE = frozenset(
    {"ALTER_TABLE", "CREATE_INDEX", "CREATE_TRIGGER", "DROP_INDEX", "DROP_TRIGGER"}
)


def _decide_server(op: Operation) -> Decision:
    """A fact about an object of the records (`SERVER_SCHEMA`): read, never changed."""
    if op.action == "PRAGMA":
        return _check_pragma(op)
    if op.action in SERVER_READS:
        if op.action == "FUNCTION" and fold_name(op.detail or "") in FORBIDDEN_FUNCTIONS:
            return Decision(False, f"function {op.detail}() is never allowed: no tool will call it")
        return ALLOW
    name = op.detail if op.action in _ON_TABLE else op.target
    shown = f"{SERVER_SCHEMA}.{name}" if name else f"the {SERVER_SCHEMA} database"
    return Decision(False, server_object_message(shown))


def decide(tier: Tier, op: Operation, protected: Protected) -> Decision:
    """Allow or deny one operation for one tier. Pure: same facts, same verdict.

    `protected` holds (database, folded name) of the server objects in the main database
    (tables, their FTS shadow tables, views, triggers, indexes; `in_main` builds it); every
    object of `SERVER_SCHEMA` is one, listed or not. The user's own table rules are judged
    after this, by `engine.rules.rule_policy.decide_with_rules`.
    """
    if op.action in NEVER:
        return Decision(False, NEVER[op.action])
    database = database_of(op)
    # the records' catalog rows are written only by DDL on the records, which is refused:
    # they are judged as the main catalog's are, so the refusal names the object
    server_catalog = op.action in WRITE_ACTIONS and fold_name(op.target or "") in CATALOG
    if database == SERVER_SCHEMA and not server_catalog:
        return _decide_server(op)
    temp_catalog = (
        database == "temp"
        and op.action in WRITE_ACTIONS | {"READ"}
        and fold_name(op.target or "") in CATALOG
    )
    if database not in (None, MAIN, SERVER_SCHEMA) and not temp_catalog:
        return Decision(
            False, f"only the main database may be used, not {database!r}: no tool will use it"
        )
    if (
        op.action in WRITE_ACTIONS
        and fold_name(op.target or "") in CATALOG
        and tier is not Tier.READ
    ):
        return ALLOW  # SQLite's own catalog rows written by DDL the tier already allowed
    if (
        op.action == "DELETE"
        and fold_name(op.target or "") in STATISTICS
        and op.inside is None
        and tier is Tier.WRITE
    ):
        return ALLOW  # ANALYZE replacing its statistics
    rule = TIER_RULES.get(op.action)
    if rule is None:
        return Decision(
            False,
            f"SQLite action {op.action} is not known to sqlgate's policy, so no tool will run it",
        )
    tiers, hint = rule
    # the read connection is opened read-only, so a module's writes there are only prepared
    bookkeeping = op.nested and op.action in WRITE_ACTIONS and tier in (Tier.READ, Tier.WRITE)
    if tier not in tiers and not bookkeeping:
        if op.inside:
            hint = f"{hint} (done by trigger or view {op.inside})"
        return Decision(False, f"{hint}; {tier.value} does not allow it")
    return _check_target(tier, op, protected)


def decide_reference(ref: Reference, protected: Protected) -> Decision:
    """Allow or deny one foreign key an agent's statement left in the schema. Pure.

    SQLite looks a key's parent up in its child's database only, so a key of a table in
    main points into main; a key in any other database is refused (no tool makes one)."""
    if ref.database != MAIN:
        return Decision(
            False,
            f"{ref.table}.{ref.column} REFERENCES {ref.parent} in database {ref.database!r}: "
            "only tables of the main database are yours, so no tool will create it; nothing "
            "was changed",
        )
    if not _is_protected(ref.parent, protected):
        return ALLOW
    return Decision(
        False,
        f"{ref.table}.{ref.column} REFERENCES {ref.parent}: a foreign key may not point at a "
        "sqlgate server object, whose rows the server deletes and rewrites (it prunes "
        "undo_changesets, for one): your key would block those writes or cascade them into "
        "your rows, so no tool will create it. Keep the id in a plain column without "
        "REFERENCES, or point the key at a table of your own; nothing was changed",
    )
