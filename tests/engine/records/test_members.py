"""The members store (engine/records/members.py): names by the actor rule, unique ignoring case
among current members; tokens shown once and kept as their SHA-256 only; revoke, rotate and remove
end tokens at once, each refused later with its own reason; a removed name is free again;
the listing says each member's state and last use (its newest audit row).

Times come from a clock driven by hand, so "later" is never waited for.
"""

from __future__ import annotations

import hashlib
import re
import string
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import apsw
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlgate.config import Settings
from sqlgate.engine.records.actors import (
    RESERVED_ACTORS,
    AuthRefusal,
    Caller,
    Identity,
    acting_as,
    actor_name_problem,
)
from sqlgate.engine.records.audit import utc_timestamp
from sqlgate.engine.records.members import (
    TOKEN_PREFIX,
    Member,
    Members,
    looks_like_member_token,
    token_digest,
    working_member_count,
)
from sqlgate.errors import InvalidArgument, NotFound
from sqlgate.service import Service
from tests.records import connect_both, records_path


class WallClock:
    """Epoch seconds that move only when told."""

    def __init__(self, start: float = 1_780_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def wall() -> WallClock:
    return WallClock()


@pytest.fixture
def opened(tmp_path: Path, wall: WallClock) -> Iterator[Service]:
    service = Service.open(Settings(db=tmp_path / "team.db"), session="s-test", wall_clock=wall)
    try:
        yield service
    finally:
        service.close()


@pytest.fixture
def members(opened: Service, wall: WallClock) -> Members:
    return Members(opened.db.server, wall_clock=wall, db=opened.settings.db)


def every_value(conn: apsw.Connection) -> Iterator[tuple[str, Any]]:
    """(table, value) for every value of every row of every table in the file."""
    tables = [str(name) for (name,) in conn.execute(
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
    )]  # fmt: skip
    for table in tables:
        for row in conn.execute(f'SELECT * FROM "{table}"'):
            for value in row:
                yield table, value


def holders_of(conn: apsw.Connection, text: str) -> set[str]:
    """The tables holding `text` anywhere in a value (as text or as bytes)."""
    found = set()
    for table, value in every_value(conn):
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        if isinstance(value, str) and text in value:
            found.add(table)
    return found


def as_member(name: str, tier: str = "read") -> Caller:
    return Caller(Identity(name, tier, "member"), f"s-test/{name}")


# -- names ------------------------------------------------------------------------------------

ALLOWED_FIRST = string.ascii_letters + string.digits
ALLOWED = ALLOWED_FIRST + "._@+:|-"


def follows_the_rule(name: str) -> bool:
    """The rule as engine/records/actors.py states it in words, written again without its regex."""
    return (
        1 <= len(name) <= 64
        and name[0] in ALLOWED_FIRST
        and all(char in ALLOWED for char in name)
        and name.lower() not in RESERVED_ACTORS
    )


# the allowed characters, and neighbours that are not: controls, spaces, other letters and
# digits of Unicode, quotes, slashes, an invisible character
NAME_CHARS = st.sampled_from(
    [*ALLOWED, "\x00", "\x1b", "\n", "\t", " ", "\u00e9", "\u0661", "\uff21", "\u200b",
     "/", "\\", "'", '"', ";", "*", "%", "#", "\x7f"]
)  # fmt: skip
NAMES = st.one_of(
    st.text(NAME_CHARS, max_size=70),
    st.sampled_from([*RESERVED_ACTORS, "Admin", "LOCAL", "CLI", "anonymouS"]),
    st.integers(60, 70).map(lambda n: "a" * n),
)


@settings(max_examples=400, deadline=None)
@given(NAMES)
def test_a_name_is_accepted_exactly_when_it_follows_the_rule(name: str) -> None:
    problem = actor_name_problem(name)
    assert (problem is None) == follows_the_rule(name), (name, problem)
    if problem is not None:
        assert problem.isprintable(), problem  # a reason shows no control character raw


@pytest.mark.parametrize(
    ("name", "phrase"),
    [
        pytest.param("", "1 to 64 characters", id="empty"),
        pytest.param("a" * 200, "200 characters is too long", id="200-chars"),
        pytest.param("a" * 65, "65 characters is too long", id="65-chars"),
        pytest.param("bob\x1b[31m", "U+001B is not allowed", id="escape"),
        pytest.param("bob\nalice", "U+000A is not allowed", id="newline"),
        pytest.param("bob smith", "' ' is not allowed", id="space"),
        pytest.param("-bob", "starting with a letter or digit", id="leading-dash"),
        pytest.param("ADMIN", "sqlgate's own name for the legacy --token", id="reserved"),
    ],
)
def test_a_refused_name_says_why(name: str, phrase: str) -> None:
    problem = actor_name_problem(name)
    assert problem is not None
    assert phrase in problem


def test_a_name_of_64_characters_and_every_allowed_sign_is_accepted() -> None:
    assert actor_name_problem("a" * 64) is None
    assert actor_name_problem("ci-bot.2+ops@example.com|eu:1_x") is None


# -- add, and names taken ---------------------------------------------------------------------


def test_add_returns_a_fresh_token_and_keeps_only_its_digest(
    members: Members, opened: Service
) -> None:
    member, token = members.add("alice", "read")
    assert member == Member("alice", "read", member.created, "active")
    assert re.fullmatch(re.escape(TOKEN_PREFIX) + r"[A-Za-z0-9_-]{43}", token)
    (digest,) = [row[0] for row in opened.db.server.execute("SELECT digest FROM member_tokens")]
    assert digest == hashlib.sha256(token.encode()).hexdigest() == token_digest(token)
    assert members.add("bob", "read")[1] != token


@pytest.mark.parametrize("taken", ["alice", "Alice", "ALICE"])
def test_a_name_taken_is_refused_ignoring_case(members: Members, taken: str) -> None:
    members.add("alice", "read")
    with pytest.raises(InvalidArgument, match="a member named 'alice' exists already") as caught:
        members.add(taken, "write")
    db = members.db  # the command names the user's file (not its records): runs anywhere
    assert f"`sqlgate members rotate alice --db {db}`" in str(caught.value)
    assert [m.name for m in members.listed()] == ["alice"]


def test_add_refuses_a_bad_name_or_tier_and_writes_nothing(
    members: Members, opened: Service
) -> None:
    with pytest.raises(InvalidArgument, match="cannot use that member name: U\\+001B"):
        members.add("eve\x1b]0;owned\x07", "read")
    with pytest.raises(InvalidArgument, match="unknown tier 'admin'; a tier is one of: read, "):
        members.add("eve", "admin")
    assert opened.db.server.execute("SELECT count(*) FROM members").fetchone() == (0,)


# -- authenticate, and each way a token ends --------------------------------------------------


def refusal(members: Members, token: str) -> AuthRefusal:
    found = members.authenticate(token)
    assert isinstance(found, AuthRefusal), found
    return found


def test_a_token_authenticates_as_its_member_with_its_tier(members: Members) -> None:
    _, token = members.add("alice", "write")
    assert members.authenticate(token) == Identity("alice", "write", "member")
    assert members.authenticate(token.encode()) == Identity("alice", "write", "member")


def test_member_tokens_say_sqg_and_the_gate_can_tell_them_by_it(members: Members) -> None:
    """The prefix the docs name, which server_authenticator routes member tokens by."""
    _, token = members.add("alice", "write")
    assert token.startswith("sqg_")
    assert looks_like_member_token(token)
    assert looks_like_member_token(token.encode())
    assert looks_like_member_token(b"sqg_\xff\xfe")  # not ASCII: still a member token
    for other in ("admin-token-0123456789", "eyJhbGciOiJSUzI1NiJ9.e30.c2ln", "SQG_x", "sqg"):
        assert not looks_like_member_token(other)
        assert not looks_like_member_token(other.encode())


def test_a_token_that_is_not_valid_text_is_refused_not_raised(members: Members) -> None:
    """A str with a lone surrogate (as os.fsdecode makes of bad bytes) is just unknown."""
    members.add("alice", "write")
    found = refusal(members, "sqg_\udcff")
    assert (found.code, found.actor) == ("unknown_token", None)
    assert token_digest("sqg_\udcff") == hashlib.sha256(b"sqg_\xed\xb3\xbf").hexdigest()


def test_an_unknown_token_is_refused_without_a_name(members: Members) -> None:
    _, token = members.add("alice", "write")
    found = refusal(members, token + "x")
    assert (found.code, found.actor) == ("unknown_token", None)
    assert "`sqlgate members add` or `rotate`" in found.message


def test_revoke_ends_every_token_at_once_and_the_member_stays(
    members: Members, wall: WallClock
) -> None:
    _, first = members.add("alice", "write")
    _, second = members.rotate("alice")
    wall.advance(60)
    assert members.revoke("alice") == 1  # the rotation had ended the first already
    for token in (first, second):
        found = refusal(members, token)
        assert (found.code, found.actor) == ("token_revoked", "alice")
        assert "`sqlgate members rotate alice`" in found.message
    assert utc_timestamp(wall.now) in refusal(members, second).message
    assert [(m.name, m.state) for m in members.listed()] == [("alice", "revoked")]
    assert members.revoke("alice") == 0


def test_rotate_gives_a_new_token_and_ends_the_old(members: Members) -> None:
    _, old = members.add("alice", "read")
    member, new = members.rotate("ALICE")
    assert (member.name, member.tier, member.state) == ("alice", "read", "active")
    assert new != old
    assert members.authenticate(new) == Identity("alice", "read", "member")
    assert refusal(members, old).code == "token_revoked"


def test_rotate_after_revoke_gives_the_member_a_working_token_again(members: Members) -> None:
    members.add("alice", "read")
    members.revoke("alice")
    _, token = members.rotate("alice")
    assert members.authenticate(token) == Identity("alice", "read", "member")
    assert [m.state for m in members.listed()] == ["active"]


def test_remove_frees_the_name_and_the_old_token_says_removed(members: Members) -> None:
    _, old = members.add("alice", "destructive")
    members.remove("Alice")
    assert members.listed() == []
    assert members.tier_of("alice") is None
    found = refusal(members, old)
    assert (found.code, found.actor) == ("member_removed", "alice")
    assert "ask the person who runs sqlgate to add you again" in found.message
    _, again = members.add("alice", "read")  # a new member of the same name
    assert members.authenticate(again) == Identity("alice", "read", "member")
    assert refusal(members, old).code == "member_removed"  # the old token stays dead
    listed = members.listed(include_removed=True)
    assert [(m.name, m.tier, m.state) for m in listed] == [
        ("alice", "destructive", "removed"),
        ("alice", "read", "active"),
    ]


@pytest.mark.parametrize("change", ["rotate", "revoke", "remove"])
def test_changing_an_unknown_member_is_not_found(members: Members, change: str) -> None:
    members.add("alice", "read")
    members.remove("alice")
    listing = r"no member named 'alice'; `sqlgate members list --db /\S*team\.db` shows them"
    with pytest.raises(NotFound, match=listing):
        getattr(members, change)("alice")


def test_set_tier_says_the_old_and_new_tier_and_applies_to_the_next_check(
    members: Members,
) -> None:
    _, token = members.add("alice", "read")
    assert members.set_tier("alice", "destructive") == ("read", "destructive")
    assert members.tier_of("ALICE") == "destructive"
    assert members.authenticate(token) == Identity("alice", "destructive", "member")
    with pytest.raises(InvalidArgument, match="unknown tier"):
        members.set_tier("alice", "root")
    with pytest.raises(NotFound):
        members.set_tier("bob", "read")


# -- the listing ------------------------------------------------------------------------------


def test_the_listing_is_by_name_ignoring_case_with_each_state(members: Members) -> None:
    for name, tier in (("carol", "write"), ("Bob", "read"), ("alice", "destructive")):
        members.add(name, tier)
    members.revoke("bob")
    members.add("dave", "read")
    members.remove("dave")
    assert [(m.name, m.tier, m.state) for m in members.listed()] == [
        ("alice", "destructive", "active"),
        ("Bob", "read", "revoked"),
        ("carol", "write", "active"),
    ]
    assert [m.name for m in members.listed(include_removed=True)] == [
        "alice", "Bob", "carol", "dave",
    ]  # fmt: skip


def test_last_used_is_the_newest_audit_row_of_the_member_since_it_was_made(
    members: Members, opened: Service, wall: WallClock
) -> None:
    wall.advance(10)
    with acting_as(as_member("alice")):  # an older alice, removed before this one
        opened.read_query("SELECT 1")
    wall.advance(10)
    members.add("alice", "read")
    members.add("bob", "read")
    assert [m.last_used for m in members.listed()] == [None, None]
    wall.advance(5)
    with acting_as(as_member("alice")):
        opened.read_query("SELECT 1")
    used = utc_timestamp(wall.now)
    wall.advance(5)
    opened.read_query("SELECT 2")  # the service's own actor: nobody's last use
    assert [(m.name, m.last_used) for m in members.listed()] == [("alice", used), ("bob", None)]


# -- no token is ever stored ------------------------------------------------------------------


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.sampled_from(["add", "rotate", "revoke", "remove"]), min_size=1, max_size=6))
def test_no_table_ever_holds_a_token_only_its_digest(
    members: Members, opened: Service, steps: list[str]
) -> None:
    conn = opened.db.server
    tokens = []
    for step in steps:
        current = [m.name for m in members.listed()]
        if step == "add" or not current:
            ((made,),) = conn.execute("SELECT count(*) FROM members")
            _, token = members.add(f"m{made}", "write")  # the fixture outlives an example
            tokens.append(token)
        elif step == "rotate":
            tokens.append(members.rotate(current[0])[1])
        else:
            getattr(members, step)(current[0])
    digests = {str(d) for (d,) in conn.execute("SELECT digest FROM member_tokens")}
    for token in tokens:
        assert token not in digests
        assert token_digest(token) in digests
        assert holders_of(conn, token) == set()
        assert holders_of(conn, token[len(TOKEN_PREFIX) :]) == set()


# -- who can connect, read from the file alone ------------------------------------------------

STEPS = {
    "none": ((), 0),
    "two": ((("add", "ann"), ("add", "ben")), 2),
    "one-revoked": ((("add", "ann"), ("add", "ben"), ("revoke", "ben")), 1),
    "one-removed": ((("add", "ann"), ("add", "ben"), ("remove", "ann")), 1),
    "rotated-after-revoke": ((("add", "ann"), ("revoke", "ann"), ("rotate", "ann")), 1),
}


def beside(db: Path) -> set[str]:
    return {path.name for path in db.parent.iterdir()}


def in_records(db: Path) -> set[str]:
    """The files of the records folder of `db`."""
    return {path.name for path in records_path(db).parent.iterdir()}


@pytest.mark.parametrize("open_server", [True, False], ids=["changes-in-the-wal", "closed"])
@pytest.mark.parametrize("case", list(STEPS))
def test_working_members_are_those_with_a_token_that_works(
    tmp_path: Path, wall: WallClock, case: str, open_server: bool
) -> None:
    """Read while a server holds the changes in its -wal, or from the closed file alone,
    leaving nothing beside it."""
    steps, working = STEPS[case]
    db = tmp_path / "team.db"
    service = Service.open(Settings(db=db), session="s-test", wall_clock=wall)
    try:
        members = Members(service.db.server, wall_clock=wall)
        for step, name in steps:
            if step == "add":
                members.add(name, "read")
            else:
                getattr(members, step)(name)
        if open_server:
            assert Path(f"{records_path(db)}-wal").stat().st_size > 0
            assert working_member_count(db, 1.0) == working
    finally:
        service.close()
    if not open_server:
        files, records = beside(db), in_records(db)
        assert working_member_count(db, 0.0) == working
        assert beside(db) == files == {"team.db"}
        assert in_records(db) == records
        assert not {"records.sqlite-wal", "records.sqlite-shm"} & records


@pytest.mark.parametrize("wal_bytes", [b"", b"x"], ids=["empty-wal", "one-byte-wal"])
def test_a_left_over_wal_is_read_through_sqlite(tmp_path: Path, wal_bytes: bytes) -> None:
    """A -wal file with bytes in it is SQLite's to read (and to clear), an empty one is
    left alone: the closed file is read by itself."""
    db = tmp_path / "team.db"
    Service.open(Settings(db=db)).close()
    with closing(connect_both(db)) as conn:
        Members(conn).add("ann", "read")
    wal = Path(f"{records_path(db)}-wal")
    wal.write_bytes(wal_bytes)
    assert working_member_count(db, 0.0) == 1
    assert ("records.sqlite-shm" in in_records(db)) is bool(wal_bytes)


NOT_SQLITE = "not SQLite at all, but long enough to look at " * 4


@pytest.mark.parametrize(
    "content",
    [None, "plain", "not-a-database", "folder"],
    ids=["absent", "no-members-tables", "not-a-database", "a-folder"],
)
def test_a_file_without_members_has_none_and_is_left_as_it_was(
    tmp_path: Path, content: str | None
) -> None:
    db = tmp_path / "some.db"
    if content == "plain":
        with closing(connect_both(db)) as conn:
            conn.execute("CREATE TABLE x (y)")
    elif content == "not-a-database":
        db.write_text(NOT_SQLITE, encoding="utf-8")
    elif content == "folder":
        db.mkdir()
    files = beside(db)
    assert working_member_count(db, 0.0) == 0
    assert beside(db) == files
    assert db.exists() is (content is not None)


def test_a_file_sqlite_refuses_to_open_has_no_members(tmp_path: Path) -> None:
    """With a -wal beside it, the file is opened through SQLite, which refuses it."""
    db = tmp_path / "some.db"
    db.write_text(NOT_SQLITE, encoding="utf-8")
    (tmp_path / "some.db-wal").write_bytes(b"\0" * 64)
    assert working_member_count(db, 0.0) == 0
