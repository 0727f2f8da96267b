"""Whether Codex reads a project's `.codex/config.toml`: it does only in a trusted project.

Trust lives in the user's config ($CODEX_HOME/config.toml, default ~/.codex/config.toml):

    [projects."/abs/path"]
    trust_level = "trusted"          # or "untrusted"; Codex refuses to start with any other

What Codex 0.171.0 does, from openai/codex (codex-rs config loader: `project_trust_context`,
`decision_for_dir`, `find_project_root`, `resolve_root_git_project_for_trust`) and checked
with `codex mcp list` in a fake HOME: started in FOLDER (its working folder, symlinks
resolved), it reads FOLDER/.codex/config.toml as a project layer, and decides its trust by
the first of these keys that [projects] holds, compared as written (no trailing slash):

    FOLDER itself
    the project root: the nearest folder from FOLDER up holding a root marker
                      (`project_root_markers`, default [".git"]: a `.git` file, or a `.git`
                      folder holding HEAD; an empty list: FOLDER), else FOLDER
    the repository root: the git root, or for a linked worktree the main checkout's root
                      (when the main checkout's .git/worktrees/X names it back: gitdir, commondir)

"trusted" loads it; "untrusted", or none of the keys, leaves it out silently (`codex mcp
list` does not show its servers). A project folder whose .codex is $CODEX_HOME itself (the
home folder) is the user's file, not a project layer. Codex's own advice names the
repository root, else the project root; so does `trust_fix`. Codex's TUI asks "Trust this
folder?" on its first start in a folder ("Trust and continue" saves the trust).
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlgate.surfaces.integrations.client_paths import CLIENTS, Where
from sqlgate.surfaces.integrations.config_files import ConfigMalformed, read_config
from sqlgate.surfaces.integrations.toml_config import toml_document, toml_table

__all__ = ["CodexTrust", "codex_trust", "trust_fix"]

_LEVELS = ("trusted", "untrusted")
_UNREADABLE = "Codex does not start with it either: fix it there"


@dataclass(frozen=True)
class CodexTrust:
    """Codex's trust of the project folder: the key of [projects] that decided (None: no
    key did), its level, and the key to trust (`suggested`). `applies` is False where the
    project's .codex/config.toml is the user's own file (not a project layer)."""

    folder: Path
    user_file: Path
    level: str | None
    key: str | None
    suggested: str
    applies: bool = True
    platform: str = "linux"

    @property
    def trusted(self) -> bool:
        return self.level == "trusted" or not self.applies


def _has_marker(folder: Path, marker: str) -> bool:
    found = folder / marker
    if marker == ".git" and found.is_dir():
        return (found / "HEAD").exists()  # Codex 0.171.0: an empty .git folder is no repository
    return os.path.lexists(found)


def _project_root(folder: Path, markers: list[str]) -> Path:
    for candidate in (folder, *folder.parents):
        if any(_has_marker(candidate, marker) for marker in markers):
            return candidate
    return folder


def _repository_root(folder: Path) -> Path | None:
    """The git root; for a linked worktree (`.git` file: `gitdir: MAIN/.git/worktrees/X`,
    whose record there names it back), the main checkout's root."""
    for candidate in (folder, *folder.parents):
        dot_git = candidate / ".git"
        if dot_git.is_dir():
            return candidate if (dot_git / "HEAD").exists() else None
        if dot_git.is_file():
            try:
                text = dot_git.read_text(encoding="utf-8").strip()
            except (OSError, UnicodeDecodeError):
                return None
            if not text.startswith("gitdir:"):
                return None
            git_dir = Path(os.path.realpath(candidate / text[len("gitdir:") :].strip()))
            if git_dir.parent.name != "worktrees" or not _points_back(git_dir, dot_git):
                return None
            return git_dir.parent.parent.parent
    return None


def _points_back(git_dir: Path, dot_git: Path) -> bool:
    """Whether the main checkout's record of the worktree (its folder under .git/worktrees)
    names this `.git` file (`gitdir`) and the main .git folder (`commondir`), as Codex
    checks before it lets the main checkout's trust count."""
    try:
        named = (git_dir / "gitdir").read_text(encoding="utf-8").strip()
        common = (git_dir / "commondir").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return False
    return os.path.realpath(git_dir / named) == os.path.realpath(dot_git) and (
        os.path.realpath(git_dir / common) == os.path.realpath(git_dir.parent.parent)
    )


def _markers(data: dict[str, Any], path: Path) -> list[str]:
    markers = data.get("project_root_markers", [".git"])
    if not isinstance(markers, list) or not all(isinstance(m, str) for m in markers):
        raise ConfigMalformed(
            f"{path}: project_root_markers is not a list of strings, and Codex refuses to "
            "start with it: fix it there"
        )
    return markers


def _levels(data: dict[str, Any], path: Path) -> dict[str, str]:
    """[projects] as {key: trust_level}; what Codex would refuse to start with raises."""
    projects = data.get("projects", {})
    if not isinstance(projects, dict):
        raise ConfigMalformed(f"{path}: 'projects' is not a table; Codex refuses to start "
                              "with it: fix it there")  # fmt: skip
    levels = {}
    for key, project in projects.items():
        level = project.get("trust_level") if isinstance(project, dict) else None
        if level is None:
            continue
        if level not in _LEVELS:
            raise ConfigMalformed(
                f'{path}: projects."{key}".trust_level is {level!r}; Codex accepts "trusted" '
                'or "untrusted" and refuses to start with anything else: fix it there'
            )
        levels[key] = level
    return levels


def _keys(path: Path) -> list[str]:
    """The spellings Codex compares for a folder: resolved, then as given."""
    return list(dict.fromkeys([os.path.realpath(path), str(path)]))


def codex_trust(where: Where) -> CodexTrust:
    """Codex's trust of `where.cwd`; a user config it cannot read raises ConfigMalformed."""
    codex = CLIENTS["codex"]
    user_file = codex.path("user", where)
    project_file = codex.path("project", where)
    data = toml_document(user_file, read_config(user_file), _UNREADABLE)
    levels = _levels(data, user_file)
    folder = Path(os.path.realpath(where.cwd))
    root = _project_root(folder, _markers(data, user_file))
    repository = _repository_root(folder)
    suggested = str(repository or root)
    applies = os.path.realpath(project_file.parent) != os.path.realpath(user_file.parent)
    fold = str.lower if where.platform == "win32" else str  # Codex compares case-blind there
    by_key = {fold(key): key for key in levels}
    for candidate in (where.cwd, root, repository):
        for key in _keys(candidate) if candidate is not None else ():
            if fold(key) in by_key:
                found = by_key[fold(key)]
                return CodexTrust(folder, user_file, levels[found], found, suggested,
                                  applies, where.platform)  # fmt: skip
    return CodexTrust(folder, user_file, None, None, suggested, applies, where.platform)


def trust_fix(trust: CodexTrust) -> str | None:
    """One line: how to make Codex read the project's config (None: it does already)."""
    if trust.trusted:
        return None
    shown = str(trust.user_file)
    if trust.level == "untrusted":
        return (f'in {shown}, under [projects."{trust.key}"], change trust_level = '
                '"untrusted" to trust_level = "trusted" (Codex does not load a project '
                "marked untrusted, whatever trusts its parents)")  # fmt: skip
    table = toml_table(("projects", trust.suggested), {"trust_level": "trusted"})
    first, second = table.splitlines()
    by_hand = f"add the two lines `{first}` and `{second}` to {shown}"
    if trust.platform == "win32" or not _appendable(trust, table):
        return by_hand + ', or start Codex there and choose "Trust and continue"'
    folder = trust.user_file.parent
    make = "" if folder.is_dir() else f"mkdir -p {shlex.quote(str(folder))} && "
    words = " ".join(shlex.quote(line) for line in ("", first, second))
    command = f"{make}printf '%s\\n' {words} >> {shlex.quote(shown)}"
    return (f"`{command}` (adds `{first}` / `{second}` to {shown}), or start Codex in "
            f'{trust.suggested} and choose "Trust and continue"')  # fmt: skip


def _appendable(trust: CodexTrust, table: str) -> bool:
    """Whether appending `table` to the user's file gives a file that trusts the project
    (not, say, where [projects] is an inline table)."""
    text = read_config(trust.user_file) or ""
    try:
        data = toml_document(trust.user_file, text + "\n" + table)
    except ConfigMalformed:
        return False
    projects = data.get("projects")
    entry = projects.get(trust.suggested) if isinstance(projects, dict) else None
    return isinstance(entry, dict) and entry.get("trust_level") == "trusted"
