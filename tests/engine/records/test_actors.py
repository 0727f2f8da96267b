"""Who makes a call (engine/records/actors.py): the tier order, the name rule, the sessions of HTTP
callers, and the context variable a call runs under."""

from __future__ import annotations

import hashlib
import threading

import pytest

from sqlgate.engine.records.actors import (
    MAX_ACTOR_CHARS,
    RESERVED_ACTORS,
    TIERS,
    Caller,
    Identity,
    acting_as,
    actor_name_problem,
    caller_session,
    connection_tag,
    current_caller,
    session_now,
    tier_allows,
)

# (the caller's tier, the tier a tool needs, allowed)
TIER_CASES = [
    ("read", "read", True),
    ("read", "write", False),
    ("read", "destructive", False),
    ("write", "read", True),
    ("write", "write", True),
    ("write", "destructive", False),
    ("destructive", "read", True),
    ("destructive", "write", True),
    ("destructive", "destructive", True),
    ("admin", "read", False),  # not a tier
    ("", "read", False),
    ("read", "", False),
    ("Read", "read", False),  # tiers are exact words
    ("destructive", "everything", False),
]


@pytest.mark.parametrize(("tier", "needed", "allowed"), TIER_CASES)
def test_a_tier_allows_its_own_tools_and_those_below(tier: str, needed: str, allowed: bool) -> None:
    assert tier_allows(tier, needed) is allowed


def test_the_tiers_are_ordered_read_write_destructive() -> None:
    assert TIERS == ("read", "write", "destructive")


# (name, None when allowed, else a phrase of the reason)
NAME_CASES = [
    ("alice", None),
    ("a", None),
    ("A1", None),
    ("bob.smith@example.com", None),
    ("auth0|5f8c2b", None),
    ("svc:ci-bot+nightly_2", None),
    ("x" * MAX_ACTOR_CHARS, None),
    ("x" * (MAX_ACTOR_CHARS + 1), "65 characters is too long"),
    ("x" * 200, "200 characters is too long"),
    ("", "a name is 1 to 64 characters"),
    ("-alice", "'-' is not allowed"),
    ("_alice", "'_' is not allowed"),
    ("al ice", "' ' is not allowed"),
    ("a.b c", "' ' is not allowed"),  # the first character that is wrong, not a dot
    ("a-b/c", "'/' is not allowed"),
    ("alice/bob", "'/' is not allowed"),  # the separator of a caller's session
    ("ali\x1bce", "U+001B is not allowed"),
    ("alice\n", "U+000A is not allowed"),
    ("alice\x00", "U+0000 is not allowed"),
    ("élodie", "'é' is not allowed"),
    ("admin", "sqlgate's own name for the legacy --token"),
    ("ADMIN", "sqlgate's own name for the legacy --token"),
    ("local", "sqlgate's own name for the agent on stdio"),
    ("Cli", "sqlgate's own name for a person at the command line"),
    ("anonymous", "sqlgate's own name for a client of --insecure-no-token"),
]


@pytest.mark.parametrize(("name", "phrase"), NAME_CASES)
def test_the_name_rule_says_what_is_wrong(name: str, phrase: str | None) -> None:
    problem = actor_name_problem(name)
    if phrase is None:
        assert problem is None
    else:
        assert problem is not None
        assert phrase in problem


@pytest.mark.parametrize("value", [None, 7, b"alice", ["alice"]])
def test_a_name_that_is_not_text_is_refused(value: object) -> None:
    assert actor_name_problem(value) == (
        "a name is 1 to 64 characters: letters, digits and . _ @ + : | - "
        "(starting with a letter or digit)"
    )


def test_every_reserved_name_is_refused_and_unknown_is_unreachable() -> None:
    assert RESERVED_ACTORS == ("admin", "local", "cli", "anonymous")
    for name in RESERVED_ACTORS:
        assert actor_name_problem(name) is not None
    # the refused request's actor (http_identity) cannot be anyone's name
    assert actor_name_problem("(unknown)") is not None


def test_a_caller_session_names_the_server_the_actor_and_the_connection() -> None:
    assert caller_session("s-20261202T060000Z-a1b2c3", "alice") == "s-20261202T060000Z-a1b2c3/alice"
    digest = hashlib.sha256(b"9f2e-session").hexdigest()[:8]
    assert connection_tag("9f2e-session") == digest
    assert caller_session("s-1", "bob", "9f2e-session") == f"s-1/bob/{digest}"
    assert "9f2e-session" not in caller_session("s-1", "bob", "9f2e-session")


def test_a_connection_id_that_is_not_valid_text_still_gets_a_tag() -> None:
    # headers are latin-1 text, but nothing here may raise on what a transport hands over
    assert connection_tag("\ud800") == hashlib.sha256(b"\xed\xa0\x80").hexdigest()[:8]


def test_two_actors_on_one_connection_id_never_share_a_session() -> None:
    assert caller_session("s-1", "alice", "same") != caller_session("s-1", "bob", "same")
    assert caller_session("s-1", "alice") != caller_session("s-2", "alice")


def alice(session: str = "s-1/alice") -> Caller:
    return Caller(Identity("alice", "write", "member"), session, "claude-code/2.1")


def test_a_caller_names_its_actor_and_tier() -> None:
    caller = alice()
    assert (caller.actor, caller.tier, caller.client) == ("alice", "write", "claude-code/2.1")


def test_acting_as_sets_the_caller_for_the_block_only() -> None:
    assert current_caller() is None
    assert session_now("s-own") == "s-own"
    with acting_as(alice()) as caller:
        assert current_caller() is caller
        assert session_now("s-own") == "s-1/alice"
        with acting_as(alice("s-1/alice/0badc0de")):
            assert session_now("s-own") == "s-1/alice/0badc0de"
        assert session_now("s-own") == "s-1/alice"
    assert current_caller() is None
    assert session_now("s-own") == "s-own"


def test_acting_as_is_undone_when_the_block_raises() -> None:
    with pytest.raises(RuntimeError), acting_as(alice()):
        raise RuntimeError("boom")
    assert current_caller() is None


def test_another_thread_does_not_see_the_caller() -> None:
    seen: list[Caller | None] = []
    with acting_as(alice()):
        worker = threading.Thread(target=lambda: seen.append(current_caller()))
        worker.start()
        worker.join()
    assert seen == [None]  # a worker gets the caller only with the context copied (anyio does)
