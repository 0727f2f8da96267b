"""Over HTTP, a member's memory and claim changes carry the member (issue 22): the session of
each event, checkpoint and claims_history row is the caller's, `<server session>/<actor>`
and, when the protocol revision has sessions, `/<8 hex of the Mcp-Session-Id>` (the hash
contract is unchanged: the actor is inside the hashed `session` field). Where the agent
reads sessions back (memory_stats, get_resume_context), the actor is readable.

A real `sqlgate serve --transport http` with a member added to its database beforehand.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import anyio
import apsw
import pytest

from sqlgate.config import Settings
from sqlgate.engine.records.members import Members
from sqlgate.service import Service
from tests.records import connect_both
from tests.surfaces.mcp.test_http import CALL_SECONDS, call, connected, start_server

pytestmark = [pytest.mark.stdio, pytest.mark.anyio]

ADMIN = "admin-token-" + "a" * 24
# the caller's session: the server's, the actor, then the connection when there is one
ALICE_SESSION = re.compile(r"s-\d{8}T\d{6}Z-[0-9a-f]+/alice(/[0-9a-f]{8})?")


@pytest.fixture
def team_db(tmp_path: Path) -> tuple[Path, str]:
    db = tmp_path / "team.db"
    Service.open(Settings(db=db)).close()
    conn = connect_both(db)
    try:
        _, token = Members(conn).add("alice", "write")
    finally:
        conn.close()
    return db, token


def rows(db: Path, sql: str) -> list[tuple[object, ...]]:
    conn = connect_both(db, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return list(conn.execute(sql))
    finally:
        conn.close()


async def test_a_members_claim_changes_record_the_member_in_claims_history(
    team_db: tuple[Path, str],
) -> None:
    db, token = team_db
    server = start_server(db, "--token", ADMIN)
    try:
        with anyio.fail_after(CALL_SECONDS * 4):
            async with connected(server.url, token) as alice:
                added = json.loads(await call(alice, "claim_add", entity="acme", kind="fact",
                                              claim="acme pays in euros"))  # fmt: skip
                await call(alice, "claim_confirm", id=added["id"], confidence=0.9)
                await call(alice, "checkpoint", summary="acme's currency recorded")
                stats = json.loads(await call(alice, "memory_stats"))
                resume = await call(alice, "get_resume_context")
    finally:
        server.stop()
    history = rows(db, "SELECT action, session FROM claims_history ORDER BY id")
    assert [action for action, _ in history] == ["add", "confirm"]
    (session,) = {str(s) for _, s in history}
    assert ALICE_SESSION.fullmatch(session), session
    # the audit rows of those calls, the chain's events and the checkpoint say the same
    audited = rows(db, "SELECT DISTINCT actor, session FROM query_log WHERE tool IN "
                       "('claim_add', 'claim_confirm', 'checkpoint')")  # fmt: skip
    assert audited == [("alice", session)]
    assert {str(s) for (s,) in rows(db, "SELECT session FROM memory_events")} == {session}
    assert rows(db, "SELECT session FROM memory_checkpoints") == [(session,)]
    # read back by the agent, the actor is there whole
    assert [item["session"] for item in stats["sessions"]] == [session]
    checkpoint_line = next(line for line in resume.splitlines() if "checkpoint" in line)
    assert session in checkpoint_line
    assert "/alice" in checkpoint_line
