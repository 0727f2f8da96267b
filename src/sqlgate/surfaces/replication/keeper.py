"""Litestream's keeper: a small single-threaded process between the server and Litestream.

    python -m sqlgate.surfaces.replication.keeper SECONDS DB LITESTREAM ARGS...

It starts Litestream, whose output goes where the keeper's goes, says
`keeper: litestream pid N`, then waits for whichever comes first:

- its standard input closes: the server stopped replication, or the server died (the kernel
  closes the pipe however a process ends, SIGKILL included, on every platform). The keeper
  runs one last witness mirror pass for DB (witness_log.py: the server's own mirror may have
  died with it), then Litestream gets SIGTERM, once, syncs every file and exits; after
  SECONDS it is killed;
- Litestream exits on its own.

Either way the keeper says `keeper: litestream exited with code N` (negative: killed by
that signal, as Python reports it) and exits with the same status.

Why a keeper, and not Linux's PR_SET_PDEATHSIG on Litestream itself: that signal is sent
each time the *thread* that started the child ends, and a server's threads end one by one
when it is killed, so Litestream got SIGTERM twice, and a second signal makes Litestream
0.5 skip its shutdown sync ("interrupted by signal"): the last second of writes was lost. A
keeper has one thread (two on Windows, which has no such signal) and sends one signal.
Litestream is still started with PR_SET_PDEATHSIG on Linux (its parent, the keeper, has one
thread: one signal), in case the keeper itself is killed.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence

PREFIX = "keeper: "


def _pdeathsig() -> Callable[[], None] | None:
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # pragma: no cover - a libc without prctl
        return None
    parent = os.getpid()

    def die_with_keeper() -> None:  # pragma: no cover - runs between fork and exec
        prctl(1, signal.SIGTERM, 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
        if os.getppid() != parent:
            os.kill(os.getpid(), signal.SIGTERM)

    return die_with_keeper


def _say(text: str) -> None:
    sys.stdout.write(PREFIX + text + "\n")
    sys.stdout.flush()


def _input_closed(timeout: float) -> bool:
    """Whether standard input reached its end (waiting up to `timeout` for news)."""
    if sys.platform == "win32":  # select() takes sockets only there: a thread reads instead
        return _closed.wait(timeout)
    ready, _, _ = select.select([sys.stdin.fileno()], [], [], timeout)
    return bool(ready) and not os.read(sys.stdin.fileno(), 4096)


_closed = threading.Event()


def _read_to_end() -> None:  # pragma: no cover - Windows
    while sys.stdin.buffer.read(4096):
        pass
    _closed.set()


def _last_pass(db: str) -> None:
    """Log what the witness names that the log does not hold yet (sqlgate is imported only
    now: the keeper stays small while it waits)."""
    try:
        import time
        from pathlib import Path

        from sqlgate.service import WitnessFile, connect_read_only, utc_timestamp
        from sqlgate.surfaces.replication.status import records_file, replication_dir
        from sqlgate.surfaces.replication.witness_log import WitnessLog, mirror_once

        path = Path(db)
        log = WitnessLog.open(replication_dir(path) / "witness-log")
        reader = connect_read_only(records_file(path))
        try:
            done = mirror_once(reader, WitnessFile.beside(path), log, utc_timestamp(time.time()))
        finally:
            reader.close()
            log.close()
        _say(f"last witness pass: the log is at event {done.last_id}")
    except Exception as exc:  # the sync matters more: say it and go on
        _say(f"last witness pass failed: {exc}")


def main(argv: Sequence[str]) -> int:
    deadline, db, command = float(argv[0]), argv[1], list(argv[2:])
    child = subprocess.Popen(  # noqa: S603 - the command the server gave
        command, stdin=subprocess.DEVNULL, preexec_fn=_pdeathsig()
    )
    _say(f"litestream pid {child.pid}")
    if sys.platform == "win32":  # pragma: no cover
        threading.Thread(target=_read_to_end, daemon=True).start()
    while child.poll() is None:
        if _input_closed(0.2):
            _last_pass(db)
            child.send_signal(signal.SIGTERM)
            try:
                child.wait(deadline)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
            break
    code = child.returncode
    _say(f"litestream exited with code {code}")
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the server decides when to stop
    sys.exit(main(sys.argv[1:]))
