"""`sqlgate migrate`: the listing of what moves and what stays, --dry-run changing nothing,
--json, the move itself, and its refusals with the CLI's exit codes; `serve` says what its
first start moved."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import apsw
import pytest

from sqlgate.home import record_files
from tests.legacy_files import Legacy, build_010, header, tree_digest
from tests.surfaces.cli.helpers import error_line, invoke, json_lines, succeeded

pytestmark = pytest.mark.usefixtures("no_sqlgate_environment")


@pytest.fixture
def old(tmp_path: Path) -> Legacy:
    return build_010(tmp_path / "app.db", "adopted-auto-vacuum")


def everything(old: Legacy) -> dict[str, str]:
    """Every file of the database's folder and of its records folder (the per-user data
    folder is shared with the other tests of the run: only this database's part of it)."""
    folder = record_files(old.path).folder
    return tree_digest(old.path.parent, *([folder] if folder.exists() else []))


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_dry_run_lists_the_move_and_changes_nothing(old: Legacy, json_flag: list[str]) -> None:
    seen = everything(old)
    out = succeeded(invoke("migrate", "--db", str(old.path), "--dry-run", *json_flag))
    assert everything(old) == seen
    if json_flag:
        shown = json.loads(out)
        assert shown["moved"] is False
        assert {"query_log", "memory_events"} <= {m["name"] for m in shown["moving"]}
        assert {s["name"] for s in shown["staying"]} >= {"customers", "orders", "invoices"}
    else:
        records = [line.split("\t") for line in out.splitlines()]  # piped: one record a line
        goes = {name: where for _, name, _, where in records}
        assert goes["query_log"] == "records.sqlite"
        assert goes["customers"] == "stays"


def test_migrate_moves_the_file_and_says_where_the_backup_is(old: Legacy) -> None:
    result = invoke("migrate", "--db", str(old.path))
    out = succeeded(result)
    assert header(old.path) == (0, 0)
    assert "stays" in out
    assert "records.sqlite" in out
    backups = sorted((record_files(old.path).folder / "migrated").glob("*.sqlite"))
    assert len(backups) == 1
    assert f"backup of the file as it was: {backups[0]}" in result.stderr
    assert "PRAGMA journal_mode=delete" in result.stderr
    again = succeeded(invoke("migrate", "--db", str(old.path)))
    assert again.startswith("nothing to move:")


def test_migrate_json_reports_what_moved(old: Legacy) -> None:
    shown = json_lines(succeeded(invoke("migrate", "--db", str(old.path), "--json")))[0]
    assert shown["moved"] is True
    assert shown["copied"]["memory_events"] == 4
    assert shown["relocated"] >= 1
    assert Path(shown["backup"]).is_file()


@pytest.mark.parametrize("dry_run", [[], ["--dry-run"]])
def test_a_held_file_is_refused_with_exit_8_and_left_as_it_was(
    old: Legacy, dry_run: list[str]
) -> None:
    other = apsw.Connection(str(old.path))
    other.execute("SELECT count(*) FROM customers").fetchall()
    try:
        seen = everything(old)
        result = invoke("migrate", "--db", str(old.path), *dry_run)
        if dry_run:  # the plan only reads
            succeeded(result)
        else:
            assert "another connection has it open" in error_line(result, 8)
        assert everything(old) == seen
    finally:
        other.close()


def test_a_missing_database_is_exit_3(tmp_path: Path) -> None:
    error_line(invoke("migrate", "--db", str(tmp_path / "none.db")), 3)


def test_read_commands_name_the_migrate_command(old: Legacy) -> None:
    line = error_line(invoke("log", "--db", str(old.path)), 8)
    assert "sqlgate migrate --db" in line
    assert header(old.path)[0] != 0


def test_serve_moves_on_its_first_start_and_says_so_on_stderr(old: Legacy) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "sqlgate", "serve", "--db", str(old.path)],
        input="",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "sqlgate: " in done.stderr
    assert "moved to" in done.stderr
    assert "backup of the file as it was:" in done.stderr
    assert header(old.path) == (0, 0)
