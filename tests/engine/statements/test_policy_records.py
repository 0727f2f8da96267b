"""The policy by (database, table): sqlgate's records (`sqlgate`) are read, never changed;
main's server objects are the (main, name) pairs the caller lists; no other database."""

from __future__ import annotations

import pytest

from sqlgate.engine.statements.policy import (
    SERVER_SCHEMA,
    Operation,
    Reference,
    Tier,
    database_of,
    decide,
    decide_reference,
    in_main,
    server_object_message,
)

R, W, D, V = Tier.READ, Tier.WRITE, Tier.DESTRUCTIVE, Tier.VIEW
ALL = frozenset(Tier)
NONE: frozenset[Tier] = frozenset()
LISTED = in_main({"query_log", "members"})  # today: server tables still in the user's file
FUTURE = in_main(())  # after the move: main holds none


def op(
    action: str,
    target: str | None = None,
    detail: str | None = None,
    *,
    database: str | None = "sqlgate",
    inside: str | None = None,
    nested: bool = False,
) -> Operation:
    return Operation(action, target, detail, database, inside, nested)


def allowed(operation: Operation, protected: frozenset[tuple[str, str]]) -> frozenset[Tier]:
    return frozenset(t for t in Tier if decide(t, operation, protected).allowed)


# (id, fact about the records, tiers allowed, start of the refusal or "")
RECORDS: list[tuple[str, Operation, frozenset[Tier], str]] = [
    ("read", op("READ", "query_log", "query"), ALL, ""),
    ("read-unlisted-name", op("READ", "anything", "x"), ALL, ""),
    ("read-catalog", op("READ", "sqlite_master", "sql"), ALL, ""),
    ("read-through-its-view", op("READ", "query_log", "id", inside="query_patterns"), ALL, ""),
    ("read-nested", op("READ", "memory_events_fts_data", "block", nested=True), ALL, ""),
    ("select", op("SELECT"), ALL, ""),
    ("recursive", op("RECURSIVE"), ALL, ""),
    ("function", op("FUNCTION", None, "lower"), ALL, ""),
    ("function-without-a-name", op("FUNCTION"), ALL, ""),
    # a column may be called like a forbidden function: only a FUNCTION fact names one
    ("read-column-named-readfile", op("READ", "t", "readfile"), ALL, ""),
    ("read-column-named-edit", op("READ", "t", "EDIT"), ALL, ""),
    ("function-forbidden", op("FUNCTION", None, "load_extension"), NONE,
     "function load_extension() is never allowed"),
    ("function-forbidden-upper", op("FUNCTION", None, "WriteFile"), NONE,
     "function WriteFile() is never allowed"),
    ("pragma-table_info", op("PRAGMA", "table_info", "query_log"), ALL, ""),
    ("pragma-setting-read", op("PRAGMA", "user_version"), ALL, ""),
    ("pragma-setting-set", op("PRAGMA", "user_version", "3"), NONE,
     "PRAGMA user_version may be read but never set"),
    ("pragma-other", op("PRAGMA", "writable_schema", "1"), NONE,
     "PRAGMA writable_schema is not allowed"),
    ("insert", op("INSERT", "query_log"), NONE, "sqlgate.query_log is a sqlgate server object"),
    ("insert-nested", op("INSERT", "memory_events_fts_data", nested=True), NONE,
     "sqlgate.memory_events_fts_data is"),
    ("insert-unlisted", op("INSERT", "notes"), NONE, "sqlgate.notes is a sqlgate server object"),
    ("update", op("UPDATE", "members", "name"), NONE, "sqlgate.members is"),
    ("delete", op("DELETE", "claims"), NONE, "sqlgate.claims is"),
    ("delete-statistics", op("DELETE", "sqlite_stat1"), NONE, "sqlgate.sqlite_stat1 is"),
    ("empty-table", op("EMPTY_TABLE", "memory_events_fts_data", nested=True), NONE,
     "sqlgate.memory_events_fts_data is"),
    ("create-table", op("CREATE_TABLE", "mine"), NONE, "sqlgate.mine is"),
    ("create-vtable", op("CREATE_VTABLE", "f", "fts5"), NONE, "sqlgate.f is"),
    ("create-index", op("CREATE_INDEX", "i", "query_log"), NONE, "sqlgate.query_log is"),
    ("create-trigger", op("CREATE_TRIGGER", "tr", "members"), NONE, "sqlgate.members is"),
    ("create-view", op("CREATE_VIEW", "v"), NONE, "sqlgate.v is"),
    ("drop-table", op("DROP_TABLE", "query_log"), NONE, "sqlgate.query_log is"),
    ("drop-view", op("DROP_VIEW", "query_patterns"), NONE, "sqlgate.query_patterns is"),
    ("drop-index", op("DROP_INDEX", "query_log_by_actor", "query_log"), NONE,
     "sqlgate.query_log is"),
    ("drop-trigger", op("DROP_TRIGGER", "no_update", "query_log"), NONE, "sqlgate.query_log is"),
    ("drop-vtable", op("DROP_VTABLE", "memory_events_fts", "fts5"), NONE,
     "sqlgate.memory_events_fts is"),
    ("reindex", op("REINDEX", "query_log_by_actor"), NONE, "sqlgate.query_log_by_actor is"),
    ("analyze", op("ANALYZE", "query_log"), NONE, "sqlgate.query_log is"),
    ("analyze-all", op("ANALYZE"), NONE, "the sqlgate database is a sqlgate server object"),
    # ALTER TABLE names (database, table) first; its fourth argument is a dropped column
    ("alter", op("ALTER_TABLE", "sqlgate", "query_log", database=None), NONE,
     "sqlgate.query_log is"),
    ("alter-drop-column", op("ALTER_TABLE", "sqlgate", "members", database="removed"), NONE,
     "sqlgate.members is"),
    ("unknown-action", op("UNKNOWN_99", "query_log"), NONE, "sqlgate.query_log is"),
    # the records' catalog rows are judged as main's (the DDL that writes them is refused)
    ("catalog-insert", op("INSERT", "sqlite_master"), frozenset({W, D, V}), ""),
    ("catalog-update", op("UPDATE", "sqlite_master", "sql"), frozenset({W, D, V}), ""),
    ("catalog-delete", op("DELETE", "sqlite_schema"), frozenset({W, D, V}), ""),
    # only its rows: anything else done to a catalog of the records is refused
    ("catalog-drop", op("DROP_TABLE", "sqlite_master"), NONE, "sqlgate.sqlite_master is"),
    ("catalog-index", op("CREATE_INDEX", "i", "sqlite_schema"), NONE,
     "sqlgate.sqlite_schema is"),
    # never, in any database
    ("attach", op("ATTACH", "x"), NONE, "ATTACH (and VACUUM, which attaches) is never"),
    ("detach", op("DETACH", "sqlgate"), NONE, "DETACH is never allowed"),
]  # fmt: skip


@pytest.mark.parametrize("protected", [LISTED, FUTURE], ids=["listed", "future"])
@pytest.mark.parametrize(
    ("operation", "tiers", "refusal"),
    [pytest.param(o, t, r, id=i) for i, o, t, r in RECORDS],
)
def test_the_records_are_read_and_never_changed(
    operation: Operation,
    tiers: frozenset[Tier],
    refusal: str,
    protected: frozenset[tuple[str, str]],
) -> None:
    assert allowed(operation, protected) == tiers
    for tier in ALL - tiers:
        reason = decide(tier, operation, protected).reason
        assert reason.startswith(refusal)
        assert "no tool will" in reason or "read_query" in reason


@pytest.mark.parametrize("tier", list(Tier))
def test_a_refusal_of_the_records_is_the_server_objects_in_the_schemas_words(tier: Tier) -> None:
    verdict = decide(tier, op("DELETE", "Query_Log"), FUTURE)
    assert verdict.reason == server_object_message("sqlgate.Query_Log")
    assert verdict.reason.endswith("agents may read it (read_query)")
    assert not verdict.ignore


# (id, fact about main, tiers allowed with today's list, tiers allowed after the move)
MAIN: list[tuple[str, Operation, frozenset[Tier], frozenset[Tier]]] = [
    ("insert", op("INSERT", "query_log", database="main"), NONE, frozenset({W, D})),
    ("insert-no-database", op("INSERT", "query_log", database=None), NONE, frozenset({W, D})),
    ("update-folded", op("UPDATE", "MEMBERS", "name", database="main"), NONE, frozenset({W, D})),
    ("delete", op("DELETE", "members", database="main"), NONE, frozenset({D})),
    ("drop", op("DROP_TABLE", "query_log", database="main"), NONE, frozenset({D})),
    ("index-on", op("CREATE_INDEX", "i", "members", database="main"), NONE, frozenset({W, D})),
    ("trigger-on", op("CREATE_TRIGGER", "t", "query_log", database="main"), NONE,
     frozenset({D})),
    ("alter", op("ALTER_TABLE", "main", "members", database=None), NONE, frozenset({D})),
    ("read", op("READ", "query_log", "path", database="main"), ALL, ALL),
    ("user-table", op("INSERT", "orders", database="main"), frozenset({W, D}),
     frozenset({W, D})),
]  # fmt: skip


@pytest.mark.parametrize(
    ("operation", "listed", "future"),
    [pytest.param(o, a, b, id=i) for i, o, a, b in MAIN],
)
def test_main_holds_server_objects_only_by_the_listed_pairs(
    operation: Operation, listed: frozenset[Tier], future: frozenset[Tier]
) -> None:
    assert allowed(operation, LISTED) == listed
    assert allowed(operation, FUTURE) == future


@pytest.mark.parametrize(
    ("protected", "tiers"),
    [
        pytest.param(frozenset({("main", "notes")}), NONE, id="main-pair"),
        pytest.param(frozenset({("sqlgate", "notes")}), frozenset({W, D}), id="other-schema"),
        pytest.param(frozenset({("temp", "notes")}), frozenset({W, D}), id="temp-pair"),
        pytest.param(frozenset({("main", "Notes")}), frozenset({W, D}), id="pairs-are-folded"),
    ],
)
def test_a_pair_protects_its_own_database_only(
    protected: frozenset[tuple[str, str]], tiers: frozenset[Tier]
) -> None:
    assert allowed(op("INSERT", "notes", database="main"), protected) == tiers


@pytest.mark.parametrize(
    ("database", "tiers"),
    [
        pytest.param("temp", NONE, id="temp"),
        pytest.param("other", NONE, id="other"),
        pytest.param("Sqlgate", NONE, id="records-name-is-exact"),
        pytest.param("main", ALL, id="main"),
        pytest.param(None, ALL, id="none"),
        pytest.param(SERVER_SCHEMA, ALL, id="records"),
    ],
)
def test_no_database_but_main_and_the_records(database: str | None, tiers: frozenset[Tier]) -> None:
    assert allowed(op("READ", "t", "x", database=database), FUTURE) == tiers


def test_another_database_is_refused_by_name() -> None:
    verdict = decide(R, op("READ", "t", "x", database="other"), FUTURE)
    assert verdict.reason == "only the main database may be used, not 'other': no tool will use it"


def test_in_main_folds_names_into_main_pairs() -> None:
    assert in_main(["Query_Log", "members"]) == {("main", "query_log"), ("main", "members")}
    assert in_main([]) == frozenset()


@pytest.mark.parametrize(
    ("operation", "database"),
    [
        (op("READ", "t", "x", database="sqlgate"), "sqlgate"),
        (op("ALTER_TABLE", "sqlgate", "t", database="dropped_column"), "sqlgate"),
        (op("SELECT", database=None), None),
    ],
)
def test_database_of(operation: Operation, database: str | None) -> None:
    assert database_of(operation) == database


@pytest.mark.parametrize(
    ("ref", "protected", "refusal"),
    [
        pytest.param(Reference("c", "q", "query_log"), LISTED, "c.q REFERENCES query_log: a ",
                     id="listed-parent"),
        pytest.param(Reference("c", "q", "QUERY_LOG"), LISTED, "c.q REFERENCES QUERY_LOG: a ",
                     id="listed-parent-folded"),
        pytest.param(Reference("c", "q", "query_log"), FUTURE, "", id="apps-parent"),
        pytest.param(Reference("c", "q", "orders"), LISTED, "", id="user-parent"),
        pytest.param(Reference("c", "q", "main"), LISTED, "", id="parent-named-main"),
        pytest.param(Reference("c", "q", "orders", "sqlgate"), FUTURE,
                     "c.q REFERENCES orders in database 'sqlgate': only tables of the main",
                     id="key-in-records"),
        pytest.param(Reference("c", "q", "orders", "temp"), FUTURE,
                     "c.q REFERENCES orders in database 'temp'", id="key-in-temp"),
    ],
)  # fmt: skip
def test_a_foreign_key_points_into_its_own_database(
    ref: Reference, protected: frozenset[tuple[str, str]], refusal: str
) -> None:
    verdict = decide_reference(ref, protected)
    assert verdict.allowed is (refusal == "")
    assert verdict.reason.startswith(refusal)
    if refusal:
        assert "no tool will" in verdict.reason
