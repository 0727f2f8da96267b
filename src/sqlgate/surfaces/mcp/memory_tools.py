"""The memory tool group: the agent's event log, checkpoints and progressive search."""

from __future__ import annotations

from typing import Annotated

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from pydantic import Field

from sqlgate.service import MAX_IDS, MAX_KINDS, MAX_TAGS, Service
from sqlgate.surfaces.mcp.progress import relay_progress
from sqlgate.surfaces.mcp.tooling import (
    READ_ONLY,
    WRITES,
    at_most,
    comma_text,
    list_or_text,
    run_tool,
)

__all__ = ["MEMORY_TOOLS", "register_memory_tools"]

MEMORY_TOOLS = (
    "append_event",
    "verify_chain",
    "checkpoint",
    "get_resume_context",
    "memory_search",
    "memory_timeline",
    "memory_details",
    "memory_stats",
)

Ids = Annotated[
    list[int],
    at_most(MAX_IDS, "id"),
    Field(max_length=MAX_IDS, description="event ids, e.g. from memory_search"),
]
TAG_EXAMPLE = ("auth", "bug")
KIND_EXAMPLE = ("prompt", "compaction")
# a list, or one comma-separated text; validators run right to left: the text is split
# (comma_text) before the list's length is counted (at_most)
Tags = Annotated[
    Annotated[list[str], Field(max_length=MAX_TAGS)] | None,
    at_most(MAX_TAGS, "tag"),
    comma_text("tag", TAG_EXAMPLE),
    list_or_text(MAX_TAGS, TAG_EXAMPLE),
]
Kinds = Annotated[
    Annotated[list[str], Field(max_length=MAX_KINDS)] | None,
    at_most(MAX_KINDS, "kind"),
    comma_text("kind", KIND_EXAMPLE),
    list_or_text(MAX_KINDS, KIND_EXAMPLE),
]


def register_memory_tools(server: MCPServer, service: Service) -> None:
    @server.tool(annotations=WRITES, structured_output=False)
    async def append_event(
        content: Annotated[str, Field(description="what to remember; secrets are redacted")],
        kind: Annotated[str, Field(description="note, decision, todo, error, …")] = "note",
        tags: Tags = None,
    ) -> str:
        """Append an event to the tamper-evident memory chain; returns its id and hash."""
        return await run_tool(lambda c: service.append_event(content, kind, tags))

    @server.tool(annotations=READ_ONLY, structured_output=False)
    async def verify_chain(ctx: Context) -> str:
        """Recompute every hash and link of the memory chain; JSON ok or first broken id."""
        progress = relay_progress(ctx, "events verified")
        return await run_tool(lambda c: service.verify_chain(progress))

    @server.tool(annotations=WRITES, structured_output=False)
    async def checkpoint(
        summary: Annotated[str, Field(description="the state to resume from next time")],
    ) -> str:
        """Save a summary of where things stand, anchored to the chain's head."""
        return await run_tool(lambda c: service.checkpoint(summary))

    @server.tool(annotations=READ_ONLY, structured_output=False)
    async def get_resume_context(
        max_events: Annotated[int, Field(ge=1, le=1000)] = 50,
        exclude_kinds: Kinds = None,
    ) -> str:
        """Call first in a session: last checkpoint, events since, and the chain's status."""
        return await run_tool(lambda c: service.get_resume_context(max_events, exclude_kinds))

    @server.tool(annotations=READ_ONLY, structured_output=False)
    async def memory_search(
        query: Annotated[str, Field(description="a question or plain words; word* for a prefix")],
        top_k: Annotated[int, Field(ge=1, le=50)] = 5,
        kind: str | None = None,
        session: str | None = None,
        tags: Annotated[
            Tags, Field(description='events must have all: a list or "auth, bug"')
        ] = None,
        since: Annotated[str | None, Field(description="ISO date or date-time")] = None,
        until: Annotated[str | None, Field(description="ISO date or date-time")] = None,
    ) -> str:
        """Ranked index of matching events, one-line previews; score 1.00 = the best. Start here."""
        return await run_tool(
            lambda c: service.memory_search(query, top_k, kind, session, tags, since, until)
        )

    @server.tool(annotations=READ_ONLY, structured_output=False)
    async def memory_timeline(ids: Ids, window: Annotated[int, Field(ge=0, le=20)] = 3) -> str:
        """Events just before and after each id, in chain order, as previews."""
        return await run_tool(lambda c: service.memory_timeline(ids, window))

    @server.tool(annotations=READ_ONLY, structured_output=False)
    async def memory_details(ids: Ids) -> str:
        """Full content and metadata of the chosen events."""
        return await run_tool(lambda c: service.memory_details(ids))

    @server.tool(annotations=READ_ONLY, structured_output=False)
    async def memory_stats() -> str:
        """Event count, kinds, sessions, first/last date, database size, chain status."""
        return await run_tool(lambda c: service.memory_stats())
