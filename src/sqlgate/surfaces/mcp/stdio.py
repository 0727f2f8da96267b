"""MCP over stdin and stdout: bounded lines in, an answer for every line, messages out.

    stdin, stdout     how lines are read                    how messages are written
    pipes or sockets  from the event loop (`_PipeLines`),   `_PipeWriter`, non-blocking
    on POSIX          non-blocking: no thread hops
    anything else     in a daemon thread (`_ThreadLines`)   the SDK's transport
    (terminal, file,  never joined, so it cannot hold
    Windows)          up a stop (`surfaces.stops`)

Either way a line is at most MAX_REQUEST_BYTES (4 MiB, as over HTTP): a longer one is
counted and scanned for its id but never kept. Every line is screened
(`jsonrpc_guard.screen`) before the SDK parses it; one the SDK could not serve reaches it
as an `Unreadable` stand-in, which `AnsweringStream` turns into a JSON-RPC error with the
request's id. (The SDK alone logs such a line and drops it: the client waited forever.)

While serving, stray output cannot corrupt the protocol: on pipes fd 0 and 1 point at the
null device and stderr (`_claimed_pipes`), elsewhere the SDK diverts fd 1. On that path fd 0
stays the wire, read with `os.read`; nothing in sqlgate reads stdin.
"""

from __future__ import annotations

import functools
import logging
import os
import stat
import sys
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager, suppress
from types import TracebackType
from typing import Any, cast

import anyio
import anyio.from_thread
import anyio.lowlevel
from anyio.streams.memory import MemoryObjectReceiveStream
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp.types import PARSE_ERROR
from pydantic import ValidationError

from sqlgate.surfaces.mcp.jsonrpc_guard import (
    MAX_REQUEST_BYTES,
    Rejection,
    RequestIdScan,
    Unreadable,
    oversized,
    rejection_for,
    screen,
)

__all__ = ["AnsweringStream", "serve_stdio"]

log = logging.getLogger("sqlgate")
CHUNK = 1 << 16


class _Lines:
    """Whole lines from chunks of bytes, each line at most `limit` bytes.

    Whole lines wait in `ready`; an unfinished one is kept as a list of pieces, so a long
    line costs time in proportion to its length. A line past the limit is no longer kept:
    its bytes are counted and scanned for the request's id, and it becomes an
    `Unreadable` stand-in answering that it is too large.
    """

    def __init__(self, limit: int = MAX_REQUEST_BYTES) -> None:
        self.limit = limit
        self.ready: deque[str] = deque()
        self._partial: list[bytes] = []
        self._size = 0
        self._scan: RequestIdScan | None = None

    def take(self, chunk: bytes) -> None:
        *complete, rest = chunk.split(b"\n")
        for piece in complete:
            self._add(piece)
            self._end_line(b"\n")
        if rest:
            self._add(rest)

    def finish(self) -> None:
        """The input ended: a last line without its newline still counts."""
        if self._partial or self._scan is not None:
            self._end_line(b"")

    def _add(self, piece: bytes) -> None:
        if self._scan is None and self._size + len(piece) > self.limit:
            self._scan = RequestIdScan()
            for kept in self._partial:
                self._scan.feed(kept)
            self._partial = []
        if self._scan is not None:
            self._scan.feed(piece)
        else:
            self._partial.append(piece)
        self._size += len(piece)

    def _end_line(self, newline: bytes) -> None:
        if self._scan is not None:
            self.ready.append(Unreadable(oversized(self._scan)))
        else:
            line = b"".join(self._partial) + newline
            self.ready.append(line.decode("utf-8", errors="replace"))
        self._partial, self._size, self._scan = [], 0, None


class _PipeLines:
    """Lines from a non-blocking pipe, read when the event loop says it is readable."""

    def __init__(self, fd: int, limit: int = MAX_REQUEST_BYTES) -> None:
        self._fd = fd
        self._lines = _Lines(limit)

    def __aiter__(self) -> _PipeLines:
        return self

    async def __anext__(self) -> str:
        while not self._lines.ready:
            await anyio.wait_readable(self._fd)
            try:
                chunk = os.read(self._fd, CHUNK)
            except BlockingIOError:
                continue
            if not chunk:
                self._lines.finish()
                break
            self._lines.take(chunk)
        if not self._lines.ready:
            raise StopAsyncIteration
        return self._lines.ready.popleft()


class _ThreadLines:
    """Lines from a blocking reader (a terminal, a file), read by a daemon thread.

    `read(n)` is `os.read` on the descriptor: no buffered reader, whose lock a thread
    blocked in it would hold while the interpreter needs it at exit. The thread reads at
    most AHEAD chunks before the event loop took them and hands each over with a plain
    callback on the loop (never a task that could be left pending when the loop ends); it
    is never joined, so a read blocked until a person types cannot hold up a stop, and a
    second Ctrl-C finds nothing to abort. It starts at the first line asked for; a chunk
    it read when the loop ended is lost with the process.
    """

    AHEAD = 4

    def __init__(self, read: Callable[[int], bytes], limit: int = MAX_REQUEST_BYTES) -> None:
        self._read = read
        self._lines = _Lines(limit)
        self._chunks: MemoryObjectReceiveStream[bytes] | None = None
        self._room = threading.Semaphore(self.AHEAD)
        self._ended = False

    def __aiter__(self) -> _ThreadLines:
        return self

    def _start(self) -> MemoryObjectReceiveStream[bytes]:
        send, receive = anyio.create_memory_object_stream[bytes](self.AHEAD)
        token = anyio.lowlevel.current_token()

        def pump() -> None:
            while True:
                self._room.acquire()  # taken back by the loop as it takes each chunk
                try:
                    chunk = self._read(CHUNK)
                except OSError:  # EIO: the terminal hung up; EBADF: stdin was closed
                    chunk = b""
                try:
                    anyio.from_thread.run_sync(send.send_nowait, chunk, token=token)
                except BaseException:  # the loop ended, or no one reads any more: done
                    return
                if not chunk:  # the end was handed over
                    return

        threading.Thread(target=pump, name="sqlgate-stdin", daemon=True).start()
        return receive

    async def __anext__(self) -> str:
        if self._chunks is None:
            self._chunks = self._start()
        while not self._lines.ready and not self._ended:
            chunk = await self._chunks.receive()
            self._room.release()
            if not chunk:  # the end: the thread has stopped reading
                self._ended = True
                self._lines.finish()
            else:
                self._lines.take(chunk)
        if not self._lines.ready:
            raise StopAsyncIteration
        return self._lines.ready.popleft()


async def _screened(lines: AsyncIterator[str]) -> AsyncIterator[str]:
    """Each line as it is when the SDK can serve it, else an `Unreadable` stand-in."""
    async for line in lines:
        if isinstance(line, Unreadable):
            yield line
        elif line.strip():  # a blank line is no message: skipped, as before
            rejection = screen(line)
            yield line if rejection is None else Unreadable(rejection)


class _PipeWriter:
    """Writes whole messages to a non-blocking pipe, waiting while it is full."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    async def write(self, text: str) -> None:
        data = memoryview(text.encode("utf-8"))
        while data:
            try:
                data = data[os.write(self._fd, data) :]
            except BlockingIOError:
                await anyio.wait_writable(self._fd)

    async def flush(self) -> None:
        """Nothing is buffered: `write` returns once the pipe has every byte."""


class AnsweringStream:
    """The SDK's read stream, but what it could not parse is answered, not passed on.

    The SDK puts a line it cannot parse on the stream as an exception, which its
    dispatcher only logs; here each one becomes a JSON-RPC error on `answers`.
    """

    def __init__(self, inner: Any, answers: Any) -> None:
        self._inner = inner
        self._answers = answers

    @property
    def last_context(self) -> Any:  # the SDK's dispatcher reads it after each message
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        while True:
            item = await self._inner.receive()
            if not isinstance(item, Exception):
                return item
            await self._answer(_rejection_of(item))

    async def _answer(self, rejection: Rejection) -> None:
        log.warning("refused a message (%s): %s", rejection.code, rejection.message[:200])
        # when the connection is closing there is no one left to answer
        with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            await self._answers.send(SessionMessage(rejection.as_error()))

    def __aiter__(self) -> AnsweringStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> AnsweringStream:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()


def _rejection_of(exc: Exception) -> Rejection:
    """The answer to a line the SDK could not parse: the stand-in's own, or worked out."""
    if isinstance(exc, ValidationError):
        errors = exc.errors(include_url=False)
        line = errors[0].get("input") if errors else None
        if isinstance(line, Unreadable):
            return line.rejection
        if isinstance(line, str):
            return rejection_for(exc, line.encode("utf-8", "surrogatepass"))
    return Rejection(PARSE_ERROR, f"the message could not be read ({type(exc).__name__})")


def _stdin_reader() -> Callable[[int], bytes]:
    """`os.read` on stdin's descriptor; the buffer's `read1` when it has none."""
    try:
        fd = sys.stdin.fileno()
    except (AttributeError, OSError, ValueError):
        buffer: Any = sys.stdin.buffer
        return cast("Callable[[int], bytes]", buffer.read1)
    return functools.partial(os.read, fd)


def _is_pipe(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


@contextmanager
def _claimed_pipes() -> Iterator[tuple[int, int] | None]:
    """The wire's stdin and stdout as private non-blocking descriptors, or None.

    Like the SDK's own transport, fd 0 and 1 point at the null device and stderr while
    serving, so stray output from a library or a child process cannot corrupt the
    protocol; both are restored (and made blocking again) on the way out.
    """
    if sys.platform == "win32" or not (_is_pipe(0) and _is_pipe(1)):
        yield None
        return
    import fcntl

    wire_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    wire_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        sys.stdout.flush()
        os.dup2(null, 0)
        os.dup2(2, 1)
        os.set_blocking(wire_in, False)
        os.set_blocking(wire_out, False)
        yield wire_in, wire_out
    finally:
        for fd in (wire_in, wire_out):
            os.set_blocking(fd, True)
        os.dup2(wire_in, 0)
        os.dup2(wire_out, 1)
        for fd in (null, wire_in, wire_out):
            os.close(fd)


async def serve_stdio(server: Server[Any]) -> None:
    """Serve `server` (the SDK's low-level server) over stdin and stdout until stdin ends."""
    with _claimed_pipes() as wire:
        lines: AsyncIterator[str]
        writer: _PipeWriter | None
        if wire is None:
            lines, writer = _ThreadLines(_stdin_reader()), None  # the SDK writes stdout
        else:
            lines, writer = _PipeLines(wire[0]), _PipeWriter(wire[1])
        # the SDK's transport takes any object with async line iteration, write and flush
        stdin = cast("anyio.AsyncFile[str]", _screened(lines))
        stdout = cast("anyio.AsyncFile[str] | None", writer)
        async with stdio_server(stdin, stdout) as (read_stream, write_stream):
            await server.run(
                cast(Any, AnsweringStream(read_stream, write_stream)),
                write_stream,
                server.create_initialization_options(),
            )
