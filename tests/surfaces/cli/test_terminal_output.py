"""Agent-written text never reaches a terminal as control sequences.

Every command that prints text read from the database is run on a database holding a
payload of cursor and screen sequences (ESC, the one-byte C1 CSI, BEL, BS, DEL) and a
right-to-left override, in every place an agent (or a program with the file) can put it:
table names, SQL, reasons, claims, error texts, file names. The output, piped and on a
terminal-like console (TTY_COMPATIBLE=1: rich then adds its own colours), holds none of
them raw, only their visible escapes; `--json` output holds them as `\\uXXXX` escapes and
still parses to the same values.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from sqlgate.config import FLAGS, Settings
from sqlgate.errors import SqlError
from sqlgate.service import Service
from sqlgate.surfaces.cli.app import main
from tests.records import connect_both
from tests.surfaces.cli.helpers import error_line, json_lines, read, succeeded

# erase the line, cursor up, the one-byte CSI "clear screen", right-to-left override, BEL,
# BS, DEL
PAYLOAD = "\x1b[2K\x1b[1A\x9b2J\u202eevil\x07\x08\x7f"
SHOWN = ("\\x1b[2K", "\\x1b[1A", "\\x9b2J", "\\u202e", "\\x07", "\\x08", "\\x7f")
TERMINAL = {"TTY_COMPATIBLE": "1"}  # rich treats the output as a terminal
PIPED: dict[str, str] = {"TTY_COMPATIBLE": "0"}
CONSOLES = [pytest.param(PIPED, id="piped"), pytest.param(TERMINAL, id="terminal")]
_RICH_COLOUR = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture(autouse=True)
def no_sqlgate_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for flag in FLAGS:
        monkeypatch.delenv(flag.env_var, raising=False)


def invoke(*args: str, env: dict[str, str] | None = TERMINAL) -> Result:
    # on a terminal click keeps escape sequences it would strip from a pipe (color=True)
    return CliRunner().invoke(main, list(args), env={"COLUMNS": "250", **(env or {})},
                              prog_name="sqlgate", color=env is TERMINAL)  # fmt: skip


def assert_inert(output: str) -> None:
    """No control, format or separator character but line feeds, the tabs between TSV
    cells and rich's own colours."""
    rest = _RICH_COLOUR.sub("", output)
    bad = [
        char for char in rest
        if char not in "\n\t" and unicodedata.category(char) in {"Cc", "Cf", "Cs", "Zl", "Zp"}
    ]  # fmt: skip
    assert not bad, (bad, output)


def assert_shown(output: str) -> None:
    """Every character of the payload is there, as its visible escape."""
    for escape in SHOWN:
        assert escape in output, (escape, output)


def assert_json_escaped(output: str) -> None:
    assert_inert(output)
    for code in ("\\u001b", "\\u009b", "\\u202e", "\\u007f"):
        assert code in output, (code, output)


def forge(db: Path, sql: str, *params: Any) -> None:
    """Write the file directly, as another program with access to it could."""
    conn = connect_both(db)
    try:
        conn.execute(sql, params)
    finally:
        conn.close()


@pytest.fixture
def hostile(make_service: Callable[..., Service], db_path: Path) -> Path:
    """A table named with the payload, an undoable delete with it in its reason, a logged
    statement and a failed one carrying it, and two claims whose entities and text hold it."""
    service = make_service()
    table = f'"t{PAYLOAD}"'
    service.write_query(f"CREATE TABLE {table} (id INTEGER PRIMARY KEY, body TEXT)")
    service.write_query(f"INSERT INTO {table} (body) VALUES ('a'), ('b')")
    service.destructive_query(f"DELETE FROM {table} WHERE body = 'a'", f"why{PAYLOAD}")
    service.read_query(f"SELECT '{PAYLOAD}' AS shown")
    with pytest.raises(SqlError):  # the error text quotes the statement
        service.read_query(f"SELEC '{PAYLOAD}'")
    first, _ = service.claims.add("acme", "priority", "acme is first", "slow", 0.8, 1)
    second, _ = service.claims.add("globex", "priority", "globex is first", "slow", 0.8, 1)
    service.close()
    for claim in (first, second):
        forge(db_path, "UPDATE claims SET entity = entity || ?, claim = claim || ? WHERE id = ?",
              PAYLOAD, PAYLOAD, claim.id)  # fmt: skip
    return db_path


# -- undo --list -------------------------------------------------------------------------------
@pytest.mark.parametrize("env", CONSOLES)
def test_undo_list_shows_control_characters_in_reasons_and_tables_visibly(
    hostile: Path, env: dict[str, str]
) -> None:
    out = succeeded(invoke("undo", "--list", "--db", str(hostile), env=env))
    assert_inert(out)
    assert_shown(out)
    if env is PIPED:  # the header, the delete, the insert and the CREATE: nothing moved
        assert len(out.splitlines()) == 4


def test_undo_list_json_escapes_them_and_keeps_the_values(hostile: Path) -> None:
    out = succeeded(invoke("undo", "--list", "--json", "--db", str(hostile)))
    assert_json_escaped(out)
    item, _, _ = json_lines(out)  # the delete, then the insert and the CREATE before it
    assert item["reason"] == f"why{PAYLOAD}"
    assert item["tables"] == [f"t{PAYLOAD}"]


# -- log ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("env", CONSOLES)
def test_log_shows_control_characters_in_statements_and_errors_visibly(
    hostile: Path, env: dict[str, str]
) -> None:
    out = succeeded(invoke("log", "--db", str(hostile), env=env))
    assert_inert(out)
    assert_shown(out)


def test_log_json_escapes_them_and_keeps_the_values(hostile: Path) -> None:
    out = succeeded(invoke("log", "--json", "--db", str(hostile)))
    assert_json_escaped(out)
    queries = [call["query"] for call in json_lines(out)]
    assert f"SELECT '{PAYLOAD}' AS shown" in queries


# -- stats -------------------------------------------------------------------------------------
@pytest.mark.parametrize("env", CONSOLES)
def test_stats_shows_a_table_name_with_control_characters_visibly(
    hostile: Path, env: dict[str, str]
) -> None:
    out = succeeded(invoke("stats", "--db", str(hostile), env=env))
    assert_inert(out)
    assert f"t{''.join(SHOWN[:4])}evil" in out.replace("\u2026", "")


def test_stats_json_escapes_them_and_keeps_the_values(hostile: Path) -> None:
    out = succeeded(invoke("stats", "--json", "--db", str(hostile)))
    assert_json_escaped(out)
    names = [table["name"] for table in json.loads(out)["tables"]]
    assert f"t{PAYLOAD}" in names


# -- claims ------------------------------------------------------------------------------------
@pytest.mark.parametrize("env", CONSOLES)
@pytest.mark.parametrize(
    "command", [("search", "first"), ("stale", "1.0", "--as-of", "2100-01-01")]
)
def test_claims_tables_show_control_characters_visibly(
    hostile: Path, env: dict[str, str], command: tuple[str, ...]
) -> None:
    out = succeeded(invoke("claims", command[0], "--db", str(hostile), *command[1:], env=env))
    assert_inert(out)
    assert_shown(out)


def test_claims_contradictions_show_entities_visibly(hostile: Path) -> None:
    out = succeeded(invoke("claims", "contradictions", "--as-of", "2026-06-01", "--db",
                           str(hostile)))  # fmt: skip
    assert "duplicate-rank" in out
    assert_inert(out)
    assert_shown(out)


@pytest.mark.parametrize("command", ["confirm", "retract"])
def test_claims_json_escapes_them_and_keeps_the_values(hostile: Path, command: str) -> None:
    out = succeeded(invoke("claims", command, "1", "--json", "--db", str(hostile)))
    assert_json_escaped(out)
    assert json.loads(out)["entity"] == f"acme{PAYLOAD}"


def test_claims_search_json_and_contradictions_json_escape_them(hostile: Path) -> None:
    found = succeeded(invoke("claims", "search", "first", "--json", "--db", str(hostile)))
    assert_json_escaped(found)
    assert {row["entity"] for row in json_lines(found)} == {f"acme{PAYLOAD}", f"globex{PAYLOAD}"}
    findings = succeeded(invoke("claims", "contradictions", "--as-of", "2026-06-01", "--json",
                                "--db", str(hostile)))  # fmt: skip
    assert_inert(findings)
    assert json.loads(findings)["findings"]


def test_claims_add_echoes_the_stored_text_visibly(db_path: Path) -> None:
    # a person can paste a bidi override; memory and claims refuse C0 and C1 control bytes
    out = succeeded(invoke("claims", "add", "acme", "fact", "slow", "0.8",
                           "price \u202e0001\u202c", "--db", str(db_path)))  # fmt: skip
    assert out == "added claim 1: price \\u202e0001\\u202c\n"


# -- errors, undo, export ---------------------------------------------------------------
def test_an_error_naming_agent_data_is_one_visible_line(hostile: Path) -> None:
    ((audit_id,),) = read(hostile, "SELECT id FROM query_log WHERE tool = 'destructive_query'")
    forge(hostile, f'INSERT INTO "t{PAYLOAD}" (id, body) VALUES (1, ?)', "came back")
    line = error_line(invoke("undo", str(audit_id), "--db", str(hostile)), 7)
    assert "conflict" in line
    assert_inert(line)
    assert_shown(line)


def test_undo_reply_naming_a_table_shows_it_visibly(hostile: Path) -> None:
    ((audit_id,),) = read(hostile, "SELECT id FROM query_log WHERE tool = 'destructive_query'")
    out = succeeded(invoke("undo", str(audit_id), "--db", str(hostile)))
    assert out.startswith("undone: ")
    assert_inert(out)
    assert_shown(out)


def test_export_to_stdout_escapes_c1_and_bidi_and_keeps_the_values(hostile: Path) -> None:
    out = succeeded(invoke("export", "--db", str(hostile)))
    assert_json_escaped(out)
    claims = [line for line in json_lines(out) if line["type"] == "claim"]
    assert claims[0]["claim"] == f"acme is first{PAYLOAD}"


# -- snapshots list ----------------------------------------------------------------------------
@pytest.mark.parametrize("env", CONSOLES)
def test_snapshots_list_shows_a_file_name_with_control_characters_visibly(
    db_path: Path, env: dict[str, str]
) -> None:
    folder = Settings(db=db_path).snapshot_dir
    folder.mkdir(parents=True)
    (folder / f"x{PAYLOAD}.sqlite").write_bytes(b"not empty")
    out = succeeded(invoke("snapshots", "list", "--db", str(db_path), env=env))
    assert_inert(out)
    assert_shown(out)
    records = json_lines(succeeded(invoke("snapshots", "list", "--json", "--db", str(db_path))))
    assert records[0]["name"] == f"x{PAYLOAD}.sqlite"


# -- install -----------------------------------------------------------------------------------
def test_install_dry_run_shows_a_config_file_holding_control_characters_visibly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    config = tmp_path / ".cursor" / "mcp.json"
    config.parent.mkdir()
    # raw C1 and bidi characters (valid JSON), an escaped ESC; the diff shows the file's text
    config.write_text('{"mcpServers": {"other": {"command": "\\u001b[2K\x9b2J\u202e"}}}')
    out = succeeded(invoke("install", "cursor", "--dry-run", "--db", str(tmp_path / "a.db")))
    assert_inert(out)
    assert "\\x9b2J\\u202e" in out
