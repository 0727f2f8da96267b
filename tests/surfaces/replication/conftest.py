"""A stand-in for the Litestream binary, so supervision, start-up checks and error reports are
tested without it: a Python script that answers `version`, `ltx`, `restore` and `replicate`
like Litestream 0.5 does, and behaves as `FAKE_LITESTREAM` says when replicating.

    run            start on every database, then run until SIGTERM (exit 0)
    die-once:PATH  the first time (no file at PATH yet): log an error and exit 3; then run
    fail-start     print `Error: cannot open store: boom` and exit 1 at once
    fail-write     `replicate -once` (the write probe) fails with a NoSuchBucket error
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

FAKE = r"""
import os, signal, sys, time
args = sys.argv[1:]
mode = os.environ.get("FAKE_LITESTREAM", "run")
def log(level, msg, **fields):
    extra = "".join(f' {k}="{v}"' for k, v in fields.items())
    line = f'time=2026-01-01T00:00:00Z level={level} msg="{msg}"{extra}'
    print(line, file=sys.stderr, flush=True)
if args[:1] == ["version"]:
    print("0.5.17"); sys.exit(0)
if args[:1] == ["ltx"]:
    print("[]"); sys.exit(0)
if args[:1] == ["restore"]:
    print("Error: no matching backup files available", file=sys.stderr); sys.exit(1)
if args[:2] == ["replicate", "-once"]:
    if mode == "fail-write":
        print("Error: sync database: NoSuchBucket: no such bucket", file=sys.stderr)
        sys.exit(1)
    sys.exit(0)
if args[:1] == ["replicate"]:
    if mode == "fail-start":
        print("Error: cannot open store: boom", file=sys.stderr); sys.exit(1)
    if mode.startswith("die-once:") and not os.path.exists(mode[9:]):
        open(mode[9:], "w").close()
        [log("INFO", "replicating to", path=p) for p in ("db", "records", "witness")]
        log("ERROR", "sync error", error="write ltx file: disk full")
        sys.exit(3)
    stop = []
    signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
    [log("INFO", "replicating to", path=p) for p in ("db", "records", "witness")]
    log("WARN", "slow store", elapsed="2s")
    while not stop:
        time.sleep(0.01)
    log("INFO", "litestream shut down")
    sys.exit(0)
print("Error: unknown command", file=sys.stderr); sys.exit(2)
"""


@pytest.fixture
def fake_litestream(tmp_path: Path) -> Path:
    path = tmp_path / "bin" / "litestream"
    path.parent.mkdir()
    path.write_text(f"#!{sys.executable}\n{FAKE}", encoding="utf-8")
    path.chmod(0o755)
    return path


def eventually(condition: Callable[[], bool], timeout: float = 20.0) -> None:
    """Poll `condition` until it holds; fail the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the condition did not hold in time"
        time.sleep(0.02)
