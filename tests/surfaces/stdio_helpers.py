"""Helpers for tests that talk JSON-RPC to a server process over its stdin and stdout."""

from __future__ import annotations

import json
import subprocess
from typing import Any

__all__ = ["rpc"]


def rpc(process: subprocess.Popen[str], message: dict[str, Any]) -> dict[str, Any] | None:
    """Send one JSON-RPC message; for a request, return its response line, parsed.

    Anything but a JSON-RPC response to this request on stdout fails the test."""
    assert process.stdin is not None
    assert process.stdout is not None
    process.stdin.write(json.dumps(message) + "\n")
    process.stdin.flush()
    if "id" not in message:
        return None
    response: dict[str, Any] = json.loads(process.stdout.readline())
    assert response["jsonrpc"] == "2.0"
    assert response["id"] == message["id"]
    return response
