"""A statement of another dialect that SQLite refuses is answered with SQLite's statement,
ready to send, never run; another tool's command with the tool and the query; and a
statement that runs but means something else there gets one trailer line.

Every case was seen failing before the rewrites existed (the answer then said only "check
the SQL" or "no such function").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw
import pytest

from sqlgate.engine.rules import NO_RULES
from sqlgate.engine.statements import Tier
from sqlgate.errors import PolicyDenied, SqlError, SqlgateError
from sqlgate.service import Service
from tests.agent_calls import call as agent_call

SEND = re.compile(r"[Ss]end instead(?:, as (\w+))?: (.*)\Z", re.S)
ROWS = [
    (1, "Ann Lee", "ann@example.com", "2024-03-05 10:11:12", 3, 4),
    (2, "bob stone", None, "2024-04-01 00:00:00", 1, 2),
    (3, "Cy Ames", "cy@example.com", "2023-12-31 23:59:59", 5, 5),
]
TOOLS = {"read": "read_query", "write": "write_query", "destructive": "destructive_query"}


@pytest.fixture
def app(service: Service) -> Service:
    service.write_query(
        "CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT, email TEXT, created_at TEXT, "
        "score INTEGER, total INTEGER)"
    )
    service.write_query(
        "INSERT INTO users VALUES " + ", ".join("(?, ?, ?, ?, ?, ?)" for _ in ROWS),
        [value for row in ROWS for value in row],
    )
    return service


def call(service: Service, tool: str, sql: str) -> str:
    """`tool` is read, write or destructive."""
    return agent_call(service, TOOLS[tool], sql)


def refused(service: Service, tool: str, sql: str) -> str:
    with pytest.raises(SqlgateError) as caught:
        call(service, tool, sql)
    return str(caught.value)


def offered(message: str) -> tuple[str | None, str]:
    found = SEND.search(message)
    assert found is not None, message
    return found[1], found[2]


def rows(answer: str) -> list[str]:
    """The rows of a read's CSV answer: no header (names differ between dialects), no
    trailer lines."""
    return [line for line in answer.splitlines()[1:] if not line.startswith("# ")]


# (id, tool, the statement sent, SQLite's statement giving the intended rows, words the
# answer must hold besides the rewrite)
READS = [
    ("pg-ilike", "SELECT id FROM users WHERE name ILIKE 'a%'",
     "SELECT id FROM users WHERE name LIKE 'a%'", "ASCII"),
    ("pg-now-interval",
     "SELECT count(*) FROM users WHERE created_at > NOW() - INTERVAL '100 years'",
     "SELECT count(*) FROM users", "UTC"),
    ("pg-now", "SELECT NOW() > '2000-01-01'", "SELECT 1", ""),
    ("pg-date-trunc-day", "SELECT DATE_TRUNC('day', created_at) FROM users ORDER BY id",
     "SELECT date(created_at) || ' 00:00:00' FROM users ORDER BY id", ""),
    ("pg-date-trunc-month", "SELECT DATE_TRUNC('month', created_at) FROM users ORDER BY id",
     "SELECT strftime('%Y-%m-01 00:00:00', created_at) FROM users ORDER BY id", ""),
    ("pg-date-trunc-week", "SELECT DATE_TRUNC('week', created_at) FROM users ORDER BY id",
     "SELECT * FROM (VALUES ('2024-03-04 00:00:00'), ('2024-04-01 00:00:00'), "
     "('2023-12-25 00:00:00'))", ""),
    ("pg-cast-colons", "SELECT id::text || '!' FROM users ORDER BY id",
     "SELECT id || '!' FROM users ORDER BY id", ""),
    ("pg-cast-date", "SELECT count(*) FROM users WHERE created_at::date = '2024-03-05'",
     "SELECT 1", ""),
    ("pg-generate-series", "SELECT * FROM generate_series(1, 40)",
     "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 40) "
     "SELECT i FROM n", ""),
    ("pg-generate-series-alias", "SELECT sum(n) FROM generate_series(2, 10, 2) AS g(n)",
     "SELECT 30", ""),
    ("pg-greatest", "SELECT GREATEST(score, total) FROM users ORDER BY id",
     "SELECT max(score, total) FROM users ORDER BY id", ""),
    ("pg-least", "SELECT LEAST(score, total) FROM users ORDER BY id",
     "SELECT min(score, total) FROM users ORDER BY id", ""),
    ("pg-extract-year", "SELECT EXTRACT(YEAR FROM created_at) FROM users ORDER BY id",
     "SELECT * FROM (VALUES (2024), (2024), (2023))", ""),
    ("pg-date-part", "SELECT DATE_PART('month', created_at) FROM users ORDER BY id",
     "SELECT * FROM (VALUES (3), (4), (12))", ""),
    ("pg-any-array", "SELECT name FROM users WHERE id = ANY(ARRAY[1, 3]) ORDER BY id",
     "SELECT name FROM users WHERE id IN (1, 3) ORDER BY id", ""),
    ("pg-split-part", "SELECT SPLIT_PART(name, ' ', 2) FROM users ORDER BY id",
     "SELECT * FROM (VALUES ('Lee'), ('stone'), ('Ames'))", ""),
    ("pg-to-char", "SELECT TO_CHAR(created_at, 'YYYY-MM') FROM users ORDER BY id",
     "SELECT strftime('%Y-%m', created_at) FROM users ORDER BY id", ""),
    ("pg-current-timestamp-call", "SELECT CURRENT_TIMESTAMP() > '2000'", "SELECT 1", ""),
    ("pg-information-schema-tables",
     "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'",
     "SELECT 'users'", "information_schema"),
    ("pg-information-schema-columns",
     "SELECT column_name, data_type FROM information_schema.columns "
     "WHERE table_name = 'users' ORDER BY ordinal_position",
     "SELECT name, lower(type) FROM pragma_table_info('users') ORDER BY cid", ""),
    ("pg-regex", "SELECT id FROM users WHERE name ~ '^A'", "SELECT 1", "GLOB"),
    ("pg-regex-insensitive", "SELECT id FROM users WHERE name ~* 'STONE$'", "SELECT 2", "GLOB"),
    ("mysql-regexp", "SELECT id FROM users WHERE name REGEXP '^[a-b]' ORDER BY id",
     "SELECT * FROM (VALUES (1), (2))", "case"),
    ("mysql-monthname", "SELECT MONTHNAME(created_at), DAYNAME(created_at) FROM users "
     "WHERE id = 1", "SELECT 'March', 'Tuesday'", ""),
    ("mysql-date-format-names", "SELECT DATE_FORMAT(created_at, '%M %Y') FROM users WHERE id = 3",
     "SELECT 'December 2023'", ""),
    ("mysql-timestampdiff", "SELECT TIMESTAMPDIFF(HOUR, created_at, '2024-03-06 12:00:00') "
     "FROM users WHERE id = 1", "SELECT 25", ""),
    ("mysql-last-day", "SELECT LAST_DAY(created_at) FROM users WHERE id = 1",
     "SELECT '2024-03-31'", ""),
    ("mysql-str-to-date", "SELECT count(*) FROM users WHERE created_at >= "
     "STR_TO_DATE('01/04/2024', '%d/%m/%Y')", "SELECT 1", ""),
    ("mysql-count-distinct-pair", "SELECT COUNT(DISTINCT score, email) FROM users",
     "SELECT 2", ""),
    ("tsql-national-dbo", "SELECT id FROM [dbo].[users] WHERE name = N'Ann Lee'", "SELECT 1", ""),
    ("duckdb-group-by-all", "SELECT score > 2, count(*) FROM users GROUP BY ALL ORDER BY 1",
     "SELECT * FROM (VALUES (0, 1), (1, 2))", ""),
    ("pg-unnest", "SELECT x FROM unnest(ARRAY[3, 1, 2]) AS x ORDER BY x",
     "SELECT * FROM (VALUES (1), (2), (3))", ""),
    ("pg-at-time-zone-utc", "SELECT count(*) FROM users WHERE created_at::timestamptz "
     "AT TIME ZONE 'UTC' < '2024-01-01'", "SELECT 1", ""),
    ("mysql-date-format", "SELECT DATE_FORMAT(created_at, '%Y-%m') FROM users ORDER BY id",
     "SELECT strftime('%Y-%m', created_at) FROM users ORDER BY id", ""),
    ("mysql-year-month", "SELECT YEAR(created_at), MONTH(created_at) FROM users ORDER BY id",
     "SELECT * FROM (VALUES (2024, 3), (2024, 4), (2023, 12))", ""),
    ("mysql-date-sub", "SELECT count(*) FROM users WHERE created_at > DATE_SUB(NOW(), "
     "INTERVAL 100 YEAR)", "SELECT 3", ""),
    ("mysql-left-right", "SELECT LEFT(name, 2), RIGHT(name, 3) FROM users ORDER BY id",
     "SELECT substr(name, 1, 2), substr(name, -3) FROM users ORDER BY id", ""),
    ("mysql-curdate", "SELECT CURDATE() > '2000-01-01'", "SELECT 1", ""),
    ("mysql-div", "SELECT score DIV 2 FROM users ORDER BY id",
     "SELECT score / 2 FROM users ORDER BY id", ""),
    ("mysql-datediff", "SELECT DATEDIFF('2024-03-10', created_at) FROM users WHERE id = 1",
     "SELECT 5", ""),
    ("tsql-top", "SELECT TOP 1 name FROM users ORDER BY id",
     "SELECT name FROM users ORDER BY id LIMIT 1", ""),
    ("tsql-getdate", "SELECT count(*) FROM users WHERE created_at < GETDATE()", "SELECT 3", ""),
    ("tsql-dateadd", "SELECT DATEADD(day, 1, created_at) FROM users WHERE id = 2",
     "SELECT '2024-04-02 00:00:00'", ""),
    ("tsql-isnull", "SELECT ISNULL(email, 'none') FROM users ORDER BY id",
     "SELECT coalesce(email, 'none') FROM users ORDER BY id", ""),
    ("duckdb-date-trunc-year", "SELECT date_trunc('year', created_at) FROM users WHERE id = 3",
     "SELECT '2023-01-01 00:00:00'", ""),
]  # fmt: skip


@pytest.mark.parametrize(("sql", "intended", "words"), [c[1:] for c in READS],
                         ids=[c[0] for c in READS])  # fmt: skip
def test_a_read_in_another_dialect_is_answered_with_sqlites(
    app: Service, sql: str, intended: str, words: str
) -> None:
    message = refused(app, "read", sql)
    assert words in message
    tool, rewrite = offered(message)
    assert tool is None  # the same tool takes it
    assert rows(app.read_query(rewrite)) == rows(app.read_query(intended))


# (id, tool the agent called, the statement, the tool the rewrite is for, the rewrite)
CHANGES = [
    ("truncate", "destructive", "TRUNCATE users", None, "DELETE FROM users"),
    ("truncate-table", "destructive", "TRUNCATE TABLE users", None, "DELETE FROM users"),
    ("add-column-if-not-exists", "destructive",
     "ALTER TABLE users ADD COLUMN IF NOT EXISTS phone TEXT", None,
     "ALTER TABLE users ADD COLUMN phone TEXT"),
    ("default-now", "write", "CREATE TABLE events(id INTEGER PRIMARY KEY, at TIMESTAMP "
     "DEFAULT NOW())", None,
     "CREATE TABLE events(id INTEGER PRIMARY KEY, at TIMESTAMP DEFAULT CURRENT_TIMESTAMP)"),
    ("serial-and-default-now", "write", "CREATE TABLE log(id SERIAL PRIMARY KEY, at TIMESTAMP "
     "DEFAULT NOW())", None,
     "CREATE TABLE log(id INTEGER PRIMARY KEY, at TIMESTAMP DEFAULT CURRENT_TIMESTAMP)"),
    ("mysql-table-options", "write", "CREATE TABLE tags(id INTEGER PRIMARY KEY, name "
     "VARCHAR(20) COMMENT 'shown') ENGINE=InnoDB DEFAULT CHARSET=utf8mb4", None,
     "CREATE TABLE tags(id INTEGER PRIMARY KEY, name VARCHAR(20))"),
    ("mysql-on-update", "write", "CREATE TABLE seen(id INTEGER PRIMARY KEY, at TIMESTAMP "
     "DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP)", None,
     "CREATE TABLE seen(id INTEGER PRIMARY KEY, at TIMESTAMP DEFAULT CURRENT_TIMESTAMP)"),
    ("insert-now", "write", "INSERT INTO users(name, created_at) VALUES ('Di', NOW())", None,
     "INSERT INTO users (name, created_at) VALUES ('Di', CURRENT_TIMESTAMP)"),
    ("mysql-update-join", "write", "UPDATE users u JOIN users v ON v.id = u.id + 1 "
     "SET u.score = v.score WHERE u.id = 1", None,
     "UPDATE users AS u SET score = v.score FROM users AS v WHERE v.id = u.id + 1 AND u.id = 1"),
    ("tsql-update-from-join", "write", "UPDATE u SET u.score = 0 FROM users u INNER JOIN "
     "users v ON v.id = u.id + 1 WHERE v.score = 1", None,
     "UPDATE users AS u SET score = 0 FROM users AS v WHERE v.id = u.id + 1 AND v.score = 1"),
    ("mysql-update-order-limit", "write", "UPDATE users SET score = 0 WHERE score > 0 "
     "ORDER BY created_at LIMIT 1", None,
     "UPDATE users SET score = 0 WHERE rowid IN (SELECT rowid FROM users WHERE score > 0 "
     "ORDER BY created_at LIMIT 1)"),
    ("pg-delete-using", "destructive", "DELETE FROM users USING users AS v WHERE "
     "users.id = v.id + 1 AND v.score = 3", None,
     "DELETE FROM users WHERE EXISTS(SELECT 1 FROM users AS v WHERE users.id = v.id + 1 "
     "AND v.score = 3)"),
    ("mysql-on-duplicate-key", "write", "INSERT INTO users (id, name) VALUES (1, 'Ann') "
     "ON DUPLICATE KEY UPDATE name = VALUES(name)", None,
     "INSERT INTO users (id, name) VALUES (1, 'Ann') ON CONFLICT DO UPDATE SET name = "
     "excluded.name"),
    ("tsql-output-inserted", "write", "INSERT INTO users (name) OUTPUT INSERTED.id "
     "VALUES ('Di')", None, "INSERT INTO users (name) VALUES ('Di') RETURNING id"),
    ("update-interval", "write", "UPDATE users SET created_at = created_at + INTERVAL '1 day' "
     "WHERE id = 1", None,
     "UPDATE users SET created_at = DATETIME(created_at, '+1 days') WHERE id = 1"),
]  # fmt: skip


@pytest.mark.parametrize(("tool", "sql", "for_tool", "rewrite"), [c[1:] for c in CHANGES],
                         ids=[c[0] for c in CHANGES])  # fmt: skip
def test_a_change_in_another_dialect_is_answered_and_not_run(
    app: Service, tool: str, sql: str, for_tool: str | None, rewrite: str
) -> None:
    before = app.read_query("SELECT * FROM sqlite_schema"), app.read_query("SELECT * FROM users")
    message = refused(app, tool, sql)
    assert offered(message) == (for_tool, rewrite)
    after = app.read_query("SELECT * FROM sqlite_schema"), app.read_query("SELECT * FROM users")
    assert after == before  # the rewrite was never run
    call(app, {None: tool, "destructive_query": "destructive"}[for_tool], rewrite)


@pytest.mark.parametrize(
    ("tool", "sql", "words"),
    [
        (
            "read",
            "TRUNCATE users",
            "In SQLite it is DELETE FROM users, which only destructive_query",
        ),
        ("read", "TRUNCATE TABLE users", "only destructive_query runs (read_query does not)"),
        ("write", "TRUNCATE users", "only destructive_query runs (write_query does not)"),
    ],
)
def test_a_change_sent_to_a_tool_that_does_not_make_it_names_the_tool_offering_nothing(
    app: Service, tool: str, sql: str, words: str
) -> None:
    message = refused(app, tool, sql)
    assert words in message
    assert SEND.search(message) is None  # a read tool is never handed a write to send


def test_add_column_if_not_exists_of_a_column_there_says_nothing_is_needed(app: Service) -> None:
    message = refused(app, "destructive", "ALTER TABLE users ADD COLUMN IF NOT EXISTS email TEXT")
    assert "has a column email already" in message
    assert "no statement is needed" in message
    assert SEND.search(message) is None


# another tool's command: (id, the command, the tool named, the query's rows)
COMMANDS = [
    ("show-tables", "SHOW TABLES", "list_tables", ["users,table"]),
    ("psql-dt", "\\dt", "list_tables", ["users,table"]),
    ("describe", "DESCRIBE users", "describe_table", None),
    ("desc", "desc users;", "describe_table", None),
    ("show-columns", "SHOW COLUMNS FROM users", "describe_table", None),
    ("psql-d-table", "\\d users", "describe_table", None),
    ("show-create", "SHOW CREATE TABLE users", "get_schema", None),
    ("show-index", "SHOW INDEX FROM users", "describe_table", []),
    ("show-databases", "SHOW DATABASES", "list_tables", None),
]


@pytest.mark.parametrize(("sql", "tool", "expected"), [c[1:] for c in COMMANDS],
                         ids=[c[0] for c in COMMANDS])  # fmt: skip
def test_another_tools_command_names_the_tool_and_the_query(
    app: Service, sql: str, tool: str, expected: list[str] | None
) -> None:
    message = refused(app, "read", sql)
    assert "command of another database tool" in message
    assert tool in message
    for_tool, query = offered(message)
    assert for_tool is None
    answer = rows(app.read_query(query))
    if expected is not None:
        assert answer == expected
    else:
        assert answer  # the columns, the definition, the databases


def test_describe_of_a_missing_table_says_so(app: Service) -> None:
    message = refused(app, "read", "DESCRIBE nowhere")
    assert "there is no table nowhere: call list_tables" in message
    assert SEND.search(message) is None


# statements that get no rewrite and no note: valid SQLite, and failures a rewrite cannot fix
NOTHING = [
    ("valid", "read", "SELECT name FROM users WHERE name LIKE 'A%'"),
    ("valid-cast-real", "read", "SELECT CAST(score AS REAL) / total FROM users"),
    ("valid-strftime", "read", "SELECT strftime('%Y', created_at) FROM users"),
    ("valid-plus-numbers", "read", "SELECT score + 1, '5' + 1 FROM users"),
    ("valid-concat", "read", "SELECT name || ' x' FROM users"),
    ("valid-divide-cast-integer", "read", "SELECT CAST(score AS INTEGER) / 2 FROM users"),
    ("valid-date-function", "read", "SELECT date(created_at) FROM users"),
    ("string-holding-as-date", "read", "SELECT 'cast it AS DATE' FROM users"),
]


@pytest.mark.parametrize(("tool", "sql"), [c[1:] for c in NOTHING], ids=[c[0] for c in NOTHING])
def test_valid_sqlite_gets_no_note(app: Service, tool: str, sql: str) -> None:
    answer = call(app, tool, sql)
    assert "# note" not in answer
    assert "instead" not in answer


FAILURES = [
    ("missing-column", "read", "SELECT nickname FROM users", SqlError),
    ("missing-column-in-dialect", "read", "SELECT nickname::text FROM users", SqlError),
    ("missing-table-ilike", "read", "SELECT * FROM people WHERE name ILIKE 'a%'", SqlError),
    ("missing-function", "read", "SELECT frobnicate(name) FROM users", SqlError),
    ("delete-in-read", "read", "DELETE FROM users WHERE id = 1", PolicyDenied),
    ("update-without-where", "write", "UPDATE users SET score = 0", PolicyDenied),
    # MySQL's form rewrites every row of u (the condition is v's): write_query would refuse
    # SQLite's form, so none is offered to it
    (
        "update-join-of-every-row",
        "write",
        "UPDATE users u JOIN users v ON v.id = 3 SET u.email = v.email WHERE v.score > 4",
        SqlError,
    ),
    ("sqlite-typo", "read", "SELEC name FROM users", SqlError),
    (
        "pg-to-char-month-name",
        "read",
        "SELECT TO_CHAR(created_at, 'Mon YYYY') FROM users",
        SqlError,
    ),
    ("pg-regex-glob-cannot-say", "read", "SELECT name FROM users WHERE name ~ '^A+b'", SqlError),
    ("truncate-two-tables", "destructive", "TRUNCATE users, orders", SqlError),
]


@pytest.mark.parametrize(("tool", "sql", "error"), [c[1:] for c in FAILURES],
                         ids=[c[0] for c in FAILURES])  # fmt: skip
def test_a_failure_no_rewrite_fixes_gets_none(
    app: Service, tool: str, sql: str, error: type[Exception]
) -> None:
    with pytest.raises(SqlgateError) as caught:
        call(app, tool, sql)
    assert isinstance(caught.value, error)
    assert SEND.search(str(caught.value)) is None, str(caught.value)


# silent traps: (id, statement, the intended rows, words of the note)
TRAPS = [
    ("numeric-division", "SELECT CAST(score AS NUMERIC) / CAST(total AS NUMERIC) FROM users "
     "ORDER BY id", "SELECT * FROM (VALUES (0.75), (0.5), (1.0))", "divides integers"),
    ("decimal-division", "SELECT CAST(score AS DECIMAL(10,2)) / total FROM users ORDER BY id",
     "SELECT * FROM (VALUES (0.75), (0.5), (1.0))", "divides integers"),
    ("cast-date", "SELECT CAST(created_at AS DATE) FROM users ORDER BY id",
     "SELECT date(created_at) FROM users ORDER BY id", "keeps only the number"),
    ("tsql-plus-text", "SELECT name + ' <' + email + '>' FROM users WHERE id = 1",
     "SELECT 'Ann Lee <ann@example.com>'", "joins text"),
]  # fmt: skip


@pytest.mark.parametrize(("sql", "intended", "words"), [c[1:] for c in TRAPS],
                         ids=[c[0] for c in TRAPS])  # fmt: skip
def test_a_statement_that_means_something_else_in_sqlite_gets_a_note(
    app: Service, sql: str, intended: str, words: str
) -> None:
    answer = app.read_query(sql)
    notes = [line for line in answer.splitlines() if line.startswith("# note: ")]
    assert len(notes) == 1, answer
    assert words in notes[0]
    tool, fixed = offered(notes[0])
    assert tool is None
    assert rows(app.read_query(fixed)) == rows(app.read_query(intended))
    assert "# note" not in app.read_query(fixed)


def test_a_rewrite_that_would_be_a_write_is_never_offered_to_read_query(app: Service) -> None:
    """A SELECT whose SQLite form the read policy refuses gets no rewrite."""
    message = refused(app, "read", "SELECT NOW() FROM sqlgate.query_log WHERE id ILIKE '1'")
    found = SEND.search(message)
    assert found is None or found[1] is None  # a read stays a read for read_query


@pytest.mark.parametrize(
    ("tool", "sql"),
    [
        ("destructive", "CREATE TABLE t1(at TIMESTAMP DEFAULT NOW()); DROP TABLE users"),
        ("destructive", "TRUNCATE users; DROP TABLE users"),
        ("read", "SELECT NOW(); DELETE FROM users"),
        ("destructive", "ALTER TABLE users ADD COLUMN IF NOT EXISTS a TEXT; DROP TABLE users"),
    ],
)
def test_a_second_statement_is_never_prepared_nor_run(app: Service, tool: str, sql: str) -> None:
    with pytest.raises(SqlgateError) as caught:
        call(app, tool, sql)
    assert "DROP TABLE" not in str(caught.value).split("instead")[-1]
    assert rows(app.read_query("SELECT count(*) FROM users")) == ["3"]
    assert "users" in app.read_query("SELECT name FROM sqlite_schema")


def test_a_fault_in_the_rewriting_leaves_sqlites_own_answer(
    app: Service, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A shape that breaks on a tree it did not expect costs the rewrite, never the answer;
    a fault on the note's path never fails the read that ran."""
    import sqlgate.engine.dialects.rewrite as rewrite
    import sqlgate.engine.running.other_dialects as other

    def broken(*args: object) -> None:
        raise AttributeError("a shape met a tree it did not expect")

    monkeypatch.setattr(rewrite, "_candidate", broken)
    with caplog.at_level("ERROR", logger="sqlgate"):
        message = refused(app, "read", "SELECT NOW()")
    assert [r.name for r in caplog.records] == ["sqlgate"]
    assert message == (
        "SQLite error: no such function: NOW. Next: fix the statement and call again; "
        "get_schema shows every definition"
    )
    monkeypatch.setattr(other, "_trap_note", broken)
    answer = app.read_query("SELECT CAST(score AS NUMERIC) / 2 FROM users WHERE id = 1")
    assert rows(answer) == ["1"]


# -- the gate: which rewrite may be offered, to which tool ------------------------------------
@dataclass
class Gate:
    """What `_accepted` reads of a statement's run (`other_dialects.RewriteContext`)."""

    conn: apsw.Connection
    tier: Tier
    protected: frozenset[str] = frozenset()
    rules: Any = NO_RULES
    sent: tuple[str, str] | None = None


@pytest.fixture
def gate_conn(tmp_path: Path) -> apsw.Connection:
    conn = apsw.Connection(str(tmp_path / "gate.db"))
    conn.execute(
        "CREATE TABLE t(id INTEGER PRIMARY KEY, a INTEGER); CREATE TABLE u(b INTEGER);"
        "CREATE TABLE kept(x INTEGER); INSERT INTO t VALUES (1, 1)"
    )
    return conn


GATE = [
    pytest.param(Tier.READ, "SELECT NOW()", "SELECT CURRENT_TIMESTAMP", Tier.READ, id="read"),
    pytest.param(Tier.READ, "SELECT 1", "DELETE FROM t", None, id="a-read-never-a-write"),
    pytest.param(Tier.READ, "TRUNCATE t", "DELETE FROM t", Tier.DESTRUCTIVE, id="a-change"),
    pytest.param(Tier.WRITE, "TABLE t", "SELECT * FROM t", Tier.READ, id="any-tool-a-read"),
    pytest.param(Tier.WRITE, "SELECT 1", "INSERT INTO t(a) VALUES (2)", Tier.WRITE, id="same"),
    pytest.param(Tier.DESTRUCTIVE, "CREATE VIEW v AS SELECT NOW()",
                 "CREATE VIEW v AS SELECT CURRENT_TIMESTAMP", None, id="create-view-never"),
    pytest.param(Tier.WRITE, "UPDATE t SET a = 1 WHERE 1",
                 "UPDATE t SET a = 1 FROM u WHERE u.b = 1", None, id="write-every-row"),
    pytest.param(Tier.DESTRUCTIVE, "UPDATE t SET a = NOW()", "UPDATE t SET a = 2",
                 Tier.DESTRUCTIVE, id="destructive-every-row"),
    pytest.param(Tier.WRITE, "INSERT INTO kept VALUES (NOW())", "INSERT INTO kept VALUES (1)",
                 None, id="protected-by-policy"),
    pytest.param(Tier.READ, "SELECT nope()", "SELECT nope FROM t", None, id="not-prepared"),
    pytest.param(Tier.DESTRUCTIVE, "TRUNCATE t", "DELETE FROM t; DROP TABLE u", None,
                 id="two-statements"),
]  # fmt: skip


@pytest.mark.parametrize(("tier", "original", "candidate", "home"), GATE)
def test_the_gate_offers_only_what_the_tool_would_take(
    gate_conn: apsw.Connection, tier: Tier, original: str, candidate: str, home: Tier | None
) -> None:
    from sqlgate.engine.running.other_dialects import _accepted

    gate = Gate(gate_conn, tier, protected=frozenset({"kept"}))
    assert _accepted(gate, original, candidate) is home
    assert gate_conn.execute("SELECT count(*) FROM t").fetchone() == (1,)  # nothing ran
    names = {row[0] for row in gate_conn.execute("SELECT name FROM sqlite_schema")}
    assert {"t", "u", "kept"} <= names
    assert "v" not in names


def test_use_of_a_database_is_answered_with_nothing_to_send(app: Service) -> None:
    message = refused(app, "read", "USE shop")
    assert "sqlgate serves one database and needs no USE" in message
    assert SEND.search(message) is None


def test_a_command_whose_query_the_tool_would_refuse_names_only_the_tool(
    app: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sqlgate.engine.running.other_dialects as other

    monkeypatch.setattr(other, "_accepted", lambda *args: None)
    message = refused(app, "read", "SHOW TABLES")
    assert message.endswith("not SQL: call list_tables")


def test_write_query_hands_a_read_form_on_to_read_query(app: Service) -> None:
    """PostgreSQL's `TABLE users` (no SQL verb SQLite knows) sent to write_query."""
    message = refused(app, "write", "TABLE users")
    assert offered(message) == ("read_query", "SELECT * FROM users")


@pytest.mark.parametrize(("pad", "answered"), [(0, True), (1, False)])
def test_the_longest_statement_answered_is_rewrite_max_chars(
    app: Service, pad: int, answered: bool
) -> None:
    from sqlgate.engine.limits import REWRITE_MAX_CHARS

    head = "SELECT NOW() AS t"
    sql = head + " " * (REWRITE_MAX_CHARS - len(head) - len(" FROM users") + pad) + " FROM users"
    assert len(sql) == REWRITE_MAX_CHARS + pad
    assert (SEND.search(refused(app, "read", sql)) is not None) is answered
    trap = "SELECT CAST(score AS NUMERIC) / 2 AS r"
    sql = trap + " " * (REWRITE_MAX_CHARS - len(trap) - len(" FROM users") + pad) + " FROM users"
    assert ("# note:" in app.read_query(sql)) is answered


def test_a_statement_showing_no_sign_is_never_read_for_a_trap(
    app: Service, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import sqlgate.engine.dialects as dialects

    def unwanted(sql: str) -> None:
        raise AssertionError(f"read for a trap: {sql}")

    monkeypatch.setattr(dialects, "trap", unwanted)
    with caplog.at_level("ERROR", logger="sqlgate"):
        app.read_query("SELECT name FROM users WHERE id = 1")
    assert not caplog.records


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT CAST(score AS NUMERIC) FROM users",  # a sign, but no division: no trap
        "SELECT CAST(score AS NUMERIC) / 2, 'a\x0bb' FROM users",  # a line break SQLite keeps
    ],
)
def test_no_note_and_no_fault_where_the_trap_is_not_told(
    app: Service, sql: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level("ERROR", logger="sqlgate"):
        answer = app.read_query(sql)
    assert "# note" not in answer
    assert not caplog.records


def test_an_error_no_dialect_explains_is_answered_as_before(app: Service) -> None:
    """A UNIQUE conflict: sqlglot would write `users (id, name)`, which SQLite prepares;
    offering it would be noise."""
    message = refused(app, "write", "INSERT INTO users(id, name) VALUES (1, 'x')")
    assert message.startswith("SQLite error: UNIQUE constraint failed: users.id")
    assert SEND.search(message) is None


@pytest.mark.parametrize(
    ("sql", "words"),
    [
        ("SELECT * FROM users WHERE nom ILIKE 'a%'", "fails too: no such column: nom. Next: call "
         "describe_table"),
        ("SELECT nickname::text FROM users", "fails too: no such column: nickname. Next: call "
         "describe_table"),
        ("SELECT NOW() FROM people", None),  # SQLite named the table first: nothing to add
        ("select nickname from users", None),  # SQLite's own statement, only respelled
        ("SELECT id::text, INITCAP(name) FROM users", None),  # no SQLite form: not a name
    ],
)  # fmt: skip
def test_a_rewrite_naming_what_the_database_lacks_says_so(
    app: Service, sql: str, words: str | None
) -> None:
    """The translation stands, but a name in it is not in this database (a column renamed
    since, a table of another app): the answer says which, and what to call."""
    message = refused(app, "read", sql)
    assert SEND.search(message) is None
    if words is None:
        assert "fails too" not in message
    else:
        assert words in message
