"""Every error sqlgate raises on purpose.

    SqlgateError                 the one root; surfaces translate it at the edge
    ├── InvalidArgument          a tool argument or CLI option is malformed
    ├── NotFound                 a table, view, snapshot or id does not exist
    ├── PolicyDenied             the statement is not allowed in this tool's tier
    │   ├── MassRewrite          it changed more existing rows than --max-update-rows
    │   └── NotUndoable          write_query cannot keep what undoes this change; rolled back
    ├── LimitExceeded            a time, size or memory budget ran out
    │   ├── DatabaseBusy         another process kept the write lock past the busy timeout
    │   └── QueryTimeout         the wall-clock budget ran out or the call was cancelled
    ├── SqlError                 SQLite refused or failed the statement (its words verbatim)
    ├── SnapshotError            a snapshot could not be taken, listed or restored
    │   ├── UndoConflict         rows an undo would restore were changed later; nothing undone
    │   └── UndoRefused          the call cannot be undone row by row (already undone, ...)
    │       └── WrongDatabase    the undo id names a call of another database
    ├── StartupError             the database cannot be opened as configured
    ├── ChainBroken              the memory chain failed verification (CLI exit code 9)
    └── Unhealthy                `sqlgate doctor` found a problem (CLI exit code 10)

Each message is written for the one who must act on it: it says what happened and
what to do next (which tool to use instead, which limit to raise, what to fix).

`EXIT_CODES` says what each exit code of the CLI means: the error classes' codes and the
CLI's own (0 success, 1 a bug, 2 also click's usage errors, 130 Ctrl-C). The manual's page
docs/reference/exit-codes.md is generated from it (scripts/gen_reference.py).
"""

from __future__ import annotations

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
    "SnapshotError",
    "SqlError",
    "SqlgateError",
    "StartupError",
    "UndoConflict",
    "UndoRefused",
    "Unhealthy",
    "WrongDatabase",
]


class SqlgateError(Exception):
    """Root of every error sqlgate raises deliberately."""

    #: exit code the CLI uses when this error ends a command
    exit_code: int = 1

    def __init__(self, *args: object, cli: str | None = None) -> None:
        super().__init__(*args)
        #: the message for a person at the CLI, when the next step differs there (it names
        #: a command, where the message names a tool an agent calls)
        self.cli = cli

    def for_cli(self) -> str:
        """The message as the CLI prints it."""
        return str(self) if self.cli is None else self.cli


class InvalidArgument(SqlgateError):
    """A tool argument or option is malformed; the message names it and the fix."""

    exit_code = 2


class NotFound(SqlgateError):
    """The named object (table, view, snapshot, id) does not exist."""

    exit_code = 3


class PolicyDenied(SqlgateError):
    """The statement does something this tool's tier does not allow."""

    exit_code = 4


class MassRewrite(PolicyDenied):
    """An UPDATE, upsert or REPLACE changed more existing rows than allowed; rolled back."""


class NotUndoable(PolicyDenied):
    """write_query could not keep what undoes the change (a row whose PRIMARY KEY holds NULL,
    a virtual table, a change over the undo budget); rolled back, nothing was changed. The
    message names why and a tool that takes the change (destructive_query snapshots first)."""


class LimitExceeded(SqlgateError):
    """A budget (time, bytes, memory, length) ran out; nothing was changed."""

    exit_code = 5


class DatabaseBusy(LimitExceeded):
    """Another connection kept the write lock past the busy timeout; nothing was changed."""

    def __init__(self, *args: object, seconds: float = 0.0, cli: str | None = None) -> None:
        super().__init__(*args, cli=cli)
        self.seconds = seconds  # the busy timeout that ran out


class QueryTimeout(LimitExceeded):
    """The statement ran past its wall-clock budget or its caller went away."""


class SqlError(SqlgateError):
    """SQLite refused or failed the statement; the message carries its words."""

    exit_code = 6


class SnapshotError(SqlgateError):
    """A snapshot could not be taken, listed or restored."""

    exit_code = 7


class UndoConflict(SnapshotError):
    """An undo found rows changed after the call it would undo; nothing was undone."""


class UndoRefused(SnapshotError):
    """The call cannot be undone row by row: already undone, its undo data rotated out, a
    whole-file snapshot taken instead, a call that changed nothing or cannot be undone (a
    read, an undo); nothing was undone."""


class WrongDatabase(UndoRefused):
    """An undo id names a call of another database (its `@DATABASE_ID` is not this file's);
    nothing was undone."""


class StartupError(SqlgateError):
    """The database cannot be opened as configured (bad path, not SQLite, unwritable)."""

    exit_code = 8


class ChainBroken(SqlgateError):
    """The memory chain failed verification. Tools answer with the verdict as data
    (`{"ok": false, ...}`); this is for scripts, which get exit code 9."""

    exit_code = 9


class Unhealthy(SqlgateError):
    """`sqlgate doctor` found something broken; its report (stdout) has each problem and
    its fix. Exit code 10, so scripts tell it from a bug (1) or bad usage (2)."""

    exit_code = 10


#: every code a `sqlgate` command exits with, and what it means (Markdown); each error
#: class's `exit_code` is one of these, and tests/surfaces/cli/test_exit_codes.py ends a real
#: command with each
EXIT_CODES: dict[int, str] = {
    0: "success",
    1: "unexpected error: a bug in sqlgate (please report it, with the traceback)",
    2: "bad usage or argument (an unknown option, a malformed value, a malformed file), or a "
    "`snapshots restore` not confirmed (declined, or no `--yes` outside a terminal)",
    3: "not found: the database file, a snapshot, a call, a changeset or a claim",
    4: "refused by policy (re-adding a retired claim, a statement a tier does not allow, a "
    "change write_query cannot keep undo data for)",
    5: "a limit was hit, or another process kept the database's write lock past "
    "`--busy-timeout` (`the database is busy …`)",
    6: "SQLite refused or failed the statement",
    7: "snapshot or undo problem: an undo refused by later changes, a call id of another "
    "database, a call already undone, pruned, that changed nothing, or one that took a "
    "whole-file snapshot instead; a snapshot restore onto a database another process holds, "
    "or of another database's snapshot",
    8: "the database cannot be opened (missing folder, not a SQLite file, not writable, "
    "another application's database), or replication cannot start",
    9: "the memory chain is broken (`verify`, `restore`)",
    10: "`doctor` found something broken (each problem and its fix are in its report)",
    130: "stopped with Ctrl-C",
}
