"""The one thing surfaces use: sqlgate's features over one database, composed from Settings.

`Service` is its parts put together: the call machinery (`calls`: open, close, the audited
call, a refused call's row) and the tools over it (`sql_tools`, `undo_tools`,
`memory_tools`, `claims_tools`). Every tool call goes through `Service.call`.
"""

from __future__ import annotations

from sqlgate.service.claims_tools import ClaimsTools
from sqlgate.service.memory_tools import MemoryTools
from sqlgate.service.sql_tools import SqlTools
from sqlgate.service.undo_tools import UndoTools

__all__ = ["Service"]


class Service(SqlTools, UndoTools, MemoryTools, ClaimsTools):
    """sqlgate's features over one database. Open with `Service.open(settings)`."""
