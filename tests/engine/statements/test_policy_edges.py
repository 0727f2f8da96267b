"""The policy's edges that the table in test_policy.py does not reach: the ANALYZE statistics
exception from inside a trigger, other actions at catalog names, the temp catalog's action
filter, and every pragma of the allow-lists by name (each found by mutation testing: a change
there let every test pass; see docs/mutation-testing.md)."""

from __future__ import annotations

import pytest

from sqlgate.engine.statements.policy import (
    INTROSPECTION_PRAGMAS,
    READABLE_SETTINGS,
    Operation,
    Tier,
    decide,
    in_main,
)

R, W, D, V = Tier.READ, Tier.WRITE, Tier.DESTRUCTIVE, Tier.VIEW
ALL = frozenset(Tier)
NONE: frozenset[Tier] = frozenset()
PROTECTED = in_main({"query_log", "memory_events"})

# written out, not imported: removing a pragma from the policy must fail a test
INTROSPECTION = (
    "table_info", "table_xinfo", "table_list", "index_list", "index_info", "index_xinfo",
    "foreign_key_list", "foreign_key_check", "collation_list", "function_list", "module_list",
    "pragma_list", "database_list", "compile_options", "integrity_check", "quick_check",
)  # fmt: skip
SETTINGS = (
    "user_version", "application_id", "schema_version", "data_version", "page_size",
    "page_count", "freelist_count", "max_page_count", "journal_mode", "encoding",
    "foreign_keys", "auto_vacuum", "cache_size", "synchronous", "busy_timeout", "query_only",
    "recursive_triggers", "case_sensitive_like", "secure_delete", "temp_store", "locking_mode",
    "wal_autocheckpoint", "automatic_index", "defer_foreign_keys",
)  # fmt: skip


def op(
    action: str,
    target: str | None = None,
    detail: str | None = None,
    *,
    database: str | None = "main",
    inside: str | None = None,
    nested: bool = False,
) -> Operation:
    return Operation(action, target, detail, database, inside, nested)


def allowed_tiers(operation: Operation) -> frozenset[Tier]:
    return frozenset(t for t in Tier if decide(t, operation, PROTECTED).allowed)


EDGES: list[tuple[str, Operation, frozenset[Tier]]] = [
    # ANALYZE replaces its statistics from write_query; the same DELETE from inside a trigger
    # is the agent's own statement and needs destructive_query
    ("analyze-stat1", op("DELETE", "sqlite_stat1"), frozenset({W, D})),
    ("analyze-stat4", op("DELETE", "sqlite_stat4"), frozenset({W, D})),
    ("analyze-stat1-upper", op("DELETE", "SQLITE_STAT1"), frozenset({W, D})),
    ("stat1-from-trigger", op("DELETE", "sqlite_stat1", inside="trg"), frozenset({D})),
    ("stat4-from-trigger", op("DELETE", "sqlite_stat4", inside="trg"), frozenset({D})),
    ("delete-sqlite_sequence", op("DELETE", "sqlite_sequence"), frozenset({D})),
    ("insert-stat1", op("INSERT", "sqlite_stat1"), frozenset({D})),
    # only INSERT/UPDATE/DELETE at a catalog name are DDL's own catalog rows
    ("drop-table-catalog", op("DROP_TABLE", "sqlite_master"), frozenset({D})),
    ("empty-table-catalog", op("EMPTY_TABLE", "sqlite_master"), frozenset({D})),
    ("create-index-catalog", op("CREATE_INDEX", "i", "sqlite_master"), frozenset({W, D})),
    ("trigger-on-catalog", op("CREATE_TRIGGER", "g", "sqlite_master"), NONE),
    ("alter-catalog", op("ALTER_TABLE", "main", "sqlite_schema"), frozenset({D})),
    ("catalog-insert-temp_schema", op("INSERT", "sqlite_temp_schema"), frozenset({W, D, V})),
    ("catalog-insert-temp_master", op("INSERT", "sqlite_temp_master"), frozenset({W, D, V})),
    ("nested-catalog-insert", op("INSERT", "sqlite_master", nested=True), ALL),
    # the temp catalog: only reads and row writes of its catalog tables
    ("temp-catalog-read-upper", op("READ", "SQLITE_TEMP_MASTER", "sql", database="temp"), ALL),
    ("temp-schema-read", op("READ", "sqlite_temp_schema", "sql", database="temp"), ALL),
    (
        "temp-catalog-insert",
        op("INSERT", "sqlite_temp_master", database="temp"),
        frozenset({W, D, V}),
    ),
    (
        "temp-catalog-delete",
        op("DELETE", "sqlite_temp_master", database="temp"),
        frozenset({W, D, V}),
    ),
    ("temp-catalog-drop", op("DROP_TABLE", "sqlite_temp_master", database="temp"), NONE),
    ("temp-catalog-empty", op("EMPTY_TABLE", "sqlite_temp_master", database="temp"), NONE),
    (
        "temp-catalog-pragma",
        op("PRAGMA", "table_info", "sqlite_temp_master", database="temp"),
        NONE,
    ),
    ("temp-user-table-update", op("UPDATE", "t", "x", database="temp"), NONE),
    ("aux-catalog-read", op("READ", "sqlite_master", "sql", database="aux"), NONE),
    ("aux-catalog-insert", op("INSERT", "sqlite_master", database="aux"), NONE),
    # a database of None is the main one (SELECT, FUNCTION carry no database)
    ("no-database-insert", op("INSERT", "t", database=None), frozenset({W, D})),
    # ALTER TABLE names its database first: the fourth argument is a dropped column
    ("alter-drop-column", op("ALTER_TABLE", "main", "t", database="c"), frozenset({D})),
    # nested bookkeeping: only row writes, and never in the view tier
    ("nested-create-table", op("CREATE_TABLE", "t", nested=True), frozenset({W, D})),
    ("nested-update-sqlite_stat1", op("UPDATE", "sqlite_stat1", nested=True), frozenset({D})),
    # index and trigger names, apart from their tables
    ("index-named-like-server", op("CREATE_INDEX", "query_log", "t"), NONE),
    ("trigger-named-like-server", op("CREATE_TRIGGER", "memory_events", "t"), NONE),
    ("trigger-on-stat1", op("CREATE_TRIGGER", "g", "SQLITE_STAT1"), NONE),
    ("drop-index-server", op("DROP_INDEX", "query_log", "t"), NONE),
    ("reindex-user", op("REINDEX", "t_x", "t"), frozenset({W, D})),
    ("function-no-name", op("FUNCTION", None, None, database=None), ALL),
    # a column named like a forbidden function is only a column
    ("read-column-named-edit", op("READ", "t", "edit"), ALL),
    ("update-column-named-readfile", op("UPDATE", "t", "readfile"), frozenset({W, D})),
    # facts without a target or detail (SQLite passes NULL) are judged, never a crash
    ("pragma-no-name", op("PRAGMA", None), NONE),
    ("index-no-table", op("CREATE_INDEX", "i", None), frozenset({W, D})),
    ("trigger-no-table", op("CREATE_TRIGGER", "g", None), frozenset({D})),
    ("alter-no-table", op("ALTER_TABLE", "main", None), frozenset({D})),
    ("insert-no-table", op("INSERT", None), frozenset({W, D})),
    ("delete-no-table", op("DELETE", None), frozenset({D})),
    ("temp-read-no-table", op("READ", None, "x", database="temp"), NONE),
]


@pytest.mark.parametrize(
    ("operation", "expected"),
    [pytest.param(o, tiers, id=name) for name, o, tiers in EDGES],
)
def test_edges_of_the_policy(operation: Operation, expected: frozenset[Tier]) -> None:
    assert allowed_tiers(operation) == expected


@pytest.mark.parametrize("name", INTROSPECTION)
def test_every_introspection_pragma_is_allowed_with_or_without_an_argument(name: str) -> None:
    assert allowed_tiers(op("PRAGMA", name)) == ALL
    assert allowed_tiers(op("PRAGMA", name, "t")) == ALL
    assert allowed_tiers(op("PRAGMA", name.upper(), "t")) == ALL


@pytest.mark.parametrize("name", SETTINGS)
def test_every_readable_setting_may_be_read_and_never_set(name: str) -> None:
    assert allowed_tiers(op("PRAGMA", name)) == ALL
    assert allowed_tiers(op("PRAGMA", name, "1")) == NONE
    verdict = decide(W, op("PRAGMA", name.upper(), "1"), PROTECTED)
    assert verdict.reason == (
        f"PRAGMA {name} may be read but never set through sqlgate: no tool will set it (the "
        f"server owns the connection's settings); read it with `PRAGMA {name}` in read_query"
    )


def test_the_pinned_lists_are_the_policys() -> None:
    assert set(INTROSPECTION) == INTROSPECTION_PRAGMAS
    assert set(SETTINGS) == READABLE_SETTINGS


def test_a_pragma_outside_the_lists_is_named_in_the_refusal() -> None:
    verdict = decide(R, op("PRAGMA", "Writable_Schema"), PROTECTED)
    assert verdict.reason == (
        "PRAGMA writable_schema is not allowed: no tool will run it; only introspection pragmas "
        "(table_info, index_list, foreign_key_list, ...) and reading settings are, in read_query"
    )


def server_object(name: str) -> str:
    return (
        f"{name} is a sqlgate server object: only the server writes, alters, drops, indexes or "
        "attaches triggers to it, and no tool will; agents may read it (read_query)"
    )


@pytest.mark.parametrize(
    ("tier", "operation", "reason"),
    [
        pytest.param(
            W,
            op("DELETE", "t", inside="trg"),
            "DELETE needs destructive_query (done by trigger or view trg);"
            " write_query does not allow it",
            id="inside-a-trigger",
        ),
        pytest.param(
            V,
            op("INSERT", "t"),
            "INSERT needs write_query; create_view does not allow it",
            id="outside-any-trigger",
        ),
        pytest.param(
            D,
            op("READ", "t", "x", database="aux"),
            "only the main database may be used, not 'aux': no tool will use it",
            id="other-database",
        ),
        pytest.param(
            D,
            op("INSERT", "Query_Log"),
            server_object("Query_Log"),
            id="protected",
        ),
        pytest.param(
            W,
            op("INSERT", "sqlite_sequence"),
            "sqlite_sequence is SQLite's own bookkeeping; use destructive_query",
            id="internal",
        ),
        pytest.param(
            D,
            op("CREATE_INDEX", "i", "query_log"),
            server_object("query_log"),
            id="index-on-protected-table",
        ),
        pytest.param(
            D,
            op("CREATE_TRIGGER", "g", "sqlite_sequence"),
            server_object("sqlite_sequence"),
            id="trigger-on-internal-table",
        ),
        pytest.param(
            D,
            op("ALTER_TABLE", "main", "memory_events"),
            server_object("memory_events"),
            id="alter-protected",
        ),
        pytest.param(
            W,
            op("CREATE_VTABLE", "d", "csv"),
            "virtual table module 'csv' is not allowed: no tool will create one; use one of "
            "fts5, rtree, rtree_i32",
            id="vtable-module",
        ),
        pytest.param(
            R,
            op("FUNCTION", None, "ReadFile", database=None),
            "function ReadFile() is never allowed: no tool will call it",
            id="function",
        ),
        pytest.param(
            W,
            op("SOMETHING_NEW", "t"),
            "SQLite action SOMETHING_NEW is not known to sqlgate's policy, so no tool will run it",
            id="unknown-action",
        ),
    ],
)
def test_refusals_read_exactly(tier: Tier, operation: Operation, reason: str) -> None:
    verdict = decide(tier, operation, PROTECTED)
    assert not verdict.allowed
    assert verdict.reason == reason


# written out, not imported: each never-allowed action refused with its own reason
NO_TEMP = "TEMP objects are not allowed: no tool will create or drop one"
NEVER_REASONS = {
    "ATTACH": "ATTACH (and VACUUM, which attaches) is never allowed, so no tool will run it: "
    "sqlgate serves one file",
    "DETACH": "DETACH is never allowed: no tool will run it (nothing is ever attached)",
    "TRANSACTION": "transaction control is never allowed, so no tool will run it: each call is "
    "its own transaction",
    "SAVEPOINT": "SAVEPOINT/RELEASE are never allowed, so no tool will run them: each call is "
    "its own transaction",
    "CREATE_TEMP_TABLE": f"{NO_TEMP}; create a regular table with write_query",
    "CREATE_TEMP_INDEX": f"{NO_TEMP}; create a regular index with write_query",
    "CREATE_TEMP_TRIGGER": f"{NO_TEMP}; create a regular trigger with destructive_query",
    "CREATE_TEMP_VIEW": f"{NO_TEMP}; save a view with create_view",
    "DROP_TEMP_TABLE": NO_TEMP,
    "DROP_TEMP_INDEX": NO_TEMP,
    "DROP_TEMP_TRIGGER": NO_TEMP,
    "DROP_TEMP_VIEW": NO_TEMP,
    "COPY": "COPY is not allowed: no tool will run it",
}


@pytest.mark.parametrize(("action", "reason"), sorted(NEVER_REASONS.items()))
def test_never_allowed_actions_say_why(action: str, reason: str) -> None:
    for tier in Tier:
        verdict = decide(tier, op(action, "x", database=None), PROTECTED)
        assert (verdict.allowed, verdict.reason) == (False, reason)


@pytest.mark.parametrize(
    ("tier", "operation", "tool"),
    [
        pytest.param(R, op("INSERT", "t"), "read_query", id="read"),
        pytest.param(W, op("DELETE", "t"), "write_query", id="write"),
        pytest.param(D, op("CREATE_VIEW", "v"), "destructive_query", id="destructive"),
        pytest.param(V, op("DROP_TABLE", "t"), "create_view", id="view"),
    ],
)
def test_a_refusal_names_the_tool_of_each_tier(tier: Tier, operation: Operation, tool: str) -> None:
    assert decide(tier, operation, PROTECTED).reason.endswith(f"; {tool} does not allow it")


def test_an_operation_is_not_a_modules_bookkeeping_unless_told() -> None:
    assert not decide(R, Operation("INSERT", "t"), PROTECTED).allowed
    assert decide(R, Operation("INSERT", "t", nested=True), PROTECTED).allowed
