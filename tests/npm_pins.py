"""The npm packages the end-to-end tests drive, pinned in tests/e2e/<folder>/ (package.json and
package-lock.json), installed there with `npm ci` by the test that needs them.

`npm_ci(folder)` installs when a pinned package is missing or at another version, and gives
the `node` to run it with. Where npm/node are missing, or the registry cannot be reached, the
test is skipped, saying why; any other failure of `npm ci` fails it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

E2E_DIR = Path(__file__).resolve().parent / "e2e"
INSTALL_TIMEOUT_S = 300
NPM_CI_FLAGS = ("--no-audit", "--no-fund", "--ignore-scripts")
NETWORK_ERRORS = (
    "ENOTFOUND",
    "EAI_AGAIN",
    "ECONNREFUSED",
    "ECONNRESET",
    "ETIMEDOUT",
    "ENETUNREACH",
    "EHOSTUNREACH",
    "network",
)


def pinned(folder: Path) -> dict[str, str]:
    """The packages pinned in `folder`'s package.json, with their versions."""
    manifest = json.loads((folder / "package.json").read_text(encoding="utf-8"))
    found: dict[str, str] = manifest["dependencies"]
    return found


def installed_version(folder: Path, package: str) -> str | None:
    manifest = folder / "node_modules" / package / "package.json"
    if not manifest.is_file():
        return None
    version: str = json.loads(manifest.read_text(encoding="utf-8"))["version"]
    return version


def is_installed(folder: Path) -> bool:
    return all(installed_version(folder, p) == v for p, v in pinned(folder).items())


def npm_ci(folder: Path) -> str:
    """The `node` binary, once the packages pinned in `folder` are installed there."""
    npm, node = shutil.which("npm"), shutil.which("node")
    what = ", ".join(pinned(folder))
    if npm is None or node is None:
        pytest.skip(f"npm/node not on PATH: the end-to-end test of {what} needs Node.js")
    if is_installed(folder):
        return node
    command = [npm, "ci", "--prefix", str(folder), *NPM_CI_FLAGS]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, encoding="utf-8", errors="replace",
            timeout=INSTALL_TIMEOUT_S,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.skip(f"`npm ci` for {what} took over {INSTALL_TIMEOUT_S} s (no registry?)")
    if done.returncode != 0:
        output = done.stdout + done.stderr
        reasons = [code for code in NETWORK_ERRORS if code in output]
        if reasons:
            pytest.skip(f"`npm ci` for {what} could not reach the registry ({reasons[0]})")
        pytest.fail(f"`npm ci` for {what} failed ({done.returncode}): {output[-2000:]}")
    assert is_installed(folder), f"npm ci did not install {what} in {folder}"
    return node
