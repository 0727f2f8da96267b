"""The call machinery of the Service: opening it over a database, closing it, and the audited call.

Every tool call goes through `Calls.call`, which times it, audits it in a `finally`
(successful or not; a failed audit write never loses the result, and a row that cannot be
written at once is queued, never waited for) and lets only `SqlgateError`s out. The tools
themselves are the parts beside this module (`sql_tools`, `undo_tools`, `memory_tools`,
`claims_tools`), which `features.Service` puts together.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

import apsw

from sqlgate.config import Settings
from sqlgate.engine.database import Database
from sqlgate.engine.limits import CallControl, Clock
from sqlgate.engine.records import (
    AuditEntry,
    AuditLog,
    AuditQueue,
    Caller,
    Identity,
    current_caller,
)
from sqlgate.engine.running import Outcome
from sqlgate.engine.sqltext import fingerprint
from sqlgate.errors import PolicyDenied, SqlgateError
from sqlgate.memory.privacy import Redactor
from sqlgate.memory.store import Memory, redactor_for

if TYPE_CHECKING:  # built on first use (`BuiltOnce`), their modules imported then
    from sqlgate.claims.store import ClaimStore
    from sqlgate.engine.database import Introspection
    from sqlgate.engine.running import SqlTiers, TextSearch, ViewSaver
    from sqlgate.engine.undo import UndoRestore

__all__ = ["BuiltOnce", "Call", "Calls", "new_session_id"]

log = logging.getLogger("sqlgate")
T = TypeVar("T")
Opened = TypeVar("Opened", bound="Calls")


def new_session_id(now: datetime | None = None) -> str:
    """`s-<UTC date and time>-<random>`: sortable, and unique across concurrent servers."""
    moment = now or datetime.now(timezone.utc)
    return f"s-{moment.strftime('%Y%m%dT%H%M%SZ')}-{os.urandom(3).hex()}"


def _safe_fingerprint(query: str) -> str:
    """The statement's shape for query_patterns; its folded text when it has no clean shape."""
    try:
        return fingerprint(query)
    except SqlgateError:
        return " ".join(query.split())[:500]


@dataclass
class Call:
    """One call under way: its audit row and its limits."""

    entry: AuditEntry
    control: CallControl


class BuiltOnce(Generic[T]):
    """A part of the Service built the first time it is used, once even when two threads
    ask at the same moment, then read as a plain attribute.

    The SQL tiers, undo, views, text search and claims import most of the engine (its
    statement reader, the undo checks, the snapshot code) and the claims package: a CLI
    command or a capture hook that only reads the memory or the audit log must not pay for
    them at start-up."""

    def __init__(self, build: Callable[[Calls], T]) -> None:
        self.build = build
        self.name = build.__name__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, service: None, owner: type | None = None) -> BuiltOnce[T]: ...

    @overload
    def __get__(self, service: Calls, owner: type | None = None) -> T: ...

    def __get__(self, service: Calls | None, owner: type | None = None) -> T | BuiltOnce[T]:
        if service is None:
            return self
        with service._building:  # once built, the instance's attribute is found first
            if self.name not in service.__dict__:
                service.__dict__[self.name] = self.build(service)
        return service.__dict__[self.name]  # type: ignore[no-any-return]


class Calls:
    """The Service's machinery over one database: its parts and the audited call. Open with
    `Service.open(settings)`."""

    def __init__(
        self,
        db: Database,
        session: str,
        clock: Clock,
        *,
        wall_clock: Clock = time.time,
        redactor: Redactor | None = None,
        actor: str = "local",
    ) -> None:
        self.db = db
        self.settings = db.settings
        self.session = session
        # who calls when no surface said otherwise (engine.records.actors): the local agent on
        # stdio, `cli` for a command; an HTTP server runs each call as its caller
        self.caller = Caller(Identity(actor, "destructive", actor), session)
        self.clock = clock
        redactor = redactor or redactor_for(db.settings)
        self.audit = AuditLog(
            db.audit,
            session,
            db.audit_lock,
            enabled=db.settings.audit and not db.read_only,
            queue=None
            if db.read_only
            else AuditQueue(db.settings.records.queue, db.settings.busy_timeout),
            redact=redactor.redact_text if redactor.enabled else None,
            wall_clock=wall_clock,
            actor=actor,
        )
        self.wall_clock = wall_clock
        self._building = threading.RLock()  # views and text search build `sql` inside
        self.memory = Memory(db, session, wall_clock, redactor)
        self._closed = threading.Event()
        if self.audit.pending():  # rows an earlier process left queued: write them when free
            self.audit.drainer.wake()

    @BuiltOnce
    def sql(self) -> SqlTiers:
        from sqlgate.engine.running import SqlTiers

        return SqlTiers(self.db, self.clock, session=self.session, wall_clock=self.wall_clock)

    @BuiltOnce
    def introspection(self) -> Introspection:
        from sqlgate.engine.database import Introspection

        return Introspection(self.db, self.settings.query_timeout, self.clock)

    @BuiltOnce
    def undoing(self) -> UndoRestore:
        from sqlgate.engine.undo import UndoRestore

        return UndoRestore(self.db, self.session, self.wall_clock)

    @BuiltOnce
    def views(self) -> ViewSaver:
        from sqlgate.engine.running import ViewSaver

        return ViewSaver(self.sql)

    @BuiltOnce
    def text_search(self) -> TextSearch:
        from sqlgate.engine.running import TextSearch

        return TextSearch(self.sql)

    @BuiltOnce
    def claims(self) -> ClaimStore:
        from sqlgate.claims.store import ClaimStore

        return ClaimStore(self.db, self.memory.chain, self.memory.redactor, self.wall_clock)

    @classmethod
    def open(
        cls: type[Opened],
        settings: Settings,
        *,
        clock: Clock = time.monotonic,
        wall_clock: Clock = time.time,
        session: str | None = None,
        create_parent: bool = False,
        read_only: bool = False,
        actor: str = "local",
        serving: bool = False,
    ) -> Opened:
        """`read_only`: an existing database opened for reading only (the CLI's inspection
        commands): nothing is migrated, written or audited, and no lock is waited for.
        `actor`: who the calls are recorded as when the surface names no caller
        (`engine.records.actors`): `local` (the agent on stdio) or `cli` (a person's command).
        `serving`: a server starts, which the table rules must fit (StartupError)."""
        redactor = redactor_for(settings)  # a bad pattern file stops us before the db is touched
        db = Database.open(settings, create_parent=create_parent, read_only=read_only,
                           relocate=_relocate_shapes)  # fmt: skip
        try:
            if serving:  # a rule that does not fit the schema stops the server at start
                db.check_rules()
            return cls(
                db,
                session or new_session_id(),
                clock,
                wall_clock=wall_clock,
                redactor=redactor,
                actor=actor,
            )
        except BaseException:
            db.close()
            raise

    def close(self, wait: float | None = None) -> None:
        """Write the queued audit rows (waiting up to `wait` seconds, --busy-timeout unless
        given, for the lock; what still waits stays queued for the next process), then close
        the database."""
        if not self._closed.is_set():
            self._closed.set()
            try:
                self.audit.close(self.settings.busy_timeout if wait is None else wait)
            finally:
                self.db.close()

    def __enter__(self: Opened) -> Opened:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the audited call ---------------------------------------------------------------
    def call(
        self,
        tool: str,
        work: Callable[[Call], Outcome],
        *,
        query: str | None = None,
        control: CallControl | None = None,
        detail: dict[str, Any] | None = None,
    ) -> str:
        entry = AuditEntry(tool=tool, query=query if isinstance(query, str) else None)
        entry.detail = dict(detail or {})
        caller = current_caller()
        if caller is not None:  # an HTTP caller (engine.records.actors); else the service's own
            entry.actor, entry.session = caller.actor, caller.session
            if caller.client is not None:
                entry.detail["client"] = caller.client
        started = time.perf_counter()
        outcome: Outcome | None = None
        audit_id: int | None = None
        try:
            if entry.query:
                entry.detail["fingerprint"] = _safe_fingerprint(entry.query)
            outcome = work(Call(entry, control or CallControl()))
            entry.ok = True
            entry.rows = outcome.rows
            entry.detail.update(outcome.detail)
        except SqlgateError as exc:
            entry.error = str(exc)
            if isinstance(exc, PolicyDenied):  # the console tells refusals from failures
                entry.detail["refused"] = True
            raise
        except apsw.BusyError:
            from sqlgate.engine.running import busy_error

            busy = busy_error(self.settings.busy_timeout)
            entry.error = str(busy)
            raise busy from None
        except Exception as exc:
            entry.error = f"internal error: {type(exc).__name__}"
            log.exception("tool %s failed unexpectedly", tool)
            raise SqlgateError(
                f"{tool} failed with an internal error ({type(exc).__name__}); the server log "
                "has the details"
            ) from exc
        finally:
            audit_id = self.audit.write(entry, (time.perf_counter() - started) * 1000)
        # the text may name this call's audit row (row-level undo: `sqlgate undo <id>`)
        return outcome.text if outcome.finish is None else outcome.finish(audit_id)

    def refuse(self, tool: str, message: str, reason: str) -> None:
        """Audit a call refused before it reached the service (a tool above the caller's
        tier, arguments the tool does not take): a refused row of `tool`, with `reason`, as
        the current caller."""
        entry = AuditEntry(tool=tool, error=message, detail={"refused": True, "reason": reason})
        caller = current_caller()
        if caller is not None:
            entry.actor, entry.session = caller.actor, caller.session
        self.audit.write(entry, 0.0)

    def _confirmed_by(self, confirmed: bool) -> dict[str, str]:
        """Who answered a confirmation: the caller whose session was asked (the question
        goes to the session that made the call, surfaces/mcp/confirm.py)."""
        if not confirmed:
            return {}
        return {"confirmed_by": (current_caller() or self.caller).actor}


def _relocate_shapes(conn: apsw.Connection, moved: Mapping[tuple[int, int], int]) -> int:
    """`engine.undo.relocate_shapes`, imported only when a 0.1.0 file is moved (start-up)."""
    from sqlgate.engine.undo import relocate_shapes

    return relocate_shapes(conn, moved)
