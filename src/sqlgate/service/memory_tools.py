"""The memory tools of the Service: the event chain, resume context and search, each an
audited call over `memory.Memory`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlgate.engine.running import Outcome
from sqlgate.memory.store import Reply
from sqlgate.service.calls import Call, Calls

__all__ = ["MemoryTools"]


class MemoryTools(Calls):
    """The tools over the session memory."""

    def _remember(self, tool: str, answer: Callable[[], Reply], **detail: Any) -> str:
        def work(_: Call) -> Outcome:
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
