"""The layout issue 33 moves to, built by hand: the app's own tables in main under the names
sqlgate's tables have, and sqlgate's records attached read-only as `sqlgate`.

Statements are judged the way the SQL tiers judge them: preflight's `check_tier`, then the
`PolicyRecorder` installed as the authorizer while the statement is prepared and run (here
inside a savepoint that is rolled back, so each case starts from the same files). The
server objects listed in main are none (`FUTURE`: the records file holds them all), or
today's name list (`TODAY`), which keeps protecting those names in main until they move.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import apsw
import pytest

from sqlgate.config import Settings
from sqlgate.engine.connect import open_agent_connection
from sqlgate.engine.rules.authorizer import PolicyRecorder, check_references, recording
from sqlgate.engine.rules.live_rules import NO_RULES, LiveRules, RuleResolver
from sqlgate.engine.rules.table_rules import ColumnRule, TableRules
from sqlgate.engine.schema import migrate, protected_names
from sqlgate.engine.statements import Tier, check_tier, inspect_statement
from sqlgate.errors import PolicyDenied

R, W, D, V = Tier.READ, Tier.WRITE, Tier.DESTRUCTIVE, Tier.VIEW
FUTURE: frozenset[str] = frozenset()
TODAY = protected_names()

# the app's own tables, named as sqlgate's are
APP_TABLES = """
CREATE TABLE query_log(id INTEGER PRIMARY KEY, path TEXT);
CREATE TABLE members(id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE claims(id INTEGER PRIMARY KEY, amount INTEGER);
CREATE TABLE memory_events(id INTEGER PRIMARY KEY, kind TEXT);
CREATE TABLE server_info(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE undo_changesets(id INTEGER PRIMARY KEY, data BLOB);
CREATE TABLE events(id INTEGER PRIMARY KEY, kind TEXT, secret TEXT);
INSERT INTO query_log(path) VALUES ('/home');
INSERT INTO members(name) VALUES ('ann');
INSERT INTO claims(amount) VALUES (12);
INSERT INTO memory_events(kind) VALUES ('click');
INSERT INTO server_info VALUES ('region', 'eu');
INSERT INTO undo_changesets(data) VALUES (x'0a0b');
INSERT INTO events(kind, secret) VALUES ('login', 's3cret');
"""
SERVER_ROWS = """
INSERT INTO query_log(ts, session, tool, query, ok) VALUES ('t', 's', 'read_query', 'SELECT 1', 1);
INSERT INTO undo_changesets(ts, session, kind, changes, bytes, data, digests)
    VALUES ('t', 's', 'UPDATE', 1, 2, x'feed', x'beef');
"""


@dataclass
class Layout:
    writer: apsw.Connection
    reader: apsw.Connection

    def conn(self, tier: Tier) -> apsw.Connection:
        return self.reader if tier is Tier.READ else self.writer


@pytest.fixture(scope="module")
def layout(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Layout]:
    folder = tmp_path_factory.mktemp("layout")
    user, records = folder / "app.sqlite", folder / "records.sqlite"
    app = apsw.Connection(str(user))
    app.execute(APP_TABLES)
    app.close()
    server = apsw.Connection(str(records))  # the records' own connection, as the server's
    migrate(server)
    server.execute(SERVER_ROWS)
    server.close()
    settings = Settings(db=user)
    writer = open_agent_connection(settings, readonly=False, records=records)
    reader = open_agent_connection(settings, readonly=True, records=records)
    yield Layout(writer, reader)
    reader.close()
    writer.close()


def judge(
    conn: apsw.Connection,
    tier: Tier,
    sql: str,
    protected: frozenset[str] = FUTURE,
    rules: LiveRules = NO_RULES,
) -> tuple[str, list[tuple[object, ...]]]:
    """('ok', rows), ('refused: why', []) or ('error: SQLite's words', []); nothing stays."""
    body = sql
    if tier is Tier.VIEW:  # create_view takes the SELECT alone
        body, sql = sql, f"CREATE VIEW v AS {sql}"
    try:
        check_tier(inspect_statement(body), tier, protected)
    except PolicyDenied as exc:
        return f"refused: {exc}", []
    recorder = PolicyRecorder(tier, protected, rules)
    conn.execute("SAVEPOINT judged")
    try:
        with recording(conn, recorder):
            rows = conn.execute(sql).fetchall()
        if tier is not Tier.READ:  # as the tiers do: the keys it left, before COMMIT
            check_references(conn, recorder.operations, protected)
        return "ok", rows
    except PolicyDenied as exc:
        return f"refused: {exc}", []
    except apsw.AuthError:
        assert recorder.refusal is not None
        return f"refused: {recorder.refusal.reason}", []
    except apsw.Error as exc:
        return f"error: {exc}", []
    finally:
        conn.execute("ROLLBACK TO judged; RELEASE judged")


def _server(name: str) -> str:
    return f"refused: sqlgate.{name} is a sqlgate server object"


def _no_view(name: str) -> str:
    return (
        f"refused: a view or trigger can neither use nor live in sqlgate's records (sqlgate.{name})"
    )


READS = [
    pytest.param(R, "SELECT count(*) FROM sqlgate.query_log", id="read-count"),
    pytest.param(R, "SELECT tool, query FROM sqlgate.query_log", id="read-columns"),
    pytest.param(R, "SELECT q.path, s.tool FROM query_log q, sqlgate.query_log s", id="both"),
    pytest.param(R, "SELECT name FROM sqlgate.members", id="read-members"),
    pytest.param(R, "SELECT * FROM member_tokens", id="bare-name-only-in-records"),
    pytest.param(R, "PRAGMA sqlgate.table_info(query_log)", id="pragma-table-info"),
    pytest.param(R, "PRAGMA sqlgate.user_version", id="pragma-read-setting"),
    pytest.param(R, "SELECT name FROM sqlgate.pragma_table_info('claims')", id="pragma-fn"),
    pytest.param(R, "SELECT count(*) FROM sqlgate.sqlite_schema", id="catalog"),
    pytest.param(
        R,
        "SELECT * FROM sqlgate.memory_events_fts WHERE memory_events_fts MATCH 'x'",
        id="fts-match",
    ),
    pytest.param(R, "SELECT * FROM memory_events_fts('x')", id="fts-bare-name"),
    pytest.param(R, "SELECT * FROM sqlgate.query_patterns", id="records-view"),
    pytest.param(W, "INSERT INTO events(kind) SELECT tool FROM sqlgate.query_log", id="w"),
    pytest.param(D, "DELETE FROM events WHERE id IN (SELECT id FROM sqlgate.query_log)", id="d"),
]


@pytest.mark.parametrize("protected", [FUTURE, TODAY], ids=["future", "today"])
@pytest.mark.parametrize(("tier", "sql"), READS)
def test_every_tier_reads_the_records(
    layout: Layout, tier: Tier, sql: str, protected: frozenset[str]
) -> None:
    verdict, _ = judge(layout.conn(tier), tier, sql, protected)
    assert verdict == "ok"


CHANGES = [
    (W, "INSERT INTO sqlgate.query_log(ts, session, tool, ok) VALUES ('t', 's', 'x', 1)",
     _server("query_log")),
    (W, "UPDATE sqlgate.query_log SET tool = 'x' WHERE id = 1", _server("query_log")),
    (D, "UPDATE sqlgate.query_log SET tool = 'x'", _server("query_log")),
    (D, "DELETE FROM sqlgate.query_log WHERE id = 1", _server("query_log")),
    (D, "DELETE FROM sqlgate.undo_changesets", _server("undo_changesets")),
    (D, "REPLACE INTO sqlgate.members(id, name, tier, created) VALUES (1, 'x', 'read', 't')",
     _server("members")),
    (D, "DROP TABLE sqlgate.query_log", _server("query_log")),
    (D, "DROP TABLE IF EXISTS sqlgate.claims", _server("claims")),
    (D, "DROP VIEW sqlgate.query_patterns", _server("query_patterns")),
    (D, "ALTER TABLE sqlgate.query_log RENAME TO q2", _server("query_log")),
    (D, "ALTER TABLE sqlgate.query_log ADD COLUMN z", _server("query_log")),
    (D, "ALTER TABLE sqlgate.members DROP COLUMN removed", _server("members")),
    (W, "CREATE INDEX sqlgate.i ON query_log(tool)", _server("i")),
    (W, "CREATE TABLE sqlgate.mine(a)", _server("mine")),
    # with IF [NOT] EXISTS SQLite would skip these without asking: preflight answers them
    (W, "CREATE TABLE IF NOT EXISTS sqlgate.query_log(a)", _server("query_log")),
    (W, "CREATE INDEX IF NOT EXISTS sqlgate.query_log_by_actor ON query_log(actor)",
     _server("query_log_by_actor")),
    (W, "CREATE VIRTUAL TABLE IF NOT EXISTS sqlgate.memory_events_fts USING fts5(a)",
     _server("memory_events_fts")),
    (D, "DROP TABLE IF EXISTS sqlgate.gone", _server("gone")),
    (D, "DROP INDEX IF EXISTS sqlgate.gone", _server("gone")),
    (D, "DROP TRIGGER IF EXISTS \"SQLGATE\".gone", _server("gone")),
    (W, "INSERT INTO member_tokens(digest, member_id, created) VALUES (x'00', 1, 't')",
     _server("member_tokens")),
    (W, "REINDEX sqlgate.query_log", "refused: sqlgate."),
    (W, "CREATE VIRTUAL TABLE sqlgate.f USING fts5(a)", _server("f")),
    (W, "INSERT INTO sqlgate.memory_events_fts(memory_events_fts) VALUES ('rebuild')",
     _server("memory_events_fts")),
    (D, "INSERT INTO memory_events_fts(memory_events_fts) VALUES ('delete-all')",
     _server("memory_events_fts")),
    (W, "ANALYZE sqlgate", "refused: sqlgate."),
    (R, "PRAGMA sqlgate.user_version = 3", "refused: PRAGMA user_version may be read but never"),
    (R, "PRAGMA sqlgate.journal_mode = delete", "refused: PRAGMA journal_mode may be read but"),
    (D, "CREATE TRIGGER sqlgate.tr AFTER INSERT ON query_log BEGIN SELECT 1; END",
     _server("tr")),
    (D, "CREATE TRIGGER tr AFTER INSERT ON sqlgate.query_log BEGIN SELECT 1; END",
     _no_view("query_log")),
    (D, "CREATE TRIGGER tr AFTER INSERT ON events BEGIN "
        "INSERT INTO events(kind) SELECT tool FROM sqlgate.query_log; END", _no_view("query_log")),
    (V, "SELECT tool, count(*) FROM sqlgate.query_log GROUP BY tool", _no_view("query_log")),
    (V, "SELECT * FROM events JOIN sqlgate.members USING (id)", _no_view("members")),
]  # fmt: skip


@pytest.mark.parametrize("protected", [FUTURE, TODAY], ids=["future", "today"])
@pytest.mark.parametrize(("tier", "sql", "refusal"), CHANGES)
def test_nothing_changes_the_records(
    layout: Layout, tier: Tier, sql: str, refusal: str, protected: frozenset[str]
) -> None:
    verdict, _ = judge(layout.conn(tier), tier, sql, protected)
    assert verdict.startswith(refusal)
    assert "no tool will" in verdict or "read_query" in verdict


def test_a_refusal_of_the_records_names_a_next_step(layout: Layout) -> None:
    verdict, _ = judge(layout.writer, D, "DELETE FROM sqlgate.query_log WHERE id = 1")
    assert verdict.endswith("agents may read it (read_query)")
    verdict, _ = judge(layout.writer, V, "SELECT * FROM sqlgate.query_log")
    assert verdict.endswith("query sqlgate.query_log directly with read_query")


APP_WRITES = [
    (W, "INSERT INTO query_log(path) VALUES ('/about')"),
    (W, "UPDATE members SET name = 'bob' WHERE id = 1"),
    (D, "DELETE FROM claims WHERE id = 1"),
    (D, "DELETE FROM server_info"),
    (D, "DROP TABLE memory_events"),
    (W, "CREATE INDEX by_kind ON memory_events(kind)"),
    (D, "ALTER TABLE undo_changesets ADD COLUMN note TEXT"),
    (D, "ALTER TABLE members RENAME TO people"),
    (D, "CREATE TRIGGER copy AFTER INSERT ON events BEGIN "
        "INSERT INTO query_log(path) VALUES (new.kind); END"),
    (W, "CREATE TABLE visits(q INTEGER REFERENCES query_log(id))"),
]  # fmt: skip


@pytest.mark.parametrize(("tier", "sql"), APP_WRITES)
def test_the_apps_tables_named_like_sqlgates_are_the_apps(
    layout: Layout, tier: Tier, sql: str
) -> None:
    verdict, _ = judge(layout.writer, tier, sql, FUTURE)
    assert verdict == "ok"


@pytest.mark.parametrize(("tier", "sql"), APP_WRITES)
def test_todays_name_list_still_protects_those_names_in_main(
    layout: Layout, tier: Tier, sql: str
) -> None:
    verdict, _ = judge(layout.writer, tier, sql, TODAY)
    assert verdict.startswith("refused: ")
    assert "sqlgate server object" in verdict


def test_an_app_write_lands_in_main_and_the_records_are_as_they_were(layout: Layout) -> None:
    layout.writer.execute("SAVEPOINT seen")
    try:
        recorder = PolicyRecorder(W, FUTURE)
        with recording(layout.writer, recorder):
            layout.writer.execute("INSERT INTO query_log(path) VALUES ('/x')")
        paths = layout.writer.execute("SELECT path FROM main.query_log ORDER BY id").fetchall()
        assert paths == [("/home",), ("/x",)]
        tools = layout.writer.execute("SELECT tool FROM sqlgate.query_log").fetchall()
        assert tools == [("read_query",)]
    finally:
        layout.writer.execute("ROLLBACK TO seen; RELEASE seen")


@pytest.mark.parametrize(
    ("tier", "sql", "words"),
    [
        (V, "CREATE VIEW v AS SELECT * FROM sqlgate.query_log", "view v cannot reference objects"),
        (
            D,
            "CREATE TRIGGER tr AFTER INSERT ON events BEGIN SELECT * FROM sqlgate.members; END",
            "trigger tr cannot reference objects",
        ),
    ],
)
def test_sqlite_itself_keeps_a_view_or_trigger_off_the_records(
    layout: Layout, tier: Tier, sql: str, words: str
) -> None:
    """What the agent would read without preflight's answer: SQLite's own refusal."""
    recorder = PolicyRecorder(tier, FUTURE)
    with recording(layout.writer, recorder), pytest.raises(apsw.SQLError, match=words):
        layout.writer.execute(sql)
    assert recorder.refusal is None


def _hidden(conn: apsw.Connection) -> LiveRules:
    return RuleResolver(TableRules(hidden=(ColumnRule("events", "secret"),))).live(conn)


@pytest.mark.parametrize("tier", [R, W, D])
def test_undo_data_of_the_records_reads_null_while_a_column_is_hidden(
    layout: Layout, tier: Tier
) -> None:
    conn = layout.conn(tier)
    sql = "SELECT kind, data, digests FROM sqlgate.undo_changesets"
    if tier is not R:
        sql = (
            f"INSERT INTO events(kind) {sql.replace('kind, data, digests', 'data')} RETURNING kind"
        )
        _, rows = judge(conn, tier, sql, FUTURE, _hidden(conn))
        assert rows == [(None,)]
        return
    assert judge(conn, tier, sql, FUTURE, _hidden(conn)) == ("ok", [("UPDATE", None, None)])
    assert judge(conn, tier, sql) == ("ok", [("UPDATE", b"\xfe\xed", b"\xbe\xef")])


def test_the_users_hidden_column_reads_null_and_the_records_stay_readable(layout: Layout) -> None:
    rules = _hidden(layout.reader)
    verdict, rows = judge(layout.reader, R, "SELECT kind, secret FROM events", FUTURE, rules)
    assert (verdict, rows) == ("ok", [("login", None)])
    verdict, rows = judge(layout.reader, R, "SELECT tool FROM sqlgate.query_log", FUTURE, rules)
    assert (verdict, rows) == ("ok", [("read_query",)])


@pytest.mark.parametrize(
    ("sql", "rows"),
    [
        ("SELECT count(*) FROM sqlgate.undo_changesets WHERE data = x'feed'", [(0,)]),
        ("SELECT count(*) FROM sqlgate.undo_changesets WHERE digests IS NOT NULL", [(0,)]),
        ("SELECT length(data), hex(digests) FROM sqlgate.undo_changesets", [(None, "")]),
        ("SELECT max(data) FROM sqlgate.undo_changesets", [(None,)]),
        ("SELECT kind FROM sqlgate.undo_changesets WHERE data < x'ff' OR kind = 'x'", []),
    ],
)
def test_no_read_of_the_records_tells_the_hidden_undo_data(
    layout: Layout, sql: str, rows: list[tuple[object, ...]]
) -> None:
    rules = _hidden(layout.reader)
    assert judge(layout.reader, R, sql, FUTURE, rules) == ("ok", rows)
