"""`sqlgate restore` brings back two files, the user's database to --to and sqlgate's records
into that path's records folder; it records the restore in the copy's memory chain, so
`verify` on the copy names it, and says "rolled back from event N to M" when a witness knew
events the replica lacks (never a shortened chain presented as whole, nor "no events yet").
A replica in sqlgate 0.1.0's one-file layout is refused, saying so."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import apsw
import pytest
from click.testing import CliRunner

from sqlgate.errors import InvalidArgument, SqlgateError
from sqlgate.service import Service
from sqlgate.surfaces.cli.app import main
from sqlgate.surfaces.replication.litestream import Litestream
from sqlgate.surfaces.replication.restore import restore_replica
from sqlgate.surfaces.replication.target import parse_target
from tests.records import connect_both, records_path

# a stand-in whose `restore` copies the prepared file of the replica it is asked for (the
# records when the path is a records file, else the database) to the path it is given, and
# has no witness log to restore
STAND_IN = """#!{python}
import shutil, sys
target = sys.argv[-1]
source = {records!r} if target.endswith("records.sqlite") else {db!r}
if target.endswith("witness-log") or source is None:
    print("Error: no matching backup files available", file=sys.stderr); sys.exit(1)
shutil.copy(source, target); print('{{"txid": "0000000000000001"}}')
"""


@pytest.fixture
def replica(tmp_path: Path) -> Callable[..., Litestream]:
    """replica(DB) holds DB and its records; replica(DB, records=None) the file alone."""

    def make(source: Path | None, records: Path | bool | None = True) -> Litestream:
        path = tmp_path / "bin" / "litestream"
        path.parent.mkdir(exist_ok=True)
        if records is True:
            records = None if source is None else records_path(source)
        kept = {"db": None if source is None else str(source),
                "records": None if records in (None, False) else str(records)}  # fmt: skip
        path.write_text(STAND_IN.format(python=sys.executable, **kept))
        path.chmod(0o755)
        return Litestream(path, "0.5.17")

    return make


def a_database(make_service: Callable[..., Service], events: int) -> Path:
    service = make_service()
    for number in range(events):
        service.append_event(f"event {number + 1}")
    db = service.settings.db
    service.close()
    return db


@pytest.mark.parametrize("in_replica", [0, 3])
def test_events_a_kept_witness_names_beyond_the_replica_are_recorded_as_rolled_back(
    make_service: Callable[..., Service], replica: Callable[..., Litestream], tmp_path: Path,
    in_replica: int,
) -> None:  # fmt: skip
    db = a_database(make_service, in_replica)
    copy = tmp_path / "replica.db"
    shutil.copy(db, copy)  # what the replica holds
    copied = tmp_path / "replica-records.sqlite"
    shutil.copy(records_path(db), copied)
    service = make_service()
    for number in range(in_replica, 5):
        service.append_event(f"event {number + 1}")  # written in the last moments
    service.close()
    kept = records_path(db).with_name("witness.json")
    to = tmp_path / "elsewhere" / "agent.db"
    target = parse_target((tmp_path / "bucket").as_uri())
    binary = replica(copy, records=copied)
    restored = restore_replica(target, to, witness=kept, binary=binary, environ={})
    assert restored.ok
    assert restored.recorded == in_replica + 1
    assert restored.chain.head_id == in_replica + 1
    answer = CliRunner().invoke(main, ["verify", "--db", str(to)])
    assert answer.exit_code == 0, answer.output
    assert "no events yet" not in answer.stdout
    assert (
        f"rolled back from event 5 to {in_replica} by sqlgate restore from "
        f"{target.url}" in answer.stdout
    )


def test_a_restore_with_nothing_lost_is_recorded_too(
    make_service: Callable[..., Service], replica: Callable[..., Litestream], tmp_path: Path
) -> None:
    db = a_database(make_service, 2)
    to = tmp_path / "elsewhere" / "agent.db"
    target = parse_target((tmp_path / "bucket").as_uri())
    restored = restore_replica(target, to, binary=replica(db), environ={})
    assert restored.recorded == 3
    report = restored.as_dict()
    assert report["recorded_event"] == 3
    assert report["db"] == str(to.absolute())
    answer = json.loads(CliRunner().invoke(main, ["verify", "--db", str(to), "--json"]).stdout)
    assert answer["ok"] is True
    assert answer["restores"]["latest"]["summary"].startswith("restored from the replica at")


def test_both_files_come_back_each_to_its_place(
    make_service: Callable[..., Service], replica: Callable[..., Litestream], tmp_path: Path
) -> None:
    db = a_database(make_service, 2)
    conn = connect_both(db)
    conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, total REAL)")
    conn.execute("INSERT INTO orders (total) VALUES (9.5)")
    conn.close()  # the last connection: its WAL is checkpointed into the file
    to = tmp_path / "elsewhere" / "app.sqlite3"
    target = parse_target((tmp_path / "bucket").as_uri())
    restored = restore_replica(target, to, binary=replica(db), environ={})
    assert restored.ok
    assert restored.records == records_path(to)
    assert restored.as_dict()["records"] == str(records_path(to))
    assert records_path(to).with_name("witness.json").is_file()
    beside = {path.name for path in to.parent.iterdir()}  # the file (and its WAL), no more
    assert beside <= {"app.sqlite3", "app.sqlite3-wal", "app.sqlite3-shm"}
    conn = connect_both(to)
    assert conn.execute("SELECT total FROM main.orders").fetchall() == [(9.5,)]
    assert conn.execute("SELECT count(*) FROM sqlgate.memory_events").fetchall() == [(3,)]
    conn.close()


def a_0_1_0_file(path: Path) -> Path:
    """A file in sqlgate 0.1.0's layout: the memory chain inside the user's database."""
    conn = apsw.Connection(str(path))
    conn.execute("CREATE TABLE memory_events (id INTEGER PRIMARY KEY, hash TEXT)")
    conn.close()
    return path


@pytest.mark.parametrize(
    ("holds", "code", "words"),
    [
        ("nothing", 3, "holds no database replica (nothing under db/)"),
        ("0.1.0", 8, "holds a replica in sqlgate 0.1.0's layout"),
        ("db alone", 3, "not sqlgate's records of it (nothing under records/)"),
    ],
)
def test_a_url_without_both_replicas_is_refused_and_leaves_nothing(
    replica: Callable[..., Litestream], tmp_path: Path, holds: str, code: int, words: str
) -> None:
    source = {"nothing": None, "0.1.0": a_0_1_0_file(tmp_path / "old.db"),
              "db alone": tmp_path / "plain.db"}[holds]  # fmt: skip
    if holds == "db alone":
        plain = apsw.Connection(str(source))
        plain.execute("CREATE TABLE t (x)")
        plain.close()
    to = tmp_path / "elsewhere" / "agent.db"
    target = parse_target((tmp_path / "bucket").as_uri())
    with pytest.raises(SqlgateError) as caught:
        restore_replica(target, to, binary=replica(source, records=None), environ={})
    assert words in str(caught.value)
    assert caught.value.exit_code == code
    assert not to.exists()
    assert not records_path(to).parent.exists()


@pytest.mark.parametrize("taken", ["db", "records", "witness"])
def test_a_restore_never_overwrites_the_database_or_its_records(
    make_service: Callable[..., Service], replica: Callable[..., Litestream], tmp_path: Path,
    taken: str,
) -> None:  # fmt: skip
    db = a_database(make_service, 1)
    to = tmp_path / "elsewhere" / "agent.db"
    records = records_path(to)
    path = {"db": to, "records": records, "witness": records.with_name("witness.json")}[taken]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"mine")
    target = parse_target((tmp_path / "bucket").as_uri())
    with pytest.raises(InvalidArgument) as caught:
        restore_replica(target, to, binary=replica(db), environ={})
    assert f"{path} exists; restore never overwrites anything" in str(caught.value)
    assert path.read_bytes() == b"mine"
