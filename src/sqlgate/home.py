"""sqlgate's home: the folder that keeps its records of a database, found like `.git`.

A database inside a project has its records in the project's home, `PROJECT/.sqlgate/`; any
other database has them in the per-user home, this platform's per-user data folder
(`platformdirs.user_data_dir("sqlgate")`, which also holds the default `memory.db`).

Finding the project (`find_root`) walks up from a folder, the folder itself first:

- the project is the first folder holding a `.sqlgate/` folder; when none does, the first
  holding `.git` (a folder, or a file as in a git worktree or a submodule);
- the walk stops at the filesystem root, and at your home folder ($HOME): the home folder
  is never a project (its `.git` is a dotfiles repository, and a `~/.sqlgate/` there would
  otherwise capture every folder below it), and the folders above it are not looked at;
  a walk that starts outside the home folder goes up to the filesystem root;
- only a real folder named `.sqlgate` is a home: a file, or a symbolic link (even to a
  folder: a cloned repository could point it anywhere), is not, and the walk goes on; if
  that folder is still the project (it holds `.git`), sqlgate refuses to create anything in
  its `.sqlgate` (`make_dir`), finds no database there (`guarded`), and `--project-db`
  stops there (`check_folder`);
- a folder that cannot be read is passed over as if it held neither name.

A database's home (`home_of`) is found from the database's real path (symbolic links
followed) and its folder, never from the working folder, so every command run anywhere
uses the same records. Inside a home, each database has its own folder, `dbs/<key>/`:

    PROJECT/.sqlgate/            0700, with a `.gitignore` of `*` (never committed)
      agent.db                   the project's own database (--project-db)
      dbs/<key>/                 0700, one per database sqlgate guards
        guarded.json             {"format": 1, "path": "<path relative to PROJECT>"}

`<key>` is the database's path relative to the project (POSIX, `/` written `__`, other
characters than letters, digits, `.`, `_` and `-` written `_`, its last 60 characters, a
leading `-` written `_`),
then `-` and the first 8 hex digits of the SHA-256 of the whole relative path: readable and
distinct (`app__db.sqlite3-1b4e28ba`). In the per-user home the same is made from the
database's absolute path, and guarded.json holds that path.

`guarded` lists the databases a home keeps records for. A `guarded.json` that cannot be
read, is not that JSON, names a path outside the project, names a file whose key is not its
folder's name (a copied or stale folder), or a file that no longer exists, is skipped
without an error, as is an `agent.db` that is a link to a file outside the project: the
listing only offers databases it can stand behind.

Pure paths and files: no SQLite here, and platformdirs is imported only when a function
needs it (a command's start-up pays for nothing).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from sqlgate.errors import StartupError

__all__ = [
    "DBS_DIR",
    "GUARDED_FILE",
    "HOME_DIR",
    "PROJECT_DB_NAME",
    "Home",
    "HomeRefused",
    "RecordFiles",
    "check_folder",
    "db_key",
    "find_root",
    "guarded",
    "home_of",
    "make_dir",
    "note_guarded",
    "record_files",
    "remember_records",
    "remembered_records",
    "user_data_folder",
    "user_home",
]

HOME_DIR = ".sqlgate"
DBS_DIR = "dbs"
GUARDED_FILE = "guarded.json"
GUARDED_FORMAT = 1
PROJECT_DB_NAME = "agent.db"  # the project's own database, PROJECT/.sqlgate/agent.db
GITIGNORE = "*\n"  # ignores the folder, its own .gitignore included
KEY_TEXT_CHARS = 60
KEY_HASH_CHARS = 8
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


class HomeRefused(StartupError):
    """sqlgate will not create a folder where it was asked: outside its home, or in a
    `.sqlgate` that is a file or a symbolic link."""


@dataclass(frozen=True)
class Home:
    """Where sqlgate keeps the records of the databases of one project, or of this user."""

    folder: Path  # PROJECT/.sqlgate, or the per-user data folder
    root: Path | None  # the project folder holding `folder`; None for the per-user home

    def records_dir(self, db: Path) -> Path:
        """The folder of `db`'s records (not created: see `make_dir`)."""
        return self.folder / DBS_DIR / db_key(db, self)


def user_data_folder() -> Path:
    """This platform's per-user data folder for sqlgate (platformdirs' `user_data_dir`).

    On Linux and the BSDs that is the XDG Base Directory rule, `$XDG_DATA_HOME/sqlgate`, else
    `~/.local/share/sqlgate` (as platformdirs computes it: tests/test_home.py compares the
    two), written out here because importing platformdirs costs several milliseconds of
    every command's start-up; macOS and Windows ask platformdirs."""
    import sys

    if sys.platform.startswith(("linux", "freebsd", "openbsd", "netbsd")):
        base = os.environ.get("XDG_DATA_HOME", "").strip()
        return Path(base or os.path.expanduser("~/.local/share")) / "sqlgate"
    import platformdirs

    return Path(platformdirs.user_data_dir("sqlgate", appauthor=False))


def user_home() -> Home:
    """The home of the databases outside any project."""
    return Home(user_data_folder(), None)


def _real(path: Path) -> Path:
    """`path` absolute with its symbolic links followed (as far as they can be)."""
    try:
        return Path(path).expanduser().resolve()
    except (OSError, RuntimeError, ValueError):  # a loop of links, a NUL in the name
        return Path(os.path.abspath(path))


def _kind(path: Path, follow: bool = False) -> int:
    """The file type bits of `path` (0 when it cannot be seen)."""
    try:
        return stat.S_IFMT((os.stat if follow else os.lstat)(path).st_mode)
    except (OSError, ValueError):
        return 0


def _is_real_dir(path: Path) -> bool:
    return _kind(path) == stat.S_IFDIR  # lstat: a symbolic link is not


def _is_file(path: Path) -> bool:
    return _kind(path, follow=True) == stat.S_IFREG


def _walk(start: Path) -> list[Path]:
    """The folders the walk looks at: `start` and its parents, up to the filesystem root,
    or up to (not including) the home folder when the walk passes it."""
    try:
        stop: Path | None = _real(Path.home())
    except (RuntimeError, KeyError):  # no home folder known
        stop = None
    chain = []
    for folder in (here := _real(start), *here.parents):
        if folder == stop:
            break
        chain.append(folder)
    return chain


def find_root(start: Path, *, git: bool = True) -> Path | None:
    """The project holding `start`: the first folder up from it (itself included) holding
    a `.sqlgate/` folder, else (when `git`) the first holding `.git`; None when there is
    none (see the module's rules)."""
    chain = _walk(start)
    for folder in chain:
        if _is_real_dir(folder / HOME_DIR):
            return folder
    if git:
        for folder in chain:
            if _kind(folder / ".git", follow=True) in (stat.S_IFDIR, stat.S_IFREG):
                return folder
    return None


def home_of(db: Path) -> Home:
    """The home that keeps `db`'s records: the per-user home for a file inside the per-user
    data folder, the `.sqlgate/` folder a file lies in (a project's own database), else the
    project found from the file's real folder, else the per-user home."""
    real = _real(db)
    data = _real(user_data_folder())
    if real == data or data in real.parents:
        return user_home()
    if real.parent.name == HOME_DIR:  # a project's own database, PROJECT/.sqlgate/agent.db
        return Home(real.parent, real.parent.parent)
    root = find_root(real.parent)
    return user_home() if root is None else Home(root / HOME_DIR, root)


def _relative_text(db: Path, home: Home) -> str:
    """`db`'s real path as its records know it: relative to the project (POSIX), or
    absolute for the per-user home and for a file outside the project."""
    real = _real(db)
    if home.root is not None:
        try:
            return real.relative_to(_real(home.root)).as_posix()
        except ValueError:
            pass
    return real.as_posix()


def db_key(db: Path, home: Home) -> str:
    """The name of `db`'s records folder in `home` (see the module's rules)."""
    import hashlib  # json, hashlib, tempfile: imported by what needs them (start-up time)

    text = _relative_text(db, home)
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    readable = _UNSAFE.sub("_", text.lstrip("/").replace("/", "__"))[-KEY_TEXT_CHARS:]
    if readable.startswith("-"):  # a folder name that reads as an option
        readable = "_" + readable[1:]
    return f"{readable or 'db'}-{digest[:KEY_HASH_CHARS]}"


def _made(folder: Path) -> bool:
    """Create `folder` with mode 0700 whatever the umask; False if it was already there."""
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        return False
    os.chmod(folder, 0o700)  # the umask may have removed bits, never added them
    return True


def check_folder(folder: Path) -> None:
    """Raise HomeRefused when `folder` is there but is no real folder (a file, a symbolic
    link): nothing of sqlgate's goes through it. A missing folder passes."""
    if _kind(folder) != 0:
        _refuse_unless_real_dir(folder)


def _refuse_unless_real_dir(folder: Path) -> None:
    if not _is_real_dir(folder):
        what = "a symbolic link" if _kind(folder) == stat.S_IFLNK else "not a folder"
        raise HomeRefused(
            f"{folder} is {what}: sqlgate keeps its records only in a real folder; move it "
            f"away and run the command again"
        )


def make_dir(path: Path, home: Home) -> Path:
    """Create `path` and its missing parents inside `home.folder`, each 0700; the home
    folder, when this creates it, gets a `.gitignore` of `*`. Raises HomeRefused for a path
    outside the home, or a home or folder on the way that is a file or a symbolic link."""
    folder = Path(os.path.abspath(home.folder))
    target = Path(os.path.abspath(path))
    if target != folder and folder not in target.parents:
        raise HomeRefused(
            f"{target} is outside sqlgate's home {folder}: sqlgate creates folders only there"
        )
    if _kind(folder) == 0:
        folder.parent.mkdir(parents=True, exist_ok=True)  # the project, or ~/.local/share
        if _made(folder):
            with open(folder / ".gitignore", "x", encoding="utf-8") as ignore:
                ignore.write(GITIGNORE)
    _refuse_unless_real_dir(folder)
    for step in reversed([target, *target.parents][: len(target.parts) - len(folder.parts)]):
        _made(step)
        _refuse_unless_real_dir(step)
    return target


def _guarded_db(home: Home, folder: Path) -> Path | None:
    """The database `folder/guarded.json` names, or None when it names none that holds."""
    import json

    try:
        data = json.loads((folder / GUARDED_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):  # missing, unreadable, not UTF-8, not JSON
        return None
    if not isinstance(data, dict) or type(data.get("format")) is not int:
        return None
    text = data.get("path")
    if data["format"] != GUARDED_FORMAT or not isinstance(text, str) or not text:
        return None
    if home.root is None:
        db = Path(text)
        if not db.is_absolute():
            return None
    else:
        relative = PurePosixPath(text)
        if relative.is_absolute() or ".." in relative.parts:
            return None
        db = home.root / relative
    if db_key(db, home) != folder.name or not _is_file(db):
        return None
    return db


def guarded(home: Home) -> list[Path]:
    """The databases `home` keeps records for, sorted, each once: those its `guarded.json`
    files name (the ones that hold, see the module's rules) and the project's `agent.db`."""
    if not _is_real_dir(home.folder):
        return []
    found: dict[Path, Path] = {}  # real path: the path shown
    try:
        folders = sorted(Path(entry.path) for entry in os.scandir(home.folder / DBS_DIR))
    except OSError:
        folders = []
    candidates = [_guarded_db(home, folder) for folder in folders]
    if home.root is not None:
        agent = home.folder / PROJECT_DB_NAME
        inside = not PurePosixPath(_relative_text(agent, home)).is_absolute()
        candidates.append(agent if inside else None)  # a link out of the project: not offered
    for db in candidates:
        if db is not None and _is_file(db):
            found.setdefault(_real(db), db)
    return sorted(found.values())


def note_guarded(db: Path, home: Home) -> Path:
    """Record in `home` that it keeps `db`'s records (`dbs/<key>/guarded.json`, written
    whole or not at all, 0600); returns the records folder."""
    import json
    import tempfile

    text = _relative_text(db, home)
    if home.root is not None and PurePosixPath(text).is_absolute():
        raise HomeRefused(
            f"{_real(db)} is outside the project {home.root}: its records belong to the home "
            f"found from its own folder"
        )
    records = make_dir(home.records_dir(db), home)
    fd, temp = tempfile.mkstemp(dir=records, prefix=".guarded-", suffix=".tmp")  # 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump({"format": GUARDED_FORMAT, "path": text}, out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, records / GUARDED_FILE)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return records


@dataclass(frozen=True)
class RecordFiles:
    """The files sqlgate keeps for one database, in its home's `dbs/<key>/` folder."""

    home: Home
    folder: Path

    @property
    def records(self) -> Path:
        """sqlgate's tables (audit log, undo data, memory, claims, members)."""
        return self.folder / "records.sqlite"

    @property
    def queue(self) -> Path:
        """Audit rows that could not be written at once."""
        return self.folder / "audit-queue.sqlite"

    @property
    def witness(self) -> Path:
        """The memory chain's witness."""
        return self.folder / "witness.json"

    @property
    def snapshots(self) -> Path:
        """Whole-file snapshots of the database."""
        return self.folder / "snapshots"

    def make(self, db: Path) -> RecordFiles:
        """Create the folder (and the home, with its `.gitignore`) and note which database
        it keeps the records of."""
        note_guarded(db, self.home)
        return self


def record_files(db: Path) -> RecordFiles:
    """Where sqlgate keeps its files for the database at `db` (not created)."""
    home = home_of(db)
    return RecordFiles(home, home.records_dir(db))


KNOWN_FILE = "known-records.json"  # in the per-user data folder: which records each file had


def _known_path() -> Path:
    return user_data_folder() / KNOWN_FILE


def _known() -> dict[str, dict[str, str]]:
    import json

    try:
        data = json.loads(_known_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def remembered_records(db: Path) -> dict[str, str] | None:
    """Where the records of the file `db` were kept before, and since when
    (`{"records": FOLDER, "since": TIME}`), as this user's sqlgate remembers it; None when it
    never kept any (or the note is unreadable)."""
    entry = _known().get(str(_real(db)))
    if not isinstance(entry, dict) or not isinstance(entry.get("records"), str):
        return None
    return {str(k): str(v) for k, v in entry.items()}


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock on `path` (created 0600) while the block runs, where the platform
    has one (POSIX `flock`); elsewhere the block runs unlocked."""
    try:
        import fcntl
    except ImportError:  # Windows: a lost update only costs a note of history
        yield
        return
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def remember_records(db: Path, folder: Path, since: str) -> None:
    """Note (per user, written whole or not at all) that the file `db` keeps its records in
    `folder` since `since`: a records folder deleted later is then told apart from a new
    database (`verify` says the history is gone). Best effort: a note that cannot be
    written changes nothing else."""
    import json
    import tempfile

    target = _known_path()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with _locked(target.with_name(KNOWN_FILE + ".lock")):  # servers starting together
            known = {path: entry for path, entry in _known().items() if os.path.exists(path)}
            known[str(_real(db))] = {"records": str(folder), "since": since}
            fd, temp = tempfile.mkstemp(dir=target.parent, prefix=".known-", suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(known, out, sort_keys=True)
            os.replace(temp, target)
    except OSError:
        return
