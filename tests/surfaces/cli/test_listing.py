"""Listings as the tools people pipe print them (surfaces/cli/listing.py).

Piped: TSV with a header, one whole record per line (a value's tabs and line breaks as
escapes), so `grep` finds what a table would have wrapped. On a terminal: a table that fits
the window and cuts nothing, ids and times never broken. `--json`: one object per line.
Checked in-process (rich told the stdout is a terminal or not) and for real: the CLI in a
child process on a pseudo-terminal 80 columns wide, and with its stdout a pipe.
"""

from __future__ import annotations

import json
import os
import pty
import re
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from sqlgate.config import FLAGS
from sqlgate.service import Service
from sqlgate.surfaces.cli.app import main
from sqlgate.surfaces.cli.listing import Column, tsv_line
from tests.surfaces.cli.helpers import json_lines, read, succeeded

TERMINAL = {"TTY_COMPATIBLE": "1", "COLUMNS": "80"}
PIPED = {"TTY_COMPATIBLE": "0", "COLUMNS": "80"}
_COLOUR = re.compile(r"\x1b\[[0-9;]*m")
LONG_CLAIM = (
    "wayne matters because the quarterly board review depends on his sign-off for every "
    "supplier contract renewal this year"
)


@pytest.fixture(autouse=True)
def no_sqlgate_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for flag in FLAGS:
        monkeypatch.delenv(flag.env_var, raising=False)


@pytest.fixture
def claims_db(make_service: Callable[..., Service], db_path: Path) -> Path:
    service = make_service()
    service.claims.add("wayne", "fact", LONG_CLAIM, "slow", 0.9)
    service.claims.add("acme", "status", "acme\tpays\nlate", "volatile", 0.7)
    service.claims.add("globex", "priority", "globex is first", "stable", 0.8, 1)
    service.write_query("CREATE TABLE notes (body TEXT)")
    service.write_query(
        "INSERT INTO notes VALUES (?)", ["a statement long enough to need wrapping " * 4]
    )
    service.close()
    return db_path


def invoke(env: dict[str, str], *args: str) -> Result:
    return CliRunner().invoke(main, list(args), env=env, prog_name="sqlgate")


def plain(output: str) -> str:
    return _COLOUR.sub("", output)


# -- piped --------------------------------------------------------------------------------------
def test_piped_claims_are_tsv_with_one_whole_record_per_line(claims_db: Path) -> None:
    out = succeeded(invoke(PIPED, "claims", "search", "matters", "--db", str(claims_db)))
    header, record = out.splitlines()
    assert header.startswith("id\tentity\tkind\tclaim\t")
    assert LONG_CLAIM in record  # what `| grep "wayne matters"` needs: nothing wrapped
    assert record.split("\t")[:4] == ["1", "wayne", "fact", LONG_CLAIM]


def test_a_tab_or_line_break_inside_a_value_cannot_split_a_record(claims_db: Path) -> None:
    out = succeeded(invoke(PIPED, "claims", "list", "--db", str(claims_db)))
    lines = out.splitlines()
    assert len(lines) == 4  # the header and three claims
    assert all(len(line.split("\t")) == 8 for line in lines)
    assert lines[2].split("\t")[3] == "acme pays late"  # claims fold their whitespace


def test_tsv_line_escapes_what_would_break_the_format() -> None:
    assert tsv_line(["a\tb", "c\nd", "e\rf", "\x1b[2J"]) == "a\\tb\tc\\nd\te\\rf\t\\x1b[2J"


def test_column_renders_none_as_empty_and_uses_its_renderer() -> None:
    column = Column("n", "n", render=lambda n: f"{n:.1f}")
    assert (column.text({"n": None}), column.text({}), column.text({"n": 2})) == ("", "", "2.0")


# -- claims list ------------------------------------------------------------------------------
def test_claims_list_shows_every_claim_and_filters_by_state_and_entity(claims_db: Path) -> None:
    db = str(claims_db)
    every = json_lines(succeeded(invoke(PIPED, "claims", "list", "--json", "--db", db)))
    assert [claim["entity"] for claim in every] == ["wayne", "acme", "globex"]
    succeeded(invoke(PIPED, "claims", "retract", "2", "--db", db))
    retired = json_lines(
        succeeded(invoke(PIPED, "claims", "list", "--state", "retired", "--json", "--db", db))
    )
    assert [claim["id"] for claim in retired] == [2]
    about = json_lines(
        succeeded(invoke(PIPED, "claims", "list", "--entity", "GLOBEX", "--json", "--db", db))
    )
    assert [claim["id"] for claim in about] == [3]
    none = invoke(PIPED, "claims", "list", "--entity", "initech", "--db", db)
    assert (succeeded(none), none.stderr) == ("", "claims (entity 'initech'): none\n")


def test_claims_list_refuses_an_unknown_state_with_exit_2(claims_db: Path) -> None:
    result = invoke(PIPED, "claims", "list", "--state", "dead", "--db", str(claims_db))
    assert result.exit_code == 2
    assert "'dead' is not one of 'active', 'stale', 'contradicted', 'retired'" in result.stderr


def test_claims_list_reads_without_writing(claims_db: Path) -> None:
    before = read(claims_db, "SELECT count(*) FROM query_log")
    succeeded(invoke(PIPED, "claims", "list", "--db", str(claims_db)))
    assert read(claims_db, "SELECT count(*) FROM query_log") == before


# -- on a terminal ----------------------------------------------------------------------------
def test_terminal_table_fits_80_columns_and_cuts_nothing(claims_db: Path) -> None:
    out = plain(succeeded(invoke(TERMINAL, "claims", "list", "--db", str(claims_db))))
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "…" not in out  # folded or wrapped, never cut
    words = " ".join(re.sub(r"[│┃|]", " ", out).split())
    for word in LONG_CLAIM.split():
        assert word in words


def test_terminal_log_keeps_ids_and_times_whole(claims_db: Path) -> None:
    out = plain(succeeded(invoke(TERMINAL, "log", "--db", str(claims_db))))
    times = [str(ts) for (ts,) in read(claims_db, "SELECT ts FROM query_log ORDER BY id DESC")]
    assert max(len(line) for line in out.splitlines()) <= 80
    assert f"{times[0][:10]} {times[0][11:19]}" in out  # the newest with its date
    for ts in times:
        assert ts[11:19] in out  # e.g. 10:00:00 on one line, not `10:0…`


# -- for real: a pseudo-terminal and a pipe ---------------------------------------------------
def _child_env(columns: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SQLGATE_", "TTY_"))}
    src = str(Path(__file__).resolve().parents[3] / "src")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [src, env.get("PYTHONPATH")]))
    env.update({"COLUMNS": str(columns), "TERM": "xterm-256color"})
    return env


def _on_a_terminal(args: list[str], columns: int = 80) -> str:
    """The CLI's stdout when it is a pseudo-terminal `columns` wide."""
    import fcntl
    import termios

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    child = subprocess.Popen(
        [sys.executable, "-m", "sqlgate", *args], stdout=follower, stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL, env=_child_env(columns),
    )  # fmt: skip
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the child closed its side
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert child.wait(timeout=60) == 0, child.stderr.read() if child.stderr else ""
    return plain(b"".join(chunks).decode("utf-8").replace("\r\n", "\n"))


@pytest.mark.stdio
@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
def test_a_real_terminal_gets_a_table_and_a_real_pipe_gets_tsv(claims_db: Path) -> None:
    args = ["claims", "list", "--db", str(claims_db)]
    table = _on_a_terminal(args, columns=160)
    assert "┃" in table  # rich's table borders
    assert max(len(line) for line in table.splitlines()) <= 160
    assert "…" not in table
    # 80 columns cannot hold 8 columns readably: one block of `field value` lines per claim
    records = _on_a_terminal(args, columns=80)
    assert "1 of 3" in records
    assert max(len(line) for line in records.splitlines()) <= 80
    assert "…" not in records
    piped = subprocess.run(
        [sys.executable, "-m", "sqlgate", *args], capture_output=True, text=True,
        env=_child_env(80), timeout=60, check=True,
    ).stdout  # fmt: skip
    assert [line for line in piped.splitlines() if "wayne matters" in line] == [
        "\t".join(["1", "wayne", "fact", LONG_CLAIM])
        + piped.splitlines()[1].split(LONG_CLAIM, 1)[1]
    ]
    assert "\x1b" not in piped


def test_json_is_the_same_whatever_stdout_is(claims_db: Path) -> None:
    args = ("claims", "list", "--json", "--db", str(claims_db))
    on_terminal = succeeded(invoke(TERMINAL, *args))
    assert on_terminal == succeeded(invoke(PIPED, *args))
    assert [json.loads(line)["id"] for line in on_terminal.splitlines()] == [1, 2, 3]


# -- sqlgate log on a 120- and an 80-column terminal ---------------------------------------------
@pytest.fixture
def busy_log(db_path: Path) -> Path:
    """An audit log as a day of work leaves it: real session ids (a server's, a CLI's), long
    statements, a refusal and a long SQLite error, a destructive call."""
    from sqlgate.config import Settings
    from sqlgate.errors import SqlgateError

    server = Service.open(Settings(db=db_path), session="s-20261202T035830Z-471d28")
    server.write_query(
        "CREATE TABLE tasks (id INTEGER PRIMARY KEY, title TEXT NOT NULL, status TEXT, "
        "owner TEXT, due TEXT)"
    )
    server.write_query(
        "INSERT INTO tasks (title, status, owner, due) VALUES ('Write the migration for "
        "invoices', 'open', 'dana', '2026-12-04'), ('Fix flaky login test', 'doing', 'li', NULL)"
    )
    server.read_query(
        "SELECT t.id, t.title, t.status, t.owner FROM tasks AS t WHERE t.status IN ('open', "
        "'doing') AND t.due IS NOT NULL ORDER BY t.due, t.id LIMIT 20"
    )
    for refused in ("DELETE FROM tasks", 'SELECT * FROM tasks WHERE owner = "dana"'):
        with pytest.raises(SqlgateError):
            server.read_query(refused)
    with pytest.raises(SqlgateError):
        server.write_query("UPDATE tasks SET status = 'done'")
    server.destructive_query("DELETE FROM tasks WHERE status = 'doing'", "the test was fixed")
    server.close()
    cli = Service.open(Settings(db=db_path), session="cli-20261202T041500Z-9c1e07")
    cli.append_event("Invoices are kept in cents; migration 0042 converts them", "decision")
    cli.close()
    return db_path


def _table_lines(out: str) -> list[str]:
    return [line for line in plain(out).splitlines() if line.strip()]


@pytest.mark.parametrize("columns", [120, 160])
def test_log_is_a_table_that_fits_a_120_column_terminal(busy_log: Path, columns: int) -> None:
    env = {"TTY_COMPATIBLE": "1", "COLUMNS": str(columns)}
    out = plain(succeeded(invoke(env, "log", "--db", str(busy_log))))
    assert "1 of " not in out  # not the record blocks
    assert "┃" in out
    assert max(len(line) for line in out.splitlines()) <= columns
    for word in ("destructive_query", "refused", "error", "ok", "migration"):
        assert word in out
    rows = [line for line in out.splitlines() if line.startswith("│ ") and line[2].isdigit()]
    assert sorted(int(line[2:].split()[0]) for line in rows) == list(range(1, 9))


def test_log_on_an_80_column_terminal_never_runs_past_its_width(busy_log: Path) -> None:
    out = plain(succeeded(invoke(TERMINAL, "log", "--db", str(busy_log))))
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "destructive_query" in out


def test_log_in_a_pipe_keeps_whole_times_and_sessions(busy_log: Path) -> None:
    header, *records = succeeded(invoke(PIPED, "log", "--db", str(busy_log))).splitlines()
    assert header.split("\t")[:4] == ["id", "time (UTC)", "actor", "session"]
    times = [str(ts) for (ts,) in read(busy_log, "SELECT ts FROM query_log ORDER BY id DESC")]
    assert [record.split("\t")[1] for record in records] == times
    assert records[0].split("\t")[3] == "cli-20261202T041500Z-9c1e07"


@pytest.mark.stdio
@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
def test_log_on_a_real_120_column_terminal_is_a_table(busy_log: Path) -> None:
    out = _on_a_terminal(["log", "--db", str(busy_log)], columns=120)
    assert "┃" in out
    assert "1 of " not in out
    assert max(len(line) for line in out.splitlines()) <= 120


@pytest.mark.parametrize(
    ("ts", "previous", "shown"),
    [
        pytest.param("2026-12-02T03:58:30.852Z", None, "2026-12-02 03:58:30", id="first-row"),
        pytest.param("2026-12-02T03:58:30.852Z", "2026-12-02", "03:58:30", id="same-date"),
        pytest.param("2026-12-01T23:59:59.000Z", "2026-12-02", "2026-12-01 23:59:59",
                     id="date-changes"),
        pytest.param("yesterday-ish", "2026-12-02", "yesterday-ish", id="not-sqlgates"),
    ],
)  # fmt: skip
def test_log_table_shows_a_calls_date_only_when_it_changes(
    ts: str, previous: str | None, shown: str
) -> None:
    from sqlgate.surfaces.cli.inspection import _when

    assert _when(ts, previous) == shown


@pytest.mark.parametrize(
    ("session", "shown"),
    [
        pytest.param("s-20261202T035830Z-471d28", "s-…471d28", id="server"),
        pytest.param("cli-20261202T041500Z-9c1e07", "cli-…9c1e07", id="cli"),
        pytest.param("my-agent", "my-agent", id="another-name-whole"),
        pytest.param(None, "", id="none"),
    ],
)
def test_log_table_shows_sqlgates_session_ids_by_their_random_part(
    session: str | None, shown: str
) -> None:
    from sqlgate.surfaces.cli.inspection import _short_session

    assert _short_session(session) == shown
