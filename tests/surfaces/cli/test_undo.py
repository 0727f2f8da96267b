"""`sqlgate undo` through click's CliRunner, on a database the server changed and closed.

Exit codes are the error classes': 2 a bad argument, 3 an unknown call or changeset, 7 an
undo problem (a conflict; a call already undone, pruned, of another database, or that took a
whole-file snapshot).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from sqlgate.config import FLAGS
from sqlgate.errors import InvalidArgument, NotFound, UndoConflict, UndoRefused
from sqlgate.service import Service
from sqlgate.surfaces.cli.app import main
from tests.surfaces.cli.helpers import error_line, json_lines, read, succeeded


@pytest.fixture(autouse=True)
def no_sqlgate_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings from the developer's shell must not leak into these tests."""
    for flag in FLAGS:
        monkeypatch.delenv(flag.env_var, raising=False)


def undo(db: Path, *args: str) -> Result:
    return CliRunner().invoke(main, ["undo", "--db", str(db), *args], prog_name="sqlgate")


def notes(db: Path) -> list[str]:
    return [str(row[0]) for row in read(db, "SELECT body FROM notes ORDER BY id")]


def call_id(text: str) -> int:
    found = re.search(r"undo: sqlgate undo (\d+)@[0-9a-f]{8} --db \S+$", text)
    assert found, text
    return int(found[1])


@pytest.fixture
def changed(make_service: Callable[..., Service], db_path: Path) -> tuple[int, int]:
    """notes a, b, c; call one deleted b, call two upper-cased a and c; the server is closed."""
    service = make_service()
    service.write_query("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    service.write_query("INSERT INTO notes (body) VALUES ('a'), ('b'), ('c')")
    first = call_id(service.destructive_query("DELETE FROM notes WHERE body = 'b'", "typo"))
    second = call_id(service.destructive_query("UPDATE notes SET body = upper(body)", "shout"))
    service.close()
    return first, second


def test_undo_by_audit_id_restores_the_rows(db_path: Path, changed: tuple[int, int]) -> None:
    first, _ = changed
    out = succeeded(undo(db_path, str(first)))
    assert out == f"undone: call {first} (DELETE, 1 row in notes) in {db_path.absolute()}\n"
    assert notes(db_path) == ["A", "b", "C"]


def test_undo_by_changeset_restores_the_rows(db_path: Path, changed: tuple[int, int]) -> None:
    (changeset,) = read(
        db_path, "SELECT max(id) FROM undo_changesets WHERE tool = 'destructive_query'"
    )[0]
    out = succeeded(undo(db_path, "--changeset", str(changeset)))
    assert out.startswith(f"undone: changeset {changeset} (UPDATE, 2 rows in notes)")
    assert notes(db_path) == ["a", "c"]


def test_the_list_shows_undoable_calls_newest_first(
    db_path: Path, changed: tuple[int, int]
) -> None:
    first, second = changed
    lines = [line.split("\t") for line in succeeded(undo(db_path, "--list")).splitlines()]
    assert lines[0] == [
        "call", "changeset", "time (UTC)", "tool", "kind", "tables", "rows", "reason",
    ]  # fmt: skip
    calls = [line[0].split("@")[0] for line in lines[1:] if line[3] == "destructive_query"]
    assert calls == [str(second), str(first)]  # piped: TSV
    assert lines[1][3:] == ["destructive_query", "UPDATE", "notes", "2", "shout"]


def test_the_list_as_json_drops_calls_once_undone(db_path: Path, changed: tuple[int, int]) -> None:
    first, second = changed
    succeeded(undo(db_path, str(second)))
    items = json_lines(succeeded(undo(db_path, "--list", "--json")))  # one call per line
    (item,) = [item for item in items if item["tool"] == "destructive_query"]
    assert (item["audit_id"].split("@")[0], item["kind"], item["tables"], item["rows"]) == (
        str(first),
        "DELETE",
        ["notes"],
        1,
    )


def test_the_list_says_when_nothing_can_be_undone(service: Service, db_path: Path) -> None:
    service.close()
    result = undo(db_path, "--list")
    assert succeeded(result) == ""  # piped: the listing is empty, the note on stderr
    assert "nothing to undo" in result.stderr


def test_the_undo_itself_is_in_the_audit_log(db_path: Path, changed: tuple[int, int]) -> None:
    first, _ = changed
    succeeded(undo(db_path, str(first)))
    ((tool, session, detail),) = read(
        db_path, "SELECT tool, session, detail FROM query_log ORDER BY id DESC LIMIT 1"
    )
    assert (tool, json.loads(detail)["undoes"]) == ("undo", first)
    assert str(session).startswith("cli-")


def test_a_conflict_exits_with_the_snapshot_error_code_and_changes_nothing(
    make_service: Callable[..., Service], db_path: Path, changed: tuple[int, int]
) -> None:
    _, second = changed
    later = make_service()
    later.write_query("UPDATE notes SET body = 'later' WHERE id = 3")
    later.close()
    line = error_line(undo(db_path, str(second)), UndoConflict.exit_code)
    assert "Nothing was undone" in line
    assert notes(db_path) == ["A", "later"]


@pytest.mark.parametrize(
    ("args", "code", "phrase"),
    [
        pytest.param((), InvalidArgument.exit_code, "give one of", id="nothing-named"),
        pytest.param(("1", "--list"), InvalidArgument.exit_code, "give one of", id="two-named"),
        pytest.param(("999",), NotFound.exit_code, "no call 999", id="unknown-call"),
        pytest.param(("1",), UndoConflict.exit_code, "written into it", id="create-written-into"),
        pytest.param(("--changeset", "99"), NotFound.exit_code, "--snapshots-keep", id="pruned"),
        pytest.param(("0",), InvalidArgument.exit_code, "is not a call id", id="zero"),
        pytest.param(
            (str(2**63),), InvalidArgument.exit_code, "is not a call id", id="past-signed-64-bit"
        ),
        pytest.param(
            ("--changeset", str(2**63)),
            InvalidArgument.exit_code,
            "is not a call id",
            id="changeset-past-signed-64-bit",
        ),
        pytest.param(
            ("--changeset", str(-(2**63) - 1)),
            InvalidArgument.exit_code,
            "is not a call id",
            id="changeset-below-signed-64-bit",
        ),
    ],
)
def test_errors_are_one_line_with_the_error_exit_code(
    db_path: Path, changed: tuple[int, int], args: tuple[str, ...], code: int, phrase: str
) -> None:
    assert phrase in error_line(undo(db_path, *args), code)


def test_an_id_out_of_range_changes_nothing(db_path: Path, changed: tuple[int, int]) -> None:
    before = read(db_path, "SELECT count(*) FROM undo_changesets WHERE undone_at IS NULL")
    error_line(undo(db_path, str(2**64)), InvalidArgument.exit_code)
    assert read(db_path, "SELECT count(*) FROM undo_changesets WHERE undone_at IS NULL") == before
    assert notes(db_path) == ["A", "C"]


def test_an_id_out_of_range_is_refused_before_the_file_is_opened(tmp_path: Path) -> None:
    db = tmp_path / "none.db"
    line = error_line(undo(db, str(2**63)), InvalidArgument.exit_code)
    assert "is not a call id" in line
    assert not db.exists()


def test_a_second_undo_is_refused(db_path: Path, changed: tuple[int, int]) -> None:
    first, _ = changed
    succeeded(undo(db_path, str(first)))
    assert "already undone" in error_line(undo(db_path, str(first)), UndoRefused.exit_code)


def test_a_missing_database_is_not_created(tmp_path: Path) -> None:
    db = tmp_path / "none.db"
    assert "no database at" in error_line(undo(db, "--list"), NotFound.exit_code)
    assert not db.exists()


# -- issue 19: the hint works as written, from any folder, and only on its own database ---


def run_hint(text: str, cwd: Path, monkeypatch: pytest.MonkeyPatch) -> Result:
    """Run the command an answer's undo hint prints, word for word, from `cwd`."""
    import shlex

    words = shlex.split(text.split("; undo: ", 1)[1].splitlines()[0])
    assert words[:2] == ["sqlgate", "undo"]
    monkeypatch.chdir(cwd)
    return CliRunner().invoke(main, words[1:], prog_name="sqlgate")


def test_the_hint_of_a_write_works_as_written_from_another_folder(
    make_service: Callable[..., Service],
    db_path: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    service = make_service()
    service.write_query("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    service.write_query("INSERT INTO notes (body) VALUES ('a'), ('b')")
    out = service.write_query("UPDATE notes SET body = 'oops' WHERE id > 0")
    service.close()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = run_hint(out, elsewhere, monkeypatch)
    assert succeeded(result) == (
        f"undone: call {call_id(out)} (UPDATE, 2 rows in notes) in {db_path.absolute()}\n"
    )
    assert notes(db_path) == ["a", "b"]


def test_an_id_of_another_database_is_refused_with_exit_7_and_nothing_changes(
    make_service: Callable[..., Service], db_path: Path, tmp_path: Path
) -> None:
    theirs = make_service(db=tmp_path / "theirs.db")
    theirs.write_query("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    hint = theirs.write_query("INSERT INTO notes (body) VALUES ('theirs')")
    foreign = hint.split("sqlgate undo ", 1)[1].split(" ")[0]
    theirs.close()
    mine = make_service()
    mine.write_query("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    mine.write_query("INSERT INTO notes (body) VALUES ('mine')")
    mine.close()
    kept = "SELECT id, undone_at FROM undo_changesets"
    before = read(db_path, kept)
    line = error_line(undo(db_path, foreign), 7)
    assert "belongs to another database" in line
    assert str(db_path.absolute()) in line
    assert read(db_path, kept) == before  # refused (and audited): nothing undone
    assert notes(db_path) == ["mine"]


@pytest.mark.parametrize("given", ["15@", "x@ab", "1.5", "15@zz"])
def test_a_malformed_call_id_is_a_usage_error(db_path: Path, given: str) -> None:
    assert "AUDIT_ID@DATABASE_ID" in error_line(undo(db_path, given), 2)
