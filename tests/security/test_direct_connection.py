"""Protection that does not depend on sqlgate's own connections.

The append-only triggers hold for any program that opens the file with plain SQLite (and
for claims: never deleted or replaced, retired for good), and the agent's read connection
cannot write even with no authorizer installed.
"""

from __future__ import annotations

from collections.abc import Iterator

import apsw
import pytest

from tests.records import connect_both
from tests.security.conftest import RETIRED_CLAIM, World
from tests.security.fingerprint import assert_unchanged

FIRST_ROW = "(SELECT min(id) FROM query_log)"


@pytest.fixture
def plain(world: World) -> Iterator[apsw.Connection]:
    """The database file opened by a plain connection: no sqlgate hardening, no authorizer."""
    conn = connect_both(world.service.db.path)
    conn.set_busy_timeout(1000)
    yield conn
    conn.close()


@pytest.mark.parametrize(
    "sql",
    [
        pytest.param(f"UPDATE query_log SET ok = 1 WHERE id = {FIRST_ROW}", id="update-one"),
        pytest.param("UPDATE query_log SET error = NULL", id="update-all"),
        pytest.param(f"DELETE FROM query_log WHERE id = {FIRST_ROW}", id="delete-one"),
        pytest.param("DELETE FROM query_log", id="delete-all"),
        pytest.param(
            "REPLACE INTO query_log(id, ts, session, tool, ok) "
            f"VALUES ({FIRST_ROW}, 't', 's', 'forged', 1)",
            id="replace",
        ),
        pytest.param(
            "INSERT OR REPLACE INTO query_log(id, ts, session, tool, ok) "
            "SELECT id, ts, session, 'forged', 1 FROM query_log",
            id="insert-or-replace-all",
        ),
        pytest.param(
            "INSERT INTO query_log(id, ts, session, tool, ok) "
            f"VALUES ({FIRST_ROW}, 't', 's', 'forged', 1) "
            "ON CONFLICT(id) DO UPDATE SET tool = 'forged'",
            id="upsert",
        ),
    ],
)
def test_append_only_triggers_abort_rewrites_from_a_plain_connection(
    world: World, plain: apsw.Connection, sql: str
) -> None:
    before = world.state()
    with pytest.raises(apsw.ConstraintError, match="query_log is append-only"):
        plain.execute(sql)
    assert_unchanged(before, world.state(), calls=0)


EVENT = "(id, ts, session, kind, content, tags, prev_hash, hash)"
CHECKPOINT = "(id, ts, session, summary, last_event_id, head_hash)"


@pytest.mark.parametrize(
    ("table", "sql"),
    [
        pytest.param("memory_events", "UPDATE memory_events SET content = 'x'", id="events-update"),
        pytest.param(
            "memory_events", "UPDATE memory_events SET hash = 'x' WHERE id = 3", id="events-rehash"
        ),
        pytest.param("memory_events", "DELETE FROM memory_events", id="events-delete-all"),
        pytest.param(
            "memory_events", "DELETE FROM memory_events WHERE id = 3", id="events-delete-head"
        ),
        pytest.param(
            "memory_events",
            f"REPLACE INTO memory_events{EVENT} VALUES (1, 't', 's', 'note', 'x', '[]', 'p', 'h')",
            id="events-replace",
        ),
        pytest.param(
            "memory_events",
            f"INSERT INTO memory_events{EVENT} VALUES (1, 't', 's', 'note', 'x', '[]', 'p', 'h') "
            "ON CONFLICT(id) DO UPDATE SET content = 'forged'",
            id="events-upsert",
        ),
        pytest.param(
            "memory_checkpoints", "UPDATE memory_checkpoints SET summary = 'x'", id="cp-update"
        ),
        pytest.param("memory_checkpoints", "DELETE FROM memory_checkpoints", id="cp-delete"),
        pytest.param(
            "memory_checkpoints",
            f"INSERT OR REPLACE INTO memory_checkpoints{CHECKPOINT} "
            "SELECT id, ts, session, 'forged', last_event_id, head_hash FROM memory_checkpoints",
            id="cp-insert-or-replace",
        ),
    ],
)
def test_memory_tables_are_append_only_for_a_plain_connection(
    world: World, plain: apsw.Connection, table: str, sql: str
) -> None:
    before = world.state()
    with pytest.raises(apsw.ConstraintError, match=f"{table} is append-only"):
        plain.execute(sql)
    assert_unchanged(before, world.state(), calls=0)


CLAIM_ROW = "(id, entity, kind, claim, volatility, confidence, state, created_at, last_confirmed)"


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        pytest.param("DELETE FROM claims", "never deleted", id="delete-all"),
        pytest.param("DELETE FROM claims WHERE id = 1", "never deleted", id="delete-live"),
        pytest.param(
            f"DELETE FROM claims WHERE id = {RETIRED_CLAIM}", "never deleted", id="delete-retired"
        ),
        pytest.param(
            f"UPDATE claims SET state = 'active' WHERE id = {RETIRED_CLAIM}",
            "stays retired",
            id="unretire",
        ),
        pytest.param(
            f"UPDATE claims SET confidence = 1, last_confirmed = 'x' WHERE id = {RETIRED_CLAIM}",
            "stays retired",
            id="edit-retired",
        ),
        pytest.param(
            "UPDATE claims SET claim = claim || '!'", "stays retired", id="edit-all-incl-retired"
        ),
        pytest.param(
            f"REPLACE INTO claims{CLAIM_ROW} "
            f"VALUES ({RETIRED_CLAIM}, 'acme', 'fact', 'x', 'slow', 1, 'active', 't', 't')",
            "never replaced",
            id="replace-retired-by-id",
        ),
        pytest.param(
            f"INSERT OR REPLACE INTO claims{CLAIM_ROW} "
            "VALUES (99, 'acme', 'fact', 'acme ships on fridays', 'slow', 1, 'active', 't', 't')",
            "never replaced",
            id="replace-retired-by-identity",
        ),
        pytest.param(
            f"INSERT OR REPLACE INTO claims{CLAIM_ROW} "
            "SELECT id, entity, kind, claim, volatility, 1, 'active', created_at, last_confirmed "
            "FROM claims",
            "never replaced",
            id="replace-all",
        ),
    ],
)
def test_claims_are_never_deleted_and_retired_stays_retired_for_a_plain_connection(
    claims_world: World, plain: apsw.Connection, sql: str, message: str
) -> None:
    before = claims_world.state()
    with pytest.raises(apsw.ConstraintError, match=message):
        plain.execute(sql)
    assert_unchanged(before, claims_world.state(), calls=0)


@pytest.mark.parametrize(
    "sql",
    [
        pytest.param("UPDATE claims_history SET detail = '{}'", id="update"),
        pytest.param("UPDATE claims_history SET event_id = NULL WHERE id = 1", id="unlink"),
        pytest.param("DELETE FROM claims_history", id="delete-all"),
        pytest.param("DELETE FROM claims_history WHERE claim_id = 4", id="delete-one-claims"),
        pytest.param(
            "INSERT OR REPLACE INTO claims_history(id, claim_id, ts, session, action, detail) "
            "SELECT id, claim_id, ts, session, 'forged', detail FROM claims_history",
            id="replace-all",
        ),
        pytest.param(
            "INSERT INTO claims_history(id, claim_id, ts, session, action, detail) "
            "VALUES (1, 1, 't', 's', 'x', '{}') ON CONFLICT(id) DO UPDATE SET action = 'forged'",
            id="upsert",
        ),
    ],
)
def test_claims_history_is_append_only_for_a_plain_connection(
    claims_world: World, plain: apsw.Connection, sql: str
) -> None:
    before = claims_world.state()
    with pytest.raises(apsw.ConstraintError, match="claims_history is append-only"):
        plain.execute(sql)
    assert_unchanged(before, claims_world.state(), calls=0)


def test_a_plain_connection_may_still_change_a_live_claim(
    claims_world: World, plain: apsw.Connection
) -> None:
    # the triggers guard deletion and retirement; live claims are the store's to update
    plain.execute("UPDATE claims SET confidence = 0.5 WHERE id = 1")
    assert "confidence=0.5" in claims_world.service.read_query(
        "SELECT 'confidence=' || confidence AS c FROM claims WHERE id = 1"
    )


def test_a_plain_connection_may_still_append_to_the_log(
    world: World, plain: apsw.Connection
) -> None:
    before = world.state()
    plain.execute(
        "INSERT INTO query_log(ts, session, tool, ok) VALUES ('t', 's', 'outside tool', 1)"
    )
    assert_unchanged(before, world.state(), calls=1)


@pytest.mark.parametrize(
    "sql",
    [
        pytest.param("INSERT INTO notes(body) VALUES ('x')", id="insert"),
        pytest.param("DELETE FROM items", id="delete"),
        pytest.param("CREATE TABLE t2(a)", id="create"),
        pytest.param("INSERT INTO tokens(tokens) VALUES ('delete-all')", id="fts-command"),
        pytest.param("INSERT INTO boxes VALUES (99, 0, 1, 0, 1)", id="rtree"),
        pytest.param(
            f"INSERT INTO memory_events{EVENT} VALUES (4, 't', 's', 'note', 'x', '[]', 'p', 'h')",
            id="memory-event",
        ),
        pytest.param(
            "INSERT INTO memory_events_fts(memory_events_fts) VALUES ('delete-all')",
            id="memory-fts-delete-all",
        ),
        pytest.param(
            "INSERT INTO memory_events_fts(memory_events_fts) VALUES ('rebuild')",
            id="memory-fts-rebuild",
        ),
        pytest.param(
            "INSERT INTO memory_events_fts(memory_events_fts) VALUES ('optimize')",
            id="memory-fts-optimize",
        ),
        pytest.param("DELETE FROM memory_events_fts_data", id="memory-fts-shadow"),
        pytest.param(
            "INSERT INTO claims(entity, kind, claim, volatility, confidence, state, created_at, "
            "last_confirmed) VALUES ('a', 'fact', 'x', 'slow', 1, 'active', 't', 't')",
            id="claim",
        ),
        pytest.param("UPDATE claims SET confidence = 1", id="claims-update"),
        pytest.param(
            "INSERT INTO claims_history(claim_id, ts, session, action, detail) "
            "VALUES (1, 't', 's', 'x', '{}')",
            id="claims-history",
        ),
    ],
)
def test_the_read_connection_cannot_write_even_without_an_authorizer(
    world: World, sql: str
) -> None:
    # why the policy may let a module *prepare* its writes in read_query: none can run
    reader = world.service.db.reader
    assert reader.authorizer is None
    before = world.state()
    with pytest.raises(
        (apsw.ReadOnlyError, apsw.SQLError), match=r"readonly|query_only|may not be modified"
    ):
        reader.execute(sql)
    assert_unchanged(before, world.state(), calls=0)
