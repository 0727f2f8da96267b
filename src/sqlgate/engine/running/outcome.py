"""What a finished call hands back: the text the agent reads and the audit row's facts, and
the notes the write tiers add to its first line; and what every surface calls a recorded
call's outcome.

Outcomes (the console, `sqlgate log` and `sqlgate stats` use these words and no others):
ok; refused (the server's policy said no: the row's `detail.refused` is true); error (any
other failure: SQLite, a limit, a bad argument). `call_outcome` decides it for one row,
`OUTCOME_SQL` selects each outcome's rows in query_log; a test holds the two equal.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["OUTCOMES", "OUTCOME_SQL", "REFUSED_SQL", "Outcome", "call_outcome", "unchanged",
           "with_note"]  # fmt: skip

OUTCOMES = ("ok", "refused", "error")

# 1 when the row's `detail.refused` is JSON true, else 0 (a `detail` that is not JSON too:
# another program may have written the row)
REFUSED_SQL = (
    "(CASE WHEN json_valid(detail) THEN json_type(detail, '$.refused') IS 'true' ELSE 0 END)"
)
OUTCOME_SQL = {
    "ok": "ok = 1",
    "refused": f"ok = 0 AND {REFUSED_SQL}",
    "error": f"ok = 0 AND NOT {REFUSED_SQL}",
}


def call_outcome(ok: bool, detail: Any) -> str:
    """The outcome of one query_log row, from its `ok` and its parsed `detail`."""
    if ok:
        return "ok"
    return "refused" if isinstance(detail, dict) and detail.get("refused") is True else "error"


@dataclass
class Outcome:
    """A finished call: the text the agent reads, and facts for the audit row.

    `finish`, when set, renders the final text once the call's audit id is known (None
    when no audit row was written); `text` is what it renders without one.
    """

    text: str
    rows: int
    detail: dict[str, Any] = field(default_factory=dict)
    finish: Callable[[int | None], str] | None = None


def unchanged(summary: str, changes: int) -> str:
    """The answer of a call whose rows all hold the values they held (an UPDATE that set
    what was there): SQLite counts them, the changeset is empty, and nothing needs undoing."""
    if not changes:
        return summary
    return with_note(summary, "no value changed, so there is nothing to undo")


def with_note(summary: str, note: str) -> str:
    """`note` after the summary's first line (RETURNING rows, if any, follow)."""
    first, _, rest = summary.partition("\n")
    return f"{first}; {note}" + (f"\n{rest}" if rest else "")
