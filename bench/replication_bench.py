"""Replication: what a lost host costs. A stdio server runs with `--replicate`, one client
writes (a row, then an event, each acknowledged), and at a random moment Litestream and then
the server are SIGKILLed (the host is gone). The replica is restored into a new folder with
`sqlgate restore --json` and compared with what the client saw acknowledged.

    python bench/replication_bench.py                 # 10 kills to a folder; merges its rows
                                                      # into bench/results.md
    python bench/replication_bench.py --quick         # 2 kills, prints only (unless --out)
    python bench/replication_bench.py --s3            # also to S3 on loopback: starts
                                                      # `moto_server` (pip install 'moto[server]')

The *loss window* of one kill is the time between the last acknowledged event the restored
copy holds and the last acknowledged event: the seconds of acknowledged writes lost. Rows:
the median and the worst window over the kills, acknowledged events lost, whether every
restored chain verified, and how many were witnessed to their head. One more row kills the
server alone: Litestream's keeper sees the server's pipe close, logs the last witnessed
events, and Litestream syncs and exits.

`replication(ctx)` is the bench/run.py entry (a `Benchmark`).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchkit import BENCH, SRC, Context, Row

__all__ = ["BENCH_REPLICATION", "Kill", "kill_and_restore", "replication"]

BENCH_REPLICATION = "replication: SIGKILL mid-load, restore, verify"
DEFAULT_OUT = BENCH / "results.md"


@dataclass(frozen=True)
class Kill:
    """One kill: what was acknowledged, what came back, what the restore said."""

    acked: int  # events acknowledged to the client
    restored: int  # events in the restored copy
    window: float  # seconds of acknowledged events lost
    rate: float  # acknowledged calls per second during the load
    chain_ok: bool
    witnessed: bool
    unwitnessed: int  # restored events past the witness log's replica
    rows_ok: bool  # restored rows match the restored events (a row is acked before its event)


class _Server:
    def __init__(self, db: Path, url: str, errlog: TextIO, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "sqlgate", "serve", "--db", str(db), "--replicate", url],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errlog, text=True, env=env,
        )  # fmt: skip
        self.next_id = 0
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "bench", "version": "1"}})  # fmt: skip
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError("the server exited")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def call(self, tool: str, **arguments: Any) -> None:
        answer = self.request("tools/call", {"name": tool, "arguments": arguments})
        if answer.get("error") or answer["result"].get("isError"):
            raise RuntimeError(f"{tool} failed: {answer}")


def _env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SQLGATE_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))
    return {**env, **extra}


def kill_and_restore(
    folder: Path, url: str, seconds: float, *, env: dict[str, str], server_only: bool = False
) -> Kill:
    """Serve with --replicate URL, write for `seconds`, kill, restore, compare."""
    folder.mkdir(parents=True)
    (folder / ".sqlgate").mkdir(mode=0o700)  # a project: the records stay in this folder
    db = folder / "agent.db"
    with (folder / "server-stderr.txt").open("w", encoding="utf-8") as errlog:
        server = _Server(db, url, errlog, env)
        try:
            server.call(
                "write_query", query="CREATE TABLE items(id INTEGER PRIMARY KEY, body TEXT)"
            )
            acks: list[float] = []
            began = time.perf_counter()
            stop = time.monotonic() + seconds
            while time.monotonic() < stop:
                server.call("write_query", query="INSERT INTO items(body) VALUES (?)",
                            params=[f"row {len(acks) + 1}"])  # fmt: skip
                server.call("append_event", content=f"event {len(acks) + 1}")
                acks.append(time.perf_counter())
            rate = 2 * len(acks) / (time.perf_counter() - began)
            status = json.loads(_status_file(folder).read_text())
            if not server_only:
                os.kill(int(status["litestream_pid"]), signal.SIGKILL)
            server.process.kill()
            server.process.wait()
            if server_only:  # Litestream syncs and exits on its own: wait for it
                _wait_gone(int(status["litestream_pid"]), 30.0)
        finally:
            if server.process.poll() is None:
                server.process.kill()
    restored = folder / "restored" / "agent.db"
    done = subprocess.run(
        [sys.executable, "-m", "sqlgate", "restore", url, "--to", str(restored), "--json"],
        capture_output=True, text=True, env=env, check=False, timeout=600,
    )  # fmt: skip
    if done.returncode == 3:  # nothing reached the replica before the kill
        return Kill(len(acks), 0, acks[-1] - began if acks else 0.0, rate, True, True, 0, True)
    if not done.stdout.strip():
        raise RuntimeError(f"restore failed: {done.stderr}")
    report = json.loads(done.stdout)
    witness = report["witness"]
    head = int(witness["head_id"])
    window = acks[-1] - acks[head - 1] if 0 < head <= len(acks) else 0.0
    if head == 0 and acks:
        window = acks[-1] - began
    # a kill soon after the start may leave the replica before CREATE TABLE items: no rows
    has_items = _count(restored, "SELECT count(*) FROM sqlite_schema WHERE name = 'items'")
    rows = _count(restored, "SELECT count(*) FROM items") if has_items else 0
    return Kill(
        len(acks), head, window, rate, bool(report["ok"]), bool(witness["witnessed"]),
        head - int(witness["witnessed_id"]), head <= rows <= head + 1,
    )  # fmt: skip


def _status_file(folder: Path) -> Path:
    """The served database's replication status, in its records folder in the project."""
    found = sorted((folder / ".sqlgate" / "dbs").glob("*/replication/status.json"))
    if len(found) != 1:
        raise RuntimeError(f"expected one replication status under {folder}, found {found}")
    return found[0]


def _wait_gone(pid: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        if Path(f"/proc/{pid}/stat").is_file():
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
            if state == "Z":
                return
        time.sleep(0.05)
    raise RuntimeError(f"Litestream (pid {pid}) outlived the server by {timeout:g} s")


def _count(db: Path, sql: str) -> int:
    import apsw

    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return int(conn.execute(sql).fetchall()[0][0])
    finally:
        conn.close()


def _tails(tails: Sequence[int]) -> str:
    if not tails:
        return ""
    return f" (the others: their last {', '.join(map(str, tails))} events by hash links only)"


def _tails(tails: Sequence[int]) -> str:
    if not tails:
        return ""
    return f" (the others: their last {', '.join(map(str, tails))} events by hash links only)"


def _row(subject: str, kills: Sequence[Kill], note: str) -> Row:
    windows = [kill.window for kill in kills]
    lost = [kill.acked - kill.restored for kill in kills]
    fully = sum(kill.witnessed for kill in kills)
    tails = [kill.unwitnessed for kill in kills if not kill.witnessed]
    notes = [
        f"acknowledged events lost per kill: median {statistics.median(lost):g}, max {max(lost)}",
        f"load {statistics.median(k.rate for k in kills):,.0f} calls/s (one client, a row then "
        "an event)",
        f"chain ok in {sum(k.chain_ok for k in kills)}/{len(kills)} restores",
        f"witnessed to the head in {fully}/{len(kills)}" + _tails(tails),
        f"rows match events in {sum(k.rows_ok for k in kills)}/{len(kills)}",
        note,
    ]
    return Row(
        BENCH_REPLICATION, subject, f"{len(kills)} kills",
        f"{statistics.median(windows):.2f} s median window", f"{statistics.median(windows):.3f} s",
        f"{max(windows):.3f} s", "; ".join(filter(None, notes)),
    )  # fmt: skip


def _free_port() -> int:
    with socket.socket() as spare:
        spare.bind(("127.0.0.1", 0))
        return int(spare.getsockname()[1])


def _moto(server: str, log: Callable[[str], None]) -> tuple[subprocess.Popen[bytes], str]:
    """A loopback S3 (moto's server mode) with a bucket; returns (process, endpoint)."""
    port = _free_port()
    process = subprocess.Popen([server, "-H", "127.0.0.1", "-p", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    deadline = time.monotonic() + 30
    while True:
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            connection.request("PUT", "/sqlgate-bench")  # moto takes unsigned requests
            if connection.getresponse().status == 200:
                break
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                raise RuntimeError("moto_server did not start") from None
            time.sleep(0.1)
    log(f"moto_server on 127.0.0.1:{port}")
    return process, f"http://127.0.0.1:{port}"


def replication(
    ctx: Context, *, kills: int | None = None, s3_server: str | None = None
) -> list[Row]:
    """The bench/run.py entry: kills to a folder (and to S3 when `s3_server` is given)."""
    count = kills if kills is not None else (2 if ctx.plan.name == "quick" else 10)
    low, high = (1.5, 2.5) if ctx.plan.name == "quick" else (1.5, 4.0)
    env = _env({})
    try:
        from sqlgate.surfaces.replication.litestream import find_litestream

        binary = find_litestream()
    except Exception as error:  # no binary: the row says why
        return [Row(BENCH_REPLICATION, "sqlgate --replicate file:// (stdio)", "", "not available",
                    "", "", str(error))]  # fmt: skip
    rng = random.Random(20261201)
    rows: list[Row] = []
    targets = [("sqlgate --replicate file:// (stdio)", "file", env)]
    moto: subprocess.Popen[bytes] | None = None
    if s3_server is not None:
        moto, endpoint = _moto(s3_server, ctx.log)
        s3_env = _env({"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench"})
        targets.append(("sqlgate --replicate s3:// (moto on loopback)", endpoint, s3_env))
    try:
        for subject, where, target_env in targets:
            done: list[Kill] = []
            for n in range(count):
                folder = ctx.folder / f"replication-{where.split(':')[0]}-{n}"
                url = ((folder / "replica").as_uri() if where == "file"
                       else f"s3://sqlgate-bench/kill-{n}?endpoint={where}")  # fmt: skip
                seconds = rng.uniform(low, high)
                ctx.log(f"{subject}: kill {n + 1}/{count} after {seconds:.2f} s of writes")
                done.append(kill_and_restore(folder, url, seconds, env=target_env))
                shutil.rmtree(folder, ignore_errors=True)
            note = f"Litestream {binary.version}; kill after {low:g}-{high:g} s of load"
            rows.append(_row(subject, done, note))
        alone: list[Kill] = []
        for n in range(min(count, 3)):
            folder = ctx.folder / f"replication-server-only-{n}"
            seconds = rng.uniform(low, high)
            ctx.log(f"server SIGKILLed alone after {seconds:.2f} s: Litestream left to flush")
            alone.append(kill_and_restore(folder, (folder / "replica").as_uri(), seconds,
                                          env=env, server_only=True))  # fmt: skip
            shutil.rmtree(folder, ignore_errors=True)
        note = (
            "its keeper sees the server's pipe close: a last witness pass, then Litestream "
            "syncs and exits"
        )
        rows.append(_row("server SIGKILLed alone, Litestream left to flush", alone, note))
    finally:
        if moto is not None:
            moto.kill()
            moto.wait()
    return rows


def merge_into(path: Path, rows: Sequence[Row], command: str) -> None:
    """Replace this benchmark's rows in `path`'s table (the others stay), or add them."""
    from benchkit import merge_rows

    merge_rows(path, rows, (f"| {BENCH_REPLICATION}",), "Replication", command)


def main(argv: Sequence[str] | None = None) -> int:
    from benchkit import FULL, QUICK, table

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="2 kills; prints only")
    parser.add_argument("--kills", type=int, default=None, help="kills per target")
    parser.add_argument("--s3", action="store_true", help="also replicate to moto's S3")
    parser.add_argument("--moto-server", default=shutil.which("moto_server"),
                        help="the moto_server executable (default: on PATH)")  # fmt: skip
    parser.add_argument("--out", type=Path, help="merge the rows into this report (default: "
                        f"{DEFAULT_OUT.name}; with --quick, none unless given)")  # fmt: skip
    args = parser.parse_args(argv)
    if args.s3 and not args.moto_server:
        parser.error("--s3 needs moto_server: pip install 'moto[server]' (or --moto-server PATH)")

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    plan = QUICK if args.quick else FULL
    with tempfile.TemporaryDirectory(prefix="sqlgate-replication-") as temp:
        rows = replication(Context(plan, Path(temp), log), kills=args.kills,
                           s3_server=args.moto_server if args.s3 else None)  # fmt: skip
    print(table(rows), end="")
    out = args.out or (None if args.quick else DEFAULT_OUT)
    if out is not None:
        command = " ".join(["python bench/replication_bench.py", *(argv or sys.argv[1:])])
        merge_into(out, rows, command)
        log(f"merged into {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
