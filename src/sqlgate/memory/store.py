"""The memory tools over one database: validate, redact, then chain, search or resume."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlgate.config import Settings
from sqlgate.engine.database import Database
from sqlgate.engine.framing import one_line_json
from sqlgate.errors import InvalidArgument
from sqlgate.memory.chain import EventChain
from sqlgate.memory.inputs import (
    event_ids,
    event_kind,
    event_kinds,
    event_tags,
    moment,
    text_field,
)
from sqlgate.memory.privacy import Redactor, load_extra_patterns
from sqlgate.memory.restore_record import recorded_restores
from sqlgate.memory.witness import WitnessFile

if TYPE_CHECKING:  # built on first use: appending an event (a capture hook) needs neither
    from sqlgate.memory.checkpoints import Checkpoints
    from sqlgate.memory.search import EventReader

__all__ = ["SERVER_KINDS", "Memory", "Reply", "redactor_for"]

# event kinds only the server appends, so an agent cannot forge them
SERVER_KINDS = frozenset({"claim", "import", "restore"})


@dataclass(frozen=True)
class Reply:
    """What a memory tool answers, and how many rows it is about (for the audit log)."""

    text: str
    rows: int
    detail: dict[str, Any]


def _json(value: Any) -> str:
    return one_line_json(value)  # stored names (sessions) stay on one line whatever they hold


def redactor_for(settings: Settings) -> Redactor:
    extra = load_extra_patterns(settings.redact_patterns) if settings.redact_patterns else ()
    return Redactor(extra, enabled=settings.redact != "off")


def _session(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InvalidArgument("session must be a session id as memory_stats lists them")
    return value


class Memory:
    def __init__(
        self, db: Database, session: str, wall_clock: Callable[[], float], redactor: Redactor
    ) -> None:
        self.db = db
        self.settings = db.settings
        self.redactor = redactor
        self.witness = WitnessFile(db.settings.records.witness)
        self.chain = EventChain(db, self.witness, session, wall_clock)
        self.session = session
        self.wall_clock = wall_clock

    # stateless readers of the file: two threads building one at once is harmless
    @functools.cached_property
    def checkpoints(self) -> Checkpoints:
        from sqlgate.memory.checkpoints import Checkpoints

        return Checkpoints(self.db, self.chain, self.session, self.wall_clock)

    @functools.cached_property
    def reader(self) -> EventReader:
        from sqlgate.memory.search import EventReader

        return EventReader(self.db)

    def _clean(self, value: object, name: str) -> tuple[str, dict[str, int]]:
        limit = self.settings.max_event_chars
        text = text_field(value, name, limit)
        redaction = self.redactor.redact(text)
        if not redaction.text.strip():
            raise InvalidArgument(
                f"{name} is empty once <private> blocks are dropped; nothing was stored"
            )
        return redaction.text, redaction.counts

    def _secret_free(self, tags: list[str]) -> list[str]:
        """Tags are indexed and shown in every listing: one that looks like a secret is refused
        (redacting it would leave a meaningless tag)."""
        for tag in tags:
            if self.redactor.redact(tag).counts:
                raise InvalidArgument(
                    "a tag looks like a secret (it would be redacted); tags are labels such as "
                    "auth or deploy, put details in the content"
                )
        return tags

    def append_event(self, content: object, kind: object, tags: object) -> Reply:
        clean_kind = event_kind(kind)
        if clean_kind in SERVER_KINDS:
            raise InvalidArgument(
                f"kind {clean_kind!r} is written only by the server (claim changes come from "
                "claim_add, claim_confirm and claim_retract); choose another kind"
            )
        clean_tags = self._secret_free(event_tags(tags))
        text, redacted = self._clean(content, "content")
        appended = self.chain.append(clean_kind, text, clean_tags)
        answer: dict[str, Any] = {"id": appended.id, "hash": appended.hash}
        if redacted:
            answer["redacted"] = redacted
        return Reply(_json(answer), 1, {"event": appended.id, "redacted": redacted or None})

    def verify_chain(self, progress: Callable[[int, int], None] | None = None) -> Reply:
        """The verdict, and the restores the chain records when it is whole."""
        status = self.chain.verify(progress=progress)
        answer = status.as_dict()
        if status.ok:
            with self.db.reading_records() as conn:
                restores = recorded_restores(conn)
            if restores is not None:
                answer["restores"] = restores
        return Reply(json.dumps(answer, separators=(", ", ": ")), status.checked, {"ok": status.ok})

    def checkpoint(self, summary: object) -> Reply:
        text, redacted = self._clean(summary, "summary")
        saved = self.checkpoints.save(text)
        answer: dict[str, Any] = {
            "id": saved.id,
            "last_event_id": saved.last_event_id,
            "head_hash": saved.head_hash,
        }
        if redacted:
            answer["redacted"] = redacted
        return Reply(_json(answer), 1, {"checkpoint": saved.id})

    def resume_context(self, max_events: int, exclude_kinds: object) -> Reply:
        kinds = event_kinds(exclude_kinds, "exclude_kinds")
        text, count = self.checkpoints.resume(max_events, kinds)
        return Reply(text, count, {})

    def search(
        self,
        query: object,
        top_k: int,
        kind: object,
        session: object,
        tags: object,
        since: object,
        until: object,
    ) -> Reply:
        from sqlgate.memory.search import SearchFilters

        filters = SearchFilters(
            kind=event_kind(kind) if kind is not None else None,
            session=_session(session),
            tags=tuple(event_tags(tags)),
            since=moment(since, "since"),
            until=moment(until, "until", end_of_day=True),
        )
        text, count = self.reader.search(query, top_k, filters)  # type: ignore[arg-type]
        # the audit log keeps what was searched for, minus any secret pasted into it
        logged = self.redactor.redact(query).text if isinstance(query, str) else None
        return Reply(text, count, {"query": logged})

    def timeline(self, ids: object, window: int) -> Reply:
        text, count = self.reader.timeline(event_ids(ids), window)
        return Reply(text, count, {})

    def details(self, ids: object) -> Reply:
        text, count = self.reader.details(event_ids(ids))
        return Reply(text, count, {})

    def stats(self) -> Reply:
        stats = self.reader.stats()
        stats["chain"] = self.chain.verify(incremental=True).as_dict()
        return Reply(_json(stats), int(stats["events"]), {})
