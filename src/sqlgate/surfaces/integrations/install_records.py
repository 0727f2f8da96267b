"""What sqlgate keeps about the client configs it edits, in its own data folder (the folder
of the default database): backups of the files it replaced, and a record of what it created.

    <data>/backups/<client>/<UTC time>-<file name>     the newest BACKUPS_KEPT per client
                                                       (older versions' backups beside the
                                                       config are moved here on a write)
    <data>/installed.json                              {"files": {<file>: {"created": bool,
                                                         "folders": [...], "keys": [[...]],
                                                         "rules": [[list, rule], ...]}},
                                                        "folders": [<folder>, ...]}

The record is what lets `uninstall` remove exactly what `install` added: a config file that
sqlgate created (and the folders it made for it: "folders" lists every folder any install
made, for whichever client, so that the last uninstall under a shared one, such as
~/.config for Claude Desktop and VS Code, removes it once empty), and the keys it added to a file
(`"mcpServers"`, `"hooks"`, `"hooks"."Stop"`, ...) once they are empty again, and the Claude
Code permission rules it added (`["ask", "mcp__sqlgate__undo_call"]`: permissions.py), which
uninstall takes out of that list again. Keys are never added to the client's own file for
this. A damaged record counts as empty.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import stat
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlgate.config import default_db_path
from sqlgate.surfaces.integrations.config_files import ConfigUnwritable, KeyPath

__all__ = ["BACKUPS_KEPT", "FileRecord", "InstallRecords", "data_dir", "goes_when_empty"]

BACKUPS_KEPT = 10
_BACKUP = re.compile(r"(\d{8}T\d{6}Z)(?:\.(\d+))?-(.+)", re.DOTALL)
_GROUP_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def data_dir() -> Path:
    """sqlgate's per-user data folder: where the default database lives."""
    return default_db_path().parent


@dataclass(frozen=True)
class FileRecord:
    created: bool = False
    folders: tuple[str, ...] = ()
    keys: tuple[KeyPath, ...] = ()
    rules: tuple[tuple[str, str], ...] = ()  # (permission list, rule) that install added


def goes_when_empty(key: KeyPath, record: FileRecord | None) -> bool:
    """Whether a key that uninstall empties is removed too: sqlgate added it, or sqlgate has
    no record of the file (written before records were kept), where an empty servers object
    or hook list means nothing. A key of a recorded file that sqlgate did not add was there
    before: it stays."""
    return record is None or key in record.keys


@dataclass(frozen=True)
class InstallRecords:
    root: Path

    @classmethod
    def here(cls) -> InstallRecords:
        return cls(data_dir())

    @property
    def ledger(self) -> Path:
        return self.root / "installed.json"

    def backups(self, group: str) -> Path:
        return self.root / "backups" / (_GROUP_UNSAFE.sub("-", group) or "other")

    # -- backups ------------------------------------------------------------------------
    def back_up(self, source: Path, group: str, now: datetime) -> Path:
        """Copy `source` (mode kept) into the client's backup folder; the new copy's path."""
        folder = self.backups(group)
        stamp = now.strftime("%Y%m%dT%H%M%SZ")
        try:
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            candidate = folder / f"{stamp}-{source.name}"
            n = 1
            while os.path.lexists(candidate):
                n += 1
                candidate = folder / f"{stamp}.{n}-{source.name}"
            shutil.copy2(source, candidate)
        except OSError as exc:
            raise ConfigUnwritable(
                f"cannot back up {source} into {folder}: {exc.strerror or exc}; nothing was "
                "changed: make that folder writable and run this again"
            ) from None
        return candidate

    def prune(self, group: str, keep: int = BACKUPS_KEPT) -> list[Path]:
        """Remove all but the newest `keep` backups of the client; what was removed.

        Only names sqlgate gives and regular files count (never a link or a folder)."""
        folder = self.backups(group)
        found: list[tuple[str, int, Path]] = []
        with contextlib.suppress(OSError):
            for entry in os.scandir(folder):
                match = _BACKUP.fullmatch(entry.name)
                if match and stat.S_ISREG(entry.stat(follow_symlinks=False).st_mode):
                    found.append((match.group(1), int(match.group(2) or 1), Path(entry.path)))
        found.sort()
        removed = []
        for _, _, path in found[: max(0, len(found) - keep)]:
            with contextlib.suppress(OSError):
                path.unlink()
                removed.append(path)
        return removed

    def adopt_old_backups(self, config: Path, group: str) -> list[Path]:
        """Move the backups older sqlgate versions left beside `config`
        (`<name>.sqlgate-backup-<UTC time>[-n]`) into the client's backup folder; where
        they went. Only regular files with exactly that name are moved."""
        old = re.compile(re.escape(config.name) + r"\.sqlgate-backup-(\d{8}T\d{6}Z)(?:-(\d+))?")
        moved = []
        with contextlib.suppress(OSError):
            for entry in os.scandir(config.parent):
                match = old.fullmatch(entry.name)
                if not match or not stat.S_ISREG(entry.stat(follow_symlinks=False).st_mode):
                    continue
                number = f".{match.group(2)}" if match.group(2) else ""
                target = self.backups(group) / f"{match.group(1)}{number}-{config.name}"
                if os.path.lexists(target):
                    continue
                with contextlib.suppress(OSError):
                    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                    shutil.move(entry.path, target)
                    moved.append(target)
        return moved

    # -- the record of what sqlgate created ----------------------------------------------
    def _load(self) -> dict[str, Any]:
        try:
            data = json.loads(self.ledger.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {"files": {}, "folders": []}
        files = data.get("files") if isinstance(data, dict) else None
        folders = data.get("folders") if isinstance(data, dict) else None
        return {
            "files": files if isinstance(files, dict) else {},
            "folders": [f for f in folders if isinstance(f, str)]
            if isinstance(folders, list) else [],
        }  # fmt: skip

    def of(self, path: Path) -> FileRecord | None:
        """What sqlgate created for `path` (the file itself, not a link to it); None when
        sqlgate has no record of writing it."""
        raw = self._load()["files"].get(str(path))
        if not isinstance(raw, dict):
            return None
        folders = raw.get("folders", [])
        keys = raw.get("keys", [])
        rules = raw.get("rules", [])
        return FileRecord(
            created=raw.get("created") is True,
            folders=tuple(f for f in folders if isinstance(f, str)),
            keys=tuple(tuple(k) for k in keys
                       if isinstance(k, list) and all(isinstance(p, str) for p in k)),
            rules=tuple((r[0], r[1]) for r in rules if isinstance(r, list) and len(r) == 2
                        and all(isinstance(p, str) for p in r)),
        )  # fmt: skip

    def note(
        self,
        path: Path,
        *,
        created: bool,
        folders: list[Path],
        added: tuple[KeyPath, ...],
        removed: tuple[KeyPath, ...],
        added_rules: tuple[tuple[str, str], ...] = (),
        removed_rules: tuple[tuple[str, str], ...] = (),
    ) -> None:
        """Record a write of `path`; best effort (the config change itself has happened)."""
        data = self._load()
        old = self.of(path) or FileRecord()
        keys = [k for k in old.keys if k not in removed]
        keys += [k for k in added if k not in keys]
        rules = [r for r in old.rules if r not in removed_rules]
        rules += [r for r in added_rules if r not in rules]
        data["files"][str(path)] = {
            "created": old.created or created,
            "folders": list(old.folders) + [str(f) for f in folders if str(f) not in old.folders],
            "keys": [list(k) for k in keys],
            "rules": [list(r) for r in rules],
        }
        data["folders"] += [str(f) for f in folders if str(f) not in data["folders"]]
        self._save(data)

    def remove_empty_folders(self, removed: Path) -> list[Path]:
        """After `removed` (a file sqlgate created) is gone: remove the folders above it that
        an install made (for any file) and that are empty now, deepest first; which ones.
        A folder that was there before, or that holds anything, stays."""
        data = self._load()
        made = set(data["folders"])
        record = data["files"].get(str(removed))
        if isinstance(record, dict) and isinstance(record.get("folders"), list):
            made |= {f for f in record["folders"] if isinstance(f, str)}
        gone = []
        for folder in removed.parents:
            if str(folder) not in made:
                continue
            try:
                os.rmdir(folder)  # only when empty
            except FileNotFoundError:
                pass
            except OSError:
                break  # it holds something: so do the folders above it
            gone.append(folder)
        kept = [f for f in data["folders"] if os.path.isdir(f)]
        if kept != data["folders"]:
            data["folders"] = kept
            self._save(data)
        return gone

    def forget(self, path: Path) -> None:
        data = self._load()
        if data["files"].pop(str(path), None) is not None:
            self._save(data)

    def _save(self, data: dict[str, Any]) -> None:
        with contextlib.suppress(OSError):
            self.root.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.root, prefix=".installed.", suffix=".tmp")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as out:
                    json.dump(data, out, indent=2, ensure_ascii=False)
                os.replace(tmp, self.ledger)
            except OSError:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
