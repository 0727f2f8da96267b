"""Checking a replica target before serving: reachable, writable, and not another database's.

The checks, in order, each failing with StartupError (exit 8) and what to do:

1. file:// — the folder can be created and written (a test file is written and removed);
   s3:// with an endpoint — something accepts TCP connections there (fails in a moment
   instead of after the AWS SDK's retries, about two minutes);
2. the target holds no replica of another database: the witness log already replicated
   there (if any) must carry this database's id, and a Litestream replica of the database
   or of its records without a witness log (not written by sqlgate, or by sqlgate 0.1.0,
   whose witness log belongs to the old layout) is refused, since Litestream would mix the
   two histories;
3. Litestream itself replicates the witness log there once (`replicate -once`): the real
   write check, with the store's own words (no such bucket, access denied, ...) on failure.

Each Litestream command is killed after `timeout` seconds (an unreachable AWS endpoint).
"""

from __future__ import annotations

import json
import socket
import tempfile
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

from sqlgate.errors import StartupError
from sqlgate.surfaces.replication.litestream import Litestream, failure
from sqlgate.surfaces.replication.target import DB, RECORDS, ReplicaTarget, litestream_config
from sqlgate.surfaces.replication.witness_log import WitnessLog

__all__ = ["check_target", "replica_database_id"]

NO_BACKUP = "no matching backup files"


def check_target(
    target: ReplicaTarget,
    binary: Litestream,
    env: Mapping[str, str],
    *,
    db: Path,
    records: Path,
    log: WitnessLog,
    folder: Path,
    timeout: float,
) -> None:
    """Raise StartupError unless `target` can take this database's replica now."""
    if target.folder is not None:
        _check_folder(target)
    elif target.endpoint is not None:
        _check_reachable(target, min(timeout, 5.0))
    with tempfile.TemporaryDirectory(prefix="sqlgate-probe-") as scratch:
        existing = replica_database_id(target, binary, env, Path(scratch), timeout)
        if existing is None and any(
            _has_replica(target, binary, env, (path, name), Path(scratch), timeout)
            for path, name in ((db, DB), (records, RECORDS))
        ):
            raise StartupError(
                f"{target.url} already holds a Litestream replica that sqlgate did not write (no "
                "witness log beside it); Litestream would mix its history with this "
                "database's: choose another URL"
            )
    if existing is not None and existing != log.database_id:
        raise StartupError(
            f"{target.url} already holds the replica of another database (id {existing}; this "
            f"one is {log.database_id}): choose another URL, or get that database back with "
            f"`sqlgate restore {target.url} --to PATH`"
        )
    config = folder / "probe.json"
    config.write_text(
        litestream_config(target, [(log.path, "witness", folder / "witness-meta")],
                          shutdown_sync_seconds=0),
        encoding="utf-8",
    )  # fmt: skip
    done = binary.run(["replicate", "-once", "-no-expand-env", "-config", str(config)],
                      env=env, timeout=timeout)  # fmt: skip
    config.unlink(missing_ok=True)
    if done.returncode is None:
        raise StartupError(
            f"cannot replicate to {target.url}: no answer within {timeout:g} s "
            f"({failure(done.output)}); is the store reachable from here?"
        )
    if not done.ok:
        raise StartupError(f"cannot replicate to {target.url}: {failure(done.output)}")


def _check_folder(target: ReplicaTarget) -> None:
    assert target.folder is not None
    try:
        target.folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=target.folder, prefix=".sqlgate-probe-"):
            pass
    except OSError as exc:
        raise StartupError(
            f"cannot write to the replica folder {target.folder}: {exc.strerror or exc}; choose "
            "a folder you can write to"
        ) from None


def _check_reachable(target: ReplicaTarget, timeout: float) -> None:
    assert target.endpoint is not None
    parts = urlsplit(target.endpoint)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname or "", port), timeout=timeout):
            pass
    except OSError as exc:
        raise StartupError(
            f"cannot reach the S3 endpoint {target.endpoint}: {exc.strerror or exc}; is the "
            "store running, and is the URL's endpoint right?"
        ) from None


def replica_database_id(
    target: ReplicaTarget,
    binary: Litestream,
    env: Mapping[str, str],
    scratch: Path,
    timeout: float,
) -> str | None:
    """The database id of the witness log replicated at `target`; None when there is none.
    Raises StartupError when the target cannot be read."""
    copy = scratch / "witness-log"
    config = scratch / "restore.json"
    config.write_text(
        litestream_config(target, [(copy, "witness", scratch / "meta")]), encoding="utf-8"
    )
    done = binary.run(["restore", "-no-expand-env", "-config", str(config), str(copy)],
                      env=env, timeout=timeout)  # fmt: skip
    if not done.ok:
        if NO_BACKUP in done.output:
            return None
        why = "no answer" if done.returncode is None else failure(done.output)
        raise StartupError(f"cannot read the replica at {target.url}: {why}")
    log = WitnessLog.open(copy, read_only=True)
    try:
        return log.database_id
    finally:
        log.close()


def _has_replica(
    target: ReplicaTarget,
    binary: Litestream,
    env: Mapping[str, str],
    file: tuple[Path, str],
    scratch: Path,
    timeout: float,
) -> bool:
    """Whether Litestream already keeps a replica of some file at `target`'s NAME/ for
    `file` (its path, NAME)."""
    path, name = file
    config = scratch / f"ltx-{name}.json"
    config.write_text(
        litestream_config(target, [(path, name, scratch / f"{name}-meta")]), encoding="utf-8"
    )
    done = binary.run(["ltx", "-json", "-no-expand-env", "-config", str(config), str(path)],
                      env=env, timeout=timeout)  # fmt: skip
    if not done.ok:
        return False  # nothing listed: the next check (a real write) says what is wrong
    try:
        start = done.output.index("[")
        listed = json.loads(done.output[start : done.output.rindex("]") + 1])
    except ValueError:
        return False
    return isinstance(listed, list) and len(listed) > 0
