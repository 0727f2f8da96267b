"""Named points where a fault test may kill the server (issue 33: crash safety across two files).

`SQLGATE_FAULT_AT=NAME` (read once, when this module is imported) makes `fault_point(NAME)`
kill the process with SIGKILL at that instant, as a power cut or `kill -9` would. Without the
variable every point is a no-op (one comparison). Only the fault tests set it.
"""

from __future__ import annotations

import os
import signal

__all__ = ["FAULT_POINTS", "fault_point"]

FAULT_POINTS = (
    "write.kept",  # the undo record committed to the records, the user's change not yet
    "write.before_commit",  # the same, just before the user's COMMIT
    "write.committed",  # the user's change committed, its audit row not yet written
    "undo.before_commit",  # undo's rows written back, the user's COMMIT not yet run
    "undo.applied",  # the rows written back and committed, the record not yet marked undone
)
_CHOSEN = os.environ.get("SQLGATE_FAULT_AT", "")


def fault_point(name: str) -> None:
    """Kill this process here when the fault test chose this point."""
    if _CHOSEN and name == _CHOSEN:
        os.kill(os.getpid(), signal.SIGKILL)
