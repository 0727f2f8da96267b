"""Reading claims for the surfaces that show them: the console's Claims page, `sqlgate stats`
and `sqlgate export`. The claims room's SQL those surfaces need, on a connection they hold
(one read transaction). The tools read and change claims through `ClaimStore`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

import apsw

__all__ = ["CLAIMS_EXPORT", "claim_history", "claims_by_state"]

# what `sqlgate export` writes of claims, after memory: (table, the `type` of its lines, its
# JSON text columns)
CLAIMS_EXPORT: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("claims", "claim", ("evidence",)),
    ("claims_history", "claim_history", ("detail",)),
)


def claims_by_state(conn: apsw.Connection) -> dict[str, int]:
    """How many claims are in each state, by state name."""
    found: dict[str, int] = dict(
        conn.execute("SELECT state, count(*) FROM claims GROUP BY 1 ORDER BY 1")
    )
    return found


def claim_history(
    conn: apsw.Connection, claim_ids: Iterable[int]
) -> dict[int, list[tuple[str, str]]]:
    """The (action, detail) of each change of the claims `claim_ids`, oldest first; every
    claim asked for has a list, empty when it has no change recorded."""
    history: dict[int, list[tuple[str, str]]] = {int(i): [] for i in claim_ids}
    for claim_id, action, detail in conn.execute(
        "SELECT claim_id, action, detail FROM claims_history WHERE claim_id IN "
        "(SELECT value FROM json_each(?)) ORDER BY id", (json.dumps(list(history)),),
    ):  # fmt: skip
        history[int(claim_id)].append((str(action), str(detail)))
    return history
