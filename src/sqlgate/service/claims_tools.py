"""The claims tools of the Service: add, search, confirm and retract claims, and read the
decayed and contradicted ones, each an audited call over `claims.ClaimStore`."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from sqlgate.engine.running import Outcome
from sqlgate.service.calls import Call, Calls

__all__ = ["ClaimsTools"]


class ClaimsTools(Calls):
    """The tools over the claims the agent keeps."""

    def _believe(self, tool: str, answer: Callable[[], tuple[str, int]], **detail: Any) -> str:
        """An audited claims call; text in its audit detail is redacted like memory content."""

        def work(_: Call) -> Outcome:
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
