"""The commands sqlgate prints for a person: each runs as written, from any folder.

An answer, an error, `doctor` or the CLI that names a command to run (an undo, a restore, a
member's rotation) writes it whole: every path absolute and shell-quoted, the database named
with `--db`, so that it works when pasted in another folder, by another person, for a server
started with a relative `--db` or `--project-db` (issue 30). Built as f-strings around these
two pieces, so a command reads as the person will see it.
"""

from __future__ import annotations

import shlex
from pathlib import Path

__all__ = ["db_option", "in_folder", "list_calls", "shell_word"]


def shell_word(text: str | Path) -> str:
    """`text` as one word of a POSIX shell command line (quoted only when it needs it)."""
    return shlex.quote(str(text))


def db_option(db: str | Path) -> str:
    """`--db PATH`, the database's absolute path shell-quoted."""
    return f"--db {shell_word(Path(db).absolute())}"


def in_folder(folder: str | Path, command: str) -> str:
    """`command` run from `folder` (for the commands whose meaning is the folder they run
    in: a project's client config), as one line that works from anywhere."""
    return f"cd {shell_word(Path(folder).absolute())} && {command}"


def list_calls(db: str | Path) -> str:
    """The next step that shows a person the calls of database `db` that can be undone."""
    return f"`sqlgate undo --list {db_option(db)}` shows the calls that can be undone"
