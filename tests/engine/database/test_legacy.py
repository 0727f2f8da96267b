"""Moving a sqlgate 0.1.0 file to the records layout (issue 33): nothing lost (every row
copied and checked, the chain verifies and its head is the witnessed one, old undo ids still
undo their calls, an auto_vacuum file included), the user's file keeps only its own objects
and rows, a move stopped at any step completes on the next run, and a file another
connection holds is refused untouched."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest

from sqlgate.config import Settings
from sqlgate.engine.database import Database, legacy
from sqlgate.engine.database.legacy import move as move_with
from sqlgate.engine.database.legacy import plan_move
from sqlgate.engine.schema import APPLICATION_ID, FTS5_SHADOW_SUFFIXES, REGISTRY, RESERVED
from sqlgate.engine.undo import relocate_shapes
from sqlgate.errors import StartupError
from sqlgate.home import record_files
from sqlgate.service import Service
from tests.legacy_files import (
    QUEUED_TOKEN,
    SHAPES,
    Legacy,
    build_010,
    header,
    tree_digest,
    user_rows,
)


def move(path: Path, settings: Settings) -> legacy.MoveResult | None:
    return move_with(path, settings, relocate_shapes)


def open_db(settings: Settings, *, read_only: bool = False) -> Database:
    """As the service opens it: a 0.1.0 file has its tables moved out first."""
    if read_only:
        return Database.open(settings, read_only=True)
    return Database.open(settings, relocate=relocate_shapes)


SERVER_NAMES = {o.name for o in REGISTRY if o not in RESERVED} | {
    f"{o.name}{suffix}" for o in REGISTRY if o.kind == "fts5" for suffix in FTS5_SHADOW_SUFFIXES
}


@pytest.fixture(params=sorted(SHAPES))
def old(request: pytest.FixtureRequest, tmp_path: Path) -> Legacy:
    return build_010(tmp_path / "app.db", request.param)


@pytest.fixture
def auto_vacuum_file(tmp_path: Path) -> Legacy:
    return build_010(tmp_path / "app.db", "adopted-auto-vacuum")


def schema_names(path: Path) -> set[str]:
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return {str(n) for (n,) in conn.execute("SELECT name FROM sqlite_schema")}
    finally:
        conn.close()


def integrity(path: Path) -> list[str]:
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return [str(row[0]) for row in conn.execute("PRAGMA integrity_check")]
    finally:
        conn.close()


def assert_moved_whole(old: Legacy, before: dict[str, Any], counts: dict[str, int]) -> None:
    """Everything a finished move promises, read from the files and through the service."""
    path = old.path
    files = record_files(path)
    assert header(path) == (0, 0)
    assert not schema_names(path) & SERVER_NAMES
    assert user_rows(path) == before
    assert integrity(path) == ["ok"] == integrity(files.records)
    conn = apsw.Connection(str(files.records), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        for table, rows in counts.items():
            # the records' own notes of the file they belong to come on top of what moved
            where = " WHERE key NOT LIKE 'binding.%'" if table == "server_info" else ""
            found = conn.execute(f"SELECT count(*) FROM {table}{where}").fetchone()
            assert found == (rows,), table
    finally:
        conn.close()
    assert files.witness.read_bytes() == old.witness
    assert not path.with_name(path.name + ".witness.json").exists()
    assert not path.with_name(path.name + ".snapshots").exists()
    assert not path.with_name(path.name + ".audit-queue").exists()
    assert (files.snapshots.stat().st_mode & 0o777) == 0o700
    assert all((f.stat().st_mode & 0o777) == 0o600 for f in files.snapshots.iterdir())
    witnessed = json.loads(old.witness)
    service = Service.open(Settings(db=path), session="s-after")
    try:
        assert service.db.database_id == old.database_id
        chain = json.loads(service.verify_chain())
        assert chain["ok"] is True
        assert (chain["head_id"], chain["head_hash"]) == (
            witnessed["head_id"],
            witnessed["head_hash"],
        )
        for undo_id in reversed(old.undo_ids):
            assert service.undo(undo_id).startswith(f"undone: call {undo_id.split('@')[0]} (")
    finally:
        service.close()  # writes the rows queued before (0.1.0's queue, moved) on its way out
    conn = apsw.Connection(str(files.records), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        found = conn.execute(
            "SELECT count(*) FROM query_log WHERE json_extract(detail, '$.queued') = ?",
            (QUEUED_TOKEN,),
        ).fetchone()
    finally:
        conn.close()
    assert found == (1,)


def source_counts(path: Path) -> dict[str, int]:
    return {m.name: m.rows for m in plan_move(path).moving if m.rows is not None}


def test_a_010_file_moves_whole_and_its_old_undo_ids_still_undo(old: Legacy) -> None:
    before, counts = user_rows(old.path), source_counts(old.path)
    assert header(old.path)[0] == APPLICATION_ID
    result = move(old.path, Settings(db=old.path))
    assert result is not None
    # a table a later schema added (a schema 8 file has no members) comes in empty
    assert result.copied == {table: counts.get(table, 0) for table in result.copied}
    assert counts.keys() <= result.copied.keys()
    assert_moved_whole(old, before, counts)
    backup = result.backup
    assert backup is not None
    assert backup.parent == record_files(old.path).folder / "migrated"
    assert header(backup)[0] == APPLICATION_ID  # the file as it was, sqlgate's tables in it
    assert (backup.stat().st_mode & 0o777) == 0o600
    assert (backup.parent.stat().st_mode & 0o777) == 0o700
    assert (backup.with_suffix(".witness.json")).read_bytes() == old.witness


def test_the_journal_mode_stays_and_the_plan_says_how_to_go_back(old: Legacy) -> None:
    move(old.path, Settings(db=old.path))
    conn = apsw.Connection(str(old.path))
    try:
        assert conn.pragma("journal_mode") == "wal"
    finally:
        conn.close()


def test_the_plan_lists_what_moves_and_what_stays_and_changes_nothing(old: Legacy) -> None:
    folder = old.path.parent
    seen = tree_digest(folder)
    plan = plan_move(old.path)
    assert tree_digest(folder) == seen
    assert plan.needed
    assert plan.version == SHAPES[old.shape][2]
    assert {m.name for m in plan.moving} <= SERVER_NAMES
    assert {"query_log", "memory_events", "undo_changesets"} <= {m.name for m in plan.moving}
    assert {name for _, name in plan.staying} == schema_names(old.path) - SERVER_NAMES - {
        n for n in schema_names(old.path) if n.startswith("sqlite_autoindex_")
    }
    assert {f.source.name for f in plan.files} == {
        "app.db.snapshots",
        "app.db.witness.json",
        "app.db.audit-queue",
    }


def test_the_auto_vacuum_strip_moves_root_pages_and_the_undo_data_follows(
    auto_vacuum_file: Legacy,
) -> None:
    result = move(auto_vacuum_file.path, Settings(db=auto_vacuum_file.path))
    assert result is not None
    assert result.relocated >= 1


def test_without_the_rewrite_an_old_undo_id_of_a_moved_table_is_refused(
    auto_vacuum_file: Legacy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The guard the rewrite answers: undo's own SCHEMA check refuses a table whose root
    page is not the recorded one (so the rewrite is what honours those ids)."""
    result = move_with(auto_vacuum_file.path, Settings(db=auto_vacuum_file.path), lambda c, m: 0)
    assert result is not None
    service = Service.open(Settings(db=auto_vacuum_file.path), session="s")
    try:
        with pytest.raises(Exception, match="another table has its name now"):
            service.undo(auto_vacuum_file.undo_ids[-1])  # the invoices table's call
    finally:
        service.close()


STEPS = ["_back_up", "_copy", "_strip", "_relocate", "_move_files"]


class Crash(Exception):
    pass


def crashing(real: Callable[..., Any], when: str) -> Callable[..., Any]:
    def step(*args: Any, **kwargs: Any) -> Any:
        if when == "before":
            raise Crash
        real(*args, **kwargs)
        raise Crash

    return step


@pytest.mark.parametrize("when", ["before", "after"])
@pytest.mark.parametrize("step", STEPS)
def test_a_move_stopped_at_any_step_completes_on_the_next_run(
    auto_vacuum_file: Legacy, monkeypatch: pytest.MonkeyPatch, step: str, when: str
) -> None:
    old = auto_vacuum_file
    before, counts = user_rows(old.path), source_counts(old.path)
    with monkeypatch.context() as patch:
        patch.setattr(legacy, step, crashing(getattr(legacy, step), when))
        with pytest.raises(Crash):
            move(old.path, Settings(db=old.path))
    if step in ("_back_up", "_copy") or (step == "_strip" and when == "before"):
        assert header(old.path)[0] == APPLICATION_ID  # not stripped before the copy is kept
    again = move(old.path, Settings(db=old.path))
    assert again is not None
    assert_moved_whole(old, before, counts)
    assert move(old.path, Settings(db=old.path)) is None  # done: nothing left to do


def test_opening_the_database_finishes_a_stopped_move(
    auto_vacuum_file: Legacy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After the strip the header no longer says 0.1.0: the journal does."""
    old = auto_vacuum_file
    before, counts = user_rows(old.path), source_counts(old.path)
    with monkeypatch.context() as patch:
        patch.setattr(legacy, "_relocate", crashing(legacy._relocate, "before"))
        with pytest.raises(Crash):
            move(old.path, Settings(db=old.path))
    assert header(old.path) == (0, 0)
    with pytest.raises(StartupError, match="sqlgate migrate"):
        open_db(Settings(db=old.path), read_only=True)
    db = open_db(Settings(db=old.path))
    try:
        assert db.moved is not None
        assert db.moved.plan.unfinished == "stripped"
    finally:
        db.close()
    assert_moved_whole(old, before, counts)


def test_opening_a_010_file_moves_it_and_says_what_it_did(tmp_path: Path) -> None:
    old = build_010(tmp_path / "app.db", "adopted-wal")
    before, counts = user_rows(old.path), source_counts(old.path)
    db = open_db(Settings(db=old.path))
    try:
        assert db.moved is not None
        assert db.moved.copied == counts
    finally:
        db.close()
    assert_moved_whole(old, before, counts)


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def held(tmp_path: Path) -> Iterator[Legacy]:
    old = build_010(tmp_path / "app.db", "adopted-wal")
    other = apsw.Connection(str(old.path))  # another program with the file open
    other.execute("SELECT count(*) FROM customers").fetchall()
    try:
        yield old
    finally:
        other.close()


@pytest.mark.parametrize(
    "opening",
    [
        pytest.param(lambda p: move(p, Settings(db=p)), id="move"),
        pytest.param(lambda p: open_db(Settings(db=p)), id="open"),
        pytest.param(lambda p: open_db(Settings(db=p), read_only=True), id="read-only"),
    ],
)
def test_a_file_another_connection_holds_is_refused_untouched(
    held: Legacy, opening: Callable[[Path], Any]
) -> None:
    seen = sha(held.path)
    with pytest.raises(StartupError, match="sqlgate migrate"):
        opening(held.path)
    assert sha(held.path) == seen
    assert not record_files(held.path).folder.exists()


@pytest.mark.parametrize("kind", ["app file", "empty file", "new sqlgate file"])
def test_a_file_that_is_not_010_has_nothing_to_move(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "db.sqlite"
    if kind == "app file":
        conn = apsw.Connection(str(path))
        conn.execute("CREATE TABLE query_log (x); INSERT INTO query_log VALUES (1)")
        conn.close()
    elif kind == "empty file":
        path.write_bytes(b"")
    else:
        open_db(Settings(db=path)).close()
    if path.stat().st_size:
        assert not plan_move(path).needed
    assert move(path, Settings(db=path)) is None


def test_records_that_hold_history_are_never_replaced(
    auto_vacuum_file: Legacy, tmp_path: Path
) -> None:
    old = auto_vacuum_file
    other = tmp_path / "other.db"
    service = Service.open(Settings(db=other), session="s")
    service.append_event("history of its own")
    service.close()
    files = record_files(old.path)
    files.folder.mkdir(parents=True)
    for name in ("records.sqlite",):
        (files.folder / name).write_bytes((record_files(other).folder / name).read_bytes())
    seen = sha(old.path)
    with pytest.raises(StartupError, match="will not merge two histories"):
        move(old.path, Settings(db=old.path))
    assert sha(old.path) == seen


def test_a_backup_put_back_after_the_move_is_refused_untouched(
    auto_vacuum_file: Legacy,
) -> None:
    """Going back (the backup copied over the file) and starting again: the records already
    hold that history, so the second move refuses rather than replace or merge them."""
    old = auto_vacuum_file
    result = move(old.path, Settings(db=old.path))
    assert result is not None
    assert result.backup is not None
    old.path.write_bytes(result.backup.read_bytes())
    seen = sha(old.path)
    records = record_files(old.path).records
    kept = sha(records)
    for _ in range(2):  # refused before anything is written: a second try is refused too
        with pytest.raises(StartupError, match="will not merge two histories"):
            move(old.path, Settings(db=old.path))
    assert sha(old.path) == seen
    assert sha(records) == kept
    journal = json.loads((result.backup.parent / "move.json").read_text(encoding="utf-8"))
    assert journal["step"] == "done"  # the first move's record, as it was
