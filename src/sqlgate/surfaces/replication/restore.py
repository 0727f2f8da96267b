"""`sqlgate restore URL --to PATH`: a replica back as a new database with its records, and
what can be proven about its memory chain.

1. Nothing is overwritten: PATH, its -wal/-shm, and its records (the records file, witness
   and `replication/` of PATH's records folder, `sqlgate.home`) must not exist.
2. Litestream restores the user's database (`db/` under the URL, the newest state the
   replica holds) to PATH, sqlgate's records (`records/`) into PATH's records folder, and
   the witness log (`witness/`) to that folder's `replication/witness-log`. A URL holding
   `db/` alone is sqlgate 0.1.0's layout (one file with sqlgate's tables inside): refused,
   saying so (target.py).
3. The restored chain (in the records) is held against the witness log, and against a
   witness kept elsewhere if one is given (verdict.py).
4. Unless a witness disagrees with the chain, the chain records the restore: one event of
   kind `restore` (memory/restore_record.py) saying where the copy came from and, when a
   witness named events the replica lacks, `rolled back from event N to M`, so `sqlgate
   verify` on the copy never presents a shortened chain as whole. The records folder's
   witness is written for that event, its verified position being the last witnessed
   event, so the copy can be served and verified like any database (the restore itself is
   the trust decision; its verdict says what it rests on).
5. The whole chain is then verified (every hash and link, and the witness just written).

The two files are replicated independently (each about once a second), so the restored
records and database may differ by the last moments' writes; undo compares rows with the
state its record saw before it changes anything (docs/decisions.md).
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
from sqlgate.home import RecordFiles, record_files
from sqlgate.service import (
    ChainStatus,
    Witness,
    WitnessFile,
    append_restore_event,
    connect_read_only,
    holds_chain,
    immediate_transaction,
)
from sqlgate.surfaces.replication.litestream import Finished, Litestream, failure, find_litestream
from sqlgate.surfaces.replication.probe import NO_BACKUP
from sqlgate.surfaces.replication.target import (
    ReplicaTarget,
    litestream_config,
    litestream_env,
    replicated_files,
)
from sqlgate.surfaces.replication.verdict import WitnessVerdict, judge
from sqlgate.surfaces.replication.witness_log import WitnessLog

__all__ = ["OLD_LAYOUT", "Restored", "restore_replica"]

RESTORE_TIMEOUT = 24 * 3600.0  # a restore runs as long as the download takes
OLD_LAYOUT = (
    "holds a replica in sqlgate 0.1.0's layout (one file with sqlgate's tables inside, no "
    "records/ beside it), which this version cannot restore: restore it with sqlgate 0.1.0 "
    "(`pip install 'sqlgate[replicate]==0.1.0'`)"
)


@dataclass(frozen=True)
class Restored:
    db: Path
    records: Path  # the restored records file, in the database's records folder
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
            "records": str(self.records),
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


def _with_journals(path: Path) -> list[Path]:
    return [path, *(path.with_name(path.name + end) for end in ("-wal", "-shm"))]


def _taken(to: Path, records: RecordFiles) -> list[Path]:
    """What a restore to `to` would overwrite: the database and its records."""
    found = [*_with_journals(to), *_with_journals(records.records), records.witness,
             records.folder / "replication"]  # fmt: skip
    return [path for path in found if path.exists() or path.is_symlink()]


def _refuse_existing(to: Path, records: RecordFiles) -> None:
    taken = _taken(to, records)
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
    """Restore `target` into the new database `to` and its records; see the module's
    docstring."""
    to = to.absolute()
    records = record_files(to)
    _refuse_existing(to, records)
    kept = _kept_witness(witness)
    binary = binary or find_litestream()
    env = litestream_env(target, os.environ if environ is None else environ)
    made_folder = not records.folder.exists()
    folder = records.folder / "replication"
    try:
        to.parent.mkdir(parents=True, exist_ok=True)
        records.make(to)
        folder.mkdir()
    except OSError as exc:
        raise StartupError(f"cannot create {folder}: {exc.strerror or exc}") from None
    try:
        run = _Run(target, binary, env, timeout)
        return _restore(run, to, records, kept, witness)
    except BaseException:
        for path in (*_with_journals(to), *_with_journals(records.records), records.witness):
            path.unlink(missing_ok=True)
        shutil.rmtree(records.folder if made_folder else folder, ignore_errors=True)
        raise


@dataclass(frozen=True)
class _Run:
    """Litestream restores from one target, with one configuration."""

    target: ReplicaTarget
    binary: Litestream
    env: Mapping[str, str]
    timeout: float

    def restore(self, config: Path, path: Path) -> Finished:
        command = ["restore", "-json", "-no-expand-env", "-config", str(config), str(path)]
        return self.binary.run(command, env=self.env, timeout=self.timeout)

    def failed(self, done: Finished) -> StartupError:
        why = "no answer in time" if done.returncode is None else failure(done.output)
        return StartupError(f"cannot restore from {self.target.url}: {why}")


def _restore_files(run: _Run, config: Path, to: Path, records: Path) -> str | None:
    """Restore the user's database and its records; Litestream's txid of the database."""
    url = run.target.url
    done = run.restore(config, to)
    if not done.ok:
        if NO_BACKUP in done.output:
            raise NotFound(f"{url} holds no database replica (nothing under db/); check the URL")
        raise run.failed(done)
    got = run.restore(config, records)
    if not got.ok:
        if NO_BACKUP not in got.output:
            raise run.failed(got)
        if _holds_chain(to):
            raise StartupError(f"{url} {OLD_LAYOUT}")
        raise NotFound(f"{url} holds a database replica but not sqlgate's records of it "
                       "(nothing under records/): it was not written by sqlgate")  # fmt: skip
    return _txid(done.output)


def _holds_chain(path: Path) -> bool:
    reader = connect_read_only(path)
    try:
        return holds_chain(reader)
    finally:
        reader.close()


def _restore(
    run: _Run, to: Path, records: RecordFiles, kept: Witness | None, kept_path: Path | None
) -> Restored:
    folder = records.folder / "replication"
    log_path = folder / "witness-log"
    config = folder / "litestream.json"
    files = replicated_files(to, records.records, log_path, folder)
    config.write_text(litestream_config(run.target, files), encoding="utf-8")
    txid = _restore_files(run, config, to, records.records)
    log: WitnessLog | None = None
    log_problem: str | None = None
    restored_log = run.restore(config, log_path)
    if restored_log.ok:
        log = WitnessLog.open(log_path, read_only=True)
    elif NO_BACKUP not in restored_log.output:
        log_problem = failure(restored_log.output)
    try:
        if not _holds_chain(records.records):
            raise StartupError(f"the replica at {run.target.url} holds no sqlgate records")
        reader = connect_read_only(records.records)
        try:
            verdict = judge(reader, log, kept, f"--witness {kept_path}")
        finally:
            reader.close()
    finally:
        if log is not None:
            log.close()
    _rebind(records.records, to, run.target.url)
    written = verdict.mismatch is None
    recorded: int | None = None
    if written:
        recorded, digest = _record(records.records, run.target.url, verdict)
        WitnessFile.beside(to).write(Witness(
            recorded, digest, verdict.witnessed_id, verdict.witnessed_hash,
        ))  # fmt: skip
    config.unlink(missing_ok=True)
    return Restored(to, records.records, run.target.url, txid, verdict, _verify(to), written,
                    log_problem, recorded)  # fmt: skip


def _rebind(records: Path, to: Path, url: str) -> None:
    """The restored records belong to the restored copy now, not to the file replicated."""
    from sqlgate.service import rebind, utc_timestamp

    conn = apsw.Connection(str(records))
    try:
        rebind(conn, to, f"restored from {url}", utc_timestamp(time.time()))
    finally:
        conn.close()


def _record(records: Path, url: str, verdict: WitnessVerdict) -> tuple[int, str]:
    """Append the restore's event to the copy's records: (its id, its hash)."""
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
    conn = apsw.Connection(str(records))
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
