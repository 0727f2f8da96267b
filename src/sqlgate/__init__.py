"""sqlgate: SQL over one SQLite file for coding agents, with the safety in the server."""

from __future__ import annotations

from sqlgate.config import Settings, load_settings
from sqlgate.errors import (
    ChainBroken,
    DatabaseBusy,
    InvalidArgument,
    LimitExceeded,
    MassRewrite,
    NotFound,
    NotUndoable,
    PolicyDenied,
    QueryTimeout,
    SnapshotError,
    SqlError,
    SqlgateError,
    StartupError,
    UndoConflict,
    UndoRefused,
    Unhealthy,
    WrongDatabase,
)

__version__ = "0.1.0"

__all__ = [
    "ChainBroken",
    "DatabaseBusy",
    "InvalidArgument",
    "LimitExceeded",
    "MassRewrite",
    "NotFound",
    "NotUndoable",
    "PolicyDenied",
    "QueryTimeout",
    "Settings",
    "SnapshotError",
    "SqlError",
    "SqlgateError",
    "StartupError",
    "UndoConflict",
    "UndoRefused",
    "Unhealthy",
    "WrongDatabase",
    "__version__",
    "load_settings",
]
