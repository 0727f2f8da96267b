"""The policy table, row by row and tier by tier: `decide` is a pure function of the facts."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sqlgate.engine.statements.policy import (
    NEVER,
    TIER_RULES,
    Operation,
    Reference,
    Tier,
    decide,
    decide_reference,
    in_main,
)

R, W, D, V = Tier.READ, Tier.WRITE, Tier.DESTRUCTIVE, Tier.VIEW
ALL = frozenset(Tier)
NONE: frozenset[Tier] = frozenset()

PROTECTED = in_main(
    {
        "query_log", "query_log_no_update", "query_errors", "memory_events",
        "memory_events_fts", "memory_events_fts_data", "memory_checkpoints",
    }
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


# (id, operation, tiers that may do it): one line per row of the policy table and its edges
RULES: list[tuple[str, Operation, frozenset[Tier]]] = [
    # reading
    ("select", op("SELECT", database=None), ALL),
    ("recursive-cte", op("RECURSIVE", database=None), ALL),
    ("read-user-table", op("READ", "t", "x"), ALL),
    ("read-server-table", op("READ", "query_log", "query"), ALL),
    ("read-catalog", op("READ", "sqlite_master", "sql"), ALL),
    ("function-plain", op("FUNCTION", None, "lower", database=None), ALL),
    ("function-load_extension", op("FUNCTION", None, "load_extension", database=None), NONE),
    ("function-load_extension-upper", op("FUNCTION", None, "LOAD_EXTENSION", database=None), NONE),
    ("function-fts3_tokenizer", op("FUNCTION", None, "fts3_tokenizer", database=None), NONE),
    ("function-readfile", op("FUNCTION", None, "readfile", database=None), NONE),
    ("function-writefile", op("FUNCTION", None, "writefile", database=None), NONE),
    ("function-edit", op("FUNCTION", None, "edit", database=None), NONE),
    # pragmas: introspection always, settings only read, anything else never
    ("pragma-table_info", op("PRAGMA", "table_info", "t"), ALL),
    ("pragma-table_info-upper", op("PRAGMA", "TABLE_INFO", "t"), ALL),
    ("pragma-index_list", op("PRAGMA", "index_list", "t"), ALL),
    ("pragma-foreign_key_check", op("PRAGMA", "foreign_key_check"), ALL),
    ("pragma-integrity_check", op("PRAGMA", "integrity_check"), ALL),
    ("pragma-integrity_check-with-arg", op("PRAGMA", "integrity_check", "t"), ALL),
    ("pragma-user_version-read", op("PRAGMA", "user_version"), ALL),
    ("pragma-journal_mode-read", op("PRAGMA", "journal_mode"), ALL),
    ("pragma-user_version-set", op("PRAGMA", "user_version", "7"), NONE),
    ("pragma-journal_mode-set", op("PRAGMA", "journal_mode", "delete"), NONE),
    ("pragma-foreign_keys-set", op("PRAGMA", "foreign_keys", "off"), NONE),
    ("pragma-query_only-set", op("PRAGMA", "query_only", "0"), NONE),
    ("pragma-writable_schema-read", op("PRAGMA", "writable_schema"), NONE),
    ("pragma-writable_schema-set", op("PRAGMA", "writable_schema", "1"), NONE),
    ("pragma-mmap_size", op("PRAGMA", "mmap_size", "1000000"), NONE),
    ("pragma-unknown", op("PRAGMA", "no_such_pragma"), NONE),
    # INSERT / UPDATE on user tables
    ("insert-user-table", op("INSERT", "t"), frozenset({W, D})),
    ("update-user-table", op("UPDATE", "t", "x"), frozenset({W, D})),
    ("insert-server-table", op("INSERT", "query_log"), NONE),
    ("insert-server-table-mixed-case", op("INSERT", "Query_Log"), NONE),
    ("update-server-table", op("UPDATE", "memory_events", "content"), NONE),
    ("update-server-table-upper", op("UPDATE", "MEMORY_EVENTS", "content"), NONE),
    ("insert-server-fts-shadow", op("INSERT", "memory_events_fts_data"), NONE),
    ("insert-sqlite_sequence", op("INSERT", "sqlite_sequence"), frozenset({D})),
    ("update-sqlite_stat1", op("UPDATE", "sqlite_stat1", "stat"), frozenset({D})),
    # catalog rows written by DDL the tier already allowed
    ("catalog-insert-sqlite_master", op("INSERT", "sqlite_master"), frozenset({W, D, V})),
    ("catalog-update-sqlite_schema", op("UPDATE", "sqlite_schema", "sql"), frozenset({W, D, V})),
    ("catalog-delete-sqlite_master", op("DELETE", "sqlite_master"), frozenset({W, D, V})),
    ("catalog-insert-upper", op("INSERT", "SQLITE_MASTER"), frozenset({W, D, V})),
    # ALTER TABLE ... RENAME reads and rewrites the (always empty) temp catalog
    ("read-temp-catalog", op("READ", "sqlite_temp_master", "sql", database="temp"), ALL),
    (
        "update-temp-catalog",
        op("UPDATE", "sqlite_temp_master", "sql", database="temp"),
        frozenset({W, D, V}),
    ),
    # DELETE; nested module bookkeeping (fts5/rtree shadow tables) also in read and write
    # (the read connection is read-only: there a module's writes are only ever prepared)
    ("delete-user-table", op("DELETE", "t"), frozenset({D})),
    ("delete-server-table", op("DELETE", "query_log"), NONE),
    ("nested-delete-bookkeeping", op("DELETE", "docs_data", nested=True), frozenset({R, W, D})),
    ("nested-insert-bookkeeping", op("INSERT", "docs_idx", nested=True), frozenset({R, W, D})),
    (
        "nested-update-bookkeeping",
        op("UPDATE", "docs_data", "block", nested=True),
        frozenset({R, W, D}),
    ),
    ("nested-delete-server-shadow", op("DELETE", "memory_events_fts_data", nested=True), NONE),
    # a module's DELETE without WHERE (FTS5 'delete-all', 'rebuild'), seen by the tracer
    ("empty-table-bookkeeping", op("EMPTY_TABLE", "docs_data", nested=True), frozenset({D})),
    ("empty-table-server-shadow", op("EMPTY_TABLE", "memory_events_fts_data", nested=True), NONE),
    # CREATE TABLE / INDEX
    ("create-table", op("CREATE_TABLE", "t"), frozenset({W, D})),
    ("create-table-server-name", op("CREATE_TABLE", "query_log"), NONE),
    ("create-table-server-name-upper", op("CREATE_TABLE", "QUERY_LOG"), NONE),
    ("create-index", op("CREATE_INDEX", "t_x", "t"), frozenset({W, D})),
    ("create-index-on-server-table", op("CREATE_INDEX", "ix", "query_log"), NONE),
    ("create-index-on-server-table-mixed", op("CREATE_INDEX", "ix", "Query_Log"), NONE),
    ("create-index-server-name", op("CREATE_INDEX", "query_errors", "t"), NONE),
    # CREATE VIRTUAL TABLE: fts5 and rtree only
    ("create-vtable-fts5", op("CREATE_VTABLE", "docs", "fts5"), frozenset({W, D})),
    ("create-vtable-fts5-upper", op("CREATE_VTABLE", "docs", "FTS5"), frozenset({W, D})),
    ("create-vtable-rtree", op("CREATE_VTABLE", "boxes", "rtree"), frozenset({W, D})),
    ("create-vtable-rtree_i32", op("CREATE_VTABLE", "boxes", "rtree_i32"), frozenset({W, D})),
    ("create-vtable-fts4", op("CREATE_VTABLE", "docs", "fts4"), NONE),
    ("create-vtable-csv", op("CREATE_VTABLE", "docs", "csv"), NONE),
    ("create-vtable-no-module", op("CREATE_VTABLE", "docs", None), NONE),
    ("create-vtable-server-name", op("CREATE_VTABLE", "memory_events_fts", "fts5"), NONE),
    ("analyze", op("ANALYZE", "t"), frozenset({W, D})),
    # views: created only by create_view, dropped by destructive_query or create_view
    ("create-view", op("CREATE_VIEW", "v"), frozenset({V})),
    ("create-view-server-name", op("CREATE_VIEW", "query_errors"), NONE),
    ("drop-view", op("DROP_VIEW", "v"), frozenset({D, V})),
    ("drop-view-server", op("DROP_VIEW", "query_errors"), NONE),
    ("drop-view-server-upper", op("DROP_VIEW", "QUERY_ERRORS"), NONE),
    # DROP / ALTER / REINDEX of user objects
    ("drop-table", op("DROP_TABLE", "t"), frozenset({D})),
    ("drop-table-server", op("DROP_TABLE", "query_log"), NONE),
    ("drop-table-server-mixed", op("DROP_TABLE", "Query_Log"), NONE),
    ("drop-index", op("DROP_INDEX", "t_x", "t"), frozenset({D})),
    ("drop-trigger", op("DROP_TRIGGER", "trg", "t"), frozenset({D})),
    ("drop-trigger-server", op("DROP_TRIGGER", "query_log_no_update", "query_log"), NONE),
    ("drop-vtable", op("DROP_VTABLE", "docs", "fts5"), frozenset({D})),
    ("drop-vtable-server", op("DROP_VTABLE", "memory_events_fts", "fts5"), NONE),
    ("alter-table", op("ALTER_TABLE", "main", "t"), frozenset({D})),
    ("alter-table-server", op("ALTER_TABLE", "main", "query_log"), NONE),
    ("alter-table-server-upper", op("ALTER_TABLE", "main", "QUERY_LOG"), NONE),
    ("alter-table-other-database", op("ALTER_TABLE", "aux", "t"), NONE),
    ("reindex", op("REINDEX", "t_x"), frozenset({W, D})),
    ("analyze-replaces-statistics", op("DELETE", "sqlite_stat1"), frozenset({W, D})),
    ("reindex-server", op("REINDEX", "query_log"), NONE),
    # CREATE TRIGGER on user tables
    ("create-trigger", op("CREATE_TRIGGER", "trg", "t"), frozenset({D})),
    ("create-trigger-on-server-table", op("CREATE_TRIGGER", "trg", "query_log"), NONE),
    ("create-trigger-on-server-upper", op("CREATE_TRIGGER", "trg", "MEMORY_EVENTS"), NONE),
    ("create-trigger-on-sqlite-table", op("CREATE_TRIGGER", "trg", "sqlite_sequence"), NONE),
    ("create-trigger-server-name", op("CREATE_TRIGGER", "query_log_no_update", "t"), NONE),
    # never, in any tier
    ("attach", op("ATTACH", "/tmp/other.db", database=None), NONE),
    ("attach-empty", op("ATTACH", "", database=None), NONE),
    ("detach", op("DETACH", "other", database=None), NONE),
    ("transaction-begin", op("TRANSACTION", "BEGIN", database=None), NONE),
    ("transaction-commit", op("TRANSACTION", "COMMIT", database=None), NONE),
    ("savepoint", op("SAVEPOINT", "BEGIN", "sp", database=None), NONE),
    ("create-temp-table", op("CREATE_TEMP_TABLE", "tt", database="temp"), NONE),
    ("create-temp-index", op("CREATE_TEMP_INDEX", "ti", "tt", database="temp"), NONE),
    ("create-temp-trigger", op("CREATE_TEMP_TRIGGER", "tg", "t", database="temp"), NONE),
    ("create-temp-view", op("CREATE_TEMP_VIEW", "tv", database="temp"), NONE),
    ("drop-temp-table", op("DROP_TEMP_TABLE", "tt", database="temp"), NONE),
    ("drop-temp-index", op("DROP_TEMP_INDEX", "ti", "tt", database="temp"), NONE),
    ("drop-temp-trigger", op("DROP_TEMP_TRIGGER", "tg", "t", database="temp"), NONE),
    ("drop-temp-view", op("DROP_TEMP_VIEW", "tv", database="temp"), NONE),
    ("copy", op("COPY", "t", "file"), NONE),
    ("unknown-action-code", op("UNKNOWN_99", "t"), NONE),
    ("unknown-action-name", op("CREATE_SOMETHING_NEW", "t"), NONE),
    # only the main database
    ("read-temp-database", op("READ", "t", "x", database="temp"), NONE),
    ("read-attached-database", op("READ", "t", "x", database="aux"), NONE),
    ("insert-temp-database", op("INSERT", "t", database="temp"), NONE),
    ("pragma-other-database", op("PRAGMA", "table_info", "t", database="aux"), NONE),
    # names compare as SQLite compares them: ASCII letters fold, nothing else does
    ("create-server-name-upper", op("CREATE_TABLE", "MEMORY_CHECKPOINTS"), NONE),
    ("create-kelvin-sign-name", op("CREATE_TABLE", "memory_chec\u212apoints"), frozenset({W, D})),
    ("drop-kelvin-sign-name", op("DROP_TABLE", "memory_chec\u212apoints"), frozenset({D})),
    (
        "alter-kelvin-sign-name",
        op("ALTER_TABLE", "main", "memory_chec\u212apoints"),
        frozenset({D}),
    ),
    ("insert-kelvin-sign-name", op("INSERT", "memory_chec\u212apoints"), frozenset({W, D})),
    (
        "index-on-kelvin-sign-name",
        op("CREATE_INDEX", "i", "memory_chec\u212apoints"),
        frozenset({W, D}),
    ),
    ("pragma-kelvin-sign-quick_check", op("PRAGMA", "quic\u212a_check"), NONE),
    ("function-kelvin-sign-fts3_tokenizer", op("FUNCTION", None, "fts3_to\u212aenizer"), ALL),
]


def _cases() -> Iterator[object]:
    for name, operation, allowed_tiers in RULES:
        for tier in Tier:
            yield pytest.param(
                tier, operation, tier in allowed_tiers, id=f"{name}-{tier.name.lower()}"
            )


@pytest.mark.parametrize(("tier", "operation", "allowed"), list(_cases()))
def test_decide_follows_the_policy_table(tier: Tier, operation: Operation, allowed: bool) -> None:
    verdict = decide(tier, operation, PROTECTED)
    assert verdict.allowed is allowed, verdict.reason
    if not allowed:
        assert verdict.reason, "a refusal must say why"


def test_table_covers_every_action_the_policy_names() -> None:
    covered = {operation.action for _, operation, _ in RULES}
    missing = (set(TIER_RULES) | set(NEVER)) - covered
    assert not missing


def test_rule_ids_are_unique() -> None:
    names = [name for name, _, _ in RULES]
    assert len(names) == len(set(names))


@pytest.mark.parametrize(
    ("tier", "operation", "phrase"),
    [
        pytest.param(W, op("DELETE", "t"), "destructive_query", id="delete-in-write"),
        pytest.param(R, op("INSERT", "t"), "write_query", id="insert-in-read"),
        pytest.param(R, op("UPDATE", "t", "x"), "write_query", id="update-in-read"),
        pytest.param(W, op("DROP_TABLE", "t"), "destructive_query", id="drop-in-write"),
        pytest.param(W, op("CREATE_TRIGGER", "g", "t"), "destructive_query", id="trigger-write"),
        pytest.param(D, op("CREATE_VIEW", "v"), "create_view", id="view-in-destructive"),
        pytest.param(R, op("CREATE_TABLE", "t"), "write_query", id="create-in-read"),
        pytest.param(D, op("INSERT", "query_log"), "server object", id="protected-write"),
        pytest.param(D, op("DROP_TABLE", "Query_Log"), "Query_Log", id="protected-named"),
        pytest.param(W, op("INSERT", "sqlite_sequence"), "destructive_query", id="bookkeeping"),
        pytest.param(W, op("CREATE_VTABLE", "d", "fts4"), "fts5", id="vtable-modules-listed"),
        pytest.param(R, op("FUNCTION", None, "load_extension"), "load_extension", id="function"),
        pytest.param(R, op("PRAGMA", "user_version", "3"), "never set", id="pragma-setting"),
        pytest.param(R, op("PRAGMA", "writable_schema"), "introspection", id="pragma-other"),
        pytest.param(D, op("ATTACH", "x"), "one file", id="attach"),
        pytest.param(D, op("TRANSACTION", "BEGIN"), "transaction", id="transaction"),
        pytest.param(W, op("CREATE_TEMP_TABLE", "t"), "TEMP", id="temp"),
        pytest.param(D, op("UNKNOWN_99"), "UNKNOWN_99", id="unknown-action"),
        pytest.param(R, op("READ", "t", "x", database="aux"), "main database", id="other-db"),
        pytest.param(W, op("DELETE", "t", inside="trg"), "trg", id="names-the-trigger"),
    ],
)
def test_refusal_says_what_to_do_instead(tier: Tier, operation: Operation, phrase: str) -> None:
    verdict = decide(tier, operation, PROTECTED)
    assert not verdict.allowed
    assert phrase in verdict.reason


def test_refusal_names_the_calling_tool() -> None:
    verdict = decide(W, op("DELETE", "t"), PROTECTED)
    assert "write_query does not allow it" in verdict.reason


def test_protected_names_come_from_the_caller() -> None:
    """The same operation is allowed or refused only by what the caller says is protected."""
    operation = op("INSERT", "notes")
    assert decide(W, operation, frozenset()).allowed
    assert not decide(W, operation, in_main({"notes"})).allowed


def test_nested_bookkeeping_is_not_a_view_loophole() -> None:
    for tier in (V,):
        assert not decide(tier, op("DELETE", "docs_data", nested=True), PROTECTED).allowed


# a foreign key SQLite stored (the authorizer never reports its parent): (parent, allowed)
REFERENCES = [
    pytest.param("customers", True, id="own-table"),
    pytest.param("query_log", False, id="server-table"),
    pytest.param("QUERY_LOG", False, id="server-table-upper"),
    pytest.param("query_errors", False, id="server-view"),
    pytest.param("memory_events_fts_data", False, id="server-shadow-table"),
    pytest.param("memory_chec\u212apoints", True, id="kelvin-sign-is-another-name"),
    pytest.param("sqlite_sequence", True, id="sqlite-table-is-not-the-servers"),
]


@pytest.mark.parametrize(("parent", "allowed"), REFERENCES)
def test_decide_reference_refuses_foreign_keys_to_server_objects(
    parent: str, allowed: bool
) -> None:
    verdict = decide_reference(Reference("pin", "c", parent), PROTECTED)
    assert verdict.allowed is allowed
    if not allowed:
        assert verdict.reason.startswith(f"pin.c REFERENCES {parent}: ")
        assert "without REFERENCES" in verdict.reason  # what to do instead


@pytest.mark.parametrize("tier", list(Tier))
def test_the_servers_policy_never_answers_null_only_the_users_rules_do(tier: Tier) -> None:
    for op in (Operation("READ", "items", "name"), Operation("SELECT"),
               Operation("DELETE", "items"), Operation("ATTACH", "x.db")):  # fmt: skip
        assert decide(tier, op, frozenset()).ignore is False
