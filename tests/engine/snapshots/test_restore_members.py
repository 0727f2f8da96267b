"""A snapshot restore never changes who may connect (issue 30 §5).

Members and their tokens are sqlgate's records: after `snapshots restore` the members and
tokens are the live file's, each in its newest state, whatever the snapshot held. A member
added after the snapshot stays; a token revoked, rotated away or of a removed member stays
refused; a tier changed after the snapshot keeps its new value; a revocation only a copy's
snapshot holds is kept too (revocations are never undone); a token only the snapshot knows
(a snapshot of a copy) never starts working.

The invariant: for every token ever issued on either side, `authenticate` answers after the
restore what it answered on the live file just before it, and the listing is unchanged.
Times come from a clock driven by hand.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import apsw
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlgate.config import Settings
from sqlgate.engine.records.actors import AuthRefusal, Identity
from sqlgate.engine.records.members import Member, Members
from sqlgate.engine.snapshots.files import restore_snapshot
from sqlgate.engine.snapshots.restore_plan import plan_restore
from sqlgate.service import Service
from tests.records import connect_both

Step = tuple[str, ...]  # ("add", name, tier) | ("revoke", name) | ("rotate", name) | ...


class WallClock:
    def __init__(self) -> None:
        self.now = 1_780_000_000.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


@dataclass
class Team:
    """A database whose members change through `Members`, with every token ever issued."""

    db: Path
    clock: WallClock = field(default_factory=WallClock)
    tokens: dict[str, list[str]] = field(default_factory=dict)  # name -> its tokens, in order

    @contextmanager
    def members(self) -> Iterator[Members]:
        with closing(connect_both(self.db)) as conn:
            yield Members(conn, wall_clock=self.clock)

    def run(self, steps: Sequence[Step]) -> None:
        with self.members() as members:
            for verb, name, *rest in steps:
                if verb == "add":
                    self.tokens.setdefault(name, []).append(members.add(name, rest[0])[1])
                elif verb == "rotate":
                    self.tokens[name].append(members.rotate(name)[1])
                elif verb == "tier":
                    members.set_tier(name, rest[0])
                else:
                    getattr(members, verb)(name)

    def snapshot(self) -> Path:
        with closing(Service.open(Settings(db=self.db), session="s-test")) as service:
            return service.sql.snapshot()

    def answers(self, tokens: dict[str, list[str]] | None = None) -> dict[str, object]:
        """What each token authenticates as, by `name#n`."""
        with self.members() as members:
            return {
                f"{name}#{n}": members.authenticate(token)
                for name, issued in (tokens or self.tokens).items()
                for n, token in enumerate(issued)
            }

    def listed(self) -> list[Member]:
        with self.members() as members:
            return members.listed(include_removed=True)


def restore(team: Team, snapshot: Path) -> None:
    restore_snapshot(team.db, snapshot.parent, snapshot.name, keep=5)


def ok(tier: str) -> Identity:
    return Identity("alice", tier, "member")


def code(found: object) -> str:
    return found.code if isinstance(found, AuthRefusal) else f"ok:{getattr(found, 'tier', '')}"


CASES = [
    pytest.param([("add", "alice", "write")], [("revoke", "alice")],
                 {"alice#0": "token_revoked"}, id="revoked-after"),
    pytest.param([], [("add", "alice", "write")], {"alice#0": "ok:write"}, id="added-after"),
    pytest.param([("add", "alice", "write")], [("rotate", "alice")],
                 {"alice#0": "token_revoked", "alice#1": "ok:write"}, id="rotated-after"),
    pytest.param([("add", "alice", "write")], [("remove", "alice")],
                 {"alice#0": "member_removed"}, id="removed-after"),
    pytest.param([("add", "alice", "read")], [("tier", "alice", "destructive")],
                 {"alice#0": "ok:destructive"}, id="tier-raised-after"),
    pytest.param([("add", "alice", "destructive")], [("tier", "alice", "read")],
                 {"alice#0": "ok:read"}, id="tier-lowered-after"),
    pytest.param([("add", "alice", "write"), ("revoke", "alice")], [],
                 {"alice#0": "token_revoked"}, id="revoked-before"),
    pytest.param([("add", "alice", "write"), ("rotate", "alice")], [("rotate", "alice")],
                 {"alice#0": "token_revoked", "alice#1": "token_revoked", "alice#2": "ok:write"},
                 id="rotated-before-and-after"),
    pytest.param([("add", "alice", "write")], [("remove", "alice"), ("add", "alice", "read")],
                 {"alice#0": "member_removed", "alice#1": "ok:read"},
                 id="removed-and-name-given-again-after"),
    pytest.param([("add", "alice", "write"), ("remove", "alice")], [("add", "alice", "read")],
                 {"alice#0": "member_removed", "alice#1": "ok:read"},
                 id="removed-before-name-given-again-after"),
    pytest.param([("add", "alice", "write")], [("add", "bob", "read"), ("revoke", "bob")],
                 {"alice#0": "ok:write", "bob#0": "token_revoked"},
                 id="added-and-revoked-after"),
    pytest.param([("add", "alice", "write"), ("add", "bob", "read")],
                 [("rotate", "bob"), ("remove", "alice"), ("tier", "bob", "write")],
                 {"alice#0": "member_removed", "bob#0": "token_revoked", "bob#1": "ok:write"},
                 id="two-members-several-changes"),
]  # fmt: skip


@pytest.mark.parametrize(("before", "after", "expected"), CASES)
def test_a_restore_keeps_the_newest_state_of_every_member_and_token(
    tmp_path: Path, before: list[Step], after: list[Step], expected: dict[str, str]
) -> None:
    team = Team(tmp_path / "team.db")
    Service.open(Settings(db=team.db)).close()
    team.run(before)
    snapshot = team.snapshot()
    team.run(after)
    live_answers, live_listed = team.answers(), team.listed()
    restore(team, snapshot)
    assert {label: code(found) for label, found in team.answers().items()} == expected
    assert team.answers() == live_answers
    assert team.listed() == live_listed


def test_the_plan_and_the_audit_row_count_the_members_carried(tmp_path: Path) -> None:
    team = Team(tmp_path / "team.db")
    Service.open(Settings(db=team.db)).close()
    team.run([("add", "alice", "write"), ("add", "carol", "read")])
    snapshot = team.snapshot()
    team.run([("revoke", "alice"), ("add", "bob", "read"), ("rotate", "carol")])
    plan = plan_restore(team.db, snapshot.parent, snapshot.name)
    # alice revoked, carol's token revoked and a new one, bob and his token: newer than the
    # snapshot's state
    assert plan.carried["members"] == 1  # bob (alice and carol changed tokens only)
    assert plan.carried["member_tokens"] == 4  # alice's, carol's two, bob's
    restore(team, snapshot)
    with closing(connect_both(team.db)) as conn:
        (detail,) = conn.execute(
            "SELECT json_extract(detail, '$.carried') FROM query_log "
            "WHERE tool = 'snapshots restore'"
        ).fetchone()
    assert '"members":1' in detail
    assert '"member_tokens":4' in detail


# what migration 9 (members, issue 22) added, taken out of a snapshot
SCHEMA_9 = (
    "DROP TABLE member_tokens",
    "DROP TABLE members",
    "DROP INDEX query_log_by_actor",
    "DROP VIEW query_errors",
    "DROP VIEW query_patterns",
    "ALTER TABLE query_log DROP COLUMN actor",
    "CREATE VIEW query_errors AS SELECT id FROM query_log",
    "CREATE VIEW query_patterns AS SELECT id FROM query_log",
)


def test_a_snapshot_older_than_members_keeps_the_live_members(tmp_path: Path) -> None:
    team = Team(tmp_path / "team.db")
    Service.open(Settings(db=team.db)).close()
    snapshot = team.snapshot()
    with closing(connect_both(snapshot)) as conn:  # a file of schema 8: no members
        for statement in SCHEMA_9:
            conn.execute(statement)
        conn.pragma("user_version", 8)
    team.run([("add", "alice", "write"), ("add", "bob", "read"), ("revoke", "bob")])
    live_answers = team.answers()
    restore(team, snapshot)
    assert team.answers() == live_answers
    assert {k: code(v) for k, v in live_answers.items()} == {
        "alice#0": "ok:write", "bob#0": "token_revoked",
    }  # fmt: skip


def copy_of(team: Team, tmp_path: Path) -> Team:
    """A byte copy of `team`'s file (it keeps the database id), with its own snapshots."""
    copy = Team(tmp_path / "copy" / "team.db", team.clock)
    copy.db.parent.mkdir()
    shutil.copy(team.db, copy.db)
    copy.tokens = {name: list(issued) for name, issued in team.tokens.items()}
    return copy


def test_a_snapshot_of_a_copy_neither_revives_nor_adds_a_token(tmp_path: Path) -> None:
    team = Team(tmp_path / "team.db")
    Service.open(Settings(db=team.db)).close()
    team.run([("add", "alice", "write"), ("add", "bob", "write"), ("add", "dave", "read")])
    copy = copy_of(team, tmp_path)
    # the copy: bob revoked there, erin added there (ids the live file gives to others)
    copy.run([("revoke", "bob"), ("add", "erin", "destructive")])
    # the live file: alice revoked, frank added (erin's id on the copy)
    team.run([("revoke", "alice"), ("add", "frank", "read")])
    snapshot = copy.snapshot()
    folder = Settings(db=team.db).snapshot_dir
    folder.mkdir(exist_ok=True)
    shutil.copy(snapshot, folder / snapshot.name)
    plan = plan_restore(team.db, folder, snapshot.name)
    assert plan.not_carried == {"members": 1, "member_tokens": 1}  # erin and her token
    restore(team, folder / snapshot.name)
    everyone = {**team.tokens, "erin": copy.tokens["erin"]}
    assert {label: code(found) for label, found in team.answers(everyone).items()} == {
        "alice#0": "token_revoked",  # the live file's revocation
        "bob#0": "token_revoked",  # the copy's revocation: never undone either
        "dave#0": "ok:read",
        "frank#0": "ok:read",
        "erin#0": "unknown_token",  # only the copy knew it: it never starts working here
    }


def test_restoring_the_copy_of_before_undoes_no_revocation(tmp_path: Path) -> None:
    team = Team(tmp_path / "team.db")
    Service.open(Settings(db=team.db)).close()
    team.run([("add", "alice", "write")])
    snapshot = team.snapshot()
    first = restore_snapshot(team.db, snapshot.parent, snapshot.name, keep=5)
    team.run([("revoke", "alice"), ("add", "bob", "read")])
    live_answers = team.answers()
    restore_snapshot(team.db, snapshot.parent, first.before_name, keep=5)
    assert team.answers() == live_answers
    assert code(live_answers["alice#0"]) == "token_revoked"


NAMES = ("alice", "bob", "Carol")


@st.composite
def histories(draw: st.DrawFn) -> list[Step]:
    """A sequence of member commands that each succeed."""
    steps: list[Step] = []
    current: dict[str, bool] = {}
    for _ in range(draw(st.integers(0, 10))):
        name = draw(st.sampled_from(NAMES))
        if not current.get(name):
            steps.append(("add", name, draw(st.sampled_from(("read", "write", "destructive")))))
            current[name] = True
            continue
        verb = draw(st.sampled_from(("revoke", "rotate", "remove", "tier")))
        if verb == "tier":
            steps.append(("tier", name, draw(st.sampled_from(("read", "write", "destructive")))))
        else:
            steps.append((verb, name))
        current[name] = verb != "remove"
    return steps


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=histories(), cut=st.integers(0, 10))
def test_any_history_answers_every_token_after_the_restore_as_before_it(
    history: list[Step], cut: int
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        team = Team(Path(folder) / "team.db")
        Service.open(Settings(db=team.db)).close()
        team.run(history[:cut])
        snapshot = team.snapshot()
        team.run(history[cut:])
        live: dict[str, Any] = team.answers()
        listed = team.listed()
        restore(team, snapshot)
        assert team.answers() == live
        assert team.listed() == listed


# -- member_facts on rows made by hand: each column counts ------------------------------------

MEMBER = {"id": 1, "name": "alice", "tier": "write", "created": "2026-01-01T00:00:00.000Z",
          "removed": None}  # fmt: skip
TOKEN = {"digest": "ab" * 32, "member_id": 1, "created": "2026-01-01T00:00:00.000Z",
         "revoked": None}  # fmt: skip


def facts_of(member: dict[str, Any], token: dict[str, Any]) -> tuple[dict[str, int], ...]:
    """member_facts of a live file holding MEMBER and TOKEN and a snapshot holding these."""
    from sqlgate.engine.schema import migrate
    from sqlgate.engine.snapshots.restore_members import member_facts

    with closing(apsw.Connection(":memory:")) as conn:
        migrate(conn)
        conn.execute("ATTACH DATABASE ':memory:' AS snap")
        for schema in ("main", "snap"):
            for sql in conn.execute(
                "SELECT sql FROM main.sqlite_schema WHERE tbl_name IN ('members', "
                "'member_tokens') AND type = 'table'"
            ).fetchall():
                if schema == "snap":
                    conn.execute(sql[0].replace("CREATE TABLE ", "CREATE TABLE snap.", 1))
        for schema, (m, t) in (("main", (MEMBER, TOKEN)), ("snap", (member, token))):
            conn.execute(f"INSERT INTO {schema}.members VALUES (:id, :name, :tier, :created, "
                         ":removed)", m)  # fmt: skip
            conn.execute(f"INSERT INTO {schema}.member_tokens VALUES (:digest, :member_id, "
                         ":created, :revoked)", t)  # fmt: skip
        facts = member_facts(conn, "main", "snap")
    return facts.newer, facts.snapshot_only


@pytest.mark.parametrize(
    ("member", "token", "newer", "snapshot_only"),
    [
        pytest.param({}, {}, (0, 0), (0, 0), id="the-same"),
        pytest.param({"id": 2}, {}, (1, 0), (1, 0), id="member-id"),
        pytest.param({"name": "alicia"}, {}, (1, 0), (1, 0), id="member-name"),
        pytest.param({"created": "2025"}, {}, (1, 0), (1, 0), id="member-created"),
        pytest.param({"tier": "read"}, {}, (1, 0), (0, 0), id="member-tier"),
        pytest.param({"removed": "2025"}, {}, (1, 0), (0, 0), id="member-removed"),
        pytest.param({}, {"digest": "cd" * 32}, (0, 1), (0, 1), id="token-digest"),
        pytest.param({}, {"member_id": 2}, (0, 1), (0, 0), id="token-member"),
        pytest.param({}, {"revoked": "2025"}, (0, 1), (0, 0), id="token-revoked"),
    ],
)
def test_member_facts_tell_each_column_that_differs(
    member: dict[str, Any], token: dict[str, Any], newer: tuple[int, int],
    snapshot_only: tuple[int, int],
) -> None:  # fmt: skip
    found_newer, found_only = facts_of({**MEMBER, **member}, {**TOKEN, **token})
    assert (found_newer["members"], found_newer["member_tokens"]) == newer
    assert (found_only["members"], found_only["member_tokens"]) == snapshot_only
