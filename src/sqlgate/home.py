"""Where sqlgate keeps what it writes about a database: the home found like `.git`.

(Interim version on the records branch; the home finder of issue 33's first step replaces
the finder functions, `RecordFiles` stays.)
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["HOME_DIR", "Home", "RecordFiles", "db_key", "find_root", "home_of", "make_dir",
           "record_files", "user_home"]  # fmt: skip

HOME_DIR = ".sqlgate"
_KEY_CHARS = 60


@dataclass(frozen=True)
class Home:
    folder: Path
    root: Path | None

    def records_dir(self, db: Path) -> Path:
        return self.folder / "dbs" / db_key(db, self)


def user_home() -> Home:
    import platformdirs

    return Home(Path(platformdirs.user_data_dir("sqlgate", appauthor=False)), None)


def find_root(start: Path) -> Path | None:
    for folder in (start, *start.parents):
        if (folder / HOME_DIR).is_dir():
            return folder
    for folder in (start, *start.parents):
        if (folder / ".git").exists() and folder != Path.home():
            return folder
    return None


def home_of(db: Path) -> Home:
    real = db.resolve()
    mine = user_home()
    if real.is_relative_to(mine.folder.resolve()):
        return mine
    root = find_root(real.parent)
    return mine if root is None else Home(root / HOME_DIR, root)


def db_key(db: Path, home: Home) -> str:
    real = db.resolve()
    relative = real.relative_to(home.root.resolve()).as_posix() if home.root else real.as_posix()
    digest = hashlib.sha256(relative.encode("utf-8", "surrogateescape")).hexdigest()[:8]
    readable = relative.strip("/").replace("/", "__")[:_KEY_CHARS]
    return f"{readable}-{digest}"


def make_dir(path: Path, home: Home) -> Path:
    if not home.folder.exists():
        home.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(home.folder, 0o700)
        if home.root is not None:
            (home.folder / ".gitignore").write_text("*\n", encoding="utf-8")
    for folder in reversed((path, *path.parents)):
        if folder == home.folder or not folder.is_relative_to(home.folder):
            continue
        if not folder.exists():
            folder.mkdir(mode=0o700, exist_ok=True)
            os.chmod(folder, 0o700)
    return path


@dataclass(frozen=True)
class RecordFiles:
    """The files sqlgate keeps for one database, in its home's `dbs/<key>/`."""

    home: Home
    folder: Path

    @property
    def records(self) -> Path:
        return self.folder / "records.sqlite"

    @property
    def queue(self) -> Path:
        return self.folder / "audit-queue.sqlite"

    @property
    def witness(self) -> Path:
        return self.folder / "witness.json"

    @property
    def snapshots(self) -> Path:
        return self.folder / "snapshots"

    def make(self) -> RecordFiles:
        make_dir(self.folder, self.home)
        return self


def record_files(db: Path) -> RecordFiles:
    home = home_of(db)
    return RecordFiles(home, home.records_dir(db))
