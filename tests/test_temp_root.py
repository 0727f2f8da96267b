"""The suite keeps its temporary files in memory when it can, and where it is told when told."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

import tests.temp_root as temp_root
from tests.temp_root import fast_temp_root, move_temp_root


def test_an_unset_tmpdir_and_a_roomy_tmpfs_move_the_files_there(tmp_path: Path) -> None:
    environ: dict[str, str] = {}
    assert move_temp_root(environ, tmp_path) == tmp_path
    assert environ == {"TMPDIR": str(tmp_path)}


def test_a_chosen_tmpdir_is_kept(tmp_path: Path) -> None:
    environ = {"TMPDIR": "/var/tmp"}
    assert move_temp_root(environ, tmp_path) is None
    assert environ == {"TMPDIR": "/var/tmp"}


def test_a_missing_tmpfs_changes_nothing(tmp_path: Path) -> None:
    environ: dict[str, str] = {}
    assert move_temp_root(environ, tmp_path / "absent") is None
    assert environ == {}


def test_a_tmpfs_without_room_for_three_runs_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(temp_root, "MIN_FREE_BYTES", 1 << 62)
    assert fast_temp_root({}, tmp_path) is None


def test_tmp_path_is_in_the_folder_tempfile_and_child_processes_use(tmp_path: Path) -> None:
    """pytest_configure moved TMPDIR before the first tmp_path was made."""
    root = Path(os.environ.get("TMPDIR") or tempfile.gettempdir()).resolve()
    assert Path(tempfile.gettempdir()).resolve() == root
    assert tmp_path.resolve().is_relative_to(root)
