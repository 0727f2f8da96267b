"""A team server for the identity tests: a database with members, served over HTTP on
127.0.0.1 by a real `sqlgate serve --transport http` subprocess (`test_http.start_server`:
ready when it prints its URL, no sleeps), SDK clients per member and protocol era, and the
audit rows read back from the file.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from sqlgate.config import Settings
from sqlgate.engine.records.members import Members
from sqlgate.service import Service
from tests.records import connect_both
from tests.surfaces.mcp.test_http import CALL_SECONDS, RunningServer, start_server

__all__ = [
    "ADMIN_TOKEN",
    "ERAS",
    "AuditRow",
    "Team",
    "audit_rows",
    "member_client",
    "open_team",
    "with_members",
]

ADMIN_TOKEN = "admin-t0k3n-for-the-identity-tests"
# the SDK client's connect modes: legacy (initialize, Mcp-Session-Id) and 2026-07-28 (no session)
ERAS = ("legacy", "auto")


@dataclass
class Team:
    db: Path
    server: RunningServer
    tokens: dict[str, str]  # name -> token; "admin" -> the --token when given

    @property
    def url(self) -> str:
        return self.server.url

    def members(self) -> Members:
        """The members tables through a connection of the test's own (close `.conn`)."""
        return Members(connect_both(self.db))


def with_members(db: Path, tiers: dict[str, str]) -> dict[str, str]:
    """Create the database and its members (name -> tier); return name -> token."""
    Service.open(Settings(db=db), actor="cli").close()
    with closing(connect_both(db)) as conn:
        members = Members(conn)
        return {name: members.add(name, tier)[1] for name, tier in tiers.items()}


def open_team(db: Path, tiers: dict[str, str], *flags: str, admin: bool = True) -> Team:
    tokens = with_members(db, tiers)
    token_flags = ("--token", ADMIN_TOKEN) if admin else ()
    server = start_server(db, *token_flags, *flags)
    if admin:
        tokens["admin"] = ADMIN_TOKEN
    return Team(db, server, tokens)


@asynccontextmanager
async def member_client(
    url: str, token: str, mode: str = "legacy", **options: Any
) -> AsyncIterator[Client]:
    """An SDK client sending `token`, in connect `mode` (ERAS)."""
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=CALL_SECONDS) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode, **options) as client,
    ):
        yield client


@dataclass(frozen=True)
class AuditRow:
    id: int
    actor: str | None
    session: str
    tool: str
    query: str | None
    ok: bool
    error: str | None
    detail: dict[str, Any]


def audit_rows(db: Path, where: Callable[[AuditRow], bool] = lambda row: True) -> list[AuditRow]:
    """The audit log as the file holds it now (the server writes each row at once)."""
    with closing(connect_both(db, flags=apsw.SQLITE_OPEN_READONLY)) as conn:
        found = conn.execute(
            "SELECT id, actor, session, tool, query, ok, error, detail FROM query_log ORDER BY id"
        ).fetchall()
    rows = [
        AuditRow(int(i), a, str(s), str(t), q, bool(ok), e, json.loads(d) if d else {})
        for i, a, s, t, q, ok, e, d in found
    ]
    return [row for row in rows if where(row)]
