"""`sqlgate restore URL --to PATH`: a replica back as a new database, and what can be proven
about its memory chain.

1. Nothing is overwritten: PATH, its -wal/-shm, its witness file and its `.replication/`
   folder must not exist.
2. Litestream restores the database (the newest state the replica holds) to PATH, and the
   witness log to `PATH.replication/witness-log`.
3. The restored chain is held against the witness log, and against a witness kept elsewhere
   if one is given (verdict.py).
4. Unless a witness disagrees with the chain, the chain records the restore: one event of
   kind `restore` (memory/restore_record.py) saying where the copy came from and, when a
   witness named events the replica lacks, `rolled back from event N to M`, so `sqlgate
   verify` on the copy never presents a shortened chain as whole. `PATH.witness.json` is
   written for that event, its verified position being the last witnessed event, so the
   copy can be served and verified like any database (the restore itself is the trust
   decision; its verdict says what it rests on).
5. The whole chain is then verified (every hash and link, and the witness just written).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import apsw

from sqlgate.config import Settings
from sqlgate.errors import InvalidArgument, NotFound, SqlgateError, StartupError
from sqlgate.service import (
    ChainStatus,
    Witness,
    WitnessFile,
    append_restore_event,
    connect_read_only,
    holds_chain,
    immediate_transaction,
)
from sqlgate.surfaces.replication.litestream import Litestream, failure, find_litestream
from sqlgate.surfaces.replication.probe import NO_BACKUP
from sqlgate.surfaces.replication.status import replication_dir
from sqlgate.surfaces.replication.target import ReplicaTarget, litestream_config, litestream_env
from sqlgate.surfaces.replication.verdict import WitnessVerdict, judge
from sqlgate.surfaces.replication.witness_log import WitnessLog

__all__ = ["Restored", "restore_replica"]

RESTORE_TIMEOUT = 24 * 3600.0  # a restore runs as long as the download takes


@dataclass(frozen=True)
class Restored:
    db: Path
    url: str
    txid: str | None  # Litestream's transaction id of the restored state
    verdict: WitnessVerdict
    chain: ChainStatus
    witness_written: bool
    log_problem: str | None = None  # why the witness log could not be restored, if so
    recorded: int | None = None  # the memory event recording the restore

    @property
    def ok(self) -> bool:
        return self.chain.ok and self.verdict.mismatch is None

    def as_dict(self) -> dict[str, object]:
        return {
            "db": str(self.db),
            "url": self.url,
            "txid": self.txid,
            "ok": self.ok,
            "witnessed": self.ok and self.verdict.witnessed,
            "chain": self.chain.as_dict(),
            "witness": self.verdict.as_dict(),
            "witness_log_problem": self.log_problem,
            "witness_written": self.witness_written,
            "recorded_event": self.recorded,
        }


def _refuse_existing(to: Path) -> None:
    taken = [
        path
        for path in (
            to,
            to.with_name(to.name + "-wal"),
            to.with_name(to.name + "-shm"),
            WitnessFile.beside(to).path,
            replication_dir(to),
        )
        if path.exists() or path.is_symlink()
    ]
    if taken:
        raise InvalidArgument(
            f"{taken[0]} exists; restore never overwrites anything: choose a new --to path, "
            "or move the old files away"
        )


def _kept_witness(path: Path | None) -> Witness | None:
    if path is None:
        return None
    try:
        kept = WitnessFile(path).read()
    except SqlgateError as exc:
        raise InvalidArgument(f"--witness {path}: {exc}") from None
    if kept is None:
        raise NotFound(f"--witness {path}: no such file")
    return kept


def restore_replica(
    target: ReplicaTarget,
    to: Path,
    *,
    witness: Path | None = None,
    binary: Litestream | None = None,
    environ: Mapping[str, str] | None = None,
    timeout: float = RESTORE_TIMEOUT,
) -> Restored:
    """Restore `target` into the new database `to`; see the module's docstring."""
    to = to.absolute()
    _refuse_existing(to)
    kept = _kept_witness(witness)
    binary = binary or find_litestream()
    env = litestream_env(target, os.environ if environ is None else environ)
    folder = replication_dir(to)
    try:
        to.parent.mkdir(parents=True, exist_ok=True)
        folder.mkdir()
    except OSError as exc:
        raise StartupError(f"cannot create {folder}: {exc.strerror or exc}") from None
    try:
        return _restore(target, to, folder, kept, witness, binary, env, timeout)
    except BaseException:
        for path in (to, to.with_name(to.name + "-wal"), to.with_name(to.name + "-shm")):
            path.unlink(missing_ok=True)
        WitnessFile.beside(to).path.unlink(missing_ok=True)
        shutil.rmtree(folder, ignore_errors=True)
        raise


def _restore(
    target: ReplicaTarget,
    to: Path,
    folder: Path,
    kept: Witness | None,
    kept_path: Path | None,
    binary: Litestream,
    env: Mapping[str, str],
    timeout: float,
) -> Restored:
    log_path = folder / "witness-log"
    config = folder / "litestream.json"
    config.write_text(litestream_config(target, [
        (to, "db", folder / "db-meta"), (log_path, "witness", folder / "witness-meta"),
    ]), encoding="utf-8")  # fmt: skip
    command = ["restore", "-json", "-no-expand-env", "-config", str(config)]
    done = binary.run([*command, str(to)], env=env, timeout=timeout)
    if not done.ok:
        if NO_BACKUP in done.output:
            raise NotFound(f"{target.url} holds no database replica (nothing under db/); check "
                           "the URL")  # fmt: skip
        why = "no answer in time" if done.returncode is None else failure(done.output)
        raise StartupError(f"cannot restore from {target.url}: {why}")
    txid = _txid(done.output)
    log: WitnessLog | None = None
    log_problem: str | None = None
    restored_log = binary.run([*command, str(log_path)], env=env, timeout=timeout)
    if restored_log.ok:
        log = WitnessLog.open(log_path, read_only=True)
    elif NO_BACKUP not in restored_log.output:
        log_problem = failure(restored_log.output)
    try:
        reader = connect_read_only(to)
        try:
            if not holds_chain(reader):
                raise StartupError(f"the replica at {target.url} is not a sqlgate database")
            verdict = judge(reader, log, kept, f"--witness {kept_path}")
        finally:
            reader.close()
    finally:
        if log is not None:
            log.close()
    written = verdict.mismatch is None
    recorded: int | None = None
    if written:
        recorded, digest = _record(to, target.url, verdict)
        WitnessFile.beside(to).write(Witness(
            recorded, digest, verdict.witnessed_id, verdict.witnessed_hash,
        ))  # fmt: skip
    config.unlink(missing_ok=True)
    return Restored(to, target.url, txid, verdict, _verify(to), written, log_problem, recorded)


def _record(to: Path, url: str, verdict: WitnessVerdict) -> tuple[int, str]:
    """Append the restore's event to the copy: (its id, its hash)."""
    if verdict.lost is not None:
        first = (
            f"rolled back from event {verdict.lost[1]} to {verdict.head_id} by sqlgate restore "
            f"from {url}"
        )
        detail = (
            f"events {verdict.lost[0]} to {verdict.lost[1]} were witnessed but are not in the "
            "replica (written in the last moments before replication stopped)"
        )
    else:
        first = f"restored from the replica at {url} with every event a witness named"
        detail = f"the copy ends at event {verdict.head_id}"
    conn = apsw.Connection(str(to))
    try:
        with immediate_transaction(conn):
            event_id, digest, _ = append_restore_event(
                conn, "restore", time.time, f"{first}; {detail}"
            )
    finally:
        conn.close()
    return event_id, digest


def _txid(output: str) -> str | None:
    try:
        summary = json.loads(output[output.index("{") : output.rindex("}") + 1])
    except ValueError:
        return None
    txid = summary.get("txid") if isinstance(summary, dict) else None
    return txid if isinstance(txid, str) else None


def _verify(db: Path) -> ChainStatus:
    """`sqlgate verify` on the restored copy (read-only: nothing is recorded)."""
    from sqlgate.service import Service

    with Service.open(Settings(db=db), session="restore", read_only=True) as service:
        return service.memory.chain.verify()
