"""Reading the audit log (engine/records/audit_reader.py): the one query builder of
`sqlgate log`, `sqlgate stats` and the console, filters in, rows out, values bound."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest

from sqlgate.config import Settings
from sqlgate.engine.records import AuditFilter, AuditReader
from sqlgate.errors import InvalidArgument
from sqlgate.service import Service
from tests.records import connect_both

REFUSED = json.dumps({"refused": True, "fingerprint": "SELECT ?"})
# (id, ts, actor, session, tool, query, ok, detail): id 6 is a row the audit queue wrote
# late (its time is the oldest, its id the newest); id 4 names no actor
ROWS = [
    (1, "2026-12-01T10:00:00.000Z", "alice", "s-1", "read_query", "SELECT 1", 1,
     json.dumps({"fingerprint": "SELECT ?"})),
    (2, "2026-12-01T11:00:00.000Z", "Alice", "s-2", "write_query", "SELECT 2", 0, REFUSED),
    (3, "2026-12-02T09:00:00.000Z", "bob", "s-1", "read_query", "SELEC 3", 0, "not json {"),
    (4, "2026-12-02T10:00:00.000Z", None, "s-3", "destructive_query", "DELETE FROM t", 1, None),
    (5, "2026-12-02T11:00:00.000Z", "carol", "s-2", "list_tables", None, 0, "{}"),
    (6, "2026-11-30T08:00:00.000Z", "alice", "s-1", "read_query", "SELECT 4", 1, None),
]  # fmt: skip


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[apsw.Connection]:
    db = tmp_path_factory.mktemp("audit") / "agent.db"
    Service.open(Settings(db=db)).close()
    conn = connect_both(db)
    conn.executemany(
        "INSERT INTO query_log (id, ts, actor, session, tool, query, ok, detail) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", ROWS,
    )  # fmt: skip
    yield conn
    conn.close()


ALICE = {"actor": "alice"}
CASES = [
    pytest.param({}, [6, 5, 4, 3, 2, 1], id="every-call-newest-id-first"),
    pytest.param(ALICE, [6, 1], id="actor-as-recorded"),
    pytest.param({**ALICE, "actor_any_case": True}, [6, 2, 1], id="actor-any-case"),
    pytest.param({"actor": "ALICE"}, [], id="actor-as-recorded-is-exact"),
    pytest.param({"actor": "nobody", "actor_any_case": True}, [], id="no-such-actor"),
    pytest.param({**ALICE, "by_actor_index": True}, [1, 6], id="actor-index-newest-time-first"),
    pytest.param({**ALICE, "by_actor_index": True, "before": 1}, [6], id="actor-index-page"),
    pytest.param({"unrecorded": True}, [4], id="unrecorded"),
    pytest.param({"unrecorded": True, "by_actor_index": True}, [4], id="unrecorded-by-index"),
    pytest.param({"session": "s-1"}, [6, 3, 1], id="session"),
    pytest.param({"tool": "read_query"}, [6, 3, 1], id="tool"),
    pytest.param({"tool": ""}, [], id="empty-tool-is-a-value"),
    pytest.param({"outcome": "ok"}, [6, 4, 1], id="ok"),
    pytest.param({"outcome": "refused"}, [2], id="refused"),
    pytest.param({"outcome": "error"}, [5, 3], id="error-detail-not-json-or-not-refused"),
    pytest.param({"failed": True}, [5, 3, 2], id="failed"),
    pytest.param({"failed": True, "outcome": "ok"}, [], id="failed-and-ok"),
    pytest.param({"since": "2026-12-02T00:00:00.000Z"}, [5, 4, 3], id="since"),
    pytest.param({"until": "2026-12-01T10:00:00.000Z"}, [6, 1], id="until-inclusive"),
    pytest.param({"before": 4}, [3, 2, 1], id="before"),
    pytest.param({"after": 3}, [4, 5, 6], id="after-oldest-first"),
    pytest.param(
        {"tool": "read_query", "session": "s-1", "since": "2026-12-01"},
        [3, 1],
        id="filters-together",
    ),
    pytest.param({"tool": "x' OR 1=1 --"}, [], id="values-are-bound"),
]


@pytest.mark.parametrize(("given", "expected"), CASES)
def test_each_filter_lets_by_its_calls_in_order(
    audited: apsw.Connection, given: dict[str, Any], expected: list[int]
) -> None:
    rows = AuditReader().rows(audited, AuditFilter(**given), ("id",), None)
    assert [row[0] for row in rows] == expected


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        pytest.param({}, [6, 5, 4, 3, 2, 1], id="every-call"),
        pytest.param({"unrecorded": True}, [6, 5, 4, 3, 2, 1], id="unrecorded-is-every-call"),
        pytest.param({**ALICE, "actor_any_case": True}, [], id="no-row-names-an-actor"),
        pytest.param({**ALICE, "by_actor_index": True}, [], id="no-actor-index-either"),
    ],
)
def test_a_file_older_than_actors_reads_no_actor(
    audited: apsw.Connection, given: dict[str, Any], expected: list[int]
) -> None:
    reader = AuditReader.for_schema(8)
    rows = reader.rows(audited, AuditFilter(**given), ("id", "actor"), None)
    assert [row[0] for row in rows] == expected
    assert {row[1] for row in rows} <= {None}
    assert "actor" not in reader.select(AuditFilter(**given), ("id", "actor"), 1)[0]


@pytest.mark.parametrize(
    ("columns", "expected"),
    [
        pytest.param(("id", "actor", "tool"), (2, "Alice", "write_query"), id="columns"),
        pytest.param(
            ("hour", "refused", "fingerprint"), ("2026-12-01T11", 1, "SELECT ?"), id="derived"
        ),
        pytest.param(("example", "ok", "detail"), ("SELECT 2", 0, REFUSED), id="example"),
    ],
)
def test_columns_are_asked_for_by_name(
    audited: apsw.Connection, columns: tuple[str, ...], expected: tuple[Any, ...]
) -> None:
    assert AuditReader().rows(audited, AuditFilter(before=3), columns, 1) == [expected]


@pytest.mark.parametrize("column", ["nope", "id; DROP TABLE query_log", "ID", ""])
def test_an_unknown_column_is_refused(column: str) -> None:
    with pytest.raises(InvalidArgument, match="no column"):
        AuditReader().select(AuditFilter(), ("id", column), 1)


def test_an_unknown_outcome_is_refused() -> None:
    with pytest.raises(InvalidArgument, match="no outcome"):
        AuditReader().select(AuditFilter(outcome="fine"), ("id",), 1)


@pytest.mark.parametrize(("limit", "count"), [(None, 6), (0, 0), (2, 2), (10, 6)])
def test_the_limit_bounds_the_rows(audited: apsw.Connection, limit: int | None, count: int) -> None:
    assert len(AuditReader().rows(audited, AuditFilter(), ("id",), limit)) == count


def test_the_tally_counts_each_actors_calls_by_outcome(
    audited: apsw.Connection, tmp_path: Path
) -> None:
    tally = AuditReader().tally(audited, tmp_path / "no-queue.db")
    assert tally == {
        "calls": 6, "ok": 3, "refused": 1, "error": 2, "queued": 0,
        "actors": [
            {"actor": "Alice", "calls": 1, "ok": 0, "refused": 1, "error": 0},
            {"actor": "alice", "calls": 2, "ok": 2, "refused": 0, "error": 0},
            {"actor": "bob", "calls": 1, "ok": 0, "refused": 0, "error": 1},
            {"actor": "carol", "calls": 1, "ok": 0, "refused": 0, "error": 1},
            {"actor": None, "calls": 1, "ok": 1, "refused": 0, "error": 0},
        ],
    }  # fmt: skip


def test_an_older_file_tallies_every_call_under_no_actor(
    audited: apsw.Connection, tmp_path: Path
) -> None:
    tally = AuditReader(actors_recorded=False).tally(audited, tmp_path / "no-queue.db")
    assert tally["actors"] == [{"actor": None, "calls": 6, "ok": 3, "refused": 1, "error": 2}]
