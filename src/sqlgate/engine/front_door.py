"""A package's front door that loads a module behind it when one of its names is first taken.

Each package of `engine` lists, in its `__init__`, the names other rooms may import and the
module of the package each comes from. The door is the package's `__getattr__` (PEP 562):
`from sqlgate.engine.undo import UndoRestore` loads `engine/undo/restore.py` and what it
imports, not the whole package, so a command pays for the modules it uses and no more, as
when it imported them one by one (sqlglot's parser and RE2 stay unloaded where nothing asks
for them). Type checkers read the package's `if TYPE_CHECKING:` imports instead.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping

__all__ = ["front_door"]


def front_door(package: str, behind: Mapping[str, tuple[str, ...]]) -> Callable[[str], object]:
    """The `__getattr__` of `package`: `behind` maps each module of the package (or, written
    whole as `sqlgate.x.y`, a module of another room the door passes on) to the names the
    door shows of it. A name is loaded when first taken and then kept in the package (a
    second look is a plain attribute); any other name is an AttributeError."""
    where = {name: module for module, names in behind.items() for name in names}

    def take(name: str) -> object:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        path = module if module.startswith("sqlgate.") else f"{package}.{module}"
        value = getattr(importlib.import_module(path), name)
        setattr(sys.modules[package], name, value)
        return value

    return take
