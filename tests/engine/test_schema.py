"""Server objects: migrations by user_version, ownership checks, append-only triggers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest

from sqlgate.config import Settings
from sqlgate.engine.connect import immediate_transaction
from sqlgate.engine.database.file import Database
from sqlgate.engine.schema import (
    APPLICATION_ID,
    FTS5_SHADOW_SUFFIXES,
    MIGRATIONS,
    REGISTRY,
    migrate,
    protected_names,
    text_encoding,
)
from sqlgate.errors import StartupError
from sqlgate.home import record_files
from tests.records import connect_both, records_path

NEWEST = MIGRATIONS[-1].version


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[apsw.Connection]:
    connection = connect_both(tmp_path / "schema.db")
    yield connection
    connection.close()


def objects(conn: apsw.Connection) -> dict[str, str]:
    return {
        str(name): str(kind)
        for name, kind in conn.execute(
            "SELECT name, type FROM sqlite_schema WHERE name NOT LIKE 'sqlite%'"
        )
    }


LOG_OBJECTS = {
    "query_log": "table",
    "query_log_no_update": "trigger",
    "query_log_no_delete": "trigger",
    "query_log_no_replace": "trigger",
    "query_errors": "view",
    "query_patterns": "view",
}
MEMORY_OBJECTS = {
    "memory_events": "table",
    "memory_events_by_session": "index",
    "memory_events_by_kind": "index",
    "memory_events_by_ts": "index",
    "memory_events_no_update": "trigger",
    "memory_events_no_delete": "trigger",
    "memory_events_no_replace": "trigger",
    "memory_events_fts": "table",
    "memory_events_fts_data": "table",
    "memory_events_fts_idx": "table",
    "memory_events_fts_docsize": "table",
    "memory_events_fts_config": "table",
    "memory_checkpoints": "table",
    "memory_checkpoints_no_update": "trigger",
    "memory_checkpoints_no_delete": "trigger",
    "memory_checkpoints_no_replace": "trigger",
}

CLAIMS_OBJECTS = {
    "claims": "table",
    "claims_by_state": "index",
    "claims_no_delete": "trigger",
    "claims_retired_is_final": "trigger",
    "claims_no_replace": "trigger",
    "claims_history": "table",
    "claims_history_by_claim": "index",
    "claims_history_no_update": "trigger",
    "claims_history_no_delete": "trigger",
    "claims_history_no_replace": "trigger",
}
UNDO_OBJECTS = {
    "undo_changesets": "table",
    "undo_chunks": "table",
    "undo_table_shapes": "table",  # migration 6: what an undo checks
    "undo_row_states": "table",
}
AUDIT_QUEUE_OBJECTS = {"query_log_queued": "index"}
CONSOLE_OBJECTS = {  # migration 7: the web console's filters (issue 14)
    "query_log_by_session": "index",
    "query_log_by_tool": "index",
    "query_log_by_ts": "index",
    "query_log_failures": "index",
}
IDENTITY_OBJECTS = {  # migration 8: the database's id; changesets by tool (issue 19)
    "server_info": "table",
    "server_info_no_update": "trigger",
    "server_info_no_delete": "trigger",
    "server_info_no_replace": "trigger",
}
TEAM_OBJECTS = {  # migration 9: each row's actor; the members of a team server (issue 22)
    "query_log_by_actor": "index",
    "members": "table",
    "members_by_name": "index",
    "member_tokens": "table",
    "member_tokens_by_member": "index",
}
ALL_OBJECTS = (
    LOG_OBJECTS
    | MEMORY_OBJECTS
    | CLAIMS_OBJECTS
    | UNDO_OBJECTS
    | AUDIT_QUEUE_OBJECTS
    | CONSOLE_OBJECTS
    | IDENTITY_OBJECTS
    | TEAM_OBJECTS
)


def columns(conn: apsw.Connection, table: str) -> list[str]:
    return [str(row[1]) for row in conn.execute(f"PRAGMA table_info({table})")]


def test_migrate_creates_the_log_its_triggers_and_views(conn: apsw.Connection) -> None:
    assert migrate(conn) == NEWEST
    assert objects(conn) == ALL_OBJECTS
    assert columns(conn, "query_log") == [
        "id", "ts", "session", "tool", "query", "ok", "rows", "error", "duration_ms", "detail",
        "actor",
    ]  # fmt: skip


def test_migration_2_creates_the_memory_tables_with_the_designed_columns(
    conn: apsw.Connection,
) -> None:
    migrate(conn)
    assert columns(conn, "memory_events") == [
        "id", "ts", "session", "kind", "content", "tags", "prev_hash", "hash",
    ]  # fmt: skip
    assert columns(conn, "memory_checkpoints") == [
        "id", "ts", "session", "summary", "last_event_id", "head_hash",
    ]  # fmt: skip
    fts = conn.execute("SELECT sql FROM sqlite_schema WHERE name = 'memory_events_fts'").fetchone()
    assert fts is not None
    assert "content='memory_events'" in str(fts[0])


def test_migration_3_creates_the_claims_tables_with_the_designed_columns(
    conn: apsw.Connection,
) -> None:
    migrate(conn)
    assert columns(conn, "claims") == [
        "id", "entity", "kind", "claim", "volatility", "confidence", "rank", "state",
        "created_at", "last_confirmed", "evidence",
    ]  # fmt: skip
    assert columns(conn, "claims_history") == [
        "id", "claim_id", "ts", "session", "action", "detail", "event_id",
    ]  # fmt: skip


def test_every_registered_object_is_created_by_its_migration(conn: apsw.Connection) -> None:
    migrate(conn)
    created = objects(conn)
    for migration in MIGRATIONS:
        for obj in migration.objects:
            assert obj.name in created, obj


def test_a_version_1_file_is_upgraded_to_the_newest_keeping_its_log(
    conn: apsw.Connection,
) -> None:
    with immediate_transaction(conn):
        for statement in MIGRATIONS[0].statements:
            conn.execute(statement)
        conn.pragma("application_id", APPLICATION_ID)
        conn.pragma("user_version", 1)
    conn.execute(
        "INSERT INTO query_log (ts, session, tool, ok) VALUES ('2026-01-01', 's', 'read_query', 1)"
    )
    assert migrate(conn) == NEWEST
    assert objects(conn) == ALL_OBJECTS
    assert conn.execute("SELECT tool FROM query_log").fetchall() == [("read_query",)]


def test_a_version_2_file_is_upgraded_to_the_newest_keeping_its_memory(
    conn: apsw.Connection,
) -> None:
    for migration in MIGRATIONS[:2]:
        with immediate_transaction(conn):
            for statement in migration.statements:
                conn.execute(statement)
            conn.pragma("application_id", APPLICATION_ID)
            conn.pragma("user_version", migration.version)
    conn.execute(MEMORY_ROWS["memory_events"])
    assert objects(conn) == LOG_OBJECTS | MEMORY_OBJECTS
    assert migrate(conn) == NEWEST
    assert objects(conn) == ALL_OBJECTS
    assert conn.execute("SELECT content FROM memory_events").fetchall() == [("kept",)]


def test_migrate_marks_the_file_as_sqlgates(conn: apsw.Connection) -> None:
    migrate(conn)
    assert conn.pragma("user_version") == NEWEST
    assert conn.pragma("application_id") == APPLICATION_ID


def test_migrating_twice_changes_nothing(conn: apsw.Connection) -> None:
    migrate(conn)
    schema_before = list(conn.execute("SELECT type, name, sql FROM sqlite_schema"))
    version_before = conn.pragma("schema_version")
    assert migrate(conn) == NEWEST
    assert list(conn.execute("SELECT type, name, sql FROM sqlite_schema")) == schema_before
    assert conn.pragma("schema_version") == version_before


def test_migrate_keeps_user_tables_of_an_unmarked_database(conn: apsw.Connection) -> None:
    conn.execute("CREATE TABLE mine(x); INSERT INTO mine VALUES (42)")
    migrate(conn)
    assert conn.execute("SELECT x FROM mine").fetchall() == [(42,)]


FOREIGN_HEADERS = [
    pytest.param(7, 0, id="foreign-user-version-no-app-id"),
    pytest.param(7, 0x47504B47, id="foreign-user-version-and-app-id"),
    pytest.param(0, 0x47504B47, id="foreign-app-id-only"),
]


@pytest.mark.parametrize(("user_version", "application_id"), FOREIGN_HEADERS)
def test_a_users_database_of_another_application_is_opened_and_left_as_it_is(
    tmp_path: Path, user_version: int, application_id: int
) -> None:
    path = tmp_path / "other.db"
    other = apsw.Connection(str(path))
    other.execute("CREATE TABLE theirs(x); INSERT INTO theirs VALUES (1)")
    other.pragma("user_version", user_version)
    other.pragma("application_id", application_id)
    other.close()
    before = path.read_bytes()
    Database.open(Settings(db=path)).close()
    assert path.read_bytes() == before  # not migrated, not marked: the records hold sqlgate's
    records = apsw.Connection(str(records_path(path)), flags=apsw.SQLITE_OPEN_READONLY)
    assert (records.pragma("user_version"), records.pragma("application_id")) == (
        NEWEST,
        APPLICATION_ID,
    )
    records.close()


@pytest.mark.parametrize(
    ("user_version", "application_id"),
    [*FOREIGN_HEADERS, pytest.param(NEWEST + 1, APPLICATION_ID, id="newer-sqlgate")],
)
def test_a_records_file_sqlgate_does_not_own_is_refused_and_both_files_left_untouched(
    tmp_path: Path, user_version: int, application_id: int
) -> None:
    path = tmp_path / "app.db"
    user = apsw.Connection(str(path))
    user.execute("CREATE TABLE mine(x); INSERT INTO mine VALUES (1)")
    user.close()
    records = record_files(path).make(path).records
    other = apsw.Connection(str(records))
    other.execute("CREATE TABLE theirs(x); INSERT INTO theirs VALUES (1)")
    other.pragma("user_version", user_version)
    other.pragma("application_id", application_id)
    other.close()
    before = (path.read_bytes(), records.read_bytes())
    with pytest.raises(StartupError) as caught:
        Database.open(Settings(db=path))
    assert "\n" not in str(caught.value)
    assert str(records) in str(caught.value)
    assert (path.read_bytes(), records.read_bytes()) == before
    assert not Path(f"{path}-wal").exists()
    assert not Path(f"{records}-wal").exists()


def _file_in(tmp_path: Path, encoding: str | None) -> Path:
    path = tmp_path / "enc.db"
    if encoding == "":
        path.write_bytes(b"")
    elif encoding is not None:
        conn = apsw.Connection(str(path))
        conn.pragma("encoding", encoding)
        conn.execute("CREATE TABLE t(x)")
        conn.close()
    return path


@pytest.mark.parametrize(
    ("encoding", "expected"),
    [
        pytest.param("UTF-8", "UTF-8", id="utf8"),
        pytest.param("UTF-16le", "UTF-16le", id="utf16le"),
        pytest.param("UTF-16be", "UTF-16be", id="utf16be"),
        pytest.param("", "UTF-8", id="empty-file"),
        pytest.param(None, "UTF-8", id="no-file"),
    ],
)
def test_new_records_take_the_text_encoding_of_the_users_file(
    tmp_path: Path, encoding: str | None, expected: str
) -> None:
    user = _file_in(tmp_path, encoding)
    assert text_encoding(user) == expected
    records = apsw.Connection(str(tmp_path / "records.sqlite"))
    migrate(records, text_encoding(user))
    assert records.pragma("encoding") == expected
    if encoding:  # the user's file attaches its records (SQLite wants one encoding)
        conn = apsw.Connection(str(user))
        conn.execute("ATTACH ? AS sqlgate", (str(tmp_path / "records.sqlite"),))
        assert conn.execute("SELECT count(*) FROM sqlgate.query_log").fetchone() == (0,)
        conn.close()
    records.close()


def test_migrate_refuses_a_foreign_database_on_its_own(conn: apsw.Connection) -> None:
    conn.pragma("user_version", 3)
    with pytest.raises(StartupError, match="another application"):
        migrate(conn)
    assert objects(conn) == {}


def test_migrate_refuses_a_newer_schema(conn: apsw.Connection) -> None:
    migrate(conn)
    conn.pragma("user_version", NEWEST + 1)
    with pytest.raises(StartupError, match="newer sqlgate"):
        migrate(conn)


@pytest.mark.parametrize(
    "statement",
    [
        pytest.param("UPDATE query_log SET ok = 0", id="update"),
        pytest.param("UPDATE query_log SET error = 'x' WHERE id = 1", id="update-one"),
        pytest.param("DELETE FROM query_log", id="delete-all"),
        pytest.param("DELETE FROM query_log WHERE id = 1", id="delete-one"),
        pytest.param(
            "INSERT OR REPLACE INTO query_log (id, ts, session, tool, ok) "
            "VALUES (1, 'x', 's', 't', 1)",
            id="replace",
        ),
        pytest.param(
            "REPLACE INTO query_log (id, ts, session, tool, ok) VALUES (1, 'x', 's', 't', 1)",
            id="replace-verb",
        ),
        pytest.param(
            "INSERT INTO query_log (id, ts, session, tool, ok) VALUES (1, 'x', 's', 't', 1) "
            "ON CONFLICT(id) DO UPDATE SET ok = 0",
            id="upsert",
        ),
    ],
)
def test_query_log_is_append_only_for_direct_connections(
    conn: apsw.Connection, statement: str
) -> None:
    migrate(conn)
    conn.execute(
        "INSERT INTO query_log (ts, session, tool, ok) VALUES ('2026-01-01', 's', 'read_query', 1)"
    )
    with pytest.raises(apsw.ConstraintError, match="append-only"):
        conn.execute(statement)
    assert conn.execute("SELECT ts, tool, ok FROM query_log").fetchall() == [
        ("2026-01-01", "read_query", 1)
    ]


MEMORY_ROWS = {
    "memory_events": (
        "INSERT INTO memory_events (id, ts, session, kind, content, tags, prev_hash, hash) "
        "VALUES (1, 't', 's', 'note', 'kept', '[]', 'p', 'h')"
    ),
    "memory_checkpoints": (
        "INSERT INTO memory_checkpoints (id, ts, session, summary, last_event_id, head_hash) "
        "VALUES (1, 't', 's', 'kept', 1, 'h')"
    ),
}


@pytest.mark.parametrize(
    ("table", "statement"),
    [
        pytest.param("memory_events", "UPDATE memory_events SET content = 'x'", id="events-update"),
        pytest.param("memory_events", "DELETE FROM memory_events", id="events-delete"),
        pytest.param(
            "memory_events",
            "REPLACE INTO memory_events (id, ts, session, kind, content, tags, prev_hash, hash) "
            "VALUES (1, 't', 's', 'note', 'forged', '[]', 'p', 'h')",
            id="events-replace",
        ),
        pytest.param(
            "memory_events",
            "INSERT INTO memory_events (id, ts, session, kind, content, tags, prev_hash, hash) "
            "VALUES (1, 't', 's', 'note', 'x', '[]', 'p', 'h') "
            "ON CONFLICT(id) DO UPDATE SET content = 'forged'",
            id="events-upsert",
        ),
        pytest.param(
            "memory_checkpoints", "UPDATE memory_checkpoints SET summary = 'x'", id="cp-update"
        ),
        pytest.param("memory_checkpoints", "DELETE FROM memory_checkpoints", id="cp-delete"),
        pytest.param(
            "memory_checkpoints",
            "INSERT OR REPLACE INTO memory_checkpoints "
            "(id, ts, session, summary, last_event_id, head_hash) "
            "VALUES (1, 't', 's', 'forged', 1, 'h')",
            id="cp-replace",
        ),
    ],
)
def test_memory_tables_are_append_only_for_direct_connections(
    conn: apsw.Connection, table: str, statement: str
) -> None:
    migrate(conn)
    conn.execute(MEMORY_ROWS[table])
    before = conn.execute(f"SELECT * FROM {table}").fetchall()
    with pytest.raises(apsw.ConstraintError, match=f"{table} is append-only"):
        conn.execute(statement)
    assert conn.execute(f"SELECT * FROM {table}").fetchall() == before


def test_protected_names_hold_the_registry_and_fts5_shadow_tables() -> None:
    names = protected_names()
    for obj in REGISTRY:
        assert obj.name.lower() in names
    fts5 = [obj.name for obj in REGISTRY if obj.kind == "fts5"]
    assert fts5, "the registry reserves an fts5 index"
    for name in fts5:
        for suffix in FTS5_SHADOW_SUFFIXES:
            assert f"{name}{suffix}".lower() in names
    assert {"query_log", "query_errors", "query_patterns", "memory_events_fts_data"} <= names
    assert set(MEMORY_OBJECTS) <= names
    assert set(CLAIMS_OBJECTS) <= names
    assert all(name == name.lower() for name in names)


def test_fts5_shadow_suffixes_match_what_sqlite_creates(conn: apsw.Connection) -> None:
    conn.execute("CREATE VIRTUAL TABLE probe USING fts5(body)")
    shadows = {
        str(name)
        for (name,) in conn.execute("SELECT name FROM pragma_table_list WHERE type = 'shadow'")
    }
    assert shadows == {f"probe{suffix}" for suffix in FTS5_SHADOW_SUFFIXES}


CLAIM_COLUMNS = (
    "INSERT INTO claims (entity, kind, claim, volatility, confidence, rank, state, created_at, "
    "last_confirmed) VALUES "
)
CLAIM_ROW = CLAIM_COLUMNS + "('acme', 'priority', 'first', 'slow', 0.8, 1, 'active', 't', 't')"


@pytest.mark.parametrize(
    "values",
    [
        pytest.param("('acme', 'rumour', 'x', 'slow', 0.8, NULL, 'active', 't', 't')", id="kind"),
        pytest.param(
            "('acme', 'fact', 'x', 'sometimes', 0.8, NULL, 'active', 't', 't')", id="volatility"
        ),
        pytest.param("('acme', 'fact', 'x', 'slow', 1.01, NULL, 'active', 't', 't')", id="conf-hi"),
        pytest.param("('acme', 'fact', 'x', 'slow', -0.1, NULL, 'active', 't', 't')", id="conf-lo"),
        pytest.param("('acme', 'fact', 'x', 'slow', 0.8, 1, 'active', 't', 't')", id="rank-fact"),
        pytest.param("('acme', 'priority', 'x', 'slow', 0.8, 0, 'active', 't', 't')", id="rank-0"),
        pytest.param("('acme', 'fact', 'x', 'slow', 0.8, NULL, 'lost', 't', 't')", id="state"),
        pytest.param(
            "('acme', 'priority', 'first', 'volatile', 0.5, 2, 'active', 't', 't')",
            id="same-entity-kind-claim",
        ),
    ],
)
def test_claims_refuse_rows_outside_the_model(conn: apsw.Connection, values: str) -> None:
    migrate(conn)
    conn.execute(CLAIM_ROW)
    with pytest.raises(apsw.ConstraintError):
        conn.execute(CLAIM_COLUMNS + values)
    assert conn.execute("SELECT count(*) FROM claims").fetchall() == [(1,)]


@pytest.mark.parametrize(
    "values",
    [
        pytest.param("('acme', 'priority', 'x', 'stable', 0, 3, 'stale', 't', 't')", id="edges"),
        pytest.param("('acme', 'status', 'x', 'volatile', 1, NULL, 'retired', 't', 't')", id="st"),
        pytest.param(
            "('b', 'relationship', 'x', 'slow', 0.5, NULL, 'contradicted', 't', 't')",
            id="relationship",
        ),
    ],
)
def test_claims_accept_every_allowed_value(conn: apsw.Connection, values: str) -> None:
    migrate(conn)
    conn.execute(CLAIM_COLUMNS + values)
    assert conn.execute("SELECT count(*) FROM claims").fetchall() == [(1,)]


@pytest.mark.parametrize(
    ("statement", "message"),
    [
        pytest.param("DELETE FROM claims", "never deleted", id="delete"),
        pytest.param(
            "REPLACE INTO claims (id, entity, kind, claim, volatility, confidence, state, "
            "created_at, last_confirmed) VALUES (1, 'acme', 'fact', 'x', 'slow', 1, 'active', "
            "'t', 't')",
            "never replaced",
            id="replace-by-id",
        ),
        pytest.param(
            "INSERT OR REPLACE INTO claims (entity, kind, claim, volatility, confidence, rank, "
            "state, created_at, last_confirmed) VALUES ('acme', 'priority', 'first', 'slow', 1, "
            "1, 'active', 't', 't')",
            "never replaced",
            id="replace-by-identity",
        ),
        pytest.param(
            CLAIM_ROW + " ON CONFLICT DO UPDATE SET state = 'active'",
            "never replaced",
            id="upsert",
        ),
        pytest.param("UPDATE claims SET state = 'active'", "stays retired", id="unretire"),
        pytest.param("UPDATE claims SET confidence = 1", "stays retired", id="edit-retired"),
    ],
)
def test_claims_are_never_deleted_and_retired_is_final_for_direct_connections(
    conn: apsw.Connection, statement: str, message: str
) -> None:
    migrate(conn)
    conn.execute(CLAIM_ROW.replace("'active'", "'retired'"))
    before = conn.execute("SELECT * FROM claims").fetchall()
    with pytest.raises(apsw.ConstraintError, match=message):
        conn.execute(statement)
    assert conn.execute("SELECT * FROM claims").fetchall() == before


def test_a_live_claim_can_be_updated_by_a_direct_connection(conn: apsw.Connection) -> None:
    migrate(conn)
    conn.execute(CLAIM_ROW)
    conn.execute("UPDATE claims SET state = 'retired' WHERE id = 1")
    assert conn.execute("SELECT state FROM claims").fetchall() == [("retired",)]


@pytest.mark.parametrize(
    "statement",
    [
        pytest.param("UPDATE claims_history SET detail = 'x'", id="update"),
        pytest.param("DELETE FROM claims_history", id="delete"),
        pytest.param(
            "INSERT OR REPLACE INTO claims_history (id, claim_id, ts, session, action, detail) "
            "VALUES (1, 1, 't', 's', 'add', 'forged')",
            id="replace",
        ),
    ],
)
def test_claims_history_is_append_only_for_direct_connections(
    conn: apsw.Connection, statement: str
) -> None:
    migrate(conn)
    conn.execute(
        "INSERT INTO claims_history (id, claim_id, ts, session, action, detail) "
        "VALUES (1, 1, 't', 's', 'add', 'kept')"
    )
    with pytest.raises(apsw.ConstraintError, match="claims_history is append-only"):
        conn.execute(statement)
    assert conn.execute("SELECT detail FROM claims_history").fetchall() == [("kept",)]
