"""The stdio transport on POSIX pipes: lines in, messages out, stray output kept off the wire."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from sqlgate.surfaces.mcp import stdio as stdio_transport
from sqlgate.surfaces.mcp.jsonrpc_guard import Unreadable
from sqlgate.surfaces.mcp.stdio import _PipeLines, _PipeWriter
from tests.surfaces.stdio_helpers import rpc

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the pipe transport is POSIX-only")

SRC = Path(__file__).resolve().parents[3] / "src"


def _pipe() -> tuple[int, int]:
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    os.set_blocking(write_end, False)
    return read_end, write_end


async def _all_lines(fd: int) -> list[str]:
    return [line async for line in _PipeLines(fd)]


@pytest.mark.anyio
async def test_pipe_lines_joins_lines_split_across_reads_and_ends_at_eof() -> None:
    read_end, write_end = _pipe()
    try:
        os.write(write_end, b'{"a": 1}\n{"b": "\xc3')  # a character cut between two reads
        os.write(write_end, b'\xa9"}\nlast without newline')
        os.close(write_end)
        lines = await _all_lines(read_end)
    finally:
        os.close(read_end)
    assert lines == ['{"a": 1}\n', '{"b": "é"}\n', "last without newline"]


async def _through_pipe(*messages: str) -> list[str]:
    """Write `messages` with `_PipeWriter` while `_PipeLines` reads the other end."""
    read_end, write_end = _pipe()
    received: list[str] = []

    async def read() -> None:
        received.extend(await _all_lines(read_end))

    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(read)
            writer = _PipeWriter(write_end)
            for message in messages:
                await writer.write(message)
            await writer.flush()
            os.close(write_end)
    finally:
        os.close(read_end)
    return received


@pytest.mark.anyio
async def test_pipe_lines_reads_many_lines_of_one_read_and_one_line_of_many_reads() -> None:
    long_line = "y" * 1_000_000 + "\n"  # about 15 reads of 64 KiB
    # four lines (one of them empty) in one read, then one line over many reads
    received = await _through_pipe("1\n2\n\n3\n", long_line, "tail\n")
    assert received == ["1\n", "2\n", "\n", "3\n", long_line, "tail\n"]


@pytest.mark.anyio
async def test_pipe_writer_delivers_a_message_larger_than_the_pipe_buffer() -> None:
    message = "x" * 2_000_000 + "\n"  # far beyond a pipe's 64 KiB: the writer must wait
    assert await _through_pipe(message) == [message]


def test_claimed_pipes_leave_other_stdio_to_the_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stdio_transport, "_is_pipe", lambda fd: False)
    with stdio_transport._claimed_pipes() as wire:
        assert wire is None


# a server whose tool writes to stdout in both ways a library might; after the server
# stops, fd 1 must be the wire again
_NOISY_SERVER = textwrap.dedent(
    """
    import os
    from sqlgate.surfaces.mcp.server import _SqlgateServer

    server = _SqlgateServer("noisy")

    @server.tool(structured_output=False)
    async def shout() -> str:
        print("stray print", flush=True)
        os.write(1, b"stray bytes\\n")
        return "quiet answer"

    server.run("stdio")
    os.write(1, b'{"jsonrpc": "2.0", "method": "after"}\\n')
    """
)


def test_stray_stdout_never_reaches_the_wire_and_fd_1_is_restored(tmp_path: Path) -> None:
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")])),
    )
    process = subprocess.Popen(
        [sys.executable, "-c", _NOISY_SERVER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        env=env,
    )
    try:
        rpc(process, {
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "raw", "version": "0"}},
        })  # fmt: skip
        rpc(process, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        call = {"name": "shout", "arguments": {}}
        answer = rpc(process, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
        stdout, stderr = process.communicate(timeout=30)  # EOF on stdin ends the server
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, stderr
    assert answer is not None
    assert answer["result"]["content"][0]["text"] == "quiet answer"
    assert "stray print" in stderr  # diverted, not lost
    assert "stray bytes" in stderr
    assert [json.loads(line) for line in stdout.splitlines()] == [
        {"jsonrpc": "2.0", "method": "after"}
    ]


# -- the bound on a line -----------------------------------------------------------------------


def test_a_line_past_the_limit_is_counted_not_kept_and_answered_with_its_id() -> None:
    lines = stdio_transport._Lines(limit=100)
    long = b'{"jsonrpc": "2.0", "id": 42, "method": "x", "params": {"a": "' + b"y" * 10_000
    for start in range(0, len(long), 64):
        lines.take(long[start : start + 64])
        assert sum(map(len, lines._partial)) <= 100  # never more than the limit kept
    lines.take(b'"}}\n{"next": 1}\nlast')
    lines.finish()
    refused, following, last = lines.ready
    assert isinstance(refused, Unreadable)
    assert refused.rejection.request_id == 42
    assert f"{len(long) + 3:,} bytes" in refused.rejection.message
    assert (following, last) == ('{"next": 1}\n', "last")


def test_a_line_of_exactly_the_limit_is_kept() -> None:
    lines = stdio_transport._Lines(limit=10)
    lines.take(b"0123456789\n01234567890\n")
    kept, refused = lines.ready
    assert kept == "0123456789\n"
    assert isinstance(refused, Unreadable)


@pytest.mark.anyio
async def test_screening_passes_messages_skips_blank_lines_and_stands_in_for_others() -> None:
    async def lines() -> AsyncIterator[str]:
        for line in ['{"jsonrpc": "2.0", "method": "x"}\n', "\n", "  \n", '{"id": 3, oops\n']:
            yield line

    screened = [line async for line in stdio_transport._screened(lines())]
    assert screened[0] == '{"jsonrpc": "2.0", "method": "x"}\n'
    assert len(screened) == 2
    assert isinstance(screened[1], Unreadable)
    assert (screened[1].rejection.code, screened[1].rejection.request_id) == (-32700, 3)
