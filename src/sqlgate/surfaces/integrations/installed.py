"""Where sqlgate is installed: every client config entry that runs `sqlgate serve`, the
database it names, and the Claude Code capture hooks beside it. Reading only.

An entry is sqlgate's when its command is a `sqlgate` program (any folder, `.exe` on
Windows) whose first argument is `serve`, or a Python run as `-m sqlgate serve`. The
database an entry names, as `serve` would pick it in the project folder:

    --db PATH         PATH (`${workspaceFolder}` and `~` expanded, relative to the project)
    --project-db      PROJECT/.sqlgate/agent.db (PROJECT: $CLAUDE_PROJECT_DIR when it names
                      a folder, else the project above the working folder, else the
                      working folder: `config.project_folder`)
    env SQLGATE_DB / SQLGATE_PROJECT_DB in the entry, then in this environment
    neither           the per-user database (`platformdirs`)
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlgate.config import PROJECT_DB, default_db_path, project_folder
from sqlgate.errors import InvalidArgument
from sqlgate.surfaces.integrations.capture_hooks import CAPTURE_EVENTS, is_capture_command
from sqlgate.surfaces.integrations.client_paths import CLIENTS, Client, Where, settings_path
from sqlgate.surfaces.integrations.config_files import load_json, read_config, section
from sqlgate.surfaces.integrations.scopes import project_keys
from sqlgate.surfaces.integrations.toml_config import toml_servers

__all__ = [
    "DbChoice",
    "HookLine",
    "Installed",
    "Unreadable",
    "capture_hooks",
    "db_of_words",
    "find_installed",
    "project_root",
    "serve_args",
]

_TRUE = {"1", "true", "yes", "on"}


@dataclass(frozen=True)
class DbChoice:
    """The database a command names and how: `--db`, `--project-db`, `env` or `default`."""

    path: Path
    how: str

    @property
    def per_project(self) -> bool:
        return self.how == "--project-db"


@dataclass(frozen=True)
class Installed:
    """One sqlgate server entry in a client's config file."""

    client: str
    scope: str | None  # user, project, local (Claude Code), or None (one file)
    path: Path
    name: str
    command: str
    args: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)

    @property
    def serve(self) -> list[str]:
        """The arguments after `serve`."""
        return serve_args(self.command, list(self.args)) or []

    def option(self, name: str) -> str | None:
        return option_value(self.serve, name)

    def flag(self, name: str, env_var: str, environment: Mapping[str, str]) -> bool:
        if name in self.serve:
            return True
        value = self.env.get(env_var, environment.get(env_var, ""))
        return value.strip().lower() in _TRUE

    def label(self) -> str:
        scope = f" {self.scope}" if self.scope else ""
        return f'{self.client}{scope} "{self.name}"'


@dataclass(frozen=True)
class Unreadable:
    """A config file that could not be read or parsed; the message says what to fix."""

    client: str
    scope: str | None
    path: Path
    message: str


@dataclass(frozen=True)
class HookLine:
    """One capture hook: the event, the command line, and the words of it after `capture`."""

    event: str
    command: str
    words: tuple[str, ...]


def _program(word: str) -> str:
    name = re.split(r"[\\/]", word)[-1].lower()
    return name[:-4] if name.endswith(".exe") else name


def serve_args(command: str, args: Sequence[str]) -> list[str] | None:
    """The arguments after `serve` when `command args` runs `sqlgate serve`, else None."""
    if _program(command) == "sqlgate":
        return list(args[1:]) if args[:1] == ["serve"] else None
    if _program(command).startswith("python") and list(args[:3]) == ["-m", "sqlgate", "serve"]:
        return list(args[3:])
    return None


def option_value(words: Sequence[str], name: str) -> str | None:
    """The value of `--name VALUE` or `--name=VALUE` (the last one given), else None."""
    found = None
    for index, word in enumerate(words):
        if word == name and index + 1 < len(words):
            found = words[index + 1]
        elif word.startswith(name + "="):
            found = word[len(name) + 1 :]
    return found


def without_option(words: Sequence[Any], name: str, *, flags: tuple[str, ...] = ()) -> list[Any]:
    """`words` without `name VALUE`, `name=VALUE` and the bare `flags` (words that are not
    text are kept as they are)."""
    kept: list[Any] = []
    skip = False
    for word in words:
        if skip:
            skip = False
        elif word == name:
            skip = True
        elif not (isinstance(word, str) and (word.startswith(name + "=") or word in flags)):
            kept.append(word)
    return kept


def project_root(where: Where) -> Path:
    """The project `--project-db` names: $CLAUDE_PROJECT_DIR when it names a folder, else
    the working folder."""
    return project_folder(where.env, where.cwd)


_PROJECT_VARIABLE = re.compile(
    r"\$\{workspaceFolder\}|\$\{CLAUDE_PROJECT_DIR(?::-[^}]*)?\}|\$CLAUDE_PROJECT_DIR\b"
)


def expand(text: str, where: Where) -> Path:
    """A database path as a client or a hook's shell turns it into one, in this project."""
    root = str(project_root(where))
    text = _PROJECT_VARIABLE.sub(lambda _: root.replace("\\", "\\\\"), text)
    if text == "~" or text.startswith(("~/", "~\\")):
        text = str(where.home) + text[1:]
    path = Path(text)
    return path if path.is_absolute() else where.cwd / path


def db_of_words(words: Sequence[str], env: Mapping[str, str], where: Where) -> DbChoice:
    """The database `serve WORDS` or `capture WORDS` opens, with `env` its environment."""
    given = option_value(words, "--db")
    if given is not None and given.strip():
        return DbChoice(expand(given, where), "--db")
    if "--project-db" in words:
        return DbChoice(project_root(where) / PROJECT_DB, "--project-db")
    if env.get("SQLGATE_DB", "").strip():
        return DbChoice(expand(env["SQLGATE_DB"], where), "env")
    if env.get("SQLGATE_PROJECT_DB", "").strip().lower() in _TRUE:
        return DbChoice(project_root(where) / PROJECT_DB, "--project-db")
    return DbChoice(default_db_path(), "default")


_Servers = tuple[Path, str | None, dict[str, Any]]  # the file, the scope, its servers


def _entries(client: Client, scope: str | None, where: Where) -> Iterable[_Servers]:
    path = client.path(scope, where)
    text = read_config(path)
    if client.toml:
        yield path, scope, toml_servers(path, text)
        return
    data = load_json(path, text)
    yield path, scope, section(data, client.servers_key, path)
    if client.name == "claude-code" and scope == "user":
        projects = data.get("projects")
        for key in project_keys(where):
            found = projects.get(key) if isinstance(projects, dict) else None
            if isinstance(found, dict) and isinstance(found.get("mcpServers"), dict):
                yield path, "local", found["mcpServers"]
                break


def _installed(
    client: str, scope: str | None, path: Path, name: str, entry: Any
) -> Installed | None:
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
        return None
    args = entry.get("args", [])
    if not isinstance(args, list) or not all(isinstance(arg, str) for arg in args):
        return None
    if serve_args(entry["command"], args) is None:
        return None
    env = entry.get("env")
    environment = (
        {str(k): str(v) for k, v in env.items() if isinstance(v, (str, int, float))}
        if isinstance(env, dict)
        else {}
    )
    return Installed(client, scope, path, name, entry["command"], tuple(args), environment)


def find_installed(
    where: Where, clients: Sequence[str] = (), name: str | None = None
) -> tuple[list[Installed], list[Unreadable]]:
    """Every sqlgate entry of the `clients` (all when empty), only `name` if given, and
    the config files that could not be read."""
    found: list[Installed] = []
    unreadable: list[Unreadable] = []
    for spec in CLIENTS.values():
        if clients and spec.name not in clients:
            continue
        seen: set[Path] = set()
        for scope in spec.scopes or (None,):
            path = spec.path(scope, where)
            if path in seen:  # the project folder is home: one file, read once
                continue
            seen.add(path)
            try:
                for file, at, servers in _entries(spec, scope, where):
                    for entry_name, entry in servers.items():
                        if name is not None and entry_name != name:
                            continue
                        one = _installed(spec.name, at, file, entry_name, entry)
                        if one is not None:
                            found.append(one)
            except InvalidArgument as exc:
                unreadable.append(Unreadable(spec.name, scope, path, str(exc)))
    return found, unreadable


def capture_hooks(scope: str | None, where: Where) -> list[HookLine]:
    """The `sqlgate capture` hooks in Claude Code's settings of `scope` (the user's for a
    local-scope entry). Raises ConfigMalformed for a file that does not parse."""
    path = settings_path("project" if scope == "project" else "user", where)
    hooks = section(load_json(path, read_config(path)), "hooks", path)
    found = []
    for event in CAPTURE_EVENTS:
        groups = hooks.get(event)
        for group in groups if isinstance(groups, list) else []:
            inner = group.get("hooks") if isinstance(group, dict) else None
            for hook in inner if isinstance(inner, list) else []:
                command = hook.get("command") if isinstance(hook, dict) else None
                if isinstance(command, str) and is_capture_command(command):
                    words = shlex.split(command)
                    after = words[words.index("capture") + 1 :]
                    found.append(HookLine(event, command, tuple(after)))
    return found


def hook_settings_file(scope: str | None, where: Where) -> Path:
    return settings_path("project" if scope == "project" else "user", where)


def which_env(installed: Installed, where: Where) -> dict[str, str]:
    """The environment the client starts the server with: ours, then the entry's `env`."""
    return {**dict(where.env), **dict(installed.env)}


def shown_command(installed: Installed) -> str:
    return shlex.join([installed.command, *installed.args])


def is_executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)
