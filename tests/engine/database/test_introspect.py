"""list_tables, describe_table and get_schema: what exists, without the server's bookkeeping."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from sqlgate.errors import InvalidArgument, NotFound
from sqlgate.service import Service
from tests.conftest import FakeClock
from tests.records import connect_both


def setup_sql(db: Path, sql: str) -> None:
    """Build fixtures through a direct connection: the tests are about reading, not policy."""
    conn = connect_both(db)
    try:
        conn.execute(sql)
    finally:
        conn.close()


@pytest.fixture
def shop(service: Service, db_path: Path) -> Service:
    setup_sql(
        db_path,
        """
        CREATE TABLE customer(id INTEGER PRIMARY KEY, name TEXT NOT NULL DEFAULT 'anon');
        CREATE TABLE orders(
            id INTEGER PRIMARY KEY,
            customer_id INTEGER REFERENCES customer(id) ON DELETE CASCADE,
            note TEXT
        );
        CREATE UNIQUE INDEX orders_note ON orders(note, customer_id);
        CREATE INDEX orders_lower ON orders(lower(note)) WHERE note IS NOT NULL;
        INSERT INTO customer(name) VALUES ('ann'), ('bob'), ('cy');
        INSERT INTO orders(customer_id, note) VALUES (1, 'first');
        CREATE VIRTUAL TABLE docs USING fts5(body);
        INSERT INTO docs VALUES ('hello'), ('world');
        """,
    )
    service.create_view("big_customers", "SELECT name FROM customer", description="Who buys.")
    return service


def csv_rows(text: str) -> list[str]:
    return text.splitlines()


# -- list_tables ---------------------------------------------------------------------------


SERVER_OBJECTS = [
    ("claims", "table"),
    ("claims_history", "table"),
    ("member_tokens", "table"),
    ("members", "table"),
    ("memory_checkpoints", "table"),
    ("memory_events", "table"),
    ("memory_events_fts", "virtual"),
    ("query_errors", "view"),
    ("query_log", "table"),
    ("query_patterns", "view"),
    ("server_info", "table"),
    ("undo_changesets", "table"),
    ("undo_chunks", "table"),
    ("undo_row_states", "table"),
    ("undo_table_shapes", "table"),
]


def test_list_tables_shows_user_and_server_objects_with_row_counts(shop: Service) -> None:
    shop.append_event("first memory")
    lines = csv_rows(shop.list_tables())
    assert lines[0] == "name,type,system,rows"
    assert lines[-1] == "# 19 tables and views"
    rows = lines[1:-1]
    # one list sorted by name; the system column tells server objects apart
    # the user's objects by name, then sqlgate's records (schema sqlgate) by name
    assert rows[:11] == [
        "big_customers,view,0,",
        "customer,table,0,3",
        "docs,virtual,0,2",
        "orders,table,0,1",
        "sqlgate.claims,table,1,0",
        "sqlgate.claims_history,table,1,0",
        "sqlgate.member_tokens,table,1,0",
        "sqlgate.members,table,1,0",
        "sqlgate.memory_checkpoints,table,1,0",
        "sqlgate.memory_events,table,1,1",
        "sqlgate.memory_events_fts,virtual,1,1",
    ]
    assert rows[11] == "sqlgate.query_errors,view,1,"
    name, kind, system, count = rows[12].split(",")
    assert (name, kind, system) == ("sqlgate.query_log", "table", "1")
    assert int(count) >= 2  # the create_view and append_event calls are already logged
    assert rows[13] == "sqlgate.query_patterns,view,1,"
    assert rows[14:] == [
        "sqlgate.server_info,table,1,2",  # the database's id and its file's binding
        "sqlgate.undo_changesets,table,1,1",  # the view's CREATE keeps its undo record
        "sqlgate.undo_chunks,table,1,0",
        "sqlgate.undo_row_states,table,1,0",
        "sqlgate.undo_table_shapes,table,1,0",
    ]


def test_list_tables_counts_claims_and_their_history(service: Service) -> None:
    service.claim_add("acme", "priority", "acme is priority one", rank=1)
    service.claim_confirm(1)
    rows = csv_rows(service.list_tables())[1:-1]
    assert "sqlgate.claims,table,1,1" in rows
    assert "sqlgate.claims_history,table,1,2" in rows  # the add and the confirm


def test_list_tables_hides_shadow_and_sqlite_tables(shop: Service, db_path: Path) -> None:
    setup_sql(db_path, "CREATE TABLE seq(id INTEGER PRIMARY KEY AUTOINCREMENT); ANALYZE;")
    names = [line.split(",")[0] for line in csv_rows(shop.list_tables())[1:-1]]
    assert "seq" in names
    assert not [n for n in names if n.startswith(("docs_", "sqlite_", "memory_events_fts_"))]


def test_list_tables_without_row_counts_leaves_rows_empty(shop: Service) -> None:
    rows = csv_rows(shop.list_tables(include_row_counts=False))[1:-1]
    assert all(row.endswith(",") for row in rows)
    assert "customer,table,0," in rows


def test_list_tables_of_a_new_database_shows_only_server_objects(service: Service) -> None:
    rows = csv_rows(service.list_tables())[1:-1]
    assert [tuple(r.split(",")[:2]) for r in rows] == [
        (f"sqlgate.{name}", kind) for name, kind in SERVER_OBJECTS
    ]
    assert all(r.split(",")[2] == "1" for r in rows)


def test_a_count_past_the_deadline_leaves_the_cell_empty(
    make_service: Callable[..., Service], db_path: Path
) -> None:
    clock = FakeClock()
    service = make_service(clock_=clock, query_timeout=5.0)
    setup_sql(
        db_path,
        # count(*) of a plain table is one VM step; an fts5 table is scanned row by row
        "CREATE VIRTUAL TABLE big USING fts5(x);"
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5000) "
        "INSERT INTO big SELECT 'row ' || i FROM n;"
        "CREATE TABLE small(x); INSERT INTO small VALUES (1);",
    )
    clock.step = 1.0  # every reading of the clock now costs a second
    rows = csv_rows(service.list_tables())[1:-1]
    assert "big,virtual,0," in rows
    assert "small,table,0,1" in rows


def test_a_name_sqlite_does_not_fold_to_a_server_name_is_the_agents(
    service: Service, db_path: Path
) -> None:
    # U+212A KELVIN SIGN: Python lower-cases it to "k", SQLite compares it as it is
    kelvin = "memory_chec\u212apoints"
    setup_sql(db_path, f'CREATE TABLE "{kelvin}"(a); INSERT INTO "{kelvin}" VALUES (1)')
    assert f"{kelvin},table,0,1" in csv_rows(service.list_tables())
    assert "sqlgate.memory_checkpoints,table,1,0" in csv_rows(service.list_tables())
    assert service.describe_table(kelvin).startswith(f"# table {kelvin}\n")
    assert service.describe_table(kelvin.upper()).startswith(f"# table {kelvin}\n")
    assert service.describe_table("MEMORY_CHECKPOINTS").startswith(
        "# table sqlgate.memory_checkpoints (server object, read-only)"
    )
    assert f'CREATE TABLE "{kelvin}"' in service.get_schema()


def test_the_users_tables_named_like_sqlgates_are_the_users(
    service: Service, db_path: Path
) -> None:
    """Issue 33: an app may have its own `query_log` or `members`; the bare name is the
    app's table, `sqlgate.query_log` the server's."""
    setup_sql(
        db_path,
        "CREATE TABLE query_log(id INTEGER PRIMARY KEY, line TEXT);"
        "INSERT INTO query_log(line) VALUES ('app 1'), ('app 2');"
        "CREATE TABLE members(login TEXT)",
    )
    rows = csv_rows(service.list_tables())
    assert "query_log,table,0,2" in rows
    assert "members,table,0,0" in rows
    assert "sqlgate.members,table,1,0" in rows
    assert service.describe_table("query_log").splitlines()[:5] == [
        "# table query_log",
        "# columns",
        "cid,name,type,notnull,default,pk",
        "0,id,INTEGER,0,,1",
        "1,line,TEXT,0,,0",
    ]
    server = service.describe_table("sqlgate.query_log").splitlines()
    assert server[0] == "# table sqlgate.query_log (server object, read-only)"
    assert service.describe_table("SQLGATE.QUERY_LOG").splitlines()[0] == server[0]
    assert "CREATE TABLE query_log(id INTEGER PRIMARY KEY, line TEXT);" in service.get_schema()


def test_list_tables_quotes_odd_names(service: Service, db_path: Path) -> None:
    setup_sql(db_path, 'CREATE TABLE "odd ""name"", x"(a)')
    assert '"odd ""name"", x",table,0,0' in csv_rows(service.list_tables())


# -- describe_table ---------------------------------------------------------------------------


def test_describe_table_lists_columns_foreign_keys_and_indexes(shop: Service) -> None:
    assert shop.describe_table("orders") == "\n".join(
        [
            "# table orders",
            "# columns",
            "cid,name,type,notnull,default,pk",
            "0,id,INTEGER,0,,1",
            "1,customer_id,INTEGER,0,,0",
            "2,note,TEXT,0,,0",
            "# foreign keys",
            "id,seq,table,from,to,on_update,on_delete",
            "0,0,customer,customer_id,id,NO ACTION,CASCADE",
            "# indexes",
            "name,unique,origin,partial,columns",
            "orders_lower,0,c,1,<expression>",
            'orders_note,1,c,0,"note,customer_id"',
        ]
    )


def test_describe_table_shows_defaults_and_not_null(shop: Service) -> None:
    text = shop.describe_table("customer")
    assert "1,name,TEXT,1,'anon',0" in text
    assert "# foreign keys" not in text
    assert "# indexes" not in text


def test_describe_a_view_and_a_server_table(shop: Service) -> None:
    assert shop.describe_table("big_customers").splitlines()[0] == "# view big_customers"
    server = shop.describe_table("query_log").splitlines()
    assert server[0] == "# table sqlgate.query_log (server object, read-only)"
    assert "1,ts,TEXT,1,,0" in server


@pytest.mark.parametrize(
    ("table", "first_line", "expected"),
    [
        pytest.param(
            "memory_events",
            "# table sqlgate.memory_events (server object, read-only)",
            "6,prev_hash,TEXT,1,,0",
            id="events",
        ),
        pytest.param(
            "memory_checkpoints",
            "# table sqlgate.memory_checkpoints (server object, read-only)",
            "4,last_event_id,INTEGER,1,,0",
            id="checkpoints",
        ),
        pytest.param(
            "memory_events_fts",
            "# virtual sqlgate.memory_events_fts (server object, read-only)",
            "0,content,",
            id="fts",
        ),
        pytest.param(
            "claims",
            "# table sqlgate.claims (server object, read-only)",
            'claims_by_state,0,c,0,"state,kind"',
            id="claims",
        ),
        pytest.param(
            "claims_history",
            "# table sqlgate.claims_history (server object, read-only)",
            "6,event_id,INTEGER,0,,0",
            id="claims-history",
        ),
    ],
)
def test_describe_a_server_object(
    service: Service, table: str, first_line: str, expected: str
) -> None:
    text = service.describe_table(table)
    assert text.splitlines()[0] == first_line
    assert expected in text


def test_describe_table_finds_names_case_insensitively(shop: Service) -> None:
    assert shop.describe_table("ORDERS").startswith("# table orders")


def test_describe_an_unknown_table_is_not_found_with_a_hint(shop: Service) -> None:
    with pytest.raises(NotFound, match="list_tables"):
        shop.describe_table("nope")


@pytest.mark.parametrize("table", ["docs_data", "memory_events_fts_data", "memory_events_fts_idx"])
def test_shadow_tables_cannot_be_described(shop: Service, table: str) -> None:
    with pytest.raises(NotFound):
        shop.describe_table(table)


@pytest.mark.parametrize("table", [pytest.param("", id="empty"), pytest.param("  ", id="blank")])
def test_describe_table_needs_a_name(shop: Service, table: str) -> None:
    with pytest.raises(InvalidArgument):
        shop.describe_table(table)


# -- get_schema -------------------------------------------------------------------------------


def test_get_schema_shows_user_objects_only_by_default(shop: Service) -> None:
    # the statements; the last line names what was left out (tested below)
    schema = "\n".join(line for line in shop.get_schema().splitlines() if line[:1] != "#")
    assert "CREATE TABLE customer(" in schema
    assert "CREATE VIRTUAL TABLE docs USING fts5(body);" in schema
    assert "CREATE UNIQUE INDEX orders_note ON orders(note, customer_id);" in schema
    assert 'CREATE VIEW "big_customers" AS\n-- Who buys.\nSELECT name FROM customer;' in schema
    assert "query_log" not in schema
    assert "memory_" not in schema
    assert "claims" not in schema
    assert "docs_data" not in schema
    assert "sqlite_" not in schema


SERVER_TABLE_NAMES = ", ".join(f"sqlgate.{name}" for name, _ in SERVER_OBJECTS)


def test_get_schema_ends_saying_which_server_objects_it_left_out(shop: Service) -> None:
    last = shop.get_schema().splitlines()[-1]
    assert last == (
        f"# left out: the server's {len(SERVER_OBJECTS)} tables and views "
        f"({SERVER_TABLE_NAMES}) and their indexes and triggers; "
        "get_schema(include_system=true) shows them, read_query reads them"
    )
    # the names are the ones list_tables marks as system
    listed = [row.split(",") for row in shop.list_tables().splitlines()[1:-1]]
    assert ", ".join(name for name, _, system, _ in listed if system == "1") == SERVER_TABLE_NAMES


def test_get_schema_with_system_leaves_nothing_out(shop: Service) -> None:
    assert "left out" not in shop.get_schema(include_system=True)


def test_get_schema_with_system_shows_server_objects(shop: Service) -> None:
    schema = shop.get_schema(include_system=True)
    for name in ("query_log", "query_errors", "query_patterns", "query_log_no_update"):
        assert name in schema
    for name in (
        "CREATE TABLE memory_events (",
        "CREATE VIRTUAL TABLE memory_events_fts USING fts5(",
        "CREATE TABLE memory_checkpoints (",
        "CREATE INDEX memory_events_by_session",
        "CREATE TRIGGER memory_events_no_update",
        "CREATE TRIGGER memory_checkpoints_no_delete",
        "CREATE TABLE claims (",
        "CREATE INDEX claims_by_state",
        "CREATE TRIGGER claims_no_delete",
        "CREATE TRIGGER claims_retired_is_final",
        "CREATE TABLE claims_history (",
        "CREATE INDEX claims_history_by_claim",
        "CREATE TRIGGER claims_history_no_update",
    ):
        assert name in schema
    assert "docs_data" not in schema
    assert "memory_events_fts_" not in schema  # shadow tables stay hidden
    assert "CREATE TABLE customer(" in schema


def test_get_schema_orders_tables_before_indexes_before_views(shop: Service) -> None:
    schema = shop.get_schema()
    assert schema.index("CREATE TABLE") < schema.index("CREATE UNIQUE INDEX")
    assert schema.index("CREATE UNIQUE INDEX") < schema.index("CREATE VIEW")


def test_get_schema_of_an_empty_database_says_so(service: Service) -> None:
    assert service.get_schema().splitlines() == [
        "# the database has no tables or views yet; create one with write_query",
        f"# left out: the server's {len(SERVER_OBJECTS)} tables and views "
        f"({SERVER_TABLE_NAMES}) and their indexes and triggers; "
        "get_schema(include_system=true) shows them, read_query reads them",
    ]
    assert "CREATE TABLE query_log" in service.get_schema(include_system=True)
