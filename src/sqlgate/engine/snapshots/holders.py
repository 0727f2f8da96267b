"""Which processes hold a database file open: what a refused restore names.

On Linux every open file of a process is a link in `/proc/PID/fd/`; a process holding the
database, its `-wal` or its `-shm` open is named with its pid and command line. Elsewhere
(or when /proc cannot be read) the answer is None: "cannot tell", never "nobody".
Processes of other users are not readable and are not named.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Holder", "holders_of"]

COMMAND_CHARS = 200  # a command line longer than this is cut with "…"


@dataclass(frozen=True)
class Holder:
    pid: int
    command: str  # its arguments on one line (the caller escapes it for a terminal)


def _command(proc: Path, pid: int) -> str:
    try:
        raw = (proc / str(pid) / "cmdline").read_bytes()
    except OSError:
        return "?"
    words = [word.decode("utf-8", "replace") for word in raw.split(b"\0") if word]
    # on one line (a `python -c` script holds line feeds); other control characters are
    # left for the surface to escape
    text = " ".join(" ".join(words).split()) or "?"
    return text if len(text) <= COMMAND_CHARS else text[: COMMAND_CHARS - 1] + "…"


def holders_of(
    db: Path, *, proc: Path = Path("/proc"), me: int | None = None
) -> list[Holder] | None:
    """Processes other than this one (`me`, default this pid) with `db`, `db-wal` or
    `db-shm` open; None when this system has no /proc to ask."""
    if not (proc / "self" / "fd").is_dir():
        return None
    me = os.getpid() if me is None else me
    real = os.path.realpath(db)
    wanted = {real, real + "-wal", real + "-shm"}
    found: list[Holder] = []
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            links = list((entry / "fd").iterdir())
        except OSError:
            continue  # gone, or another user's
        for link in links:
            try:
                target = os.readlink(link)
            except OSError:
                continue
            if target in wanted:
                found.append(Holder(int(entry.name), _command(proc, int(entry.name))))
                break
    return sorted(found, key=lambda holder: holder.pid)
