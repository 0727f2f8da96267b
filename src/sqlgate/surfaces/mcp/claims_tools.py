"""The claims tool group: beliefs about entities that decay, and contradictions by rule."""

from __future__ import annotations

from typing import Annotated, Any

import anyio
from mcp.server import MCPServer
from pydantic import Field

from sqlgate.service import MAX_IDS, Service
from sqlgate.surfaces.mcp.tooling import READ_ONLY, WRITES, at_most, run_tool

__all__ = ["CLAIMS_TOOLS", "register_claims_tools"]

CLAIMS_TOOLS = (
    "claim_add",
    "claim_search",
    "claim_confirm",
    "claim_retract",
    "claims_contradictions",
    "claims_decayed",
)

Moment = Annotated[str | None, Field(description="ISO-8601 date or date-time; default: now")]
Evidence = Annotated[
    Annotated[list[int], Field(max_length=MAX_IDS)] | None,
    at_most(MAX_IDS, "evidence id"),
    Field(description="memory event ids that support it"),
]


def register_claims_tools(server: MCPServer, service: Service) -> None:
    @server.tool(annotations=WRITES, structured_output=False)
    async def claim_add(
        entity: Annotated[str, Field(description="what the claim is about, e.g. acme")],
        kind: Annotated[str, Field(description="priority, status, fact or relationship")],
        claim: Annotated[str, Field(description="the belief, in a sentence")],
        volatility: Annotated[
            str, Field(description="stable 365 d, slow 30 d, volatile 7 d")
        ] = "slow",
        confidence: Annotated[float, Field(ge=0, le=1)] = 0.8,
        rank: Annotated[int | None, Field(ge=1, description="priority claims only")] = None,
        confirmed_at: Moment = None,
        evidence: Evidence = None,
    ) -> str:
        """Record a belief; the same entity, kind and claim again updates it (same id)."""
        return await run_tool(
            lambda c: service.claim_add(
                entity, kind, claim, volatility, confidence, rank, confirmed_at, evidence
            )
        )

    @server.tool(annotations=READ_ONLY, structured_output=False)
    async def claim_search(
        query: Annotated[str, Field(description="text in claim or entity")],
    ) -> str:
        """Claims whose text or entity contains the query, with effective confidence."""
        return await run_tool(lambda c: service.claim_search(query))

    @server.tool(annotations=WRITES, structured_output=False)
    async def claim_confirm(
        id: int,
        confidence: Annotated[float | None, Field(ge=0, le=1)] = None,
        evidence: Evidence = None,
    ) -> str:
        """Confirm a claim still holds: resets its decay and makes it active."""
        return await run_tool(lambda c: service.claim_confirm(id, confidence, evidence))

    @server.tool(annotations=WRITES, structured_output=False)
    async def claim_retract(id: int) -> str:
        """Retract a claim for good (it stays in the history)."""
        return await run_tool(lambda c: service.claim_retract(id))

    @server.tool(annotations=WRITES, structured_output=False)
    async def claims_contradictions(
        observed: Annotated[
            dict[str, Any] | None,
            Field(
                description='{"signals": [{"acme": [5, 6, 7]}], "validPeriods": [true, true, true]}'
            ),
        ] = None,
        as_of: Moment = None,
    ) -> str:
        """Findings by rule (duplicate-rank, status-conflict, rank-drop) among live claims."""
        return await run_tool(lambda c: service.claims_contradictions(observed, as_of))

    @server.tool(annotations=WRITES, structured_output=False)
    async def claims_decayed(
        threshold: Annotated[float, Field(ge=0, le=1)] = 0.5, as_of: Moment = None
    ) -> str:
        """Claims below the confidence threshold, listed until claim_confirm or claim_retract:
        re-check them."""
        return await run_tool(lambda c: service.claims_decayed(threshold, as_of))

    @server.resource(
        "claims://all",
        name="claims",
        description="Every claim with its effective confidence, as JSON",
        mime_type="application/json",
    )
    async def all_claims() -> str:
        return await anyio.to_thread.run_sync(service.claims_all)
