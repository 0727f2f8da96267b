"""Names compared the way SQLite compares them.

SQLite matches table, column, index, trigger, view, function, pragma and module names
without regard to case, but it folds only the 26 ASCII letters (its `sqlite3StrICmp`):
`"MEMORY_EVENTS"` names `memory_events`, while `"memory_chec\u212apoints"` (U+212A KELVIN
SIGN) is another name than `memory_checkpoints`, although Python's `str.lower()` and
`casefold()` turn one into the other. Every comparison of names in sqlgate goes through
`fold_name`, so the server protects exactly the names SQLite would resolve to its objects.
"""

from __future__ import annotations

import string

__all__ = ["SERVER_SCHEMA", "fold_name", "same_name"]

# the schema name under which sqlgate's records are attached to the agent's connections
# (`engine.connect.attach_records`); the policy judges every object in it as the server's
SERVER_SCHEMA = "sqlgate"

_ASCII_FOLD = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


def fold_name(name: str) -> str:
    """`name` with A-Z turned into a-z and every other character as it is: the key under
    which SQLite finds an object."""
    # str.lower() folds exactly A-Z in an ASCII string, and is much faster than translate
    return name.lower() if name.isascii() else name.translate(_ASCII_FOLD)


def same_name(first: str, second: str) -> bool:
    """Whether SQLite reads the two names as the same object's."""
    return fold_name(first) == fold_name(second)
