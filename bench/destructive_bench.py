"""Destructive cost: `destructive_query` deleting 10 rows of a large database, with
row-level undo (`--undo rows`, a changeset) beside a whole-file snapshot (`--undo file`),
measured side by side on the same file in one run.

    python bench/destructive_bench.py --size-mb 200 [--repeats 5] [--workdir DIR]

`destructive_cost(...)` is what bench/run.py calls. It also checks once that
`sqlgate undo` puts the deleted rows back byte for byte.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import apsw

from sqlgate.config import Settings
from sqlgate.service import Service

__all__ = ["destructive_cost"]

ROW_BYTES = 1000  # incompressible: random bytes
ROWS_PER_MB = 1000  # about 1 MB of file per 1000 rows of 1000 bytes
DELETED = 10


def _build(path: Path, size_mb: int) -> int:
    """A sqlgate database with table t of random 1 KB blobs; returns its row count."""
    with Service.open(Settings(db=path), session="s-bench-build"):
        pass  # the server schema
    count = max(DELETED * 20, size_mb * ROWS_PER_MB)

    def rows() -> Iterator[tuple[int, bytes]]:
        for n in range(1, count + 1):
            yield n, os.urandom(ROW_BYTES)

    conn = apsw.Connection(str(path))
    try:
        conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, payload BLOB NOT NULL)")
        with conn:
            conn.executemany("INSERT INTO t VALUES (?, ?)", rows())
        conn.pragma("wal_checkpoint", "TRUNCATE")
    finally:
        conn.close()
    return count


def _rows(path: Path, ids: Sequence[int]) -> list[tuple[object, ...]]:
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        marks = ",".join("?" * len(ids))
        sql = f"SELECT rowid, typeof(payload), quote(payload) FROM t WHERE id IN ({marks})"
        return [tuple(row) for row in conn.execute(sql + " ORDER BY rowid", list(ids))]
    finally:
        conn.close()


def _delete(service: Service, ids: Sequence[int]) -> tuple[float, str]:
    marks = ",".join("?" * len(ids))
    started = time.perf_counter()
    out = service.destructive_query(
        f"DELETE FROM t WHERE id IN ({marks})", reason="benchmark: drop 10 rows", params=list(ids)
    )
    return time.perf_counter() - started, out


def _undo_is_exact(path: Path, ids: Sequence[int]) -> bool:
    before = _rows(path, ids)
    with Service.open(Settings(db=path, undo="rows"), session="s-bench-undo") as service:
        _, out = _delete(service, ids)
        gone = _rows(path, ids) == []
        service.undo(out.split("sqlgate undo ", 1)[1].split(" ", 1)[0])
    return gone and _rows(path, ids) == before


def destructive_cost(
    folder: Path, size_mb: int, repeats: int, log: Callable[[str], None]
) -> list[dict[str, object]]:
    """Median seconds of a 10-row DELETE with undo=rows and with undo=file, and their ratio,
    as rows for bench/run.py: `subject`, `calls`, `figure`, `p50` (seconds), and extras."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"destructive-{size_mb}mb.db"
    for stale in folder.glob(path.name + "*"):
        if stale.is_file():
            stale.unlink()
    log(f"building a ~{size_mb} MB database ...")
    count = _build(path, size_mb)
    actual_mb = path.stat().st_size / 1024 / 1024
    log(f"built {count} rows, {actual_mb:.0f} MiB")
    next_id = iter(range(1, count + 1, 3))
    results: list[dict[str, object]] = []
    medians: dict[str, float] = {}
    for mode in ("rows", "file"):
        settings = Settings(db=path, undo=mode, snapshots_keep=2)
        times = []
        with Service.open(settings, session=f"s-bench-{mode}") as service:
            for _ in range(repeats):
                ids = [next(next_id) for _ in range(DELETED)]
                seconds, out = _delete(service, ids)
                expected = "; undo: " if mode == "rows" else "; snapshot: "
                if expected not in out:
                    raise RuntimeError(f"undo={mode}: unexpected answer {out!r}")
                times.append(seconds)
        medians[mode] = statistics.median(times)
        log(f"undo={mode}: median {medians[mode] * 1000:.2f} ms over {repeats} calls")
        results.append(
            {
                "subject": f"sqlgate --undo {mode}",
                "calls": repeats,
                "figure": f"median {medians[mode] * 1000:.2f} ms",
                "p50": medians[mode],
                "min_ms": round(min(times) * 1000, 2),
                "max_ms": round(max(times) * 1000, 2),
                "db_mib": round(actual_mb),
            }
        )
    exact = _undo_is_exact(path, [next(next_id) for _ in range(DELETED)])
    ratio = medians["rows"] / medians["file"]
    log(f"rows/file = {ratio:.4f}; undo restores exactly: {exact}")
    results.append(
        {
            "subject": "row-level undo / whole-file snapshot",
            "figure": f"{ratio:.1%}",
            "ratio": round(ratio, 4),
            "undo_exact": exact,
        }
    )
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args(argv)

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory(dir=args.workdir) as folder:
        rows = destructive_cost(Path(folder), args.size_mb, args.repeats, log)
    for row in rows:
        print(" | ".join(f"{key}={value}" for key, value in row.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
