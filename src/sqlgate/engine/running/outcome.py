"""What a finished call hands back: the text the agent reads and the audit row's facts, and
the notes the write tiers add to its first line. A recorded call's outcome (ok, refused,
error) is the audit log's: `engine.records.audit_reader`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Outcome", "unchanged", "with_note"]


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
