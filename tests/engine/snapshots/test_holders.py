"""Naming the processes that hold a database open, from a /proc tree built for the test."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sqlgate.engine.snapshots.holders import COMMAND_CHARS, Holder, holders_of


def fake_proc(tmp_path: Path, processes: dict[int, tuple[list[Path], bytes]]) -> Path:
    proc = tmp_path / "proc"
    (proc / "self" / "fd").mkdir(parents=True)
    for pid, (targets, cmdline) in processes.items():
        fd = proc / str(pid) / "fd"
        fd.mkdir(parents=True)
        for number, target in enumerate(targets):
            os.symlink(target, fd / str(number))
        (proc / str(pid) / "cmdline").write_bytes(cmdline)
    return proc


@pytest.mark.parametrize(
    ("suffix", "held"),
    [
        pytest.param("", True, id="the-database"),
        pytest.param("-wal", True, id="its-wal"),
        pytest.param("-shm", True, id="its-shm"),
        pytest.param("-journal", False, id="another-file"),
        pytest.param(".snapshots", False, id="a-name-that-starts-alike"),
    ],
)
def test_a_process_is_named_when_it_holds_the_database_or_its_wal_or_shm(
    tmp_path: Path, suffix: str, held: bool
) -> None:
    db = tmp_path / "agent.db"
    proc = fake_proc(tmp_path, {41: ([Path(f"{db}{suffix}")], b"sqlgate\0serve\0--db\0x\0")})
    expected = [Holder(41, "sqlgate serve --db x")] if held else []
    assert holders_of(db, proc=proc, me=1) == expected


def test_this_process_is_left_out_and_holders_come_in_pid_order(tmp_path: Path) -> None:
    db = tmp_path / "agent.db"
    proc = fake_proc(
        tmp_path, {9: ([db], b"b\0"), 3: ([db], b"a\0"), 5: ([db], b"me\0"), 7: ([], b"c\0")}
    )
    assert holders_of(db, proc=proc, me=5) == [Holder(3, "a"), Holder(9, "b")]


def test_a_long_command_line_is_cut(tmp_path: Path) -> None:
    db = tmp_path / "agent.db"
    proc = fake_proc(tmp_path, {8: ([db], b"x" * 1000)})
    (holder,) = holders_of(db, proc=proc, me=1) or []
    assert len(holder.command) == COMMAND_CHARS
    assert holder.command.endswith("…")


def test_a_symlinked_database_path_is_matched_by_the_file_it_names(tmp_path: Path) -> None:
    db = tmp_path / "agent.db"
    db.touch()
    link = tmp_path / "link.db"
    link.symlink_to(db)
    proc = fake_proc(tmp_path, {8: ([db], b"server\0")})
    assert holders_of(link, proc=proc, me=1) == [Holder(8, "server")]


def test_without_proc_it_cannot_tell(tmp_path: Path) -> None:
    assert holders_of(tmp_path / "agent.db", proc=tmp_path / "no-proc") is None
