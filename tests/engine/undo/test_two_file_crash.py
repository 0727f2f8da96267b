"""A SIGKILL at every step of a write and of an undo, across the user's file and the records
(issue 33, part 4; docs/decisions.md "Two files, one order").

`sqlgate serve --db FILE` runs as a subprocess over stdio with SQLGATE_FAULT_AT naming one of
`engine.faults.FAULT_POINTS`; it is sent one call and dies there (-9, no sleeps: the kill is
synchronous at the point). Then the database is opened again (what the next start does) and:
both files pass `PRAGMA integrity_check`; no super-journal (`-mj*`) and no hot journal is left
beside the user's file; and the invariant holds: if the user's file has the change, the
records hold its undo data and the undo gives back exactly the rows of before the call; if it
lacks the change, whatever undo data the records still hold is refused, and nothing changes.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import apsw
import pytest

from sqlgate.config import Settings
from sqlgate.engine.faults import FAULT_POINTS
from sqlgate.errors import SqlgateError
from sqlgate.service import Service
from tests.records import records_path

pytestmark = pytest.mark.stdio

SRC = Path(__file__).resolve().parents[3] / "src"
SCHEMA = """
CREATE TABLE tasks (id INTEGER PRIMARY KEY, title TEXT NOT NULL, done INT);
INSERT INTO tasks VALUES (1, 'plan', 0), (2, 'build', 0), (3, 'ship', 0);
"""
UPDATE = "UPDATE tasks SET title = 'changed', done = 1 WHERE id IN (1, 2)"
CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "update": ("write_query", {"query": UPDATE}),
    "insert": ("write_query", {"query": "INSERT INTO tasks VALUES (4, 'test', 0)"}),
    "create-table": ("write_query", {"query": "CREATE TABLE notes (id INTEGER PRIMARY KEY, b)"}),
    "destructive-delete": (
        "destructive_query",
        {"query": "DELETE FROM tasks WHERE id = 2", "reason": "the crash test"},
    ),
}
WRITE_POINTS = tuple(p for p in FAULT_POINTS if p.startswith("write."))
UNDO_POINTS = tuple(p for p in FAULT_POINTS if p.startswith("undo."))
HINT = re.compile(r"undo: sqlgate undo (?P<id>\d+@[0-9a-f]{8}) ")


def _quick(mode: str, call: str, point: str) -> bool:
    """The cases run by default: in each journal mode every call and every point at least
    once (the calls take the write points in turn, shifted by one between the modes); the
    whole matrix runs with the end-to-end tests (-m e2e): each case starts a server."""
    if call == "undo":
        return True
    shift = 0 if mode == "delete" else 1
    return WRITE_POINTS[(list(CALLS).index(call) + shift) % len(WRITE_POINTS)] == point


CASES = [
    pytest.param(
        mode,
        call,
        point,
        id=f"{mode}-{call}-{point}",
        marks=() if _quick(mode, call, point) else pytest.mark.e2e,
    )
    for mode in ("delete", "wal")
    for call, points in [*((call, WRITE_POINTS) for call in CALLS), ("undo", UNDO_POINTS)]
    for point in points
]


def test_every_point_is_crossed_by_the_matrix() -> None:
    assert set(WRITE_POINTS) | set(UNDO_POINTS) == set(FAULT_POINTS)
    assert len(CASES) == 2 * (len(CALLS) * len(WRITE_POINTS) + len(UNDO_POINTS))
    for mode in ("delete", "wal"):  # the default run: every call and every point, each mode
        quick = [c.values for c in CASES if not c.marks and c.values[0] == mode]
        assert {call for _, call, _ in quick} == {*CALLS, "undo"}
        assert {point for _, _, point in quick} == set(FAULT_POINTS)


def user_file(path: Path, mode: str) -> None:
    """The user's database, made by the test (as an app would), in `mode`."""
    conn = apsw.Connection(str(path))
    conn.execute(f"PRAGMA journal_mode = {mode}")
    conn.execute(SCHEMA)
    conn.close()


def state(path: Path) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The user's catalog and rows (read-write: a hot journal is rolled back as any opener
    would; the checks for leftovers run before this)."""
    conn = apsw.Connection(str(path))
    try:
        schema = [tuple(r) for r in conn.execute("SELECT type, name, sql FROM sqlite_schema")]
        rows = [tuple(r) for r in conn.execute("SELECT * FROM tasks ORDER BY id")]
    finally:
        conn.close()
    return schema, rows


class Server:
    """`sqlgate serve` over stdio, spoken to in raw JSON-RPC lines."""

    def __init__(self, db: Path, fault: str) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SQLGATE_")}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))
        env["SQLGATE_FAULT_AT"] = fault
        self.process = subprocess.Popen(
            [sys.executable, "-m", "sqlgate", "serve", "--db", str(db), "--confirm", "never"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            env=env,
        )
        self.ids = 0
        initialized = self.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "crash-test", "version": "0"},
            },
        )
        assert initialized is not None, self.stderr()
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        """The response, or None when the server died before it answered."""
        self.ids += 1
        self.send({"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params})
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            return None
        response: dict[str, Any] = json.loads(line)
        assert response["id"] == self.ids
        return response

    def call(self, tool: str, arguments: dict[str, Any]) -> str | None:
        answer = self.request("tools/call", {"name": tool, "arguments": arguments})
        if answer is None:
            return None
        assert not answer["result"]["isError"], answer
        return str(answer["result"]["content"][0]["text"])

    def died(self) -> int:
        code = self.process.wait(timeout=60)
        self.stderr()
        return code

    def stderr(self) -> str:
        assert self.process.stderr is not None
        if self.process.poll() is None:
            return ""
        return self.process.stderr.read()


JOURNAL_MAGIC = bytes.fromhex("d9d505f920a163d7")  # a rollback journal's header, once valid


def leftovers(db: Path) -> list[str]:
    """Files beside the user's that a crash must not leave: a super-journal (one transaction
    over both files), a hot journal (one holding a valid header: SQLite plays it back). A
    journal whose header is still zero, from a transaction killed before its COMMIT, is not
    hot: SQLite ignores it and the next write in rollback mode reuses it."""
    found = [p.name for p in db.parent.glob(f"{db.name}-mj*")]
    journal = db.with_name(db.name + "-journal")
    if journal.is_file():
        with journal.open("rb") as handle:
            if handle.read(8) == JOURNAL_MAGIC:
                found.append(journal.name)
    return found


def integrity(path: Path) -> str:
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        conn.close()


def open_undone(path: Path) -> list[int]:
    """Ids of the undo records not undone, newest first."""
    conn = apsw.Connection(str(records_path(path)), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        query = "SELECT id FROM undo_changesets WHERE undone_at IS NULL ORDER BY id DESC"
        return [int(r[0]) for r in conn.execute(query)]
    finally:
        conn.close()


@pytest.mark.parametrize(("mode", "call", "point"), CASES)
def test_a_kill_at_any_point_leaves_undo_data_that_restores_exactly_or_none(
    tmp_path: Path, settings: Settings, mode: str, call: str, point: str
) -> None:
    db = tmp_path / "app.db"
    user_file(db, mode)
    original = state(db)
    server = Server(db, point)
    target = None
    if call == "undo":
        answer = server.call("write_query", {"query": UPDATE})
        assert answer is not None
        found = HINT.search(answer)
        assert found, answer
        target = found["id"]
        before = state(db)
        answered = server.call("undo_call", {"audit_id": target, "reason": "the crash test"})
    else:
        before = original
        tool, arguments = CALLS[call]
        answered = server.call(tool, arguments)
    assert answered is None, f"the server answered instead of dying at {point}: {answered}"
    assert server.died() == -9

    # the next start: the database opened again as a server opens it
    service = Service.open(replace(settings, db=db), clock=lambda: 1.0, session="s-next")
    try:
        assert leftovers(db) == []
        assert integrity(db) == "ok"
        assert integrity(records_path(db)) == "ok"
        if call == "undo":
            check_undo(service, db, target, original, before)
        else:
            check_write(service, db, before)
    finally:
        service.close()
    assert leftovers(db) == []
    assert mode == "wal" or not db.with_name(db.name + "-wal").exists()


def check_write(service: Service, db: Path, before: Any) -> None:
    """Changed: the newest undo record gives back exactly `before`. Unchanged: every undo
    record left is refused, and nothing changes."""
    kept = open_undone(db)
    if state(db) != before:
        assert kept, "the change committed without its undo data"
        service.undo(changeset=kept[0])
        assert state(db) == before
        return
    for record in kept:
        with pytest.raises(SqlgateError):
            service.undo(changeset=record)
        assert state(db) == before


def check_undo(service: Service, db: Path, target: Any, original: Any, before: Any) -> None:
    """The undo's rows written back: a second undo is refused, nothing changes. Not written
    back: the undo runs again and gives back exactly the rows of before the write."""
    now = state(db)
    assert now in (original, before)
    if now == original:
        with pytest.raises(SqlgateError):
            service.undo(target)
        assert state(db) == original
        return
    service.undo(target)
    assert state(db) == original
