"""The memory tools through real `sqlgate serve` processes on stdio.

Four servers append to one database file at once, many calls in flight in each: SQLite's
write lock (BEGIN IMMEDIATE) must queue them into one linear chain, with no id taken twice,
no fork and no event lost. Also over the pipe: redaction, flags, and resuming after a
checkpoint.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

import anyio
import apsw
import pytest
from mcp import Client
from mcp.types import CallToolResult

from sqlgate.home import record_files
from sqlgate.memory.chain import GENESIS, event_hash
from sqlgate.surfaces.mcp.server import MEMORY_TOOLS
from tests.records import connect_both
from tests.surfaces.mcp.test_stdio import serve_params, stdio_server, text

pytestmark = [pytest.mark.stdio, pytest.mark.anyio]

SERVERS = 4
APPENDS_PER_SERVER = 250
IN_FLIGHT = 25  # concurrent calls per client
BUSY_TIMEOUT = 60  # seconds a server waits for the write lock
SECRET = "AKIA" + "Q7W3E5R7T9Y2U4I6"  # an AWS access key id shape
SESSION_LINE = re.compile(r"^## event \d+ · \S+ · \S+ · session (\S+)", re.MULTILINE)


def ok(result: CallToolResult) -> str:
    assert not result.is_error, text(result)
    return text(result)


def read_events(db: Path) -> list[tuple[Any, ...]]:
    conn = connect_both(db, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return [
            tuple(row)
            for row in conn.execute(
                "SELECT id, ts, session, kind, content, tags, prev_hash, hash "
                "FROM memory_events ORDER BY id"
            )
        ]
    finally:
        conn.close()


class Writer:
    """One server process: its appends, its session, and what it says of the chain at the end.

    Each writer runs its own server in its own task. Once all four are up they append at
    once; after its appends each waits until every writer is done, then asks its server to
    verify the chain.
    """

    def __init__(self, number: int, db: Path, log: TextIO) -> None:
        self.number = number
        # SQLite's lock is not fair: one server may wait while others append hundreds of
        # events, longer than the default 5 s on a slow machine. The chain is under test here
        self.params = serve_params(db, "--busy-timeout", str(BUSY_TIMEOUT))
        self.log = log
        self.ids: list[int] = []
        self.session = ""
        self.verified: dict[str, Any] = {}

    async def append(self, client: Client, n: int, limiter: anyio.CapacityLimiter) -> None:
        async with limiter:
            result = await client.call_tool(
                "append_event",
                {"content": f"server {self.number} event {n}", "tags": [f"w{self.number}"]},
            )
        self.ids.append(int(json.loads(ok(result))["id"]))

    async def run(
        self, started: list[anyio.Event], finished: list[Writer], all_done: anyio.Event
    ) -> None:
        # servers start one after another: concurrent first opens of one file can fail with
        # "database is locked" (a start-up bug reported separately); the appends overlap
        if self.number:
            await started[self.number - 1].wait()
        async with stdio_server(self.params, self.log) as client:
            started[self.number].set()
            await started[-1].wait()  # all four append at once, not one after another
            limiter = anyio.CapacityLimiter(IN_FLIGHT)
            async with anyio.create_task_group() as group:
                for n in range(APPENDS_PER_SERVER):
                    group.start_soon(self.append, client, n, limiter)
            details = ok(await client.call_tool("memory_details", {"ids": [self.ids[0]]}))
            match = SESSION_LINE.search(details)
            assert match is not None, details
            self.session = match.group(1)
            finished.append(self)
            if len(finished) == SERVERS:
                all_done.set()
            await all_done.wait()
            self.verified = json.loads(ok(await client.call_tool("verify_chain", {})))


async def test_four_servers_appending_at_once_build_one_linear_chain(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"
    logs = [(tmp_path / f"server-{n}.txt").open("w+", encoding="utf-8") for n in range(SERVERS)]
    writers = [Writer(n, db, log) for n, log in enumerate(logs)]
    started = [anyio.Event() for _ in writers]
    finished: list[Writer] = []
    all_done = anyio.Event()
    try:
        async with anyio.create_task_group() as group:
            for writer in writers:
                group.start_soon(writer.run, started, finished, all_done)
        for log in logs:
            log.seek(0)
            assert "Traceback" not in log.read()
    finally:
        for log in logs:
            log.close()

    total = SERVERS * APPENDS_PER_SERVER
    events = read_events(db)
    assert [row[0] for row in events] == list(range(1, total + 1))
    previous = GENESIS
    for event_id, ts, session, kind, content, tags, prev_hash, digest in events:
        assert prev_hash == previous, f"event {event_id} does not link to {event_id - 1}"
        assert digest == event_hash(
            event_id, ts, session, kind, content, json.loads(tags), prev_hash
        )
        previous = digest
    # every server, asked after all appends, verifies the same whole chain
    for writer in writers:
        assert writer.verified == {
            "ok": True,
            "events": total,
            "head_id": total,
            "head_hash": previous,
        }

    # every server got 250 distinct ids, and together exactly 1..1000
    all_ids = sorted(event_id for writer in writers for event_id in writer.ids)
    assert all_ids == list(range(1, total + 1))
    sessions = {writer.session for writer in writers}
    assert len(sessions) == SERVERS
    assert {row[2] for row in events} == sessions
    for writer in writers:
        assert len(writer.ids) == APPENDS_PER_SERVER
        mine = [row for row in events if row[2] == writer.session]
        assert len(mine) == APPENDS_PER_SERVER
        assert sorted(row[0] for row in mine) == sorted(writer.ids)
        assert {row[5] for row in mine} == {f'["w{writer.number}"]'}
        assert {row[4] for row in mine} == {
            f"server {writer.number} event {n}" for n in range(APPENDS_PER_SERVER)
        }
    witness = json.loads(record_files(db).witness.read_text(encoding="utf-8"))
    assert (witness["head_id"], witness["head_hash"]) == (total, previous)


@pytest.fixture
def server_log(tmp_path: Path) -> Iterator[TextIO]:
    with (tmp_path / "server-stderr.txt").open("w+", encoding="utf-8") as handle:
        yield handle


async def test_memory_over_stdio_redacts_limits_and_resumes(
    tmp_path: Path, server_log: TextIO
) -> None:
    db = tmp_path / "agent.db"
    params = serve_params(db, "--tools", "memory", "--max-event-chars", "80")
    async with stdio_server(params, server_log) as client:
        listed = await client.list_tools()
        assert sorted(tool.name for tool in listed.tools) == sorted(MEMORY_TOOLS)

        appended = json.loads(
            ok(await client.call_tool("append_event", {"content": f"deploy key {SECRET} rotated"}))
        )
        assert appended["redacted"] == {"aws-key": 1}
        details = ok(await client.call_tool("memory_details", {"ids": [appended["id"]]}))
        assert "deploy key [REDACTED:aws-key] rotated" in details
        assert SECRET not in details

        too_long = await client.call_tool("append_event", {"content": "x" * 81})
        assert too_long.is_error
        assert "--max-event-chars" in text(too_long)

        ok(await client.call_tool("append_event", {"content": "tests pass on the branch"}))
        saved = json.loads(
            ok(await client.call_tool("checkpoint", {"summary": "auth done; next: billing"}))
        )
        assert saved["last_event_id"] == 2
        ok(await client.call_tool("append_event", {"content": "started billing", "kind": "todo"}))
        context = ok(await client.call_tool("get_resume_context", {}))

    lines = context.splitlines()
    assert lines[0].startswith("# chain: ok, 3 events, head 3 (")
    assert lines[1].startswith("# checkpoint 1 · ")
    assert lines[1].endswith(" · after event 2")
    assert lines[2] == "auth done; next: billing"
    assert lines[3] == "# 1 event since the checkpoint"
    assert lines[4] == "id,date,kind,tags,content"
    assert lines[5].startswith("3,")
    assert lines[5].endswith(",todo,,started billing")  # no tags: an empty cell
    assert "rotated" not in context  # events before the checkpoint are left out
    assert "tests pass" not in context
    assert [row[4] for row in read_events(db)] == [
        "deploy key [REDACTED:aws-key] rotated",
        "tests pass on the branch",
        "started billing",
    ]
    for path in tmp_path.iterdir():
        assert SECRET.encode() not in path.read_bytes(), path.name
