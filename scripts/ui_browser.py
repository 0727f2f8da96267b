"""Running the console and Debian's Chromium for the browser tests and the screenshots.

Chromium comes from the system (`apt-get install chromium`), never from Playwright's own
download (`playwright install` cannot work offline and is never run). The flags keep a
headless browser from reaching out to the network on its own (updates, sync, QUIC).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

__all__ = ["CHROMIUM", "LAUNCH_ARGS", "browser_missing", "launch", "running_console"]

CHROMIUM = Path(os.environ.get("SQLGATE_CHROMIUM", "/usr/bin/chromium"))
LAUNCH_ARGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
)  # fmt: skip
_URL = re.compile(r"web console \(read-only\) is at (http://\S+)")


def browser_missing() -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright for Python is not installed (pip install -e '.[test]')"
    if not CHROMIUM.is_file():
        return f"no Chromium at {CHROMIUM} (apt-get install chromium, or set SQLGATE_CHROMIUM)"
    return None


@contextmanager
def launch() -> Iterator[Any]:
    """(playwright, browser): headless Debian Chromium with an empty profile."""
    from playwright.sync_api import sync_playwright

    with (
        tempfile.TemporaryDirectory(prefix="sqlgate-chromium-") as profile,
        sync_playwright() as pw,
    ):
        context = pw.chromium.launch_persistent_context(
            profile, executable_path=str(CHROMIUM), headless=True, args=list(LAUNCH_ARGS),
            viewport={"width": 1280, "height": 800},
        )  # fmt: skip
        try:
            yield context
        finally:
            context.close()


def _read_url(stream: IO[str], lines: list[str]) -> str | None:
    for line in stream:
        lines.append(line)
        found = _URL.search(line)
        if found:
            return found.group(1)
    return None


@contextmanager
def running_console(db: Path, token: str, *extra: str) -> Iterator[str]:
    """`sqlgate ui --db DB --port 0 --token TOKEN` in its own process; yields its base URL."""
    process = subprocess.Popen(  # noqa: S603 - our own interpreter and arguments
        [sys.executable, "-m", "sqlgate", "ui", "--db", str(db), "--port", "0", "--token", token,
         *extra],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    lines: list[str] = []
    try:
        assert process.stderr is not None
        url = _read_url(process.stderr, lines)
        if url is None:
            raise RuntimeError("sqlgate ui did not start:\n" + "".join(lines))
        yield url.rstrip("/")
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
