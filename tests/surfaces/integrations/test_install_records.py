"""sqlgate's own folder for client configs (surfaces/integrations/install_records.py): backups
named by time and pruned per client, and the record of what install created."""

from __future__ import annotations

import json
import os
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from sqlgate.surfaces.integrations.config_files import ConfigUnwritable
from sqlgate.surfaces.integrations.install_records import (
    BACKUPS_KEPT,
    InstallRecords,
    goes_when_empty,
)

NOW = datetime(2026, 5, 4, 3, 2, 1, tzinfo=timezone.utc)


@pytest.fixture
def records(tmp_path: Path) -> InstallRecords:
    return InstallRecords(tmp_path / "data")


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "home" / ".claude.json"
    path.parent.mkdir()
    path.write_text('{"a": 1}')
    return path


def test_backups_are_named_by_utc_time_and_numbered_within_a_second(
    records: InstallRecords, config: Path
) -> None:
    first = records.back_up(config, "claude-code", NOW)
    second = records.back_up(config, "claude-code", NOW)
    assert first == records.root / "backups" / "claude-code" / "20260504T030201Z-.claude.json"
    assert second.name == "20260504T030201Z.2-.claude.json"
    assert first.read_text() == second.read_text() == '{"a": 1}'


def test_prune_keeps_the_newest_per_client_and_nothing_else_is_touched(
    records: InstallRecords, config: Path
) -> None:
    made = [records.back_up(config, "cursor", NOW + timedelta(minutes=n)) for n in range(12)]
    other = records.back_up(config, "vscode", NOW)
    folder = records.backups("cursor")
    (folder / "notes.txt").write_text("mine")  # a name sqlgate does not give
    (folder / "20200101T000000Z-dir").mkdir()  # a folder with a backup's name

    removed = records.prune("cursor")

    assert removed == made[:2]
    assert sorted(p for p in folder.iterdir() if p.is_file() and p.name != "notes.txt") == sorted(
        made[2:]
    )
    assert len(made[2:]) == BACKUPS_KEPT
    assert (folder / "notes.txt").exists()
    assert (folder / "20200101T000000Z-dir").is_dir()
    assert other.exists()


def test_prune_orders_numbered_backups_of_one_second_by_number(
    records: InstallRecords, config: Path
) -> None:
    made = [records.back_up(config, "codex", NOW) for _ in range(4)]
    records.prune("codex", keep=2)
    assert [p.exists() for p in made] == [False, False, True, True]


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks need privileges")
def test_prune_never_follows_or_removes_a_link(
    records: InstallRecords, config: Path, tmp_path: Path
) -> None:
    records.back_up(config, "cursor", NOW)
    link = records.backups("cursor") / "20000101T000000Z-old"
    link.symlink_to(config)
    records.prune("cursor", keep=0)
    assert link.is_symlink()
    assert config.read_text() == '{"a": 1}'


def test_an_odd_client_name_stays_one_folder(records: InstallRecords) -> None:
    assert records.backups("../../etc") == records.root / "backups" / "..-..-etc"


def test_a_backup_folder_that_cannot_be_made_is_reported(
    records: InstallRecords, config: Path
) -> None:
    records.root.mkdir()
    (records.root / "backups").write_text("a file where the folder should be")
    with pytest.raises(ConfigUnwritable, match=r"cannot back up .* nothing was changed"):
        records.back_up(config, "cursor", NOW)


def test_the_record_merges_keys_and_forgets_a_removed_file(
    records: InstallRecords, config: Path
) -> None:
    assert records.of(config) is None
    records.note(config, created=True, folders=[config.parent], added=(("mcpServers",),),
                 removed=())  # fmt: skip
    records.note(config, created=False, folders=[], added=(("hooks",), ("mcpServers",)),
                 removed=())  # fmt: skip
    record = records.of(config)
    assert record is not None
    assert record.created is True  # the first write made it
    assert record.folders == (str(config.parent),)
    assert record.keys == (("mcpServers",), ("hooks",))
    records.note(config, created=False, folders=[], added=(), removed=(("mcpServers",),))
    assert records.of(config).keys == (("hooks",),)  # type: ignore[union-attr]
    records.forget(config)
    assert records.of(config) is None


@pytest.mark.parametrize("damage", ["not json", "[]", '{"files": []}', '{"files": {"x": 1}}'])
def test_a_damaged_record_counts_as_empty(
    records: InstallRecords, config: Path, damage: str
) -> None:
    records.root.mkdir()
    records.ledger.write_text(damage)
    assert records.of(config) is None
    records.note(config, created=True, folders=[], added=(), removed=())
    assert records.of(config) is not None


def test_an_emptied_key_goes_when_sqlgate_added_it_or_has_no_record_of_the_file(
    records: InstallRecords, config: Path
) -> None:
    assert goes_when_empty(("mcpServers",), None)
    records.note(config, created=False, folders=[], added=(("hooks",),), removed=())
    record = records.of(config)
    assert goes_when_empty(("hooks",), record)
    assert not goes_when_empty(("mcpServers",), record)  # it was there before install


def test_the_record_is_replaced_atomically(records: InstallRecords, config: Path) -> None:
    records.note(config, created=True, folders=[], added=(), removed=())
    assert sorted(os.listdir(records.root)) == ["installed.json"]  # no temp file left


def test_backups_an_older_sqlgate_left_beside_the_config_move_into_the_folder(
    records: InstallRecords, config: Path
) -> None:
    old = [config.with_name(f".claude.json.sqlgate-backup-2026010{n}T000000Z") for n in (1, 2)]
    old.append(config.with_name(".claude.json.sqlgate-backup-20260102T000000Z-2"))
    for path in old:
        path.write_text("old")
    mine = config.with_name(".claude.json.sqlgate-backup-notes")  # not a name sqlgate gave
    mine.write_text("keep")

    moved = records.adopt_old_backups(config, "claude-code")

    assert sorted(p.name for p in moved) == [
        "20260101T000000Z-.claude.json",
        "20260102T000000Z-.claude.json",
        "20260102T000000Z.2-.claude.json",
    ]
    assert sorted(p.name for p in config.parent.iterdir()) == [".claude.json", mine.name]


def test_the_record_keeps_the_permission_rules_install_added(
    records: InstallRecords, config: Path
) -> None:
    ours = (("allow", "mcp__sqlgate__read_query"), ("ask", "mcp__sqlgate__undo_call"))
    records.note(config, created=False, folders=[], added=(), removed=(), added_rules=ours)
    records.note(config, created=False, folders=[], added=(), removed=(),
                 added_rules=(("allow", "mcp__memory__read_query"), ours[0]))  # fmt: skip
    record = records.of(config)
    assert record is not None
    assert record.rules == (*ours, ("allow", "mcp__memory__read_query"))
    records.note(config, created=False, folders=[], added=(), removed=(), removed_rules=ours)
    assert records.of(config).rules == (("allow", "mcp__memory__read_query"),)  # type: ignore[union-attr]


def test_damaged_rules_in_the_record_are_left_out(records: InstallRecords, config: Path) -> None:
    records.root.mkdir()
    records.ledger.write_text(
        json.dumps(
            {"files": {str(config): {"rules": [["allow", "mcp__a__b"], ["allow"], "x", [1, 2]]}}}
        )
    )
    assert records.of(config).rules == (("allow", "mcp__a__b"),)  # type: ignore[union-attr]


# (folders an install made, per file; what else is there; the file removed; folders left)
FOLDERS = [
    pytest.param({"a/b/f": ["a", "a/b"]}, [], "a/b/f", [], id="its-own-folders"),
    pytest.param({"a/f": ["a"], "a/c/g": ["a/c"]}, [], "a/c/g", [],
                 id="a-folder-another-install-made"),
    pytest.param({"a/b/f": ["a", "a/b"], "a/c/g": ["a/c"]}, ["a/b/f"], "a/c/g", ["a", "a/b"],
                 id="a-shared-folder-in-use-stays"),
    pytest.param({"a/b/f": ["a/b"]}, [], "a/b/f", ["a"], id="a-folder-there-before-stays"),
    pytest.param({"a/b/f": ["a", "a/b"]}, ["a/b/mine"], "a/b/f", ["a", "a/b"],
                 id="a-folder-holding-something-else-stays"),
]  # fmt: skip


@pytest.mark.parametrize(("made", "kept_files", "removed", "left"), FOLDERS)
def test_an_uninstall_removes_the_empty_folders_any_install_made(
    records: InstallRecords, tmp_path: Path, made: dict[str, list[str]],
    kept_files: list[str], removed: str, left: list[str],
) -> None:  # fmt: skip
    home = tmp_path / "home"
    for file, folders in made.items():
        (home / file).parent.mkdir(parents=True, exist_ok=True)
        records.note(home / file, created=True, folders=[home / f for f in folders], added=(),
                     removed=())  # fmt: skip
    for file in kept_files:
        (home / file).parent.mkdir(parents=True, exist_ok=True)
        (home / file).write_text("x")
    records.remove_empty_folders(home / removed)
    found = sorted(str(p.relative_to(home)) for p in home.rglob("*") if p.is_dir())
    assert found == sorted(left)
