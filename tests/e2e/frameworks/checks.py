"""After a session: the file is still the app's.

The header fields and the schema are as they were but for what the agent created, the
journal mode is the app's, and the project folder gained nothing but sqlgate's home
(`.sqlgate/`, which ignores itself in git) and, in WAL mode, the app's own -wal and -shm.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tests.e2e.frameworks.projects import run
from tests.e2e.frameworks.sqlite_file import (
    SQLGATE_APPLICATION_ID,
    header,
    journal,
    listing,
    schema,
)

HOME = ".sqlgate"


@dataclass(frozen=True)
class Baseline:
    """What the app's file and folder were before the session."""

    header: dict[str, int]
    schema: frozenset[tuple[str, str, str, str]]
    listing: frozenset[str]

    @classmethod
    def of(cls, db: Path) -> Baseline:
        return cls(header(db), frozenset(schema(db)), frozenset(listing(db.parent)))


def left_in_folder(db: Path, before: Baseline, journal_mode: str) -> set[str]:
    """The names the folder gained that neither sqlgate's home nor the app's WAL explain."""
    allowed = {HOME}
    if journal_mode == "wal":
        allowed |= {f"{db.name}-wal", f"{db.name}-shm"}
    return listing(db.parent) - before.listing - allowed


def assert_still_the_apps(
    db: Path,
    before: Baseline,
    journal_mode: str,
    created: frozenset[tuple[str, str, str, str]] = frozenset(),
) -> None:
    """The checks of the module docstring, but for sqlgate's home (see `assert_home`)."""
    assert left_in_folder(db, before, journal_mode) == set()
    after = header(db)
    assert after == before.header
    assert journal(after) == journal_mode
    assert after["application_id"] != SQLGATE_APPLICATION_ID
    objects = schema(db)
    assert objects - before.schema == set(created)
    assert before.schema - objects == set()
    assert not any(name.startswith("sqlgate") for _, name, _, _ in objects)


def assert_home(db: Path) -> None:
    """sqlgate's records are in the project's `.sqlgate/`, which git ignores (the project
    folder is a repository)."""
    home = db.parent / HOME
    assert home.is_dir(), f"no {HOME}/ beside {db.name}: {sorted(listing(db.parent))}"
    ignore = home / ".gitignore"
    assert ignore.is_file(), f"{HOME}/ has no .gitignore: {sorted(listing(home))}"
    assert "*" in ignore.read_text(encoding="utf-8").split()
    status = run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=db.parent)
    assert f" {HOME}/" not in status, f"git would commit sqlgate's records:\n{status}"
