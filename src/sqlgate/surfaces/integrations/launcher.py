"""How an MCP client starts sqlgate: this installation's absolute program (user scope), or
the `sqlgate` on PATH and a database inside the project (a committed, project-scope config)."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from sqlgate.config import PROJECT_DB
from sqlgate.errors import InvalidArgument
from sqlgate.surfaces.integrations.client_paths import Where, current_platform

__all__ = ["PORTABLE", "Launcher", "find_launcher", "project_db"]


@dataclass(frozen=True)
class Launcher:
    """How a client starts sqlgate: an absolute program and the arguments before ours."""

    command: str
    prefix: tuple[str, ...] = ()

    def argv(self, *args: str) -> list[str]:
        return [*self.prefix, *args]


def find_launcher(
    python: str | None = None,
    which: Callable[[str], str | None] = shutil.which,
    platform: str | None = None,
) -> Launcher:
    """The `sqlgate` script beside the running Python, else the one on PATH, else `python -m`.

    Never resolves symlinks: a virtual environment's python is a link to the base one.
    """
    python = os.path.abspath(python or sys.executable)
    script = "sqlgate.exe" if (platform or current_platform()) == "win32" else "sqlgate"
    beside = Path(python).parent / script
    if beside.is_file():
        return Launcher(str(beside))
    found = which("sqlgate")
    if found:
        return Launcher(os.path.abspath(found))
    return Launcher(python, ("-m", "sqlgate"))


PORTABLE = Launcher("sqlgate")  # a committed config runs the `sqlgate` on each machine's PATH


def project_db(db: Path, where: Where) -> PurePosixPath:
    """`db` relative to the project folder (the working folder), in `/` form.

    A committed config cannot name a database outside the project: every clone would point
    at a path that exists on this machine only."""
    full = db if db.is_absolute() else where.cwd / db
    relative = None
    # as written first, then with links resolved (a project reached through a symlink)
    for spell in (os.path.normpath, os.path.realpath):
        try:
            relative = Path(spell(full)).relative_to(spell(where.cwd))
            break
        except ValueError:
            continue
    if relative is None or not relative.parts:
        raise InvalidArgument(
            f"--db {db} is not inside this project ({where.cwd}); --scope project writes a "
            f"file meant to be committed: give a path inside the project (the default is "
            f"{PROJECT_DB.as_posix()}), or use --scope user for a database of this machine"
        )
    return PurePosixPath(*relative.parts)
