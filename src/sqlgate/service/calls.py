"""The one thing surfaces import: sqlgate's features composed from Settings.

Every tool call goes through `Service.call`, which times it, audits it in a `finally`
(successful or not; a failed audit write never loses the result, and a row that cannot be
written at once is queued, never waited for) and lets only `SqlgateError`s out.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

import apsw

from sqlgate.config import Settings
from sqlgate.engine.commands import list_calls
from sqlgate.engine.database import Database
from sqlgate.engine.limits import CallControl, Clock
from sqlgate.engine.records import (
    AGENT_FINDS_CALLS,
    LIST_CALLS,
    AuditEntry,
    AuditLog,
    AuditQueue,
    Caller,
    Identity,
    current_caller,
    parse_call_ref,
    queue_path,
)
from sqlgate.engine.running import Outcome
from sqlgate.engine.sqltext import fingerprint
from sqlgate.errors import InvalidArgument, PolicyDenied, SqlgateError
from sqlgate.memory.privacy import Redactor
from sqlgate.memory.store import Memory, Reply, redactor_for

if TYPE_CHECKING:  # built on first use (`_BuiltOnce`), their modules imported then
    from sqlgate.claims.store import ClaimStore
    from sqlgate.engine.database import Introspection
    from sqlgate.engine.running import Bindings, SearchRequest, SqlTiers, TextSearch, ViewSaver
    from sqlgate.engine.undo import UndoRestore, UndoTarget

__all__ = ["Service", "new_session_id"]

log = logging.getLogger("sqlgate")
T = TypeVar("T")


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


def undo_target(
    audit_id: int | str | None,
    changeset: int | str | None,
    *,
    by_agent: bool = False,
    listing: str = LIST_CALLS,
) -> UndoTarget:
    """What `undo` was asked for: numbers as given, texts as `15` or `15@3f9a1c07`
    (`listing`: the command that lists the ids, for a person's malformed one)."""
    from sqlgate.engine.undo import UndoTarget

    if (audit_id is None) == (changeset is None):
        raise InvalidArgument(
            "name the call to undo: its audit id (as the undo hint shows it, e.g. 15@3f9a1c07),"
            " or --changeset N"
        )
    given = audit_id if audit_id is not None else changeset
    if isinstance(given, str):
        ref = parse_call_ref(given, AGENT_FINDS_CALLS if by_agent else listing)
        number, database = ref.audit_id, ref.database
    else:
        number, database = given, None  # type: ignore[assignment]
    if audit_id is not None:
        return UndoTarget(audit_id=number, database=database, by_agent=by_agent)
    return UndoTarget(changeset=number, database=database, by_agent=by_agent)


def _params_detail(params: object) -> dict[str, Any] | None:
    """The bound parameters as the audit row keeps them: JSON text (cut and redacted like
    every detail value), or nothing when the call had none."""
    if params is None:
        return None
    return {"params": json.dumps(params, ensure_ascii=False, default=str)}


def _bindings(params: object) -> Bindings:
    """`execute.normalize_params`, imported with the SQL engine when a statement runs."""
    from sqlgate.engine.running import normalize_params

    return normalize_params(params)


@dataclass
class _Call:
    entry: AuditEntry
    control: CallControl


class _BuiltOnce(Generic[T]):
    """A part of the Service built the first time it is used, once even when two threads
    ask at the same moment, then read as a plain attribute.

    The SQL tiers, undo, views, text search and claims import most of the engine (its
    statement reader, the undo checks, the snapshot code) and the claims package: a CLI
    command or a capture hook that only reads the memory or the audit log must not pay for
    them at start-up."""

    def __init__(self, build: Callable[[Service], T]) -> None:
        self.build = build
        self.name = build.__name__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, service: None, owner: type | None = None) -> _BuiltOnce[T]: ...

    @overload
    def __get__(self, service: Service, owner: type | None = None) -> T: ...

    def __get__(self, service: Service | None, owner: type | None = None) -> T | _BuiltOnce[T]:
        if service is None:
            return self
        with service._building:  # once built, the instance's attribute is found first
            if self.name not in service.__dict__:
                service.__dict__[self.name] = self.build(service)
        return service.__dict__[self.name]  # type: ignore[no-any-return]


class Service:
    """sqlgate's features over one database. Open with `Service.open(settings)`."""

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
            else AuditQueue(queue_path(db.path), db.settings.busy_timeout),
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

    @_BuiltOnce
    def sql(self) -> SqlTiers:
        from sqlgate.engine.running import SqlTiers

        return SqlTiers(self.db, self.clock, session=self.session, wall_clock=self.wall_clock)

    @_BuiltOnce
    def introspection(self) -> Introspection:
        from sqlgate.engine.database import Introspection

        return Introspection(self.db, self.settings.query_timeout, self.clock)

    @_BuiltOnce
    def undoing(self) -> UndoRestore:
        from sqlgate.engine.undo import UndoRestore

        return UndoRestore(self.db, self.session, self.wall_clock)

    @_BuiltOnce
    def views(self) -> ViewSaver:
        from sqlgate.engine.running import ViewSaver

        return ViewSaver(self.sql)

    @_BuiltOnce
    def text_search(self) -> TextSearch:
        from sqlgate.engine.running import TextSearch

        return TextSearch(self.sql)

    @_BuiltOnce
    def claims(self) -> ClaimStore:
        from sqlgate.claims.store import ClaimStore

        return ClaimStore(self.db, self.memory.chain, self.memory.redactor, self.wall_clock)

    @classmethod
    def open(
        cls,
        settings: Settings,
        *,
        clock: Clock = time.monotonic,
        wall_clock: Clock = time.time,
        session: str | None = None,
        create_parent: bool = False,
        read_only: bool = False,
        actor: str = "local",
        serving: bool = False,
    ) -> Service:
        """`read_only`: an existing database opened for reading only (the CLI's inspection
        commands): nothing is migrated, written or audited, and no lock is waited for.
        `actor`: who the calls are recorded as when the surface names no caller
        (`engine.records.actors`): `local` (the agent on stdio) or `cli` (a person's command).
        `serving`: a server starts, which the table rules must fit (StartupError)."""
        redactor = redactor_for(settings)  # a bad pattern file stops us before the db is touched
        db = Database.open(settings, create_parent=create_parent, read_only=read_only)
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

    def __enter__(self) -> Service:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the audited call ---------------------------------------------------------------
    def call(
        self,
        tool: str,
        work: Callable[[_Call], Outcome],
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
            outcome = work(_Call(entry, control or CallControl()))
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

    # -- the SQL tools ------------------------------------------------------------------
    def read_query(
        self,
        query: str,
        limit: int | None = None,
        params: object = None,
        control: CallControl | None = None,
    ) -> str:
        return self.call(
            "read_query",
            lambda c: self.sql.read(query, limit, _bindings(params), c.control),
            query=query,
            control=control,
            detail=_params_detail(params),
        )

    def write_query(
        self, query: str, params: object = None, control: CallControl | None = None
    ) -> str:
        return self.call(
            "write_query",
            lambda c: self.sql.write(query, _bindings(params), c.control),
            query=query,
            control=control,
            detail=_params_detail(params),
        )

    def destructive_query(
        self,
        query: str,
        reason: str,
        params: object = None,
        control: CallControl | None = None,
        confirm: Callable[[], None] | None = None,
        progress: Callable[[int, int], None] | None = None,
        *,
        confirmed: bool = False,
    ) -> str:
        """`confirmed`: the person behind the caller's session approved it when asked (its
        row's detail says who: `confirmed_by`)."""
        return self.call(
            "destructive_query",
            lambda c: self.sql.destructive(
                query, reason, _bindings(params), c.control, confirm, progress
            ),
            query=query,
            control=control,
            detail={
                "reason": reason,
                **(_params_detail(params) or {}),
                **self._confirmed_by(confirmed),
            },
        )

    def _confirmed_by(self, confirmed: bool) -> dict[str, str]:
        """Who answered a confirmation: the caller whose session was asked (the question
        goes to the session that made the call, surfaces/mcp/confirm.py)."""
        if not confirmed:
            return {}
        return {"confirmed_by": (current_caller() or self.caller).actor}

    def undo(
        self,
        audit_id: int | str | None = None,
        changeset: int | str | None = None,
        *,
        tool: str = "undo",
        reason: str | None = None,
        confirm: Callable[[], None] | None = None,
        confirmed: bool = False,
    ) -> str:
        """Restore the rows one earlier call changed, named by its audit id or its changeset
        id, either as a number (of this database) or as `15@3f9a1c07` (refused when the id
        after `@` is another database's). `tool` is how the audit log names this undo."""
        target = undo_target(
            audit_id, changeset, by_agent=tool == "undo_call", listing=list_calls(self.db.path)
        )

        def work(_: _Call) -> Outcome:
            if confirm is not None:
                confirm()
            text, rows, detail = self.undoing.undo(target)
            return Outcome(text, rows, detail)

        asked: dict[str, Any] = {"undoes": target.audit_id, "changeset": target.changeset}
        if target.database is not None:
            asked["database"] = target.database
        if reason is not None:
            asked["reason"] = reason
        asked.update(self._confirmed_by(confirmed))
        return self.call(tool, work, detail={k: v for k, v in asked.items() if v is not None})

    def undo_call(
        self,
        audit_id: int | str,
        reason: str,
        confirm: Callable[[], None] | None = None,
        *,
        confirmed: bool = False,
    ) -> str:
        """The agent takes back one of this database's earlier calls (the undo_call tool)."""
        if not isinstance(reason, str) or not reason.strip():
            raise InvalidArgument(
                "reason is required: say in a sentence why this call should be taken back"
            )
        return self.undo(
            audit_id, tool="undo_call", reason=reason, confirm=confirm, confirmed=confirmed
        )

    def describe_undo(self, audit_id: int | str) -> str:
        """One line naming the call an undo_call would take back (for the person asked to
        confirm it); raises what the agent's undo_call would raise for a call it cannot find."""
        return self.undoing.describe(undo_target(audit_id, None, by_agent=True))

    def undoable(self) -> list[dict[str, Any]]:
        """Calls that can still be undone, newest first (not audited: a listing)."""
        found = self.undoing.undoable()
        for item in found:
            for key in ("audit_id", "changeset"):
                if item[key] is not None:
                    item[key] = self.sql.call_ref(int(item[key]))
        return found

    def list_tables(
        self, include_row_counts: bool = True, control: CallControl | None = None
    ) -> str:
        def work(c: _Call) -> Outcome:
            text, count = self.introspection.list_tables(include_row_counts, c.control)
            return Outcome(text, count)

        return self.call("list_tables", work, control=control)

    def describe_table(self, table: str) -> str:
        def work(_: _Call) -> Outcome:
            text, count = self.introspection.describe_table(table)
            return Outcome(text, count)

        return self.call("describe_table", work, detail={"table": table})

    def get_schema(self, include_system: bool = False) -> str:
        def work(_: _Call) -> Outcome:
            text, count = self.introspection.get_schema(include_system)
            return Outcome(text, count)

        return self.call("get_schema", work)

    def create_view(
        self,
        name: str,
        select_sql: str,
        description: str = "",
        replace: bool = False,
        control: CallControl | None = None,
    ) -> str:
        def work(c: _Call) -> Outcome:
            text, undo_id = self.views.create_view(
                name, select_sql, description, replace, c.control
            )
            if undo_id is None:
                return Outcome(text, 0, {"view": name})
            finish = self.sql.undo_text(text, undo_id)
            return Outcome(finish(None), 0, {"view": name, "undo": undo_id}, finish=finish)

        return self.call("create_view", work, query=select_sql, control=control)

    def search_text(
        self,
        request: SearchRequest,
        params: object = None,
        control: CallControl | None = None,
    ) -> str:
        return self.call(
            "search_text",
            lambda c: self.text_search.search(request, _bindings(params), c.control),
            query=request.where,
            control=control,
            detail={"pattern": request.pattern, "table": request.table},
        )

    # -- the memory tools ---------------------------------------------------------------
    def _remember(self, tool: str, answer: Callable[[], Reply], **detail: Any) -> str:
        def work(_: _Call) -> Outcome:
            reply = answer()
            return Outcome(reply.text, reply.rows, reply.detail)

        return self.call(tool, work, detail={k: v for k, v in detail.items() if v is not None})

    def append_event(
        self, content: str, kind: str = "note", tags: list[str] | str | None = None
    ) -> str:
        return self._remember(
            "append_event", lambda: self.memory.append_event(content, kind, tags), kind=kind
        )

    def verify_chain(self, progress: Callable[[int, int], None] | None = None) -> str:
        return self._remember("verify_chain", lambda: self.memory.verify_chain(progress))

    def checkpoint(self, summary: str) -> str:
        return self._remember("checkpoint", lambda: self.memory.checkpoint(summary))

    def get_resume_context(
        self, max_events: int = 50, exclude_kinds: list[str] | str | None = None
    ) -> str:
        return self._remember(
            "get_resume_context", lambda: self.memory.resume_context(max_events, exclude_kinds)
        )

    def memory_search(
        self,
        query: str,
        top_k: int = 5,
        kind: str | None = None,
        session: str | None = None,
        tags: list[str] | str | None = None,
        since: str | None = None,
        until: str | None = None,
    ) -> str:
        return self._remember(
            "memory_search",
            lambda: self.memory.search(query, top_k, kind, session, tags, since, until),
        )

    def memory_timeline(self, ids: list[int], window: int = 3) -> str:
        return self._remember("memory_timeline", lambda: self.memory.timeline(ids, window))

    def memory_details(self, ids: list[int]) -> str:
        return self._remember("memory_details", lambda: self.memory.details(ids))

    def memory_stats(self) -> str:
        return self._remember("memory_stats", self.memory.stats)

    # -- the claims tools ---------------------------------------------------------------
    def _believe(self, tool: str, answer: Callable[[], tuple[str, int]], **detail: Any) -> str:
        """An audited claims call; text in its audit detail is redacted like memory content."""

        def work(_: _Call) -> Outcome:
            text, rows = answer()
            return Outcome(text, rows)

        shown = {
            key: self.memory.redactor.redact(value).text if isinstance(value, str) else value
            for key, value in detail.items()
            if value is not None
        }
        return self.call(tool, work, detail=shown)

    def claim_add(
        self,
        entity: str,
        kind: str,
        claim: str,
        volatility: str = "slow",
        confidence: float = 0.8,
        rank: int | None = None,
        confirmed_at: str | None = None,
        evidence: list[int] | None = None,
    ) -> str:
        def answer() -> tuple[str, int]:
            from sqlgate.claims.present import claim_json

            added, created = self.claims.add(
                entity, kind, claim, volatility, confidence, rank, confirmed_at, evidence
            )
            return claim_json(added, self.claims.now(), created=created), 1

        return self._believe("claim_add", answer, entity=entity, kind=kind)

    def claim_search(self, query: str) -> str:
        def answer() -> tuple[str, int]:
            from sqlgate.claims.present import claims_csv

            found = self.claims.search(query)
            return claims_csv(found, self.claims.now(), self.settings.max_cell_chars), len(found)

        return self._believe("claim_search", answer, query=query)

    def claim_confirm(
        self, id: int, confidence: float | None = None, evidence: list[int] | None = None
    ) -> str:
        def answer() -> tuple[str, int]:
            from sqlgate.claims.present import claim_json

            confirmed = self.claims.confirm(id, confidence, evidence)
            return claim_json(confirmed, self.claims.now()), 1

        return self._believe("claim_confirm", answer, claim=id)

    def claim_retract(self, id: int) -> str:
        def answer() -> tuple[str, int]:
            from sqlgate.claims.present import claim_json

            return claim_json(self.claims.retract(id), self.claims.now()), 1

        return self._believe("claim_retract", answer, claim=id)

    def claims_decayed(self, threshold: float = 0.5, as_of: str | None = None) -> str:
        def answer() -> tuple[str, int]:
            from sqlgate.claims.present import decayed_csv

            items, changes = self.claims.decayed(threshold, as_of)
            cells = self.settings.max_cell_chars
            return decayed_csv(items, changes, float(threshold), cells), len(items)

        return self._believe("claims_decayed", answer, as_of=as_of)

    def claims_contradictions(
        self, observed: dict[str, Any] | None = None, as_of: str | None = None
    ) -> str:
        def answer() -> tuple[str, int]:
            from sqlgate.claims.present import evaluation_json

            evaluation = self.claims.contradictions(observed, as_of)
            return evaluation_json(evaluation, as_of), len(evaluation.findings)

        return self._believe("claims_contradictions", answer, as_of=as_of)

    def claims_all(self) -> str:
        """Every claim as JSON (the claims://all resource)."""
        now = self.claims.now()
        return json.dumps([c.as_dict(now) for c in self.claims.all()], ensure_ascii=False)
