"""The undo hint every row-changing answer ends its first line with (issue 19), and the
answer without it, for tests about the rest of the answer."""

from __future__ import annotations

import re

# `; undo: sqlgate undo 15@3f9a1c07 --db /abs/agent.db` (a path with spaces is shell-quoted)
UNDO_HINT = re.compile(
    r"; undo: sqlgate undo (?:--changeset )?\d+@[0-9a-f]{8} --db (?:'[^']*'|\S+)"
)


def plain(text: str) -> str:
    """`text` without its undo hint."""
    return UNDO_HINT.sub("", text, count=1)
