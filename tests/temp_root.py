"""Where the suite keeps its temporary files: in memory (/dev/shm) when it can.

Most tests open a fresh database, and SQLite syncs every commit to the disk: on a virtual
disk that wait, not the CPU, is much of a test's time. A tmpfs makes the sync free and
changes nothing a test checks (no test can observe durability across a power cut). The
suite moves there only when the caller has not chosen a folder (TMPDIR unset) and the tmpfs
has room; `TMPDIR=/tmp pytest ...` keeps everything on the disk.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, MutableMapping
from pathlib import Path

__all__ = ["MIN_FREE_BYTES", "TMPFS", "fast_temp_root", "move_temp_root"]

TMPFS = Path("/dev/shm")
# A run of the unit suite leaves ~35 MB in its numbered folder, and pytest keeps the last
# three; a container's default 64 MB /dev/shm is too small, so it is left alone.
MIN_FREE_BYTES = 1 << 30


def fast_temp_root(environ: Mapping[str, str], candidate: Path = TMPFS) -> Path | None:
    """`candidate` if the suite should keep its temporary files there, else None (stay
    where tempfile would put them)."""
    if environ.get("TMPDIR"):
        return None
    if not candidate.is_dir() or not os.access(candidate, os.W_OK | os.X_OK):
        return None
    try:
        free = shutil.disk_usage(candidate).free
    except OSError:
        return None
    return candidate if free >= MIN_FREE_BYTES else None


def move_temp_root(environ: MutableMapping[str, str], candidate: Path = TMPFS) -> Path | None:
    """Point TMPDIR in `environ` at `candidate` when `fast_temp_root` chooses it (child
    processes inherit it; `tempfile.tempdir = None` makes this one read it again)."""
    root = fast_temp_root(environ, candidate)
    if root is not None:
        environ["TMPDIR"] = str(root)
    return root
