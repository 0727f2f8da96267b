"""How the long-running commands stop: Ctrl-C and SIGTERM, the same for each of them.

    signal   who sends it                                exit status
    SIGINT   a person: Ctrl-C on the terminal            130 (128 + 2: "interrupted")
    SIGTERM  `kill`, a supervisor, a service manager     0   (a normal end: all was saved)

`serve` (stdio and http), `ui` and `replicate` run inside `stop_signals()`, which holds
both signals for the whole command, through three phases:

    starting   the first signal raises `StopRequested` where the main thread is: the
               `finally` blocks close what was opened on the way out; nothing more starts
    serving    (`Stops.serving`) the first signal asks the server to stop: the stdio
               server's task group is cancelled by `serve_until_stopped`, whose cancellation
               interrupts a running statement (`tooling.run_tool`); uvicorn is told to exit;
               `replicate`'s wait ends. Nothing is raised in the middle of the main thread
    stopping   every later signal is noted and otherwise ignored, so the clean-up runs
               whole (audit rows written, the database closed, Litestream's last sync); a
               second Ctrl-C never interrupts it nor aborts the interpreter. After a stop
               both signals are left ignored (SIG_IGN): the process is ending

The clean-up is the `finally` work of a normal end; a command then ends with the first
signal's status (`exit_code_for`). The handler takes no lock and writes through no buffered
stream, since the main thread may hold either when a signal arrives: it records the signal,
writes one byte to a wake-up pipe (what `wait` and `wait_async` wait on) and its notice
(`sqlgate: stopping (Ctrl-C)`) with `os.write`.
"""

from __future__ import annotations

import os
import select
import signal
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from types import FrameType

__all__ = [
    "STOP_EXIT",
    "StopRequested",
    "StopSignal",
    "Stops",
    "exit_code_for",
    "serve_until_stopped",
    "stop_signals",
]

# the signals a command stops on, and the status it then ends with
STOP_EXIT: dict[int, int] = {signal.SIGINT: 130, signal.SIGTERM: 0}


def exit_code_for(signum: int | None) -> int:
    """The exit status of a command stopped by `signum` (None: it ended on its own)."""
    return 0 if signum is None else STOP_EXIT[signum]


@dataclass(frozen=True)
class StopSignal:
    signum: int

    @property
    def key(self) -> str:
        """How a person names it: the key they pressed, or the signal's name."""
        return "Ctrl-C" if self.signum == signal.SIGINT else signal.Signals(self.signum).name

    @property
    def exit_code(self) -> int:
        return exit_code_for(self.signum)


class StopRequested(BaseException):
    """A stop signal while the command was starting. A BaseException, as KeyboardInterrupt
    is: `except Exception` does not swallow it, and `stop_signals` ends the command."""

    def __init__(self, signum: int) -> None:
        super().__init__(StopSignal(signum).key)
        self.signum = signum


class Stops:
    """The stop signals one command received; made by `stop_signals()`."""

    def __init__(self) -> None:
        self.first: int | None = None
        self._phase = "starting"
        self._on_stop: Callable[[int], None] | None = None
        self._wake_read, self._wake_write = os.pipe()
        os.set_blocking(self._wake_read, False)
        os.set_blocking(self._wake_write, False)

    @property
    def stopped(self) -> bool:
        return self.first is not None

    @property
    def exit_code(self) -> int:
        return exit_code_for(self.first)

    def note(self, signum: int) -> bool:
        """Record a stop signal (and say so, the first time); True if it was the first.

        Safe in a signal handler. Servers with their own handlers (uvicorn) call it too."""
        first = self.first is None
        if first:
            self.first = signum
            with suppress(OSError):  # stderr closed: stop all the same
                os.write(2, f"sqlgate: stopping ({StopSignal(signum).key})\n".encode())
        with suppress(OSError):  # BlockingIOError: a byte waits already
            os.write(self._wake_write, b"\0")
        return first

    def handle(self, signum: int, frame: FrameType | None) -> None:
        """The signal handler (installed by `stop_signals`)."""
        if not self.note(signum) or self._phase == "stopping":
            return
        phase, self._phase = self._phase, "stopping"
        if phase == "starting":
            raise StopRequested(signum)
        if self._on_stop is not None:
            self._on_stop(signum)

    @contextmanager
    def serving(self, on_stop: Callable[[int], None] | None = None) -> Iterator[None]:
        """While inside, a stop calls `on_stop(signum)` (from the signal handler: it may only
        set a flag) and wakes the waiters, instead of raising; once out, stops are noted only.
        """
        if self._phase != "starting":
            raise RuntimeError("serving() is entered once, while starting")
        self._phase, self._on_stop = "serving", on_stop
        try:
            yield
        finally:
            self._phase, self._on_stop = "stopping", None

    def wait(self, timeout: float | None = None) -> bool:
        """Block until a stop signal came (True) or `timeout` seconds passed (False)."""
        while not self.stopped:
            try:
                ready, _, _ = select.select([self._wake_read], [], [], timeout)
            except InterruptedError:  # pragma: no cover - retried by Python itself (PEP 475)
                continue
            if not ready:
                return self.stopped
        return True

    async def wait_async(self) -> int:
        """Wait on the event loop until a stop signal came; returns it."""
        import anyio

        while self.first is None:
            await anyio.wait_readable(self._wake_read)
            with suppress(BlockingIOError):
                os.read(self._wake_read, 64)
        return self.first

    def close(self) -> None:
        for fd in (self._wake_read, self._wake_write):
            os.close(fd)


async def serve_until_stopped(stops: Stops, main: Callable[[], Awaitable[None]]) -> None:
    """Run `main` until it returns or a stop signal comes; then it is cancelled and this
    returns once its cancellation finished (its tasks' clean-up included)."""
    import anyio

    failure: BaseException | None = None

    async def run() -> None:
        nonlocal failure
        try:
            await main()
        except Exception as exc:  # kept whole: a task group would wrap it in a group
            failure = exc
        tasks.cancel_scope.cancel()

    async def watch() -> None:
        await stops.wait_async()
        tasks.cancel_scope.cancel()

    with stops.serving():
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(watch)
            tasks.start_soon(run)
    if failure is not None:
        raise failure


@contextmanager
def stop_signals() -> Iterator[Stops]:
    """Hold SIGINT and SIGTERM for a command (the three phases above), then end it with the
    first one's status: `SystemExit(130)` after Ctrl-C, a normal return after SIGTERM.

    Off the main thread (signals cannot be handled there) the signals are left alone."""
    stops = Stops()
    handled = threading.current_thread() is threading.main_thread()
    previous = {}
    if handled:
        previous = {signum: signal.signal(signum, stops.handle) for signum in STOP_EXIT}
    try:
        try:
            yield stops
        except StopRequested:
            pass
        except KeyboardInterrupt:  # raised by another handler (a library's) before ours
            stops.note(signal.SIGINT)
    finally:
        for signum, handler in previous.items():
            # once stopped the process is ending: a later signal must neither raise on its
            # way out nor kill it (Python gives SIG_DFL back to its handled signals as it
            # finalizes: a Ctrl-C then would end it by SIGINT, not with its status)
            signal.signal(signum, signal.SIG_IGN if stops.stopped else handler)
        stops.close()
    if stops.exit_code:
        raise SystemExit(stops.exit_code)
