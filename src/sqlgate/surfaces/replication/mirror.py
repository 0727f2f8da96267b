"""The thread that keeps the witness log up with the witness file (witness_log.py).

It looks at the database's witness (`witness.json` in its records folder) every `interval`
seconds (a read of a small file) and runs a mirror pass over the chain in the records file
when it changed, or when the last pass waited for an append in flight. Every server, CLI
command and capture hook that appends rewrites that file, so one mirror follows the appends
of every process on the database.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import apsw

from sqlgate.errors import SqlgateError
from sqlgate.service import WitnessFile, connect_read_only, utc_timestamp
from sqlgate.surfaces.replication.witness_log import MirrorPass, WitnessLog, mirror_once

__all__ = ["WitnessMirror"]


class WitnessMirror:
    """`start()`, then `stop()` (which runs a last pass). `on_pass` hears every pass."""

    def __init__(
        self,
        db: Path,
        records: Path,
        log: WitnessLog,
        *,
        interval: float,
        on_pass: Callable[[MirrorPass], None],
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.db = db
        self.records = records  # the records file, where the memory chain lives
        self.log = log
        self.interval = interval
        self.on_pass = on_pass
        self.wall_clock = wall_clock
        self.witness = WitnessFile.beside(db)
        self._reader: apsw.Connection | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._seen: bytes | None = None
        self._waiting = True  # the next look runs a pass whatever the file holds

    def pass_now(self) -> MirrorPass:
        """One pass, now (also while the thread runs: passes never overlap)."""
        with self._lock:
            try:
                raw = self.witness.read_raw()
                if self._reader is None:
                    self._reader = connect_read_only(self.records)
                done = mirror_once(
                    self._reader, self.witness, self.log, utc_timestamp(self.wall_clock())
                )
            except (apsw.Error, SqlgateError) as exc:
                done = MirrorPass(0, self.log.last()[0], f"the mirror pass failed: {exc}")
            self._seen = raw
            self._waiting = done.waiting
        self.on_pass(done)
        return done

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="sqlgate-witness-mirror",
                                        daemon=True)  # fmt: skip
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                raw = self.witness.read_raw()
            except SqlgateError:
                raw = None
            if raw != self._seen or self._waiting:
                self.pass_now()

    def stop(self) -> MirrorPass:
        """Stop the thread, run a last pass, close the reader."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        done = self.pass_now()
        with self._lock:
            if self._reader is not None:
                self._reader.close()
                self._reader = None
        return done
