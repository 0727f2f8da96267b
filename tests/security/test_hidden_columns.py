"""Red team: every path by which agent SQL could read or write a hidden column.

One row per leak path. `NULL` rows must run and give back no hidden value (nor its hex);
`REFUSED` rows must be refused with PolicyDenied. After every row, no table the agent can
reach holds a hidden value outside `users.ssn` (a copy is a leak), and the answer never
holds one. `SAME` rows are guess oracles: the right guess and a wrong one must get the same
answer. The hidden column is `users.ssn`, hidden by `--hide-column users.ssn`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from sqlgate.errors import PolicyDenied, SqlgateError
from sqlgate.service import Service
from tests.records import connect_both

SECRETS = ("S3CR3T-AAA", "S3CR3T-BBB", "S3CR3T-CCC")
SEED = f"""
CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT, ssn TEXT);
INSERT INTO users VALUES (1, 'zed', '{SECRETS[1]}'), (2, 'amy', '{SECRETS[2]}'),
                         (3, 'kim', '{SECRETS[0]}');
CREATE TABLE other(id INTEGER PRIMARY KEY, x);
INSERT INTO other VALUES (1, 'o1');
"""
NULL, REFUSED, SAME = "null", "refused", "same"
READ, WRITE, DESTRUCTIVE, VIEW = "read", "write", "destructive", "view"


@dataclass(frozen=True)
class Case:
    id: str
    tool: str
    sql: str
    expect: str
    setup: str = ""  # SQL the user ran before (a plain connection, no policy)


def hidden_values() -> tuple[str, ...]:
    return (*SECRETS, *(s.encode().hex().upper() for s in SECRETS))


CASES = [
    # -- plain reads: NULL ------------------------------------------------------------
    Case("select-star", READ, "SELECT * FROM users", NULL),
    Case("alias", READ, "SELECT ssn AS remark FROM users", NULL),
    Case("folded-names", READ, 'SELECT Users.SSN, "users"."ssn" FROM main.USERS', NULL),
    Case("schema-qualified", READ, "SELECT main.users.ssn FROM users", NULL),
    Case("function", READ, "SELECT hex(ssn), substr(ssn, 1, 3), length(ssn) FROM users", NULL),
    Case("group-concat", READ, "SELECT group_concat(ssn) FROM users", NULL),
    Case("subquery", READ, "SELECT (SELECT max(ssn) FROM users)", NULL),
    Case("cte", READ, "WITH s AS (SELECT ssn FROM users) SELECT * FROM s", NULL),
    Case("join", READ, "SELECT a.ssn, b.ssn FROM users a JOIN users b ON a.id = b.id", NULL),
    Case(
        "view-by-user",
        READ,
        "SELECT * FROM v_users",
        NULL,
        setup="CREATE VIEW v_users AS SELECT id, ssn AS tag FROM users",
    ),
    Case(
        "pragma-function",
        READ,
        "SELECT * FROM pragma_table_info('users')",
        NULL,
    ),
    # -- guess oracles on reads: the right guess answers as a wrong one -----------------
    Case("where-count", READ, "SELECT count(*) FROM users WHERE ssn = '{guess}'", SAME),
    Case("where-like", READ, "SELECT count(*) FROM users WHERE ssn LIKE '{guess}%'", SAME),
    Case("case-when", READ, "SELECT CASE WHEN ssn = '{guess}' THEN 1 ELSE 0 END FROM users", SAME),
    Case("order-by", READ, "SELECT id FROM users ORDER BY ssn, '{guess}'", SAME),
    Case(
        "index-order",  # the planner scans the index on ssn: rows come in hidden order
        READ,
        "SELECT id FROM users WHERE '{guess}' = '{guess}'",
        SAME,
        setup="CREATE INDEX u_ssn ON users(ssn, id)",
    ),
    Case(
        "index-order-by",
        READ,
        "SELECT id FROM users ORDER BY ssn, '{guess}'",
        SAME,
        setup="CREATE INDEX u_ssn ON users(ssn)",
    ),
    Case(
        "stat4-sample",
        READ,
        "SELECT hex(sample), sample FROM sqlite_stat4",
        NULL,
        setup="CREATE INDEX u_ssn ON users(ssn); ANALYZE",
    ),
    Case(
        "generated-column",
        READ,
        "SELECT copy FROM users",
        NULL,
        setup="ALTER TABLE users ADD COLUMN copy TEXT AS (ssn)",
    ),
    Case(
        "fts5-external-content",
        READ,
        "SELECT * FROM f_users WHERE f_users MATCH 'S3CR3T*'",
        REFUSED,
        setup="CREATE VIRTUAL TABLE f_users USING fts5(ssn, content='users', content_rowid='id');"
        "INSERT INTO f_users(f_users) VALUES('rebuild')",
    ),
    Case(
        "fts5-vocab",
        READ,
        "SELECT term FROM f_vocab",
        REFUSED,
        setup="CREATE VIRTUAL TABLE f_users USING fts5(ssn, content='users', content_rowid='id');"
        "INSERT INTO f_users(f_users) VALUES('rebuild');"
        "CREATE VIRTUAL TABLE f_vocab USING fts5vocab(f_users, row)",
    ),
    Case(
        "fts5-shadow",
        READ,
        "SELECT hex(block) FROM f_users_data",
        REFUSED,
        setup="CREATE VIRTUAL TABLE f_users USING fts5(ssn, content='users', content_rowid='id');"
        "INSERT INTO f_users(f_users) VALUES('rebuild')",
    ),
    # -- a statement that changes anything may not read a hidden column -----------------
    Case("returning", WRITE, "UPDATE users SET name = name WHERE id = 1 RETURNING ssn", REFUSED),
    Case("returning-star", WRITE, "UPDATE users SET name = 'n' WHERE id = 1 RETURNING *", REFUSED),
    Case(
        "delete-returning",
        DESTRUCTIVE,
        "DELETE FROM users WHERE id = 1 RETURNING ssn",
        REFUSED,
    ),
    Case("ctas", WRITE, "CREATE TABLE copied AS SELECT ssn FROM users", REFUSED),
    Case("insert-select", WRITE, "INSERT INTO other(x) SELECT ssn FROM users", REFUSED),
    Case(
        "update-from-subquery",
        WRITE,
        "UPDATE other SET x = (SELECT ssn FROM users WHERE id = 1) WHERE id = 1",
        REFUSED,
    ),
    Case("set-from-hidden", WRITE, "UPDATE users SET name = ssn WHERE id = 1", REFUSED),
    Case("index-on-hidden", WRITE, "CREATE INDEX leak ON users(ssn)", REFUSED),
    Case("index-expression", WRITE, "CREATE INDEX leak ON users(lower(ssn))", REFUSED),
    Case("partial-index", WRITE, "CREATE INDEX leak ON users(id) WHERE ssn > 'M'", REFUSED),
    Case(
        "generated-by-agent",
        DESTRUCTIVE,
        "ALTER TABLE users ADD COLUMN leak TEXT AS (ssn)",
        REFUSED,
    ),
    Case(
        "trigger-copies-new",
        DESTRUCTIVE,
        "CREATE TRIGGER spy AFTER UPDATE ON users BEGIN INSERT INTO other(x) VALUES (new.ssn); END",
        REFUSED,
    ),
    Case(
        "trigger-on-other-reads",
        DESTRUCTIVE,
        "CREATE TRIGGER spy AFTER INSERT ON other BEGIN "
        "UPDATE other SET x = (SELECT ssn FROM users WHERE id = 1) WHERE id = new.id; END",
        REFUSED,
    ),
    Case(
        "fts5-by-agent",
        WRITE,
        "CREATE VIRTUAL TABLE f2 USING fts5(ssn, content='users', content_rowid='id')",
        REFUSED,
    ),
    Case(  # another program's INSERT would copy the value through the view (issue 30)
        "trigger-reads-through-a-view",
        DESTRUCTIVE,
        "CREATE TRIGGER spy AFTER INSERT ON other BEGIN "
        "INSERT INTO copy(x) SELECT p FROM v_spy; END",
        REFUSED,
        setup="CREATE VIEW v_spy AS SELECT ssn AS p FROM users; CREATE TABLE copy(x)",
    ),
    Case(
        "trigger-reads-through-views-of-views",
        DESTRUCTIVE,
        "CREATE TRIGGER spy AFTER INSERT ON other BEGIN "
        "INSERT INTO copy(x) SELECT q FROM v_outer; END",
        REFUSED,
        setup="CREATE VIEW v_spy AS SELECT ssn AS p FROM users;"
        "CREATE VIEW v_outer AS SELECT p AS q FROM v_spy; CREATE TABLE copy(x)",
    ),
    Case(
        "fts5-content-view",
        WRITE,
        "CREATE VIRTUAL TABLE f3 USING fts5(p, content='v_spy', content_rowid='id')",
        REFUSED,
        setup="CREATE VIEW v_spy AS SELECT id, ssn AS p FROM users",
    ),
    Case(
        "rename-hidden-column",
        DESTRUCTIVE,
        "ALTER TABLE users RENAME COLUMN ssn TO plain",
        REFUSED,
    ),
    Case("drop-hidden-column", DESTRUCTIVE, "ALTER TABLE users DROP COLUMN ssn", REFUSED),
    # -- writes of a hidden column -------------------------------------------------------
    Case("update-hidden", WRITE, "UPDATE users SET ssn = 'x' WHERE id = 1", REFUSED),
    Case("insert-naming", WRITE, "INSERT INTO users(name, ssn) VALUES ('n', 'x')", REFUSED),
    Case("insert-all-columns", WRITE, "INSERT INTO users VALUES (9, 'n', 'x')", REFUSED),
    Case("insert-select-star", WRITE, "INSERT INTO users SELECT 9, 'n', 'x'", REFUSED),
    Case("replace-naming", WRITE, "REPLACE INTO users(id, ssn) VALUES (9, 'x')", REFUSED),
    Case(
        "upsert-set",
        WRITE,
        "INSERT INTO users(id, name) VALUES (1, 'n') ON CONFLICT(id) DO UPDATE SET ssn = 'x'",
        REFUSED,
    ),
    Case(
        "upsert-excluded",
        WRITE,
        "INSERT INTO users(id, name) VALUES (1, 'n') "
        "ON CONFLICT(id) DO UPDATE SET name = excluded.ssn",
        REFUSED,
    ),
    # -- guess oracles on writes ---------------------------------------------------------
    Case(
        "check-mixes",
        WRITE,
        "UPDATE users SET name = '{guess}' WHERE id = 1",
        REFUSED,
        setup="CREATE TABLE u2(id INTEGER PRIMARY KEY, name TEXT, ssn TEXT, CHECK (name <> ssn));"
        "INSERT INTO u2 SELECT * FROM users; DROP TABLE users; ALTER TABLE u2 RENAME TO users",
    ),
    Case(
        "unique-mixes",
        WRITE,
        "INSERT INTO users(name) VALUES ('{guess}')",
        REFUSED,
        setup="CREATE UNIQUE INDEX u_pair ON users(name, coalesce(ssn, name))",
    ),
    Case(
        "foreign-key-to-hidden",
        WRITE,
        "INSERT INTO kids(ref) VALUES ('{guess}')",
        REFUSED,
        setup="CREATE UNIQUE INDEX u_ssn ON users(ssn);"
        "CREATE TABLE kids(id INTEGER PRIMARY KEY, ref TEXT REFERENCES users(ssn))",
    ),
]

ALLOWED = [
    Case("insert-default", WRITE, "INSERT INTO users(name) VALUES ('new')", NULL),
    Case("insert-default-values", WRITE, "INSERT INTO users DEFAULT VALUES", NULL),
    Case(
        "upsert-visible",
        WRITE,
        "INSERT INTO users(id, name) VALUES (1, 'n') "
        "ON CONFLICT(id) DO UPDATE SET name = excluded.name",
        NULL,
    ),
    Case("update-visible", WRITE, "UPDATE users SET name = 'n' WHERE id = 1", NULL),
    Case(
        "not-indexed",
        READ,
        "SELECT id FROM users NOT INDEXED ORDER BY ssn",
        NULL,
        setup="CREATE INDEX u_ssn ON users(ssn)",
    ),
    Case("view-by-agent", VIEW, "SELECT id, ssn FROM users", NULL),
    Case(  # a trigger over a view of visible columns only
        "trigger-reads-a-visible-view",
        DESTRUCTIVE,
        "CREATE TRIGGER tally AFTER INSERT ON other BEGIN "
        "INSERT INTO copy(x) SELECT name FROM v_names; END",
        NULL,
        setup="CREATE VIEW v_names AS SELECT id, name FROM users; CREATE TABLE copy(x)",
    ),
    Case(  # a column of the agent's own called like a server table's hidden one
        "trigger-names-a-column-data",
        DESTRUCTIVE,
        "CREATE TRIGGER stamp AFTER INSERT ON other BEGIN "
        "UPDATE other SET x = 'created' WHERE id = new.id; INSERT INTO copy(data) VALUES (1); END",
        NULL,
        setup="CREATE TABLE copy(data)",
    ),
]


def _seed(path: Path, setup: str) -> None:
    conn = connect_both(path)
    conn.execute(SEED)
    if setup:
        conn.execute(setup)
    conn.close()


def _run(service: Service, case: Case, sql: str) -> str:
    if case.tool == READ:
        return service.read_query(sql)
    if case.tool == WRITE:
        return service.write_query(sql)
    if case.tool == VIEW:  # create_view, then read the view
        service.create_view("v_agent", sql)
        return service.read_query("SELECT * FROM v_agent")
    return service.destructive_query(sql, reason="red team")


def _copies(path: Path) -> list[str]:
    """Every place outside users.ssn (and the server's undo data) holding a hidden value."""
    conn = connect_both(path)
    found = []
    tables = [
        str(name)
        for (name,) in conn.execute(
            "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'undo_%'"
            " AND name NOT LIKE 'sqlite_stat%' AND sql NOT LIKE 'CREATE VIRTUAL%'"
        )
    ]
    for table in tables:
        columns = [
            str(c) for (c,) in conn.execute("SELECT name FROM pragma_table_info(?)", (table,))
        ]
        for column in columns:
            if (table, column) in (("users", "ssn"), ("query_log", "query")):
                continue  # the value itself; the agent's own text (a guess it sent)
            quoted = f'"{table}"."{column}"'
            for (value,) in conn.execute(f'SELECT {quoted} FROM "{table}"'):
                if any(secret in str(value) for secret in SECRETS):
                    found.append(f"{table}.{column}")
    conn.close()
    return found


@pytest.fixture
def open_service(db_path: Path, make_service: Callable[..., Service]) -> Callable[[str], Service]:
    def open_(setup: str) -> Service:
        _seed(db_path, setup)
        return make_service(hide_column=("users.ssn",), adopt_db=True)

    return open_


@pytest.mark.parametrize("case", CASES + ALLOWED, ids=lambda c: c.id)
def test_no_path_leaks_a_hidden_value(
    case: Case, open_service: Callable[[str], Service], db_path: Path
) -> None:
    service = open_service(case.setup)
    if case.expect == SAME:
        answers = []
        for guess in (SECRETS[0], "WRONG-GUESS"):
            try:
                answers.append(_run(service, case, case.sql.format(guess=guess)))
            except SqlgateError as exc:
                answers.append(f"{type(exc).__name__}: {exc}")
        assert answers[0].replace(SECRETS[0], "WRONG-GUESS") == answers[1]
        return
    if case.expect == REFUSED:
        with pytest.raises(PolicyDenied):
            _run(service, case, case.sql.format(guess=SECRETS[0]))
    else:
        answer = _run(service, case, case.sql)
        assert not [v for v in hidden_values() if v in answer], answer
    assert _copies(db_path) == []
