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
    ],
)
def test_the_read_connection_cannot_write_even_without_an_authorizer(
    world: World, sql: str
) -> None:
    # why the policy may let a module *prepare* its writes in read_query: none can run
    reader = world.service.db.reader
    assert reader.authorizer is None
    before = world.state()
    with pytest.raises((apsw.ReadOnlyError, apsw.SQLError), match=r"readonly|query_only"):
        reader.execute(sql)
    assert_unchanged(before, world.state(), calls=0)
