"""Settings: every flag, its environment variable and its default, in one table.

| flag                  | env var                       | default                          |
|-----------------------|-------------------------------|----------------------------------|
| --db                  | SQLGATE_DB                    | <user data dir>/sqlgate/memory.db|
| --tools               | SQLGATE_TOOLS                 | sql,memory,claims                |
| --query-timeout       | SQLGATE_QUERY_TIMEOUT         | 10 (seconds)                     |
| --default-limit       | SQLGATE_DEFAULT_LIMIT         | 100 rows                         |
| --max-rows            | SQLGATE_MAX_ROWS              | 1000 rows                        |
| --max-result-bytes    | SQLGATE_MAX_RESULT_BYTES      | 32768 bytes                      |
| --max-cell-chars      | SQLGATE_MAX_CELL_CHARS        | 2000 characters                  |
| --max-update-rows     | SQLGATE_MAX_UPDATE_ROWS       | 500 rows                         |
| --snapshots-keep      | SQLGATE_SNAPSHOTS_KEEP        | 5 snapshots                      |
| --max-value-bytes     | SQLGATE_MAX_VALUE_BYTES       | 1000000 bytes                    |
| --heap-limit-mb       | SQLGATE_HEAP_LIMIT_MB         | 64 MiB                           |
| --busy-timeout        | SQLGATE_BUSY_TIMEOUT          | 5 (seconds)                      |
| --audit / --no-audit  | SQLGATE_AUDIT                 | on                               |
| --redact              | SQLGATE_REDACT                | default (or off)                 |
| --redact-patterns     | SQLGATE_REDACT_PATTERNS       | none (a file of extra patterns)  |
| --max-event-chars     | SQLGATE_MAX_EVENT_CHARS       | 100000 characters                |
| --confirm             | SQLGATE_CONFIRM               | auto (or always, never)          |
| --undo                | SQLGATE_UNDO                  | rows (or file)                   |
| --undo-max-mb         | SQLGATE_UNDO_MAX_MB           | 64 MiB                           |
| --write-undo-keep     | SQLGATE_WRITE_UNDO_KEEP       | 1000 calls (0: none kept)        |
| --write-undo-mb       | SQLGATE_WRITE_UNDO_MB         | 64 MiB                           |
| --replicate           | SQLGATE_REPLICATE             | none (file:///… or s3://…)       |
| --adopt-db            | SQLGATE_ADOPT_DB              | off (no effect: no longer needed)|
| --project-db          | SQLGATE_PROJECT_DB            | off (PROJECT/.sqlgate/agent.db)  |
| --hide-column (many)  | SQLGATE_HIDE_COLUMNS          | none (TABLE.COLUMN, comma-sep.)  |
| --protect-table (many)| SQLGATE_PROTECT_TABLES        | none (TABLE, comma-separated)    |
| --append-only-table   | SQLGATE_APPEND_ONLY_TABLES    | none (TABLE, comma-separated)    |
| --policy              | SQLGATE_POLICY                | none (a TOML file of table rules)|

The CLI builds its options from `FLAGS`; `load_settings` applies, in order of strength,
explicit values, then `SQLGATE_*` environment variables, then the defaults.

`--project-db` chooses the database by where the command runs: `PROJECT/.sqlgate/agent.db`,
PROJECT being `$CLAUDE_PROJECT_DIR` when it names a folder (Claude Code sets it for its hooks
and MCP servers), else the project found above the working folder (`home.find_root`: the
first folder holding `.sqlgate/`, else `.git`), else the working folder. It and `--db` both
name the database, so giving both at the same strength (both explicit, or both in the
environment) is a usage error; an explicit one beats the other's environment variable.

With neither (nor their variables), a command run inside a project uses the project's
database: walking up from the working folder to the first folder holding `.sqlgate/` (a
bare `.git` chooses no database), the one database that home guards (`home.guarded`); when
it guards several, the command is a usage error naming each with the `--db` that picks it;
when none (or no home), the per-user default. `Settings.db_source` says which way it went.
`serve` and `capture` leave the walk out (`find_home=False`): a server of a user-scope client
keeps its one database wherever the client starts it.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlgate.errors import InvalidArgument
from sqlgate.home import HOME_DIR, PROJECT_DB_NAME, Home, check_folder, find_root, guarded

if TYPE_CHECKING:
    from sqlgate.home import RecordFiles

__all__ = [
    "DB_SOURCES",
    "FLAGS",
    "PROJECT_DB",
    "TOOL_GROUPS",
    "Flag",
    "Settings",
    "creates_parent",
    "default_db_path",
    "load_settings",
    "project_folder",
    "quoted",
]

TOOL_GROUPS = ("sql", "memory", "claims")
CONFIRM_MODES = ("auto", "always", "never")
UNDO_MODES = ("rows", "file")


DEFAULT_DB_NAME = "memory.db"


def default_db_path() -> Path:
    """The database used when no --db is given: the platform's per-user data folder."""
    from sqlgate.home import user_data_folder

    return user_data_folder() / DEFAULT_DB_NAME


# A project's own database (`sqlgate install CLIENT --scope project`), relative to the project
PROJECT_DB = Path(HOME_DIR) / PROJECT_DB_NAME

# how Settings.db was chosen: --db, SQLGATE_DB, --project-db (or its variable), the project's
# home found by walking up, the per-user default
DB_SOURCES = ("option", "env", "project", "home", "default")


def project_folder(env: Mapping[str, str], cwd: Path) -> Path:
    """The project of `--project-db`: the project holding `$CLAUDE_PROJECT_DIR` when it names
    a folder (taken from `cwd` when relative; Claude Code sets it to the folder it started
    in, which may be a subfolder), else the project holding `cwd` (`home.find_root`); either
    folder itself when no project holds it."""
    start = cwd
    given = env.get("CLAUDE_PROJECT_DIR", "")
    if given.strip():
        folder = Path(given).expanduser()
        folder = folder if folder.is_absolute() else cwd / folder
        if folder.is_dir():
            start = folder
    return find_root(start) or start


def home_db(cwd: Path) -> Path | None:
    """The database of the project's home above `cwd` when it guards exactly one; None when
    there is no home or it guards none. Raises InvalidArgument when it guards several."""
    root = find_root(cwd, git=False)
    if root is None:
        return None
    folder = root / HOME_DIR
    found = guarded(Home(folder, root))
    if len(found) <= 1:
        return found[0] if found else None
    import shlex  # only this message needs it

    choices = ", ".join(f"--db {shlex.quote(str(db))}" for db in found)
    raise InvalidArgument(
        f"the home {folder} holds the records of more than one database; name the one to use: "
        f"{choices} (or set SQLGATE_DB)"
    )


def creates_parent(db: Path) -> bool:
    """Whether opening `db` may create its missing folder: only sqlgate's own folders, the
    per-user data folder and a project's `.sqlgate/` (absent in a fresh clone). Any other
    missing folder is more likely a mistyped --db, and is reported instead."""
    if db.parent.name == PROJECT_DB.parent.name:
        return True
    return db.name == DEFAULT_DB_NAME and db == default_db_path()  # its name first: cheap


@dataclass(frozen=True)
class Settings:
    """Everything that shapes one server or CLI run. Immutable once loaded."""

    db: Path
    tools: tuple[str, ...] = TOOL_GROUPS
    query_timeout: float = 10.0
    default_limit: int = 100
    max_rows: int = 1000
    max_result_bytes: int = 32768
    max_cell_chars: int = 2000
    max_update_rows: int = 500
    snapshots_keep: int = 5
    max_value_bytes: int = 1_000_000
    heap_limit_mb: int = 64
    busy_timeout: float = 5.0
    audit: bool = True
    redact: str = "default"
    redact_patterns: Path | None = None
    max_event_chars: int = 100_000
    confirm: str = "auto"
    undo: str = "rows"
    undo_max_mb: int = 64
    write_undo_keep: int = 1000
    write_undo_mb: int = 64
    replicate: str | None = None  # a replica URL; checked by surfaces/replication/target.py
    adopt_db: bool = False  # 0.1.0's consent to share an app's file: accepted, no effect
    project_db: bool = False  # db was chosen per project (--project-db); db holds the path
    db_source: str = "option"  # how db was chosen: one of DB_SOURCES (by hand: named)
    # the user's table rules, names as given (checked by engine.rules.table_rules when opened)
    hide_column: tuple[str, ...] = ()
    protect_table: tuple[str, ...] = ()
    append_only_table: tuple[str, ...] = ()
    policy: Path | None = None  # a TOML file of the same rules, and notes for the agent

    def __post_init__(self) -> None:
        if self.db_source not in DB_SOURCES:
            raise InvalidArgument(
                f"db_source={self.db_source!r} is invalid: must be one of {', '.join(DB_SOURCES)}"
            )
        if self.undo not in UNDO_MODES:
            raise InvalidArgument(f"undo={self.undo!r} is invalid: must be rows or file (--undo)")
        if not isinstance(self.undo_max_mb, int) or self.undo_max_mb < 1:
            raise InvalidArgument(
                f"undo_max_mb={self.undo_max_mb!r} is invalid: must be 1 or more (--undo-max-mb)"
            )
        keep = self.write_undo_keep
        if not isinstance(keep, int) or isinstance(keep, bool) or keep < 0:
            raise InvalidArgument(
                f"write_undo_keep={keep!r} is invalid: must be 0 or more (--write-undo-keep)"
            )
        size = self.write_undo_mb
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            raise InvalidArgument(
                f"write_undo_mb={size!r} is invalid: must be 1 or more (--write-undo-mb)"
            )

    @functools.cached_property
    def records(self) -> RecordFiles:
        """sqlgate's files for this database, in its home (`sqlgate.home`): found once."""
        from sqlgate.home import record_files

        return record_files(self.db)

    @property
    def snapshot_dir(self) -> Path:
        """Where snapshots of this database live: `snapshots/` of its records folder."""
        return self.records.snapshots


@dataclass(frozen=True)
class Flag:
    """One setting as the CLI and the environment see it."""

    name: str
    help: str
    parse: Callable[[str], Any]
    metavar: str = ""  # what the option takes, as `--help` names it (SECONDS, PATH, ...)
    # given more than once on the command line (each value adds); the environment variable,
    # named `env` when not after the flag, holds the values comma-separated
    repeatable: bool = False
    env: str = ""

    @property
    def option(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def env_var(self) -> str:
        return self.env or "SQLGATE_" + self.name.upper()


# Each parser's ValueError says what the flag takes, in words that follow its name
# (`--max-rows must be a whole number, 1 or more`), never Python's own ("invalid literal").


def _whole_number(text: str, least: int) -> int:
    try:
        value = int(text)
    except ValueError:
        value = least - 1
    if value < least:
        raise ValueError(f"must be a whole number, {least} or more")
    return value


def _positive_int(text: str) -> int:
    return _whole_number(text, 1)


def _non_negative_int(text: str) -> int:
    return _whole_number(text, 0)


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0 or value == float("inf"):
        raise ValueError("must be a number of seconds, more than 0")
    return value


def _bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError("must be on or off (or true/false, yes/no, 1/0)")


def _tools(text: str) -> tuple[str, ...]:
    chosen = tuple(dict.fromkeys(part.strip().lower() for part in text.split(",") if part.strip()))
    unknown = [name for name in chosen if name not in TOOL_GROUPS]
    if unknown or not chosen:
        raise ValueError(f"must name groups of {','.join(TOOL_GROUPS)}, comma-separated")
    return chosen


def _redact_mode(text: str) -> str:
    mode = text.strip().lower()
    if mode not in ("default", "off"):
        raise ValueError("must be default or off")
    return mode


def _confirm_mode(text: str) -> str:
    mode = text.strip().lower()
    if mode not in CONFIRM_MODES:
        raise ValueError("must be auto, always or never")
    return mode


def _undo_mode(text: str) -> str:
    mode = text.strip().lower()
    if mode not in UNDO_MODES:
        raise ValueError("must be rows or file")
    return mode


def _replica_url(text: str) -> str:
    """The URL as given; its full check (scheme, bucket, endpoint) runs when serving starts."""
    if not text.strip():
        raise ValueError("must not be empty: give file:///folder or s3://bucket/prefix")
    return text.strip()


def _path(text: str) -> Path:
    if not text.strip():
        raise ValueError("must be a file path, not empty")
    return Path(text).expanduser()


def _names(text: str) -> tuple[str, ...]:
    """Comma-separated names (their form is checked when the database opens)."""
    names = tuple(part.strip() for part in text.split(",") if part.strip())
    if not names:
        raise ValueError("must name at least one, comma-separated")
    return names


FLAGS: tuple[Flag, ...] = (
    Flag("db", "SQLite database file (created if missing)", _path, "PATH"),
    Flag("tools", "tool groups to announce: sql,memory,claims", _tools, "GROUPS"),
    Flag("query_timeout", "seconds a statement may run", _positive_float, "SECONDS"),
    Flag("default_limit", "rows read_query returns when no limit is given", _positive_int, "ROWS"),
    Flag("max_rows", "most rows any result may hold", _positive_int, "ROWS"),
    Flag("max_result_bytes", "most bytes of CSV a result may hold", _positive_int, "BYTES"),
    Flag("max_cell_chars", "characters shown of one cell before it is cut", _positive_int, "CHARS"),
    Flag(
        "max_update_rows",
        "existing rows write_query may change in one call",
        _non_negative_int,
        "ROWS",
    ),
    Flag("snapshots_keep", "newest snapshots kept per database", _positive_int, "N"),
    Flag("max_value_bytes", "largest string or blob SQLite may build", _positive_int, "BYTES"),
    Flag("heap_limit_mb", "SQLite heap limit for the whole process, MiB", _positive_int, "MIB"),
    Flag("busy_timeout", "seconds to wait for another writer's lock", _positive_float, "SECONDS"),
    Flag("audit", "record every call in query_log", _bool),
    Flag(
        "redact",
        "secret redaction of memory content: default or off",
        _redact_mode,
        "[default|off]",
    ),
    Flag(
        "redact_patterns", "file of extra redaction patterns (NAME REGEX per line)", _path, "PATH"
    ),
    Flag("max_event_chars", "longest memory event or checkpoint summary", _positive_int, "CHARS"),
    Flag(
        "confirm",
        "ask the user before destructive_query: auto, always or never",
        _confirm_mode,
        "[auto|always|never]",
    ),
    Flag(
        "undo",
        "how destructive_query keeps its undo: rows (a changeset for DELETE/UPDATE/INSERT) "
        "or file (a whole-file snapshot every time)",
        _undo_mode,
        "[rows|file]",
    ),
    Flag(
        "undo_max_mb",
        "largest row-level undo changeset, MiB; a bigger change takes a whole-file snapshot",
        _positive_int,
        "MIB",
    ),
    Flag(
        "write_undo_keep",
        "write_query calls whose undo data is kept (oldest pruned first); 0 keeps none",
        _non_negative_int,
        "CALLS",
    ),
    Flag(
        "write_undo_mb",
        "MiB of write_query undo data kept in all (oldest pruned first); a bigger call keeps none",
        _positive_int,
        "MIB",
    ),
    Flag(
        "replicate",
        "replicate the database and sqlgate's records of it with Litestream to file:///folder "
        "or s3://bucket/prefix (S3-compatible: ?endpoint=http://host:port); Litestream switches "
        "the database to WAL and adds two tables to it; needs sqlgate[replicate]",
        _replica_url,
        "URL",
    ),
    Flag(
        "adopt_db",
        "no longer needed, accepted for this release with no effect: sqlgate keeps its tables "
        "in .sqlgate/ and leaves the database as it is",
        _bool,
    ),
    Flag(
        "project_db",
        "use the project's own database, PROJECT/.sqlgate/agent.db (PROJECT: "
        "$CLAUDE_PROJECT_DIR when it names a folder, else the first folder up from the "
        "working folder holding .sqlgate/, else .git, else the working folder); not with --db",
        _bool,
    ),
    Flag(
        "hide_column",
        "a column the agent never sees (it reads as NULL) nor writes; repeat for more",
        _names,
        "TABLE.COLUMN",
        repeatable=True,
        env="SQLGATE_HIDE_COLUMNS",
    ),
    Flag(
        "protect_table",
        "a table the agent may read but never change, in any tool; repeat for more",
        _names,
        "TABLE",
        repeatable=True,
        env="SQLGATE_PROTECT_TABLES",
    ),
    Flag(
        "append_only_table",
        "a table the agent may only INSERT into, in any tool; repeat for more",
        _names,
        "TABLE",
        repeatable=True,
        env="SQLGATE_APPEND_ONLY_TABLES",
    ),
    Flag(
        "policy",
        "a TOML file of table rules (hidden columns, protected and append-only tables) and "
        "notes shown to the agent",
        _path,
        "PATH",
    ),
)

_FLAG_BY_NAME = {flag.name: flag for flag in FLAGS}


def quoted(text: str) -> str:
    """A given value as a message shows it: `"ten"` (its own quotes left as they are)."""
    return f'"{text}"'


def load_settings(
    explicit: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    *,
    find_home: bool = True,
) -> Settings:
    """Build Settings from explicit values (already typed), then env vars, then defaults.

    Raises InvalidArgument naming the flag and its environment variable when a value is bad,
    when --db and --project-db are both given, and when the project's home guards several
    databases and none is named; HomeRefused when --project-db's `.sqlgate` is a file or a
    symbolic link. `cwd` is the working folder (where the project is looked
    for); the process's own when None. `find_home=False`: no database is looked for in the
    project's home (the per-user default stays the default).
    """
    environ = os.environ if env is None else env
    values: dict[str, Any] = {}
    strength: dict[str, str] = {}  # "explicit" or "env", for the settings that were given
    for flag in FLAGS:
        given = (explicit or {}).get(flag.name)
        if given is not None:
            values[flag.name] = given
            strength[flag.name] = "explicit"
            continue
        raw = environ.get(flag.env_var)
        if raw is None:
            continue
        try:
            values[flag.name] = flag.parse(raw)
            strength[flag.name] = "env"
        except ValueError as exc:
            raise InvalidArgument(
                f"{flag.env_var} ({flag.option}) {exc} (got {quoted(raw)}): set it to such a "
                f"value, or unset it"
            ) from None
    unknown = set(explicit or {}) - set(_FLAG_BY_NAME)
    if unknown:
        raise InvalidArgument(f"unknown setting(s): {', '.join(sorted(unknown))}")
    _choose_db(values, strength)
    db, source = _database(values, strength, environ, cwd, find_home)
    settings = Settings(db=db, db_source=source)
    known = {f.name for f in fields(Settings)}
    return replace(settings, **{k: v for k, v in values.items() if k in known})


def _working_folder(cwd: Path | None) -> Path | None:
    if cwd is not None:
        return cwd
    try:
        return Path.cwd()
    except OSError:  # the working folder was deleted: there is no project to find
        return None


def _database(
    values: dict[str, Any],
    strength: dict[str, str],
    environ: Mapping[str, str],
    cwd: Path | None,
    find_home: bool,
) -> tuple[Path, str]:
    """The database and how it was chosen (one of DB_SOURCES); takes `db` out of `values`."""
    given = values.pop("db", None)
    if values.get("project_db"):
        here = _working_folder(cwd)
        if here is None:
            raise InvalidArgument(
                "--project-db: the working folder no longer exists; cd into the project"
            )
        db = project_folder(environ, here) / PROJECT_DB
        check_folder(db.parent)  # a `.sqlgate` file or link: refused, as everywhere
        return db, "project"
    if given is not None:
        return Path(given), "option" if strength["db"] == "explicit" else "env"
    here = _working_folder(cwd) if find_home else None
    found = None if here is None else home_db(here)
    return (found, "home") if found is not None else (default_db_path(), "default")


def _choose_db(values: dict[str, Any], strength: dict[str, str]) -> None:
    """--db or --project-db: the stronger one wins; both at the same strength is an error."""
    if not values.get("project_db") or "db" not in values:
        return
    if strength["db"] == strength["project_db"]:
        if strength["db"] == "explicit":
            raise InvalidArgument(
                "--db and --project-db both choose the database: give one of them (--project-db "
                f"is PROJECT/{PROJECT_DB.as_posix()}, PROJECT being $CLAUDE_PROJECT_DIR or the "
                "working folder)"
            )
        raise InvalidArgument(
            "SQLGATE_DB and SQLGATE_PROJECT_DB both choose the database: give one (unset the "
            "other, or pass --db or --project-db, which beats them)"
        )
    if strength["db"] == "explicit":
        values["project_db"] = False
    else:
        del values["db"]
