"""Litestream beside a server: started, watched, restarted, reported, stopped.

    replication = Replication(db, parse_target(url))
    replication.start()     # StartupError (exit 8) when the target cannot take the replica
    ...                     # serve
    replication.stop()      # a last mirror pass, then Litestream flushes and exits

Three files are replicated, each to its own path under the URL (docs/decisions.md,
"Replication of two files"): the user's database (`db/`), sqlgate's records of it
(`records/`: audit log, undo data, memory chain, members) and the witness log
(`witness/`). `start()` takes the lock in the records folder's `replication/` (one
replicating process per database), finds the binary, opens the witness log, checks the
target (probe.py), runs a first mirror pass, then starts the mirror thread and Litestream,
and returns once Litestream has started on all three files.

Litestream runs under a keeper (keeper.py), a small process in its own session (a Ctrl-C in
the terminal reaches the server, which then stops replication in order). The keeper holds
the read end of a pipe from the server: when the server stops replication, or is killed in
any way (SIGKILL, OOM), the pipe closes and the keeper sends Litestream one SIGTERM, so it
syncs what it has and exits: never an orphan, on any platform.

Its output goes to `replication/litestream.log` (a file, not a pipe: see `_spawn`); a
thread follows it: warnings and errors go to the server's stderr prefixed
`sqlgate: litestream:`, and the last error is kept in status.json. When Litestream exits on
its own, the server keeps serving (the database is whole; only its copy lags): the exit is
reported on stderr and in status.json (`restarting`, with the exit code and the last error,
shown by `sqlgate stats`), and Litestream is started again after a pause that grows with each
quick death (1, 2, 5, 15, 30, then 60 s; back to 1 s after a minute of running).
"""

from __future__ import annotations

import collections
import contextlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from sqlgate.errors import StartupError
from sqlgate.service import utc_timestamp
from sqlgate.surfaces.replication.litestream import Litestream, failure, find_litestream, parse_line
from sqlgate.surfaces.replication.mirror import WitnessMirror
from sqlgate.surfaces.replication.probe import check_target
from sqlgate.surfaces.replication.status import (
    ReplicationLock,
    records_file,
    replication_dir,
    write_status,
)
from sqlgate.surfaces.replication.target import (
    REPLICATED,
    SHUTDOWN_SYNC_SECONDS,
    ReplicaTarget,
    litestream_config,
    litestream_env,
    replicated_files,
)
from sqlgate.surfaces.replication.witness_log import MirrorPass, WitnessLog
from sqlgate.surfaces.terminal import one_line

__all__ = ["BACKOFF", "CHANGES", "Replication"]

BACKOFF = (1.0, 2.0, 5.0, 15.0, 30.0, 60.0)  # seconds before restart n; the last repeats
STEADY = 60.0  # a Litestream that ran this long died of something new: the pause starts over
_READY = "replicating to"  # what Litestream logs once per database it started on
LOG = "litestream.log"  # Litestream's output, in the records folder's replication/
KEEPER = "sqlgate.surfaces.replication.keeper"
KEEPER_SAYS = "keeper: "
# said the first time a database is replicated: --replicate is the consent, this the notice
CHANGES = (
    "Litestream keeps {db} in WAL mode and adds its tables _litestream_seq and "
    "_litestream_lock to it (the price of replicating the database itself; see "
    "docs/how-to/replication.md)"
)
LOG_BYTES = 10 * 1024 * 1024  # beyond this, the log is moved to litestream.log.1 at a start


def _close(process: subprocess.Popen[bytes]) -> None:
    if process.stdin is not None:
        with contextlib.suppress(OSError):  # the keeper is gone already
            process.stdin.close()


def _spawn(
    binary: Litestream | None, db: Path, folder: Path, config: Path, env: Mapping[str, str]
) -> tuple[subprocess.Popen[bytes], int]:
    """Start Litestream under its keeper (keeper.py), both writing to litestream.log;
    returns the keeper and the log's size before it (where their lines begin).

    Not a pipe for the output: a Go program writing to a broken pipe dies of SIGPIPE at
    once, so when the server is killed Litestream would die too, instead of syncing."""
    assert binary is not None
    args = [
        sys.executable, "-m", KEEPER, str(SHUTDOWN_SYNC_SECONDS + 5), str(db),
        str(binary.path), "replicate", "-no-expand-env", "-config", str(config),
    ]  # fmt: skip
    path = folder / LOG
    if path.exists() and path.stat().st_size > LOG_BYTES:
        path.replace(path.with_name(LOG + ".1"))
    with path.open("ab") as output:
        start = output.tell()
        process = subprocess.Popen(  # noqa: S603 - our keeper, our binary, our arguments
            args, stdin=subprocess.PIPE, stdout=output, stderr=subprocess.STDOUT,
            env=env, start_new_session=True,
        )  # fmt: skip
    return process, start


def _end(process: subprocess.Popen[bytes]) -> None:
    """Ask the keeper to stop (it sends Litestream SIGTERM), and wait: killed after a deadline."""
    _close(process)
    try:
        process.wait(timeout=SHUTDOWN_SYNC_SECONDS + 10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _stderr(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


class Replication:
    """Replicates `db` to `target` while started. See the module's docstring."""

    def __init__(
        self,
        db: Path,
        target: ReplicaTarget,
        *,
        binary: Litestream | None = None,
        emit: Callable[[str], None] = _stderr,
        backoff: Sequence[float] = BACKOFF,
        mirror_interval: float = 0.02,
        timeout: float = 20.0,
        lock_wait: float = 2.0,
        environ: Mapping[str, str] | None = None,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.db = db.absolute()
        self.target = target
        self.folder = replication_dir(self.db)
        self.records = records_file(self.db)
        self.binary = binary
        self.emit = emit
        self.backoff = tuple(backoff)
        self.mirror_interval = mirror_interval
        self.timeout = timeout
        self.lock_wait = lock_wait
        self.env = litestream_env(target, os.environ if environ is None else environ)
        self.wall_clock = wall_clock
        self.status: dict[str, Any] = {}
        self._lock = ReplicationLock(self.folder / "lock")
        self._state_lock = threading.Lock()
        self._stopping = threading.Event()
        self._started = threading.Event()
        self._ready = threading.Event()
        self._start_error: str | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._monitor: threading.Thread | None = None
        self._log: WitnessLog | None = None
        self._mirror: WitnessMirror | None = None
        self._recent: collections.deque[str] = collections.deque(maxlen=40)
        self._problem: str | None = None
        self._written = 0.0  # when status.json was last written (monotonic)
        self._started_dbs = 0  # databases the running Litestream said it started on
        self._litestream_pid: int | None = None  # as its keeper said
        self._exit_code: int | None = None  # Litestream's own, as its keeper said
        self._first = False  # the database was never replicated before this start

    # -- start and stop ------------------------------------------------------------------------
    def start(self) -> None:
        """Check everything, then start the mirror and Litestream. Raises StartupError."""
        if not self.records.is_file():
            raise StartupError(
                f"{self.db} is not a sqlgate database yet (no records of it at "
                f"{self.records}): serve the database once (`sqlgate serve --db PATH`) before "
                "replicating it"
            )
        self._first = not self.folder.exists()
        try:
            self.folder.mkdir(exist_ok=True)
        except OSError as exc:
            raise StartupError(f"cannot create {self.folder}: {exc.strerror}") from None
        self._lock.acquire(wait=self.lock_wait)
        try:
            self._start()
        except BaseException as exc:
            if self.status:
                self._record_error(f"start-up failed: {exc}")
            self._shutdown()
            raise

    def _start(self) -> None:
        binary = self.binary = self.binary or find_litestream()
        self._log = WitnessLog.open(self.folder / "witness-log")
        now = self._now()
        self.status = {
            "state": "starting", "url": self.target.url, "db": str(self.db), "pid": os.getpid(),
            "litestream": str(binary), "litestream_pid": None, "started_at": now,
            "updated_at": now, "restarts": 0, "last_error": None, "last_exit": None,
            "witness_log": {"last_id": self._log.last()[0], "problem": None},
        }  # fmt: skip
        self._write_status()
        check_target(self.target, binary, self.env, db=self.db, records=self.records,
                     log=self._log, folder=self.folder, timeout=self.timeout)  # fmt: skip
        config = self.folder / "litestream.json"
        files = replicated_files(self.db, self.records, self._log.path, self.folder)
        config.write_text(litestream_config(self.target, files), encoding="utf-8")
        self._mirror = WitnessMirror(
            self.db, self.records, self._log, interval=self.mirror_interval, on_pass=self._mirrored,
            wall_clock=self.wall_clock,
        )  # fmt: skip
        self._mirror.pass_now()  # the log is current before Litestream's first sync
        self._mirror.start()
        self._monitor = threading.Thread(target=self._supervise_safely, args=(config,),
                                         name="sqlgate-litestream", daemon=True)  # fmt: skip
        self._monitor.start()
        self._started.wait()
        if self._start_error is not None:
            raise StartupError(f"Litestream did not start: {self._start_error}")
        self.emit(f"sqlgate: replicating {self.db} to {self.target.url} with {binary}")
        if self._first:
            self.emit(f"sqlgate: replication: {CHANGES.format(db=self.db)}")

    def stop(self) -> None:
        """A last mirror pass, then Litestream syncs and exits (killed after a deadline)."""
        self._shutdown()

    def _shutdown(self) -> None:
        if self._stopping.is_set():
            return  # stopped already
        self._stopping.set()
        try:
            if self._mirror is not None:
                self._mirror.stop()
            process = self._process
            if process is not None and process.poll() is None:
                _end(process)  # the keeper sends Litestream SIGTERM: it syncs and exits
            if self._monitor is not None:
                self._monitor.join()
            if self._log is not None:
                self._log.close()
                self._log = None
            if self.status:
                self._update(state="stopped", litestream_pid=None)
        finally:
            self._lock.release()

    def __enter__(self) -> Replication:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- the child process ---------------------------------------------------------------------
    def _supervise_safely(self, config: Path) -> None:
        try:
            self._supervise(config)
        except Exception as exc:  # a bug must not leave start() waiting, nor pass in silence
            self._start_error = self._start_error or f"replication stopped: {exc!r}"
            self._record_error(f"replication stopped: {exc!r}")
            self.emit(f"sqlgate: replication: stopped by an unexpected error: {exc!r}")
        finally:
            self._started.set()

    def _supervise(self, config: Path) -> None:
        """The monitor thread: start Litestream (under its keeper), follow its log, restart
        it when it dies, until `stop()`."""
        failures = 0
        while not self._stopping.is_set():
            self._ready.clear()
            self._started_dbs = 0
            self._litestream_pid = None
            self._exit_code = None
            try:
                process, offset = _spawn(self.binary, self.db, self.folder, config, self.env)
            except OSError as exc:
                if not self._started.is_set():
                    self._start_error = f"cannot run {self.binary}: {exc.strerror or exc}"
                    self._started.set()
                    return
                self._record_error(f"cannot run Litestream: {exc.strerror or exc}")
                failures += 1
                if self._stopping.wait(self.backoff[min(failures, len(self.backoff)) - 1]):
                    return
                continue
            self._process = process
            began = time.monotonic()
            reader = threading.Thread(target=self._read, args=(process, offset),
                                      name="sqlgate-litestream-log", daemon=True)  # fmt: skip
            reader.start()
            if not self._started.is_set():
                self._await_ready(process, reader)
            else:
                self._update(state="running", litestream_pid=self._litestream_pid,
                             restarts=self.status["restarts"] + 1)  # fmt: skip
            kept = process.wait()
            reader.join()
            code = kept if self._exit_code is None else self._exit_code
            if self._stopping.is_set() or self._start_error is not None:
                return
            failures = 1 if time.monotonic() - began >= STEADY else failures + 1
            pause = self.backoff[min(failures, len(self.backoff)) - 1]
            why = self._last_error_text() or f"exit code {code}"
            self._update(state="restarting", litestream_pid=None,
                         last_exit={"at": self._now(), "code": code})  # fmt: skip
            self.emit(
                f"sqlgate: replication: Litestream exited with code {code} ({one_line(why)}); "
                f"the server goes on serving; restarting it in {pause:g} s"
            )
            if self._stopping.wait(pause):
                return

    def _await_ready(self, process: subprocess.Popen[bytes], reader: threading.Thread) -> None:
        """Tell `start()` once Litestream started on every file, or why it did not."""
        deadline = time.monotonic() + self.timeout
        while not self._ready.wait(0.05):
            if process.poll() is not None or time.monotonic() >= deadline:
                _end(process)  # the keeper stops Litestream, if it runs at all
                reader.join()  # its last lines say why (or that it did start, then died)
                if not self._ready.is_set():
                    self._start_error = failure("\n".join(self._recent))
                break
        if self._start_error is None:
            self._update(state="running", litestream_pid=self._litestream_pid)
        self._started.set()

    def _read(self, process: subprocess.Popen[bytes], offset: int) -> None:
        """Follow Litestream's lines in litestream.log from `offset` until it has exited."""
        with (self.folder / LOG).open("rb") as log:
            log.seek(offset)
            pending = b""
            while True:
                chunk = log.readline()
                if chunk:
                    pending += chunk
                    if pending.endswith(b"\n"):
                        self._line(pending.decode("utf-8", "replace").rstrip("\n"))
                        pending = b""
                    continue
                if process.poll() is not None:
                    if pending:
                        self._line(pending.decode("utf-8", "replace"))
                    return
                self._stopping.wait(0.05)  # no new line yet: look again soon

    def _line(self, line: str) -> None:
        """One line of Litestream's (or its keeper's): said, kept, and counted when it
        reports a start."""
        if line.startswith(KEEPER_SAYS):
            self._keeper_line(line.removeprefix(KEEPER_SAYS))
            return
        self._recent.append(line)
        level, text = parse_line(line)
        if level == "INFO" and text.startswith(_READY):
            self._started_dbs += 1
            if self._started_dbs >= len(REPLICATED):
                self._ready.set()
        if level in ("WARN", "ERROR") or (level is None and line.strip()):
            self.emit(f"sqlgate: litestream: {one_line(text, 400)}")
        if level == "ERROR" or line.startswith("Error: "):
            self._record_error(failure(line))

    def _keeper_line(self, text: str) -> None:
        if text.startswith("litestream pid "):
            self._litestream_pid = int(text.rsplit(" ", 1)[1])
            if self._started.is_set():
                self._update(litestream_pid=self._litestream_pid)
        elif text.startswith("litestream exited with code "):
            self._exit_code = int(text.rsplit(" ", 1)[1])

    # -- status --------------------------------------------------------------------------------
    def _mirrored(self, done: MirrorPass) -> None:
        """After each mirror pass: a new problem is said once; the position is kept."""
        if done.problem is not None and done.problem != self._problem:
            self.emit(f"sqlgate: replication: witness log: {one_line(done.problem, 400)}")
        self._problem = done.problem
        current = self.status.get("witness_log") or {}
        if current.get("last_id") != done.last_id or current.get("problem") != done.problem:
            self._update(witness_log={"last_id": done.last_id, "problem": done.problem},
                         throttle=done.problem is None)  # fmt: skip

    def _record_error(self, message: str) -> None:
        self._update(last_error={"at": self._now(), "message": one_line(message, 400)})

    def _last_error_text(self) -> str | None:
        error = self.status.get("last_error")
        return None if not error else str(error.get("message"))

    def _update(self, *, throttle: bool = False, **changes: Any) -> None:
        with self._state_lock:
            self.status.update(changes)
            now = time.monotonic()
            if throttle and now - self._written < 1.0:
                return
            self._written = now
            self.status["updated_at"] = self._now()
            self._write_status()

    def _write_status(self) -> None:
        try:
            write_status(self.folder, self.status)
        except OSError as exc:
            self.emit(f"sqlgate: replication: cannot write {self.folder}/status.json: {exc}")

    def _now(self) -> str:
        return utc_timestamp(self.wall_clock())
