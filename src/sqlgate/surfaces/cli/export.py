"""`sqlgate export`: memory events, checkpoints, claims and claims history as JSON lines, from
one consistent snapshot, streamed (memory use does not grow with the database)."""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import click

from sqlgate.errors import InvalidArgument
from sqlgate.service import CLAIMS_EXPORT, MEMORY_EXPORT, count_rows, table_records
from sqlgate.surfaces import terminal
from sqlgate.surfaces.cli.options import (
    existing_service,
    reports_errors,
    settings_options,
    stderr_progress,
)

DB_OPTIONS = ("db", "busy_timeout")

if TYPE_CHECKING:  # imported when the command runs, not at start-up
    import apsw

__all__ = ["EXPORT_TABLES", "export"]

# what `export` writes, in this order: (table, the `type` of its lines, its JSON text
# columns), as memory and claims declare them
EXPORT_TABLES: tuple[tuple[str, str, tuple[str, ...]], ...] = (*MEMORY_EXPORT, *CLAIMS_EXPORT)
_EXPORT_FORMAT = 1
_PROGRESS_ROWS = 1000  # export rows between two progress updates


# -- export ---------------------------------------------------------------------------------
@click.command()
@click.option("--out", "out", default="-", show_default=True,
              help="file to write (replaced when complete), or - for stdout")  # fmt: skip
@settings_options(DB_OPTIONS, existing_db=True)
@reports_errors
def export(out: str, **values: Any) -> None:
    """Memory events, checkpoints, claims and claims history as JSON lines.

    The first line describes the export (`"type": "export"`, counts); every other line is
    one row with a `type` of event, checkpoint, claim or claim_history. One consistent
    snapshot, streamed: memory use does not grow with the database.
    """
    from sqlgate import __version__
    from sqlgate.service import utc_timestamp

    with existing_service(values, read_only=True) as service, service.db.snapshot_reader() as conn:
        counts = {kind: count_rows(conn, table) for table, kind, _ in EXPORT_TABLES}
        header = {"type": "export", "format": _EXPORT_FORMAT, "sqlgate": __version__,
                  "exported_at": utc_timestamp(time.time()), "counts": counts}  # fmt: skip
        with _output(out) as sink, stderr_progress() as progress:
            task = progress.add_task("exporting", total=sum(counts.values()))
            sink.write(_jsonl(header))
            for done, record in enumerate(_records(conn), start=1):
                sink.write(_jsonl(record))
                if done % _PROGRESS_ROWS == 0:
                    progress.update(task, completed=done)
    if out != "-":
        shown = ", ".join(f"{kind} {n}" for kind, n in counts.items())
        click.echo(f"exported to {out}: {shown}", err=True)


def _records(conn: apsw.Connection) -> Iterator[dict[str, Any]]:
    for table, kind, json_columns in EXPORT_TABLES:
        yield from table_records(conn, table, kind, json_columns)


def _jsonl(record: dict[str, Any]) -> bytes:
    return (terminal.json_dumps(record, default=_blob) + "\n").encode("utf-8")


def _blob(value: object) -> str:
    if isinstance(value, bytes):  # server tables hold text; a blob can only come from outside
        return value.hex()
    raise TypeError(f"cannot export a {type(value).__name__}")


@contextmanager
def _output(out: str) -> Iterator[IO[bytes]]:
    """stdout, or a temporary file beside `out` that replaces it only once complete."""
    if out == "-":
        stream = sys.stdout.buffer
        yield stream
        stream.flush()
        return
    target = Path(out)
    try:
        handle = tempfile.NamedTemporaryFile(  # noqa: SIM115 - closed below, then renamed
            "wb", dir=target.parent, prefix=f".{target.name}.", suffix=".tmp", delete=False
        )
    except OSError as exc:
        raise InvalidArgument(f"cannot write {out}: {exc.strerror or exc}") from None
    try:
        with handle:
            yield handle
        os.replace(handle.name, target)
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise
