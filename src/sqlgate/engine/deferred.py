"""A name of another library imported the first time it is used, not when its module loads.

sqlglot takes about 100 ms to import: a command that opens a database and reads no SQL
(`stats`, `log`, `capture`) must not pay for it. The modules that read statements name
sqlglot's `Token` and `TokenType` through `deferred(...)`: each attribute the code takes
(`TokenType.L_PAREN`) or call it makes (`Token(...)`) imports the real object then, and an
attribute once taken is kept on the stand-in, so later uses cost what a plain attribute
does. Type checkers see the real import (`if TYPE_CHECKING:`).
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["Deferred", "deferred"]


class Deferred:
    """Stands for `module.name` until used."""

    def __init__(self, module: str, name: str) -> None:
        object.__setattr__(self, "_where", (module, name))

    def resolved(self) -> Any:
        """The real object, imported on the first call."""
        found = self.__dict__.get("_real")
        if found is None:
            module, name = self.__dict__["_where"]
            found = getattr(importlib.import_module(module), name)
            object.__setattr__(self, "_real", found)
        return found

    def __getattr__(self, attr: str) -> Any:  # only for names not already kept
        if attr.startswith("__"):
            raise AttributeError(attr)  # copy, pickle and friends probe dunders: not ours
        value = getattr(self.resolved(), attr)
        object.__setattr__(self, attr, value)
        return value

    def __setattr__(self, attr: str, value: Any) -> None:
        raise AttributeError(f"{self!r} is read-only")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.resolved()(*args, **kwargs)

    def __repr__(self) -> str:
        module, name = self.__dict__["_where"]
        return f"<deferred {module}.{name}>"


def deferred(module: str, name: str) -> Any:
    """A stand-in for `from module import name` that imports on first use."""
    return Deferred(module, name)
