"""Start a client's server command the way the client does and ask it MCP's `initialize`
over stdio, waiting a bounded time for the answer (`sqlgate doctor`).

The message is the one every MCP client sends first (modelcontextprotocol.io, "Lifecycle"):
a JSON-RPC request on one line of stdin; the answer is one line of stdout. The process is
then asked to stop by closing its stdin (sqlgate's server exits on that), and ended if it
has not stopped within a moment. Nothing here imports the MCP SDK.
"""

from __future__ import annotations

import contextlib
import json
import queue
import subprocess
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from sqlgate import __version__

__all__ = ["PROTOCOL_VERSION", "Answer", "ask_initialize"]

PROTOCOL_VERSION = "2025-06-18"
_STOP_WAIT = 2.0  # seconds a server gets to exit after its stdin closes
_STDERR_LINES = 20
_MAX_LINE = 1024 * 1024


@dataclass(frozen=True)
class Answer:
    """What the server said: `ok` with its name and version, or why not (`detail`)."""

    ok: bool
    detail: str
    server: str | None = None
    version: str | None = None
    seconds: float = 0.0


def _request() -> bytes:
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "sqlgate-doctor", "version": __version__},
        },
    }
    return (json.dumps(message) + "\n").encode()


def _pump(stream: IO[bytes], lines: queue.Queue[bytes | None]) -> None:
    with contextlib.suppress(OSError, ValueError):
        for line in iter(lambda: stream.readline(_MAX_LINE), b""):
            lines.put(line)
    lines.put(None)


def _keep_tail(stream: IO[bytes], tail: deque[str]) -> None:
    with contextlib.suppress(OSError, ValueError):
        for line in iter(lambda: stream.readline(_MAX_LINE), b""):
            text = line.decode("utf-8", errors="replace").strip()
            if text:
                tail.append(text)


def _judge(line: bytes, seconds: float) -> Answer | None:
    """The answer a stdout line gives, or None for a line that is not it."""
    try:
        message: Any = json.loads(line)
    except ValueError:
        text = line.decode("utf-8", errors="replace").strip()[:200]
        return Answer(False, f"wrote something that is not JSON-RPC on stdout: {text!r}")
    if not isinstance(message, dict) or message.get("id") != 1:
        return None  # a notification or log message before the answer
    if "error" in message:
        error = message["error"]
        said = error.get("message") if isinstance(error, dict) else error
        return Answer(False, f"answered initialize with an error: {said}", seconds=seconds)
    result = message.get("result")
    info = result.get("serverInfo") if isinstance(result, dict) else None
    if not isinstance(info, dict):
        return Answer(False, "answered initialize without serverInfo", seconds=seconds)
    name, version = info.get("name"), info.get("version")
    return Answer(True, f"answered initialize in {seconds:.2f} s", str(name), str(version),
                  seconds)  # fmt: skip


def ask_initialize(
    argv: Sequence[str], env: Mapping[str, str], cwd: Path, timeout: float
) -> Answer:
    """Run `argv` in `cwd` with `env`, send `initialize`, wait at most `timeout` seconds."""
    started = time.monotonic()
    try:
        process = subprocess.Popen(  # noqa: S603 - the command the client's config names
            list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, env=dict(env), cwd=cwd,
        )  # fmt: skip
    except OSError as exc:
        return Answer(False, f"cannot be started: {exc.strerror or exc}")
    assert process.stdin is not None
    assert process.stdout is not None
    assert process.stderr is not None
    lines: queue.Queue[bytes | None] = queue.Queue()
    tail: deque[str] = deque(maxlen=_STDERR_LINES)
    readers = [
        threading.Thread(target=_pump, args=(process.stdout, lines), daemon=True),
        threading.Thread(target=_keep_tail, args=(process.stderr, tail), daemon=True),
    ]
    for reader in readers:
        reader.start()
    try:
        with contextlib.suppress(OSError):
            process.stdin.write(_request())
            process.stdin.flush()
        return _wait(process, lines, (readers[1], tail), started, timeout)
    finally:
        _stop(process)
        for reader in readers:
            reader.join(_STOP_WAIT)


def _wait(
    process: subprocess.Popen[bytes],
    lines: queue.Queue[bytes | None],
    stderr: tuple[threading.Thread, deque[str]],
    started: float,
    timeout: float,
) -> Answer:
    while True:
        left = started + timeout - time.monotonic()
        try:
            line = lines.get(timeout=max(0.0, left))
        except queue.Empty:
            return Answer(False, f"did not answer initialize within {timeout:g} s (--timeout)")
        if line is None:
            code = process.wait()
            reader, tail = stderr
            reader.join(_STOP_WAIT)  # what it said on the way out
            said = f": {tail[-1]}" if tail else ""
            return Answer(False, f"exited with code {code} before answering initialize{said}")
        answer = _judge(line, time.monotonic() - started)
        if answer is not None:
            return answer


def _stop(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(OSError, ValueError):
        process.stdin.close()  # type: ignore[union-attr]
    try:
        process.wait(_STOP_WAIT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
