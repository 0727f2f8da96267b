"""Every refusal's advice leads somewhere: the tool it names accepts the same statement, or
it says plainly that no tool will (and then none does).

Each case is a statement refused by one tool. The advice is read from the message: the SQL
tool it names other than the refusing one, or the words "no tool will". The advised tool is
then called with the same statement, on a fresh database, and must accept it.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from sqlgate.errors import InvalidArgument, PolicyDenied, SqlgateError
from sqlgate.service import Service
from tests.agent_calls import call

SQL_TOOLS = ("read_query", "write_query", "destructive_query")
TOOLS = (*SQL_TOOLS, "create_view")
NO_TOOL = re.compile(r"\bno tool will\b")
TOOL_NAME = re.compile(r"\b(read_query|write_query|destructive_query|create_view)\b")


@pytest.fixture
def app(make_service: Callable[..., Service]) -> Service:
    service = make_service(max_update_rows=3)
    for sql in (
        "CREATE TABLE notes(id INTEGER PRIMARY KEY AUTOINCREMENT, body TEXT)",
        "CREATE TABLE tasks(id INTEGER PRIMARY KEY, note_id INTEGER REFERENCES notes(id))",
        "CREATE TABLE flights(airline TEXT, n INT)",
        "CREATE VIRTUAL TABLE docs USING fts5(body)",
        "CREATE VIRTUAL TABLE marks USING fts5(body, content='')",
        "INSERT INTO notes(body) VALUES ('a'), ('b'), ('c'), ('d'), ('e')",
        "INSERT INTO tasks(note_id) VALUES (1)",
        "CREATE TABLE keyed(k TEXT PRIMARY KEY, v)",
        "CREATE TABLE indexed(id INTEGER PRIMARY KEY, body TEXT)",
    ):
        service.write_query(sql)
    for sql in (  # a virtual table's rows: no changeset undoes them (write_query refuses)
        "INSERT INTO docs(body) VALUES ('hello')",
        "CREATE TRIGGER indexing AFTER INSERT ON indexed "
        "BEGIN INSERT INTO docs(body) VALUES (NEW.body); END",
    ):
        service.destructive_query(sql, reason="set up")
    service.destructive_query(
        "CREATE TRIGGER tidy AFTER INSERT ON flights BEGIN DELETE FROM notes WHERE id = 5; END",
        reason="a trigger whose DELETE write_query refuses",
    )
    return service


def refusal(service: Service, tool: str, sql: str) -> str:
    with pytest.raises(PolicyDenied) as caught:
        call(service, tool, sql)
    return str(caught.value)


def advised_tools(message: str, refusing: str) -> set[str]:
    return set(TOOL_NAME.findall(message)) - {refusing}


CASES = [
    # -- a statement in the wrong tier: the advice names the tier that takes it
    ("read_query", "INSERT INTO notes(body) VALUES ('f')"),
    ("read_query", "REPLACE INTO notes(id, body) VALUES (2, 'q')"),
    ("read_query", "UPDATE notes SET body = 'z' WHERE id = 1"),
    ("read_query", "DELETE FROM notes WHERE id = 2"),
    ("read_query", "WITH x AS (SELECT 'w') INSERT INTO notes(body) SELECT * FROM x"),
    ("read_query", "CREATE TABLE extra(x)"),
    ("read_query", "CREATE INDEX notes_body ON notes(body)"),
    ("read_query", "ANALYZE"),
    ("read_query", "REINDEX notes"),
    ("read_query", "DROP TABLE flights"),
    ("read_query", "CREATE VIEW v AS SELECT body FROM notes"),
    ("write_query", "CREATE VIEW v AS SELECT body FROM notes"),
    ("write_query", "SELECT * FROM notes"),
    ("write_query", "EXPLAIN SELECT 1"),
    ("write_query", "PRAGMA user_version"),
    ("write_query", "PRAGMA table_info(notes)"),
    ("write_query", "DELETE FROM notes WHERE id = 2"),
    ("write_query", "DROP TABLE flights"),
    ("write_query", "DROP VIEW IF EXISTS nothing_here"),
    ("write_query", "ALTER TABLE flights ADD COLUMN c"),
    ("write_query", "CREATE TRIGGER tr AFTER INSERT ON notes BEGIN SELECT 1; END"),
    ("destructive_query", "SELECT 1"),
    ("write_query", "EXPLAIN DELETE FROM notes WHERE id = 2"),
    ("read_query", "EXPLAIN DELETE FROM notes WHERE id = 2"),
    ("read_query", "EXPLAIN QUERY PLAN INSERT INTO notes(body) VALUES ('f')"),
    ("destructive_query", "EXPLAIN QUERY PLAN SELECT * FROM notes"),
    ("write_query", "WITH x AS (SELECT 2 AS id) DELETE FROM notes WHERE id IN (SELECT id FROM x)"),
    ("write_query", "PRAGMA main.table_info(notes)"),
    ("write_query", "PRAGMA main.user_version = 3"),
    ("write_query", "DROP INDEX IF EXISTS nothing_here"),
    ("write_query", "DROP TABLE main.query_log"),
    ("read_query", "SELECT * FROM notes; DROP TABLE notes"),
    ("destructive_query", "PRAGMA table_info(notes)"),
    ("create_view", "DELETE FROM notes WHERE id = 2"),
    ("create_view", "INSERT INTO notes(body) VALUES ('f')"),
    ("create_view", "PRAGMA user_version"),
    # -- guards of write_query: the advice is destructive_query
    ("write_query", "UPDATE notes SET body = 'x'"),
    ("write_query", "UPDATE notes SET body = 'x' WHERE 1 = 1"),
    ("write_query", "UPDATE notes SET body = 'x' WHERE id > 0"),  # the mass-update guard
    ("write_query", "INSERT INTO marks(marks) VALUES ('delete-all')"),
    ("write_query", "INSERT INTO docs(docs) VALUES ('rebuild')"),
    ("write_query", "INSERT INTO flights(airline, n) VALUES ('x', 1)"),  # its trigger deletes
    ("write_query", "UPDATE sqlite_sequence SET seq = 10 WHERE name = 'notes'"),
    # -- changes write_query cannot undo: the advice is destructive_query (a snapshot first)
    ("write_query", "INSERT INTO keyed(v) VALUES ('a NULL key')"),
    ("write_query", "INSERT INTO docs(body) VALUES ('more')"),
    ("write_query", "INSERT INTO indexed(body) VALUES ('through a trigger')"),
    ("write_query", "INSERT INTO docs(docs) VALUES ('optimize')"),
    # -- server objects: append-only or off limits in every tool
    ("write_query", "DELETE FROM query_log"),
    ("destructive_query", "DELETE FROM query_log"),
    ("read_query", "DELETE FROM query_log WHERE id = 1"),
    ("write_query", "UPDATE query_log SET tool = 'x' WHERE id = 1"),
    ("destructive_query", "INSERT INTO query_log(tool) VALUES ('x')"),
    ("write_query", "DROP TABLE query_log"),
    ("destructive_query", "DROP TABLE query_log"),
    ("write_query", "ALTER TABLE query_log ADD COLUMN c"),
    # an index goes in the schema of its table: named plainly it is the user's (main), so the
    # records' table is reached only as sqlgate.* (issue 33)
    ("write_query", "CREATE INDEX sqlgate.ql_tool ON query_log(tool)"),
    # from read_query, these once sent the agent to write_query, which refused them too
    ("read_query", "CREATE INDEX ql_tool ON query_log(tool)"),
    ("read_query", "CREATE UNIQUE INDEX IF NOT EXISTS main.ql_id ON main.query_log (id)"),
    ("read_query", "REINDEX query_log"),
    ("read_query", "REINDEX main.query_log"),
    ("write_query", "REINDEX query_log"),
    ("read_query", "CREATE TRIGGER tq AFTER INSERT ON query_log BEGIN SELECT 1; END"),
    ("write_query", "CREATE TRIGGER tq BEFORE UPDATE OF tool ON query_log BEGIN SELECT 1; END"),
    ("write_query", "CREATE TABLE query_log(x)"),
    # a foreign key resolves in its own file: one to the records is no longer possible
    ("write_query", "CREATE TABLE sqlgate.r(id INTEGER REFERENCES query_log(id))"),
    (
        "destructive_query",
        "CREATE TRIGGER tr AFTER INSERT ON notes BEGIN DELETE FROM query_log; END",
    ),
    # -- setting a pragma is never allowed, whatever the tool
    ("write_query", "PRAGMA journal_mode = DELETE"),
    ("write_query", "PRAGMA foreign_keys = OFF"),
    ("write_query", "PRAGMA user_version = 3"),
    ("destructive_query", "PRAGMA foreign_keys = OFF"),
    ("read_query", "PRAGMA user_version = 3"),
    ("read_query", "PRAGMA writable_schema = 1"),
    ("write_query", "PRAGMA writable_schema = 1"),
    ("create_view", "PRAGMA user_version = 3"),
    # -- never allowed
    ("read_query", "ATTACH 'other.db' AS other"),
    ("write_query", "DETACH other"),
    ("destructive_query", "VACUUM"),
    ("write_query", "BEGIN"),
    ("destructive_query", "COMMIT"),
    ("read_query", "ROLLBACK"),
    ("write_query", "SAVEPOINT a"),
    ("write_query", "RELEASE a"),
    ("write_query", "CREATE TEMP TABLE scratch(x)"),
    ("destructive_query", "CREATE TEMP TRIGGER tt AFTER INSERT ON notes BEGIN SELECT 1; END"),
    ("read_query", "CREATE TEMP VIEW tv AS SELECT 1"),
    ("read_query", "SELECT load_extension('evil')"),
    ("write_query", "CREATE VIRTUAL TABLE old USING fts4(body)"),
    ("write_query", "REINDEX"),
    ("read_query", "SELECT 1; SELECT 2"),
    ("write_query", "INSERT INTO notes(body) VALUES ('f'); DELETE FROM notes"),
    ("search_text", "load_extension('evil') IS NULL"),
]


@pytest.mark.parametrize(("tool", "sql"), CASES, ids=[f"{t}:{s}" for t, s in CASES])
def test_a_refusal_names_a_tool_that_accepts_or_says_no_tool_will(
    app: Service, make_service: Callable[..., Service], tool: str, sql: str
) -> None:
    message = refusal(app, tool, sql)
    advised = advised_tools(message, tool)
    if NO_TOOL.search(message):
        for other in SQL_TOOLS:  # and it is true: every SQL tool refuses it
            with pytest.raises(SqlgateError):
                call(app, other, sql)
        return
    assert len(advised) == 1, f"names no tool to use, nor says none will: {message}"
    (next_tool,) = advised
    assert next_tool in TOOLS
    try:
        call(app, next_tool, sql)
    except PolicyDenied as exc:
        pytest.fail(f"{tool} said {message!r}; {next_tool} then refused: {exc}")


def test_create_view_given_a_whole_create_view_says_to_send_the_select_alone(
    app: Service,
) -> None:
    with pytest.raises(SqlgateError) as caught:
        app.create_view("v", "CREATE VIEW v AS SELECT body FROM notes")
    assert "select_sql is the SELECT alone" in str(caught.value)
    assert "use create_view" not in str(caught.value)
    assert "advised" not in app.create_view("v", "SELECT body FROM notes")


@pytest.mark.parametrize("tool", SQL_TOOLS)
def test_setting_a_pragma_says_no_tool_will_and_how_to_read_it(app: Service, tool: str) -> None:
    message = refusal(app, tool, "PRAGMA journal_mode = DELETE")
    assert "no tool will set it" in message
    read = re.search(r"read it with `([^`]+)` in read_query", message)
    assert read is not None, message
    assert app.read_query(read[1]).startswith("journal_mode\n")


def test_a_pragma_that_cannot_be_read_either_says_no_tool_runs_it(app: Service) -> None:
    message = refusal(app, "write_query", "PRAGMA writable_schema = 1")
    assert "no tool will run it" in message
    assert "read it with" not in message


# -- what the guards say destructive_query keeps follows --undo ------------------------------
GUARDED = [
    pytest.param("UPDATE notes SET body = 'x'", id="update-without-where"),
    pytest.param("UPDATE notes SET body = 'x' WHERE 1 = 1", id="where-names-no-column"),
    pytest.param("UPDATE notes SET body = 'x' WHERE id > 0", id="mass-update"),
]
KEEPS = {
    "rows": "destructive_query (it keeps the changed rows for undo)",
    "file": "destructive_query (it takes a whole-file snapshot first: --undo file)",
}


@pytest.mark.parametrize("undo", sorted(KEEPS))
@pytest.mark.parametrize("sql", GUARDED)
def test_a_guard_says_what_destructive_query_keeps_under_the_undo_setting(
    make_service: Callable[..., Service], undo: str, sql: str
) -> None:
    service = make_service(max_update_rows=3, undo=undo)
    service.write_query("CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT)")
    service.write_query("INSERT INTO notes(body) VALUES ('a'), ('b'), ('c'), ('d'), ('e')")
    message = refusal(service, "write_query", sql)
    assert KEEPS[undo] in message
    (other,) = set(KEEPS) - {undo}
    assert KEEPS[other] not in message
    answer = service.destructive_query(sql, "the guard test")
    assert ("snapshot" in answer) is (undo == "file")


# -- a key another dialect spells as an auto-generated id: refused with the fix -----------
AUTO_IDS = [
    pytest.param("CREATE TABLE c(id SERIAL PRIMARY KEY, v TEXT)",
                 "CREATE TABLE c(id INTEGER PRIMARY KEY, v TEXT)", id="serial"),
    pytest.param("CREATE TABLE c(id INT AUTO_INCREMENT PRIMARY KEY, v TEXT)",
                 "CREATE TABLE c(id INTEGER PRIMARY KEY, v TEXT)", id="auto-increment"),
    pytest.param("CREATE TABLE c(id BIGSERIAL PRIMARY KEY, v TEXT)",
                 "CREATE TABLE c(id INTEGER PRIMARY KEY, v TEXT)", id="bigserial"),
    pytest.param('CREATE TABLE "Order Lines"(\n  `id` INT(11) NOT NULL AUTO_INCREMENT, -- pk\n'
                 "  qty INT,\n  PRIMARY KEY (`id`)\n)",
                 'CREATE TABLE "Order Lines"(\n  `id` INTEGER NOT NULL, -- pk\n'
                 "  qty INT,\n  PRIMARY KEY (`id`)\n)", id="mysql-quoted-multiline"),
    pytest.param("CREATE TABLE IF NOT EXISTS c(id BIGINT PRIMARY KEY, v)",
                 "CREATE TABLE IF NOT EXISTS c(id INTEGER PRIMARY KEY, v)", id="bigint"),
    pytest.param("CREATE TABLE c([Id] INT IDENTITY(1,1) PRIMARY KEY, v)",
                 "CREATE TABLE c([Id] INTEGER PRIMARY KEY, v)", id="identity"),
]  # fmt: skip


def _tables(service: Service) -> list[str]:
    return service.read_query("SELECT name FROM sqlite_schema ORDER BY name").splitlines()


@pytest.mark.parametrize("tool", ["write_query", "destructive_query"])
@pytest.mark.parametrize(("sql", "rewrite"), AUTO_IDS)
def test_a_key_sqlite_would_leave_null_is_refused_with_the_statement_to_send(
    make_service: Callable[..., Service], tool: str, sql: str, rewrite: str
) -> None:
    service = make_service()
    before = _tables(service)
    with pytest.raises(InvalidArgument) as refused:
        call(service, tool, sql)
    message = str(refused.value)
    assert message.startswith("refused: the primary key declared as ")
    assert message.endswith(f"Nothing was run. Send instead: {rewrite}")
    assert _tables(service) == before
    assert not service.settings.snapshot_dir.exists() or not any(
        service.settings.snapshot_dir.iterdir()
    )
    assert call(service, tool, rewrite).startswith("ok: CREATE TABLE done")  # as sent back
    table = '"Order Lines"' if "Order" in sql else "c"
    key = "[Id]" if "[Id]" in sql else "`id`"
    service.write_query(f"INSERT INTO {table} DEFAULT VALUES")
    numbered = f"SELECT count(*) FROM {table} WHERE rowid = 1 AND {key} = 1"
    assert service.read_query(numbered).splitlines()[1] == "1"  # SQLite numbered the key


@pytest.mark.parametrize(("sql", "rewrite"), AUTO_IDS)
def test_read_query_sends_such_a_create_to_write_query(
    app: Service, sql: str, rewrite: str
) -> None:
    assert "use write_query" in refusal(app, "read_query", sql)


@pytest.mark.parametrize(
    "sql",
    [
        pytest.param("CREATE TABLE k(id INTEGER PRIMARY KEY, v TEXT)", id="integer-primary-key"),
        pytest.param("CREATE TABLE k(code TEXT PRIMARY KEY, v TEXT)", id="text-key"),
        pytest.param("CREATE TABLE k(id BIGINT NOT NULL PRIMARY KEY)", id="explicit-ids"),
        pytest.param("CREATE TABLE k(a INT, b INT, PRIMARY KEY (a, b))", id="composite"),
        pytest.param("CREATE TABLE k(id INT PRIMARY KEY) WITHOUT ROWID", id="without-rowid"),
        pytest.param("CREATE TABLE k(id INTEGER PRIMARY KEY AUTOINCREMENT)", id="autoincrement"),
    ],
)
@pytest.mark.parametrize("tool", ["write_query", "destructive_query"])
def test_keys_sqlite_numbers_or_that_are_always_given_are_created(
    service: Service, tool: str, sql: str
) -> None:
    assert call(service, tool, sql).startswith("ok: CREATE TABLE done")
