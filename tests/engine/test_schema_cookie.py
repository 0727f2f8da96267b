"""The schema cookie is read once per statement, and a handed-on value is taken only once."""

from __future__ import annotations

import apsw
import pytest

from sqlgate.engine import schema_cookie
from sqlgate.engine.schema_cookie import read_schema_version, schema_version


@pytest.fixture
def conn() -> apsw.Connection:
    return apsw.Connection(":memory:")


def test_the_cookie_moves_with_each_schema_change(conn: apsw.Connection) -> None:
    before = read_schema_version(conn)
    conn.execute("CREATE TABLE t(a)")
    assert schema_version(conn) == before + 1


def test_a_handed_on_value_is_taken_once_then_sqlite_is_read_again(
    conn: apsw.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the clock stands still: a loaded machine must not let the value go stale (1 ms)
    monkeypatch.setattr(schema_cookie.time, "monotonic_ns", lambda: 10_000_000)
    handed = read_schema_version(conn, hand_on=True)
    conn.execute("CREATE TABLE t(a)")  # moved after the hand-on: the next reader takes it
    assert schema_version(conn) == handed
    assert schema_version(conn) == handed + 1


def test_a_stale_handed_on_value_is_not_taken(
    conn: apsw.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = [10_000_000]
    monkeypatch.setattr(schema_cookie.time, "monotonic_ns", lambda: now[0])
    handed = read_schema_version(conn, hand_on=True)
    conn.execute("CREATE TABLE t(a)")
    now[0] += schema_cookie._FRESH_NS + 1
    assert schema_version(conn) == handed + 1


def test_a_value_handed_on_for_one_connection_is_not_taken_by_another() -> None:
    first, second = apsw.Connection(":memory:"), apsw.Connection(":memory:")
    second.execute("CREATE TABLE t(a)")
    read_schema_version(first, hand_on=True)
    assert schema_version(second) == 1
