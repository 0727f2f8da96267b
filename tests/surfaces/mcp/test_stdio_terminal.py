"""The stdio transport when stdin is no pipe (a terminal, a file): lines read by a daemon
thread that a stop never waits for. The real command on a terminal: tests/surfaces/test_stops.py.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator

import anyio
import pytest

from sqlgate.surfaces.mcp import stdio as stdio_transport
from sqlgate.surfaces.mcp.stdio import _ThreadLines as ThreadLines


def reads(*chunks: bytes | OSError) -> tuple[Callable[[int], bytes], list[int]]:
    """A blocking `read(n)` giving `chunks`, then the end; and the sizes asked for."""
    pending = list(chunks)
    asked: list[int] = []

    def read(size: int) -> bytes:
        asked.append(size)
        if not pending:
            return b""
        item = pending.pop(0)
        if isinstance(item, OSError):
            raise item
        return item

    return read, asked


async def all_lines(read: Callable[[int], bytes]) -> list[str]:
    with anyio.fail_after(10):
        return [line async for line in ThreadLines(read)]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("chunks", "lines"),
    [
        pytest.param([b'{"a": 1}\n{"b": "\xc3', b'\xa9"}\nlast'],
                     ['{"a": 1}\n', '{"b": "é"}\n', "last"], id="split-across-reads"),
        pytest.param([b"one\ntwo\n"], ["one\n", "two\n"], id="many-in-one-read"),
        pytest.param([b"typed\n", OSError(5, "EIO")], ["typed\n"], id="terminal-hung-up"),
        pytest.param([], [], id="nothing"),
    ],
)  # fmt: skip
async def test_lines_come_whole_and_end_with_the_input(
    chunks: list[bytes | OSError], lines: list[str]
) -> None:
    read, _ = reads(*chunks)
    assert await all_lines(read) == lines


@pytest.fixture
def blocked() -> Iterator[threading.Event]:
    """Set at the end of the test: a read waiting on it returns the end of input."""
    release = threading.Event()
    yield release
    release.set()


@pytest.mark.anyio
async def test_the_reader_reads_only_a_few_chunks_ahead_of_the_loop() -> None:
    taken = 0

    def read(size: int) -> bytes:
        nonlocal taken
        taken += 1
        return b"x" * 10 + b"\n"

    lines = ThreadLines(read)
    with anyio.fail_after(10):
        assert await lines.__anext__() == "x" * 10 + "\n"
        await anyio.wait_all_tasks_blocked()
    # one chunk taken by the loop, at most AHEAD more read and waiting for it
    assert taken <= 1 + ThreadLines.AHEAD


@pytest.mark.anyio
async def test_a_read_that_never_returns_does_not_hold_up_the_loop(
    blocked: threading.Event,
) -> None:
    def read(size: int) -> bytes:
        blocked.wait()
        return b""

    async def wait_for_a_line() -> None:
        await ThreadLines(read).__anext__()

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(wait_for_a_line)
            await anyio.wait_all_tasks_blocked()
            tasks.cancel_scope.cancel()  # a stop cancels whoever waits for a line
    readers = [t for t in threading.enumerate() if t.name == "sqlgate-stdin" and t.is_alive()]
    # still blocked, and the process will not wait for it when it exits
    assert readers
    assert all(t.daemon for t in readers)


def test_on_a_terminal_stdin_is_read_with_os_read(monkeypatch: pytest.MonkeyPatch) -> None:
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, b"from the descriptor\n")
        with os.fdopen(os.dup(read_end), "r") as stream:
            monkeypatch.setattr("sys.stdin", stream)
            read = stdio_transport._stdin_reader()
            assert read(100) == b"from the descriptor\n"
    finally:
        os.close(read_end)
        os.close(write_end)
