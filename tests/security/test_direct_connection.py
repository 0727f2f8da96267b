"""Protection that does not depend on sqlgate's own connections.

The append-only triggers hold for any program that opens the file with plain SQLite, and
the agent's read connection cannot write even with no authorizer installed.
"""

from __future__ import annotations

from collections.abc import Iterator

import apsw
import pytest

from tests.security.conftest import World
from tests.security.fingerprint import assert_unchanged

FIRST_ROW = "(SELECT min(id) FROM query_log)"


@pytest.fixture
def plain(world: World) -> Iterator[apsw.Connection]:
    """The database file opened by a plain connection: no sqlgate hardening, no authorizer."""
    conn = apsw.Connection(str(world.service.db.path))
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
