"""Gathering facts: an authorizer that turns SQLite's callbacks into `Operation`s.

It decides nothing itself: each fact goes to `policy.decide`, and the first refusal is kept
so the caller can say exactly why the statement was refused. SQLite consults the authorizer
only while it prepares a statement, so agent SQL is always prepared uncached, and the
recorder stays installed while the statement runs, when virtual table modules (fts5, pragma
functions) prepare nested statements of their own.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import apsw

from sqlgate.engine.policy import Operation, Tier, Verdict, decide

__all__ = ["PolicyRecorder", "recording"]

_PREFIX = "SQLITE_"


def _action_name(code: int) -> str:
    name = apsw.mapping_authorizer_function.get(code)
    if not isinstance(name, str):
        return f"UNKNOWN_{code}"
    return name[len(_PREFIX) :] if name.startswith(_PREFIX) else name


class PolicyRecorder:
    """Authorizer callback for one statement in one tier."""

    def __init__(self, tier: Tier, protected: frozenset[str]) -> None:
        self.tier = tier
        self.protected = protected
        self.operations: list[Operation] = []
        self.refusal: Verdict | None = None
        self.running = False  # set once preparation is over: later facts are nested

    def __call__(
        self,
        code: int,
        arg1: str | None,
        arg2: str | None,
        database: str | None,
        inside: str | None,
    ) -> int:
        op = Operation(_action_name(code), arg1, arg2, database, inside, nested=self.running)
        self.operations.append(op)
        verdict = decide(self.tier, op, self.protected)
        if verdict.allowed:
            return int(apsw.SQLITE_OK)
        if self.refusal is None:
            self.refusal = verdict
        return int(apsw.SQLITE_DENY)


@contextmanager
def recording(conn: apsw.Connection, recorder: PolicyRecorder) -> Iterator[PolicyRecorder]:
    """Install `recorder` as the connection's authorizer for the duration of the block."""
    conn.authorizer = recorder
    try:
        yield recorder
    finally:
        conn.authorizer = None
