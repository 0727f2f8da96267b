"""The write path over two files (issue 33): the undo record is committed to the records file
before the user's COMMIT, and a records file another server holds busy refuses the call with
nothing changed in either file. Undo writes the rows back first, then marks the record; its
records lock is taken before the user's COMMIT, so a busy records file changes nothing either.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import apsw
import pytest

from sqlgate.engine.running import writes
from sqlgate.engine.undo import restore
from sqlgate.errors import DatabaseBusy, SqlgateError, UndoConflict
from sqlgate.service import Service
from tests.engine.undo.test_undo_writes import hint
from tests.records import records_path

SCHEMA = """
CREATE TABLE tasks (id INTEGER PRIMARY KEY, title TEXT, priority INT);
INSERT INTO tasks VALUES (1, 'a', 1), (2, 'b', 2), (3, 'c', 3);
"""


def user_rows(db: Path) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The user's catalog and every row of tasks, read on a connection of the test's own."""
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        schema = [tuple(r) for r in conn.execute("SELECT type, name, sql FROM sqlite_schema")]
        rows = [tuple(r) for r in conn.execute("SELECT * FROM tasks ORDER BY id")]
    finally:
        conn.close()
    return schema, rows


def undo_records(db: Path) -> list[tuple[Any, ...]]:
    conn = apsw.Connection(str(records_path(db)), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return [
            tuple(r)
            for r in conn.execute(
                "SELECT id, tool, kind, undone_at FROM undo_changesets ORDER BY id"
            )
        ]
    finally:
        conn.close()


@contextmanager
def records_held(db: Path) -> Iterator[None]:
    """Another server's write transaction on the records file, held for the block."""
    other = apsw.Connection(str(records_path(db)))
    other.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        other.execute("ROLLBACK")
        other.close()


@pytest.fixture
def ready(make_service: Callable[..., Service], db_path: Path) -> Service:
    # no wait for a lock: another server's lock is reported at once
    service = make_service(busy_timeout=0.0)
    conn = apsw.Connection(str(db_path))
    conn.execute(SCHEMA)
    conn.close()
    return service


CALLS: list[Any] = [
    pytest.param("write_query", "UPDATE tasks SET priority = 9 WHERE id = 1", id="update"),
    pytest.param("write_query", "INSERT INTO tasks VALUES (4, 'd', 4)", id="insert"),
    pytest.param("write_query", "CREATE TABLE notes (id INTEGER PRIMARY KEY)", id="create-table"),
    pytest.param("write_query", "CREATE INDEX tasks_p ON tasks (priority)", id="create-index"),
    pytest.param("destructive_query", "DELETE FROM tasks WHERE id = 2", id="destructive-delete"),
    pytest.param("create_view", "SELECT id FROM tasks", id="create-view"),
]


def run(service: Service, tool: str, sql: str) -> str:
    if tool == "destructive_query":
        return service.destructive_query(sql, reason="r")
    if tool == "create_view":
        return service.create_view("ids", sql)
    return service.write_query(sql)


@pytest.mark.parametrize(("tool", "sql"), CALLS)
def test_a_busy_records_file_refuses_the_call_and_changes_nothing(
    ready: Service, db_path: Path, tool: str, sql: str
) -> None:
    before, kept = user_rows(db_path), undo_records(db_path)
    with records_held(db_path), pytest.raises(DatabaseBusy, match=r"busy.*nothing was changed"):
        run(ready, tool, sql)
    assert user_rows(db_path) == before
    assert undo_records(db_path) == kept
    # the refused call's audit row waited in the queue: written first, so that the retry
    # (busy timeout 0 here) does not meet the drainer's write
    assert ready.audit.drain(wait=5.0)
    assert "undo:" in run(ready, tool, sql)  # the lock gone, the same call goes through


def test_a_busy_records_file_refuses_the_undo_and_changes_nothing(
    ready: Service, db_path: Path
) -> None:
    call = int(hint(ready.write_query("UPDATE tasks SET priority = 9 WHERE id = 1"))["id"])
    after, kept = user_rows(db_path), undo_records(db_path)
    with records_held(db_path), pytest.raises(DatabaseBusy, match="nothing was changed"):
        ready.undo(call)
    assert user_rows(db_path) == after  # the rows were not written back
    assert undo_records(db_path) == kept  # nor the record marked
    assert ready.audit.drain(wait=5.0)  # the refused call's queued audit row, written first
    assert ready.undo(call).startswith(f"undone: call {call} (")
    assert user_rows(db_path)[1][0] == (1, "a", 1)


class Cut(Exception):
    """Raised where the user's COMMIT would run: the change does not commit."""


def cut_where(point: str, error: BaseException | None = None) -> Callable[[str], None]:
    """A fault point that raises at `point` (Cut, or `error`) instead of killing."""

    def fault(name: str) -> None:
        if name == point:
            raise error if error is not None else Cut(name)

    return fault


def cut_at(monkeypatch: pytest.MonkeyPatch, point: str) -> None:
    monkeypatch.setattr(writes, "fault_point", cut_where(point))


@pytest.mark.parametrize(("tool", "sql"), CALLS)
def test_a_change_that_does_not_commit_leaves_no_undo_record(
    ready: Service, db_path: Path, monkeypatch: pytest.MonkeyPatch, tool: str, sql: str
) -> None:
    before, kept = user_rows(db_path), undo_records(db_path)
    cut_at(monkeypatch, "write.before_commit")
    with pytest.raises(SqlgateError, match=r"internal error \(Cut\)"):
        run(ready, tool, sql)
    assert user_rows(db_path) == before
    assert undo_records(db_path) == kept


@pytest.mark.parametrize(
    ("keep", "tool", "sql"),
    [
        pytest.param(
            {"snapshots_keep": 1}, "destructive_query", "DELETE FROM tasks WHERE id = 3", id="rows"
        ),
        # write_query prunes on every 10th changeset id: the one cut off is the 10th
        pytest.param({"write_undo_keep": 1}, "write_query", "CREATE TABLE more (x)", id="schema"),
        pytest.param(
            {"write_undo_keep": 1}, "write_query", "UPDATE tasks SET title = 'z' WHERE id = 3",
            id="write-rows",
        ),
    ],
)  # fmt: skip
def test_a_change_that_does_not_commit_evicts_no_older_undo_data(
    make_service: Callable[..., Service],
    db_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    keep: dict[str, int],
    tool: str,
    sql: str,
) -> None:
    service = make_service(**keep)
    conn = apsw.Connection(str(db_path))
    conn.execute(SCHEMA)
    conn.close()
    for priority in range(9 if tool == "write_query" else 1):
        answer = run(service, tool, f"UPDATE tasks SET priority = {priority} WHERE id = 2")
    call = int(hint(answer)["id"])
    kept = undo_records(db_path)
    cut_at(monkeypatch, "write.before_commit")
    with pytest.raises(SqlgateError, match=r"internal error \(Cut\)"):
        run(service, tool, sql)
    assert undo_records(db_path) == kept  # the older call keeps its undo data
    monkeypatch.undo()
    assert service.undo(call).startswith(f"undone: call {call} (")


def test_an_undo_cut_before_its_commit_changes_nothing_and_runs_again(
    ready: Service, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    call = int(hint(ready.write_query("UPDATE tasks SET priority = 9 WHERE id = 1"))["id"])
    after, kept = user_rows(db_path), undo_records(db_path)
    monkeypatch.setattr(restore, "fault_point", cut_where("undo.before_commit"))
    with pytest.raises(SqlgateError, match=r"internal error \(Cut\)"):
        ready.undo(call)
    assert (user_rows(db_path), undo_records(db_path)) == (after, kept)
    monkeypatch.undo()
    assert "undo:" in ready.write_query("INSERT INTO tasks VALUES (5, 'e', 5)")  # records free
    assert ready.undo(call).startswith(f"undone: call {call} (")


def test_an_undo_whose_mark_fails_is_done_and_a_second_one_is_refused(
    ready: Service, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    call = int(hint(ready.write_query("UPDATE tasks SET priority = 9 WHERE id = 1"))["id"])
    kept = undo_records(db_path)
    monkeypatch.setattr(restore, "fault_point", cut_where("undo.applied", apsw.IOError("disk")))
    assert ready.undo(call).startswith(f"undone: call {call} (")
    assert user_rows(db_path)[1][0] == (1, "a", 1)
    assert undo_records(db_path) == kept  # not marked: what a crash there leaves too
    monkeypatch.undo()
    with pytest.raises(UndoConflict, match="changes made after it"):
        ready.undo(call)
    assert user_rows(db_path)[1][0] == (1, "a", 1)
