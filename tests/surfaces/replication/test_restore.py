"""`sqlgate restore` records the restore in the copy's memory chain, so `verify` on the copy
names it, and says "rolled back from event N to M" when a witness knew events the replica
lacks (never a shortened chain presented as whole, nor "no events yet")."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from sqlgate.service import Service
from sqlgate.surfaces.cli.app import main
from sqlgate.surfaces.replication.litestream import Litestream
from sqlgate.surfaces.replication.restore import restore_replica
from sqlgate.surfaces.replication.target import parse_target

# a stand-in whose `restore` copies one prepared file to the path it is given, and has no
# witness log to restore
STAND_IN = """#!{python}
import shutil, sys
target = sys.argv[-1]
if target.endswith("witness-log"):
    print("Error: no matching backup files available", file=sys.stderr); sys.exit(1)
shutil.copy({source!r}, target); print('{{"txid": "0000000000000001"}}')
"""


@pytest.fixture
def replica(tmp_path: Path) -> Callable[[Path], Litestream]:
    def make(source: Path) -> Litestream:
        path = tmp_path / "bin" / "litestream"
        path.parent.mkdir(exist_ok=True)
        path.write_text(STAND_IN.format(python=sys.executable, source=str(source)))
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
    make_service: Callable[..., Service], replica: Callable[[Path], Litestream], tmp_path: Path,
    in_replica: int,
) -> None:  # fmt: skip
    db = a_database(make_service, in_replica)
    copy = tmp_path / "replica.db"
    shutil.copy(db, copy)  # what the replica holds
    service = make_service()
    for number in range(in_replica, 5):
        service.append_event(f"event {number + 1}")  # written in the last moments
    service.close()
    kept = Path(f"{db}.witness.json")
    to = tmp_path / "elsewhere" / "agent.db"
    target = parse_target((tmp_path / "bucket").as_uri())
    restored = restore_replica(target, to, witness=kept, binary=replica(copy), environ={})
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
    make_service: Callable[..., Service], replica: Callable[[Path], Litestream], tmp_path: Path
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
