"""What Codex's and Gemini CLI's scope checks share (surfaces/integrations/scope_shadows.py):
which scope's entry a client runs, and how an entry is named in a warning."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sqlgate.surfaces.integrations.client_paths import Where
from sqlgate.surfaces.integrations.scope_shadows import described, winning_entry
from sqlgate.surfaces.integrations.scopes import ScopedEntry

SCOPES = ("system", "project", "local", "user")


@given(
    present=st.sets(st.sampled_from(SCOPES)),
    precedence=st.permutations(SCOPES),
    skipped=st.sets(st.sampled_from(SCOPES)),
)
def test_the_winner_is_the_strongest_scope_the_client_reads(
    present: set[str], precedence: list[str], skipped: set[str]
) -> None:
    entries = [ScopedEntry(scope, Path(scope), {"command": scope}) for scope in sorted(present)]
    winner = winning_entry(entries, precedence, skipped)
    readable = [scope for scope in precedence if scope in present and scope not in skipped]
    assert (winner.scope if winner else None) == (readable[0] if readable else None)


WHERE = Where("linux", Path("/h"), Path("/p"), {})

NAMED = [
    pytest.param({"command": "sqlgate", "args": ["serve", "--db", ".sqlgate/agent.db"]},
                 "`sqlgate serve --db .sqlgate/agent.db`, database /p/.sqlgate/agent.db",
                 id="relative-db"),
    pytest.param({"command": "/v/bin/sqlgate", "args": ["serve", "--project-db"]},
                 "`/v/bin/sqlgate serve --project-db`, database /p/.sqlgate/agent.db",
                 id="project-db"),
    pytest.param({"command": "sqlgate", "args": ["serve"], "env": {"SQLGATE_DB": "/d/e.db"}},
                 "`sqlgate serve`, database /d/e.db", id="env-db"),
    pytest.param({"command": "node", "args": ["server.js", "--db", "x"]},
                 "`node server.js --db x`", id="another-program"),
    pytest.param({"url": "http://127.0.0.1:8000/mcp"}, "`http://127.0.0.1:8000/mcp`", id="url"),
    pytest.param({"command": "two words", "args": ["it's"]}, "`'two words' 'it'\"'\"'s'`",
                 id="quoted-as-typed"),
]  # fmt: skip


@pytest.mark.parametrize(("entry", "shown"), NAMED)
def test_an_entry_is_named_by_its_command_and_database(entry: Any, shown: str) -> None:
    assert described(entry, WHERE) == shown
