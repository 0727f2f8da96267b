"""`sqlgate snapshots restore` never changes who may connect (issue 30 §5): members are made,
revoked and rotated with `sqlgate members`, a snapshot restored with the command, and each
token is then presented to the HTTP server's identity gate, in process. The members live in
sqlgate's records (issue 33), never in the user's file a restore replaces.

A token revoked, rotated away or of a removed member after the snapshot is answered 401
after the restore; a member added after it still gets in, with the tier it has now.
"""

from __future__ import annotations

import json
from contextlib import closing
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from sqlgate.config import Settings
from sqlgate.engine.records.members import Members
from sqlgate.service import Service
from sqlgate.surfaces.mcp.http_identity import IdentityGate, server_authenticator
from tests.records import connect_both
from tests.surfaces.cli.helpers import invoke, succeeded

pytestmark = pytest.mark.usefixtures("no_sqlgate_environment")


def member(db: Path, *args: str) -> str:
    return succeeded(invoke("members", *args, "--db", str(db))).strip()


async def _answer(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"in"})


def statuses(db: Path, tokens: dict[str, str]) -> dict[str, tuple[int, str]]:
    """What the identity gate of a server on `db` answers each token: (status, reason)."""

    async def ask() -> dict[str, tuple[int, str]]:
        with closing(connect_both(db)) as conn:
            gate = IdentityGate(_answer, server_authenticator(None, Members(conn)))
            transport = httpx2.ASGITransport(app=gate, client=("10.0.0.7", 5000))
            answers: dict[str, tuple[int, str]] = {}
            async with httpx2.AsyncClient(transport=transport, base_url="http://x") as client:
                for label, token in tokens.items():
                    response = await client.post(
                        "/mcp", headers={"Authorization": f"Bearer {token}"}, content=b"{}"
                    )
                    reason = response.json()["reason"] if response.status_code == 401 else ""
                    answers[label] = (response.status_code, reason)
            return answers

    return anyio.run(ask)


def test_after_a_restore_every_ended_token_is_refused_and_every_new_member_gets_in(
    tmp_path: Path,
) -> None:
    db = tmp_path / "team.db"
    Service.open(Settings(db=db)).close()
    tokens = {
        "alice": member(db, "add", "alice", "--tier", "write"),
        "carol": member(db, "add", "carol", "--tier", "read"),
        "dave": member(db, "add", "dave", "--tier", "read"),
        "erin": member(db, "add", "erin", "--tier", "read"),
    }
    with closing(Service.open(Settings(db=db), session="s-test")) as service:
        snapshot = service.sql.snapshot()
    assert statuses(db, tokens) == dict.fromkeys(tokens, (200, ""))
    member(db, "revoke", "alice")
    tokens["carol (rotated)"] = member(db, "rotate", "carol")
    member(db, "remove", "dave")
    member(db, "set", "erin", "--tier", "destructive")
    tokens["bob"] = member(db, "add", "bob", "--tier", "write")
    listed_before = member(db, "list", "--json")
    expected = {
        "alice": (401, "token_revoked"),
        "carol": (401, "token_revoked"),
        "dave": (401, "member_removed"),
        "erin": (200, ""),
        "carol (rotated)": (200, ""),
        "bob": (200, ""),
    }
    assert statuses(db, tokens) == expected

    result = invoke("snapshots", "restore", snapshot.name, "--db", str(db), "--yes")
    out = succeeded(result)
    # the members are in sqlgate's records, which a restore of the user's file leaves alone
    assert "sqlgate's records (audit log, memory, claims, members) are not in the database" in out

    assert statuses(db, tokens) == expected
    assert member(db, "list", "--json") == listed_before
    erin = [row for row in map(json.loads, listed_before.splitlines()) if row["name"] == "erin"]
    assert erin[0]["tier"] == "destructive"
