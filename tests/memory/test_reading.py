"""Reading memory for the surfaces that show it (memory/reading.py): the console's pages,
`sqlgate export` and the capture health check."""

from __future__ import annotations

from typing import Any

import pytest

from sqlgate.memory.reading import (
    MEMORY_EXPORT,
    count_rows,
    event_and_neighbours,
    event_times,
    events_by_id,
    head_event,
    last_event_time,
    newest_events,
    sessions_since,
    table_records,
)
from sqlgate.service import Service
from tests.memory.conftest import OpenMemory

# (session, content) of the events appended, ids 1 to 5
EVENTS = [("s-a", "one"), ("s-a", "two"), ("s-b", "three"), ("s-a", "four"), ("s-b", "five")]


@pytest.fixture
def remembered(open_memory: OpenMemory) -> Service:
    services = {name: open_memory(session=name) for name in ("s-a", "s-b")}
    for session, content in EVENTS:
        services[session].memory.append_event(content, "note", ["t"])
    return services["s-a"]


def sessions_of(service: Service) -> dict[int, str]:
    with service.db.reading() as conn:
        return {int(i): str(s) for i, s in conn.execute("SELECT id, session FROM memory_events")}


def test_an_empty_memory_has_no_head_and_no_last_time(open_memory: OpenMemory) -> None:
    with open_memory().db.reading() as conn:
        assert head_event(conn) is None
        assert last_event_time(conn) is None
        assert newest_events(conn, None, None, 10) == []
        assert sessions_since(conn, 0) == []
        assert event_and_neighbours(conn, 1) is None


def test_the_head_and_the_last_time_are_the_newest_events(remembered: Service) -> None:
    with remembered.db.reading() as conn:
        assert head_event(conn) == 5
        assert last_event_time(conn) == event_times(conn, [5])[5]


@pytest.mark.parametrize(
    ("session", "before", "limit", "expected"),
    [
        pytest.param(None, None, 10, [5, 4, 3, 2, 1], id="all-newest-first"),
        pytest.param(None, None, 2, [5, 4], id="limit"),
        pytest.param(None, 4, 10, [3, 2, 1], id="before"),
        pytest.param("a", None, 10, [4, 2, 1], id="one-session"),
        pytest.param("a", 2, 10, [1], id="one-session-before"),
        pytest.param("", None, 10, [5, 4, 3, 2, 1], id="empty-session-is-all"),
        pytest.param("nobody", None, 10, [], id="no-such-session"),
    ],
)
def test_newest_events_page_back_by_id(
    remembered: Service, session: str | None, before: int | None, limit: int, expected: list[int]
) -> None:
    named = {"a": sessions_of(remembered)[1]}.get(session or "", session)
    with remembered.db.reading() as conn:
        rows = newest_events(conn, named, before, limit)
    assert [row[0] for row in rows] == expected
    assert [row[4] for row in rows] == [EVENTS[i - 1][1] for i in expected]


@pytest.mark.parametrize(
    ("ids", "expected"),
    [([3, 1, 5], [3, 1, 5]), ([2], [2]), ([], []), ([9, 4], [4])],
)
def test_events_by_id_keep_the_order_asked(
    remembered: Service, ids: list[int], expected: list[int]
) -> None:
    with remembered.db.reading() as conn:
        assert [row[0] for row in events_by_id(conn, ids)] == expected
        assert sorted(event_times(conn, ids)) == sorted(expected)


@pytest.mark.parametrize(("after", "expected"), [(0, {"a": (3, 1, 4), "b": (2, 3, 5)}),
                                                  (3, {"a": (1, 4, 4), "b": (1, 5, 5)}),
                                                  (5, {})])  # fmt: skip
def test_sessions_since_count_the_newer_events(
    remembered: Service, after: int, expected: dict[str, tuple[int, int, int]]
) -> None:
    names = sessions_of(remembered)
    short = {names[1]: "a", names[3]: "b"}
    with remembered.db.reading() as conn:
        found = {
            short[s]: (count, first, last) for s, count, first, last in sessions_since(conn, after)
        }
    assert found == expected


@pytest.mark.parametrize(
    ("event_id", "previous", "following"),
    [(1, None, 2), (3, 2, 4), (5, 4, None)],
)
def test_an_event_comes_with_its_neighbours(
    remembered: Service, event_id: int, previous: int | None, following: int | None
) -> None:
    with remembered.db.reading() as conn:
        found = event_and_neighbours(conn, event_id)
        hashes = dict(conn.execute("SELECT id, hash FROM memory_events"))
    assert found is not None
    row, before, after = found
    assert row[0] == event_id
    assert row[4] == EVENTS[event_id - 1][1]
    assert row[7] == hashes[event_id]
    assert before == (None if previous is None else (previous, hashes[previous]))
    assert after == following


def test_the_export_reads_every_row_with_its_json_parsed(remembered: Service) -> None:
    remembered.memory.checkpoint("where we are")
    with remembered.db.reading() as conn:
        counts = {kind: count_rows(conn, table) for table, kind, _ in MEMORY_EXPORT}
        records: list[dict[str, Any]] = [
            record
            for table, kind, json_columns in MEMORY_EXPORT
            for record in table_records(conn, table, kind, json_columns)
        ]
    assert counts == {"event": 5, "checkpoint": 1}
    assert [r["type"] for r in records] == ["event"] * 5 + ["checkpoint"]
    assert [r["id"] for r in records[:5]] == [1, 2, 3, 4, 5]
    assert all(r["tags"] == ["t"] for r in records[:5])
    assert records[5]["summary"] == "where we are"
