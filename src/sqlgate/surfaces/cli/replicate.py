"""`sqlgate restore` and `sqlgate replicate`, and the `--replicate` part of `sqlgate serve`.

    sqlgate serve --replicate file:///srv/backups/agent      # Litestream beside the server
    sqlgate replicate s3://bucket/agent --db memory.db       # only replicate (servers run apart)
    sqlgate restore s3://bucket/agent --to /new/memory.db    # get it back elsewhere, verified

Replication copies two files (docs/decisions.md, "Replication of two files"): the user's
database and sqlgate's records of it (audit log, undo data, memory chain, members), plus the
witness log. Litestream switches the user's file to WAL mode and adds its two tables
(`_litestream_seq`, `_litestream_lock`) to it: giving a replica URL is the user's consent to
that, and the help of every option that takes one says so.

Exit codes: 2 a bad URL or a --to that exists; 3 nothing at the URL; 8 replication or the
restore cannot start (Litestream missing, target unreachable or unwritable, another
database's replica there, a replica in sqlgate 0.1.0's one-file layout); 9 the restored
chain is broken or disagrees with its witness (or, with --require-witnessed, is not
witnessed to its head).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from sqlgate.errors import ChainBroken, InvalidArgument
from sqlgate.service import counted, db_option
from sqlgate.surfaces import terminal
from sqlgate.surfaces.cli.options import reports_errors, settings_from, settings_options
from sqlgate.surfaces.stops import stop_signals

if TYPE_CHECKING:
    from sqlgate.config import Settings
    from sqlgate.surfaces.replication.restore import Restored
    from sqlgate.surfaces.replication.supervisor import Replication
    from sqlgate.surfaces.replication.target import ReplicaTarget

__all__ = ["REPLICATE_COMMANDS", "replica_target", "start_replication"]


def replica_target(settings: Settings) -> ReplicaTarget | None:
    """The checked `--replicate` URL, or None. Raises InvalidArgument (exit 2) before
    anything is opened."""
    if settings.replicate is None:
        return None
    from sqlgate.surfaces.replication.target import parse_target

    return parse_target(settings.replicate)


def start_replication(
    settings: Settings, target: ReplicaTarget | None, *, prepare: bool = False
) -> Replication | None:
    """Start Litestream beside a server (None when no --replicate was given). `prepare`:
    create or migrate the database first (the HTTP server opens it only once it listens)."""
    if target is None:
        return None
    from sqlgate.config import creates_parent
    from sqlgate.service import Service
    from sqlgate.surfaces.replication.supervisor import Replication

    if prepare:
        Service.open(settings, create_parent=creates_parent(settings.db)).close()
    replication = Replication(settings.db, target)
    replication.start()
    return replication


@click.command()
@click.argument("url")
@click.option(
    "--to",
    "to",
    required=True,
    type=click.Path(path_type=Path),
    help="the new database file to create; its records go to its records folder "
    "(nothing existing is overwritten)",
)
@click.option(
    "--witness",
    "witness",
    type=click.Path(path_type=Path),
    default=None,
    help="a witness kept elsewhere (a copy of the database's witness.json, in its records "
    "folder) to hold the restored chain against as well",
)
@click.option(
    "--require-witnessed",
    is_flag=True,
    help="exit 9 unless a witness vouches for every restored event",
)
@click.option("--json", "as_json", is_flag=True, help="print JSON for scripts")
@reports_errors
def restore(url: str, to: Path, witness: Path | None, require_witnessed: bool,
            as_json: bool) -> None:  # fmt: skip
    """Restore the replica at URL into a new database and its records, then verify the chain.

    URL is what `serve --replicate` was given (file:///folder or s3://bucket/prefix). The
    database goes to --to, sqlgate's records of it (audit log, undo data, memory chain,
    members) to the records folder of that path. The witness log is restored too and the
    chain held against it: the verdict says
    which events are witnessed, which reached the replica before their witness did, and
    which were witnessed but lost with the host.
    """
    from sqlgate.surfaces.replication.restore import restore_replica
    from sqlgate.surfaces.replication.target import parse_target

    restored = restore_replica(parse_target(url), to, witness=witness)
    if as_json:
        click.echo(terminal.json_dumps(restored.as_dict()))
    else:
        _print_restored(restored)
    if not restored.ok or (require_witnessed and not restored.verdict.witnessed):
        raise SystemExit(ChainBroken.exit_code)


def _print_restored(restored: Restored) -> None:
    txid = f" (Litestream txid {restored.txid})" if restored.txid else ""
    click.echo(f"restored {terminal.visible(str(restored.db))} from {restored.url}{txid}")
    click.echo(f"records: {terminal.visible(str(restored.records))}")
    chain = restored.chain
    if chain.ok and chain.head_id is None:
        click.echo("chain ok: no events")
    elif chain.ok:
        click.echo(f"chain ok: {counted(chain.events, 'event')}, head {chain.head_id} "
                   f"(hash {(chain.head_hash or '')[:16]}…)")  # fmt: skip
    else:
        where = "" if chain.first_broken_id is None else f" at event {chain.first_broken_id}"
        click.echo(f"chain BROKEN{where}: {terminal.visible(chain.reason or '')}")
    if restored.log_problem:
        click.echo(f"witness log: could not be restored: {terminal.visible(restored.log_problem)}")
    for line in restored.verdict.lines():
        click.echo(terminal.visible(line))
    if restored.recorded is not None:
        click.echo(f"the memory chain records the restore as event {restored.recorded} "
                   f"(`sqlgate verify {db_option(restored.db)}` names it)")  # fmt: skip
    if restored.witness_written:
        witness = restored.records.with_name("witness.json")
        click.echo(f"wrote {terminal.visible(str(witness))} for the restored "
                   f"head; serve it with `sqlgate serve {db_option(restored.db)}` (add --replicate "
                   "with a new URL to replicate it again)")  # fmt: skip


@click.command()
@click.argument("url", required=False)
@settings_options(("db",), existing_db=True)
@reports_errors
def replicate(url: str | None, **values: Any) -> None:
    """Replicate the database and its records to URL until stopped (Ctrl-C or SIGTERM).

    Litestream switches the database file to WAL mode and adds its tables `_litestream_seq`
    and `_litestream_lock` to it: run this only if that is fine for your application.
    For databases served by several processes (stdio servers started by MCP clients): run
    this once beside them instead of `serve --replicate` in each. URL defaults to
    SQLGATE_REPLICATE. Ctrl-C ends it with exit 130, SIGTERM with 0, each after
    Litestream's last sync.
    """
    from sqlgate.errors import NotFound
    from sqlgate.surfaces.replication.supervisor import Replication
    from sqlgate.surfaces.replication.target import parse_target

    settings = settings_from(values)
    text = url or settings.replicate
    if not text:
        raise InvalidArgument("give the replica URL: sqlgate replicate URL (or SQLGATE_REPLICATE)")
    target = parse_target(text)
    if not settings.db.is_file():
        raise NotFound(f"no database at {settings.db}; give its path with --db or SQLGATE_DB")
    # Replication refuses a database sqlgate keeps no records of (never served) before it
    # writes anything: its records and witness log are what the replica is checked by
    with stop_signals() as stops:  # a stop while Litestream starts ends the start-up
        # serving before it says so: a Ctrl-C once told is a stop, not a start-up cut short
        with Replication(settings.db, target), stops.serving():
            click.echo(f"replicating {terminal.visible(str(settings.db))} to {target.url}; "
                       "Ctrl-C stops", err=True)  # fmt: skip
            stops.wait()
        click.echo("stopped; Litestream synced what it had", err=True)


REPLICATE_COMMANDS: tuple[click.Command, ...] = (restore, replicate)
