"""The members of a team server and their tokens (`sqlgate members ...`, issue 22).

A member has a name (`engine.records.actors` rule; unique among current members, ignoring case)
and a tier. Its token is `sqg_` and 43 URL-safe characters (256 random bits), shown once
when made; the database keeps only its SHA-256 (`member_tokens.digest`). A token of that
strength needs no salt or slow hash: no guess list reaches it, and the digest is not a
credential (the server hashes what it is sent). Tables `members` and `member_tokens` are
server tables: agent SQL may read them (names, tiers, digests) and never write them.

Nothing is deleted: `revoke` marks the member's tokens, `remove` marks the member, so a
token presented later is refused with the reason (revoked, or its member removed), and a
removed name may be given to a new member. Every request is checked against the tables, so
a change made by `sqlgate members` while the server runs applies to the next request.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import apsw

from sqlgate.engine.commands import db_option, shell_word
from sqlgate.engine.connect import connect_read_only, immediate_transaction
from sqlgate.engine.records.actors import TIERS, AuthRefusal, Identity, actor_name_problem
from sqlgate.engine.records.audit import utc_timestamp
from sqlgate.errors import InvalidArgument, NotFound, StartupError

__all__ = [
    "TOKEN_PREFIX",
    "Member",
    "Members",
    "known_tier",
    "looks_like_member_token",
    "new_token",
    "token_digest",
    "working_member_count",
]

TOKEN_PREFIX = "sqg_"  # noqa: S105 (a prefix, not a secret)


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def looks_like_member_token(token: str | bytes) -> bool:
    text = token.decode("ascii", "replace") if isinstance(token, bytes) else token
    return text.startswith(TOKEN_PREFIX)


def token_digest(token: str | bytes) -> str:
    raw = token if isinstance(token, bytes) else token.encode("utf-8", "surrogatepass")
    return hashlib.sha256(raw).hexdigest()


def known_tier(tier: object) -> str:
    if tier not in TIERS:
        raise InvalidArgument(f"unknown tier {tier!r}; a tier is one of: {', '.join(TIERS)}")
    return str(tier)


def check_name(name: object) -> str:
    problem = actor_name_problem(name)
    if problem is not None:
        raise InvalidArgument(f"cannot use that member name: {problem}")
    return str(name)


@dataclass(frozen=True)
class Member:
    name: str
    tier: str
    created: str
    state: str  # active, revoked (no token works) or removed
    last_used: str | None = None  # its newest audit row since it was made


_LOOKUP = (
    "SELECT m.name, m.tier, m.removed, t.revoked FROM member_tokens t "
    "JOIN members m ON m.id = t.member_id WHERE t.digest = ?"
)


class Members:
    """The members tables through `conn` (a records connection: no authorizer). `db` is the
    database they belong to, named by a refusal's next step (the records file's connection
    does not know it); without it, the file `conn` opened."""

    def __init__(
        self,
        conn: apsw.Connection,
        wall_clock: Callable[[], float] = time.time,
        *,
        db: Path | None = None,
    ):
        self.conn = conn
        self.wall_clock = wall_clock
        self.db = db

    def _now(self) -> str:
        return utc_timestamp(self.wall_clock())

    @property
    def _db(self) -> str:
        """`--db PATH` of this file, for the commands a refusal names (they run anywhere)."""
        return db_option(self.db if self.db is not None else self.conn.filename)

    def _current(self, name: str) -> tuple[int, str, str]:
        row = self.conn.execute(
            "SELECT id, name, tier FROM members WHERE name = ? COLLATE NOCASE AND removed IS NULL",
            (name,),
        ).fetchone()
        if row is None:
            raise NotFound(
                f"no member named {name!r}; `sqlgate members list {self._db}` shows them"
            )
        return int(row[0]), str(row[1]), str(row[2])

    def add(self, name: str, tier: str) -> tuple[Member, str]:
        """A new member and its token (shown once: only its digest is kept)."""
        name, tier = check_name(name), known_tier(tier)
        token, now = new_token(), self._now()
        with immediate_transaction(self.conn):
            taken = self.conn.execute(
                "SELECT name FROM members WHERE name = ? COLLATE NOCASE AND removed IS NULL",
                (name,),
            ).fetchone()
            if taken is not None:
                raise InvalidArgument(
                    f"a member named {taken[0]!r} exists already; choose another name, or "
                    f"`sqlgate members rotate {shell_word(taken[0])} {self._db}` for a new token"
                )
            self.conn.execute(
                "INSERT INTO members (name, tier, created) VALUES (?, ?, ?)", (name, tier, now)
            )
            member_id = self.conn.last_insert_rowid()
            self._issue(member_id, token, now)
        return Member(name, tier, now, "active"), token

    def _issue(self, member_id: int, token: str, now: str) -> None:
        self.conn.execute(
            "INSERT INTO member_tokens (digest, member_id, created) VALUES (?, ?, ?)",
            (token_digest(token), member_id, now),
        )

    def rotate(self, name: str) -> tuple[Member, str]:
        """A new token for `name`; its earlier tokens stop working at once."""
        token, now = new_token(), self._now()
        with immediate_transaction(self.conn):
            member_id, name, tier = self._current(name)
            self._revoke_tokens(member_id, now)
            self._issue(member_id, token, now)
        return Member(name, tier, now, "active"), token

    def _revoke_tokens(self, member_id: int, now: str) -> int:
        self.conn.execute(
            "UPDATE member_tokens SET revoked = ? WHERE member_id = ? AND revoked IS NULL",
            (now, member_id),
        )
        return self.conn.changes()

    def revoke(self, name: str) -> int:
        """End every token of `name` (the member stays, with no working token); returns
        how many were working."""
        with immediate_transaction(self.conn):
            member_id, _, _ = self._current(name)
            return self._revoke_tokens(member_id, self._now())

    def remove(self, name: str) -> None:
        """Remove `name`: its tokens stop working, and the name is free for a new member."""
        now = self._now()
        with immediate_transaction(self.conn):
            member_id, _, _ = self._current(name)
            self._revoke_tokens(member_id, now)
            self.conn.execute("UPDATE members SET removed = ? WHERE id = ?", (now, member_id))

    def set_tier(self, name: str, tier: str) -> tuple[str, str]:
        """Change `name`'s tier; returns (the tier it had, the new one)."""
        tier = known_tier(tier)
        with immediate_transaction(self.conn):
            member_id, _, before = self._current(name)
            self.conn.execute("UPDATE members SET tier = ? WHERE id = ?", (tier, member_id))
        return before, tier

    def tier_of(self, name: str) -> str | None:
        """The tier of the current member named `name` (ignoring case), or None."""
        row = self.conn.execute(
            "SELECT tier FROM members WHERE name = ? COLLATE NOCASE AND removed IS NULL",
            (name,),
        ).fetchone()
        return None if row is None else str(row[0])

    def listed(self, *, include_removed: bool = False) -> list[Member]:
        """Members by name, each with its state and last use (its newest audit row)."""
        rows = self.conn.execute(
            "SELECT m.name, m.tier, m.created, m.removed, "
            "EXISTS (SELECT 1 FROM member_tokens t WHERE t.member_id = m.id "
            "AND t.revoked IS NULL), "
            "(SELECT max(q.ts) FROM query_log q WHERE q.actor = m.name AND q.ts >= m.created "
            "AND (m.removed IS NULL OR q.ts <= m.removed)) "
            "FROM members m WHERE ? OR m.removed IS NULL ORDER BY m.name COLLATE NOCASE, m.id",
            (int(include_removed),),
        ).fetchall()
        return [
            Member(
                str(name),
                str(tier),
                str(created),
                "removed" if removed is not None else "active" if working else "revoked",
                None if last is None else str(last),
            )
            for name, tier, created, removed, working, last in rows
        ]

    def authenticate(self, token: str | bytes) -> Identity | AuthRefusal:
        """Who `token` is, or why it is refused (unknown, revoked, or its member removed)."""
        row = self.conn.execute(_LOOKUP, (token_digest(token),)).fetchone()
        if row is None:
            return AuthRefusal(
                "unknown_token",
                "this token is not one of this server's: check it was copied whole, or ask "
                "the person who runs sqlgate for yours (`sqlgate members add` or `rotate`)",
            )
        name, tier, removed, revoked = row
        if removed is not None:
            return AuthRefusal(
                "member_removed",
                f"this token belonged to member {name!r}, who was removed on {removed}; ask "
                "the person who runs sqlgate to add you again",
                str(name),
            )
        if revoked is not None:
            return AuthRefusal(
                "token_revoked",
                f"this token of member {name!r} was revoked on {revoked}; ask the person who "
                f"runs sqlgate for a new one (`sqlgate members rotate {name}`)",
                str(name),
            )
        return Identity(str(name), str(tier), "member")


_WORKING_MEMBERS = (
    "SELECT count(*) FROM members m WHERE m.removed IS NULL AND EXISTS "
    "(SELECT 1 FROM member_tokens t WHERE t.member_id = m.id AND t.revoked IS NULL)"
)


def working_member_count(db: Path, busy_timeout: float) -> int:
    """How many members of the database at `db` have a working token, read from its records
    file without creating or changing it (waiting up to `busy_timeout` seconds for a
    writer): no records, or records from before the members tables, have none. The user's
    file is not opened: a table of theirs named `members` is theirs."""
    from sqlgate.home import record_files

    records = record_files(db).records
    if not db.is_file() or not records.is_file():
        return 0
    return _working_in(records, busy_timeout)


def _working_in(db: Path, busy_timeout: float) -> int:
    wal = db.with_name(db.name + "-wal")
    try:
        if wal.is_file() and wal.stat().st_size > 0:  # a writer's changes: read them too
            conn = connect_read_only(db, busy_timeout)
        else:  # all in the file: read it alone, leaving no -wal or -shm behind
            uri = f"{db.resolve().as_uri()}?immutable=1"
            conn = apsw.Connection(uri, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    except (apsw.Error, StartupError):
        return 0  # Service.open says what is wrong with the file
    try:
        count = conn.execute(_WORKING_MEMBERS).get
    except apsw.Error:  # no members table yet (or not a database: Service.open says so)
        count = 0
    finally:
        conn.close()
    return int(count)
