"""Landing imported claims: what is here already, and the planned claims with their provenance.

An importer plans which claims to add or refresh (surfaces/integrations/importers/
claim_plan.py); this module reads the claims it plans against and writes the plan: every
claim through `ClaimStore.add_in` (its history row and chain event included) and then the
import's provenance event (memory/landing.py), in ONE transaction, so an import's claims
land together or not at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import apsw

from sqlgate.claims.store import ClaimStore
from sqlgate.engine.names import fold_name
from sqlgate.memory.landing import append_provenance

__all__ = ["ClaimPlan", "existing_claims", "land_claims"]


@dataclass(frozen=True)
class ClaimPlan:
    """One claim to add or refresh, as sqlgate holds it."""

    entity: str
    kind: str
    claim: str
    volatility: str
    confidence: float
    rank: int | None
    confirmed_at: str | None  # None: now (the source's moment was in the future)


def existing_claims(conn: apsw.Connection) -> dict[tuple[str, str, str], tuple[str, str]]:
    """(entity, kind, claim) -> (state, last_confirmed) of the claims already here."""
    found = conn.execute("SELECT name FROM pragma_table_info(?)", ("claims",))
    if "last_confirmed" not in {fold_name(str(name)) for (name,) in found}:
        return {}
    return {
        (str(e), str(k), str(c)): (str(state), str(confirmed))
        for e, k, c, state, confirmed in conn.execute(
            "SELECT entity, kind, claim, state, last_confirmed FROM claims"
        )
    }


def land_claims(store: ClaimStore, plan: Sequence[ClaimPlan], record: dict[str, Any]) -> int:
    """Every planned claim, then the provenance event `record`, in one transaction; -> the
    provenance event's id."""
    with store.chain.writing() as writer:
        for item in plan:
            store.add_in(
                writer, item.entity, item.kind, item.claim, item.volatility,
                item.confidence, item.rank, item.confirmed_at,
            )  # fmt: skip
        return append_provenance(writer, record)
