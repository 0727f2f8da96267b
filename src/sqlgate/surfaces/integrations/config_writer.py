"""The one writer of client config files: atomic, backed up, and recorded.

A rewrite goes to a temp file beside the target and replaces it with one rename; the old
file is first copied into sqlgate's backup folder (`install_records.py`), and the oldest
backups of that client beyond the newest ten are removed (backups an older sqlgate left
beside the config are moved there first). A config that is a symlink
(dotfiles) is written through: the file at the end of the links is backed up and replaced,
the links stay. A planned deletion (uninstall of a file sqlgate created) backs the file up,
removes it, and removes the folders above it that an install made (for this file or
another one) when they are empty.

The file's byte shape stays: the editors keep its line endings, indentation and final
newline (jsonc.py, toml_config.py), and the writer keeps a UTF-8 byte order mark it began
with (`read_config` gives the text without it), so an install and an uninstall give the file
back byte for byte.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from sqlgate.surfaces.integrations.config_files import Change, ConfigUnwritable, link_target
from sqlgate.surfaces.integrations.install_records import InstallRecords

__all__ = ["apply"]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_BOM = b"\xef\xbb\xbf"


def _byte_order_mark(path: Path) -> str:
    """The UTF-8 byte order mark `path` begins with ("" when none, or when it is absent)."""
    try:
        with path.open("rb") as handle:
            return "\ufeff" if handle.read(len(_BOM)) == _BOM else ""
    except OSError:
        return ""


def _missing_folders(folder: Path) -> list[Path]:
    """`folder` and its ancestors that do not exist yet, outermost first."""
    missing = []
    while not folder.exists() and folder.parent != folder:
        missing.append(folder)
        folder = folder.parent
    return list(reversed(missing))


def apply(
    change: Change, now: datetime | None = None, records: InstallRecords | None = None
) -> Path | None:
    """Carry out `change`; returns the backup's path (None when there was no old file)."""
    if not change.needed:
        return None
    records = records or InstallRecords.here()
    stamp = (now or datetime.now(timezone.utc)).astimezone(timezone.utc)
    link = link_target(change.path)
    path = link or change.path
    if change.delete:
        return _remove(change, path, stamp, records)
    assert change.after is not None
    through = f" (through the link {change.path})" if link else ""
    folders = _missing_folders(path.parent)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise ConfigUnwritable(
            f"cannot write {path}{through}: {exc.strerror or exc}; nothing was changed"
        ) from None
    tmp = Path(tmp_name)
    backup = None
    existed = change.before is not None and path.exists()
    mark = _byte_order_mark(path) if existed else ""
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as out:
            out.write(mark + change.after)
            out.flush()
            os.fsync(out.fileno())
        if existed:
            shutil.copymode(path, tmp)
            backup = records.back_up(path, change.group, stamp)
        else:
            os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except (OSError, ConfigUnwritable) as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if backup is not None:
            with contextlib.suppress(OSError):
                backup.unlink()
        for folder in reversed(folders):  # made for this file: gone again
            with contextlib.suppress(OSError):
                folder.rmdir()
        if isinstance(exc, ConfigUnwritable):
            raise
        raise ConfigUnwritable(
            f"cannot write {path}{through}: {exc.strerror or exc}; nothing was changed"
        ) from None
    records.note(path, created=not existed, folders=folders, added=change.added_keys,
                 removed=change.removed_keys, added_rules=change.added_rules,
                 removed_rules=change.removed_rules)  # fmt: skip
    records.adopt_old_backups(path, change.group)
    records.prune(change.group)
    return backup


def _remove(change: Change, path: Path, stamp: datetime, records: InstallRecords) -> Path | None:
    backup = records.back_up(path, change.group, stamp) if path.exists() else None
    try:
        path.unlink()
    except FileNotFoundError:
        pass
    except OSError as exc:
        if backup is not None:
            with contextlib.suppress(OSError):
                backup.unlink()
        raise ConfigUnwritable(
            f"cannot remove {path}: {exc.strerror or exc}; nothing was changed"
        ) from None
    records.adopt_old_backups(path, change.group)
    records.remove_empty_folders(path)  # those an install made, once empty
    records.forget(path)
    records.prune(change.group)
    return backup
