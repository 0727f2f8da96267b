"""A session id shown short (surfaces/sessions.py): sqlgate's start time left out, an HTTP
caller's actor and connection kept, or the actor left out where a column beside shows it."""

from __future__ import annotations

import pytest

from sqlgate.surfaces.sessions import short_session

SERVER = "s-20261202T035830Z-471d28"


@pytest.mark.parametrize(
    ("session", "shown"),
    [
        pytest.param(SERVER, "s-…471d28", id="server"),
        pytest.param("cli-20261202T041500Z-9c1e07", "cli-…9c1e07", id="cli"),
        pytest.param("my-agent", "my-agent", id="another-name-whole"),
        pytest.param(None, "", id="none"),
    ],
)
def test_sqlgates_own_sessions_are_shown_by_their_random_part(
    session: str | None, shown: str
) -> None:
    assert short_session(session) == shown


@pytest.mark.parametrize(
    ("session", "shown"),
    [
        pytest.param(f"{SERVER}/alice/5c91b6bf", "s-…471d28/alice/5c91b6bf", id="stateful"),
        pytest.param(f"{SERVER}/alice", "s-…471d28/alice", id="stateless"),
        pytest.param(
            f"{SERVER}/a.b@example.com/5c91b6bf", "s-…471d28/a.b@example.com/5c91b6bf", id="email"
        ),
        pytest.param(f"{SERVER}-x", f"{SERVER}-x", id="another-name-whole"),
    ],
)
def test_a_shortened_session_keeps_its_actor_and_connection(session: str, shown: str) -> None:
    assert short_session(session) == shown
    assert short_session(session, "someone else") == shown


@pytest.mark.parametrize(
    ("session", "actor", "shown"),
    [
        pytest.param(f"{SERVER}/alice/5c91b6bf", "alice", "s-…471d28/…/5c91b6bf", id="stateful"),
        pytest.param(f"{SERVER}/alice", "alice", "s-…471d28/…", id="stateless"),
        pytest.param(SERVER, "local", "s-…471d28", id="stdio"),
    ],
)
def test_a_session_leaves_out_the_actor_the_column_beside_shows(
    session: str, actor: str, shown: str
) -> None:
    assert short_session(session, actor) == shown
