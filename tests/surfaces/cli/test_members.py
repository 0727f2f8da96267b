"""`sqlgate members …` through click's CliRunner, on the database an HTTP server serves.

- `add` and `rotate` print the token once: on a terminal with how to send it and the
  `claude mcp add` line; in a pipe the token alone (`TOKEN=$(sqlgate members add …)`); with
  `--json` one object.
- `list` never shows a token or a digest: a table, TSV in a pipe, JSON lines.
- Each change is a `query_log` row of tool `members <verb>`, actor `cli`, with no token in it.
- Names are refused with the actor rule's reason (exit 2), unknown members are exit 3, a
  write lock held past --busy-timeout is exit 5, each one line.
- A running server sees a change at its next request (a real server process).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import httpx2
import pytest
from click.testing import CliRunner, Result

from sqlgate.config import Settings
from sqlgate.engine.records.actors import AuthRefusal, Identity
from sqlgate.engine.records.members import Members, token_digest
from sqlgate.service import Service
from sqlgate.surfaces.cli.app import main
from tests.records import connect_both
from tests.surfaces.cli.helpers import error_line, json_lines, read, succeeded

TOKEN_PATTERN = r"sqg_[A-Za-z0-9_-]{43}"
TERMINAL = {"TTY_COMPATIBLE": "1"}
COMMANDS = ("add", "list", "revoke", "remove", "set", "rotate")


pytestmark = pytest.mark.usefixtures("no_sqlgate_environment")


def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(
        main, ["members", *args], env={"COLUMNS": "200", **(env or {})}, prog_name="sqlgate"
    )


def run(db: Path, command: str, *args: str, env: dict[str, str] | None = None) -> Result:
    return invoke(command, *args, "--db", str(db), env=env)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "team.db"
    Service.open(Settings(db=path)).close()
    return path


def add(db: Path, name: str, tier: str = "read") -> str:
    """A new member through the command, piped: its token is all stdout holds."""
    output = succeeded(run(db, "add", name, "--tier", tier))
    assert re.fullmatch(TOKEN_PATTERN + "\n", output), output
    return output.strip()


def authenticate(db: Path, token: str) -> Identity | AuthRefusal:
    conn = connect_both(db, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return Members(conn).authenticate(token)
    finally:
        conn.close()


def refusal_code(db: Path, token: str) -> str:
    found = authenticate(db, token)
    assert isinstance(found, AuthRefusal), found
    return found.code


def audit_rows(db: Path) -> list[dict[str, Any]]:
    rows = read(db, "SELECT tool, actor, session, ok, error, detail, query FROM query_log "
                    "WHERE tool LIKE 'members %' ORDER BY id")  # fmt: skip
    keys = ("tool", "actor", "session", "ok", "error", "detail", "query")
    return [dict(zip(keys, row, strict=True)) for row in rows]


def everything_in(db: Path) -> str:
    """Every value of every table of the file, as one text."""
    conn = connect_both(db, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        listed = "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        tables = [name for (name,) in conn.execute(listed)]
        return "\n".join(
            repr(value) for table in tables for row in conn.execute(f'SELECT * FROM "{table}"')
            for value in row
        )  # fmt: skip
    finally:
        conn.close()


# -- the group --------------------------------------------------------------------------------


def test_members_help_lists_its_six_commands() -> None:
    output = succeeded(invoke("--help"))
    for command in COMMANDS:
        assert f"  {command} " in output, output


def test_add_help_states_the_name_rule_and_the_reserved_names() -> None:
    from sqlgate.engine.records.actors import MAX_ACTOR_CHARS, RESERVED_ACTORS

    output = " ".join(succeeded(invoke("add", "--help")).split())
    assert f"NAME is 1 to {MAX_ACTOR_CHARS} letters, digits and . _ @ + : | -" in output
    assert f"({', '.join(RESERVED_ACTORS)})" in output


# -- add --------------------------------------------------------------------------------------


def test_add_in_a_pipe_prints_the_token_alone_and_it_works(db: Path) -> None:
    result = run(db, "add", "bob", "--tier", "write")
    token = succeeded(result).strip()
    assert re.fullmatch(TOKEN_PATTERN, token)
    assert authenticate(db, token) == Identity("bob", "write", "member")
    # the reminder goes to stderr, where the person sees it and the variable does not
    assert "shown once" in result.stderr
    assert token not in result.stderr


def test_add_with_json_prints_one_object_with_the_token(db: Path) -> None:
    (record,) = json_lines(succeeded(run(db, "add", "carol", "--tier", "destructive", "--json")))
    assert set(record) == {"name", "tier", "state", "created", "token"}
    assert (record["name"], record["tier"], record["state"]) == ("carol", "destructive", "active")
    assert authenticate(db, record["token"]) == Identity("carol", "destructive", "member")


def test_add_on_a_terminal_says_once_how_to_send_the_token_and_connect_claude_code(
    db: Path,
) -> None:
    output = succeeded(run(db, "add", "alice", "--tier", "read", env=TERMINAL))
    (token,) = set(re.findall(TOKEN_PATTERN, output))
    assert "shown once" in output
    assert "Authorization: Bearer <token>" in output
    claude = "claude mcp add --transport http sqlgate http://127.0.0.1:8765/mcp"
    assert f'{claude} --header "Authorization: Bearer {token}"' in output
    assert authenticate(db, token) == Identity("alice", "read", "member")


def test_add_url_is_the_one_in_the_claude_code_line(db: Path) -> None:
    url = "https://sqlgate.example.com/mcp"
    output = succeeded(run(db, "add", "alice", "--tier", "read", "--url", url, env=TERMINAL))
    assert f"claude mcp add --transport http sqlgate {url} --header" in output


def test_add_creates_the_database_when_missing(tmp_path: Path) -> None:
    db = tmp_path / "team.db"
    token = add(db, "alice")
    assert authenticate(db, token) == Identity("alice", "read", "member")


@pytest.mark.parametrize(
    ("name", "phrase"),
    [
        pytest.param("eve\x1b[2J", "U+001B is not allowed", id="control-character"),
        pytest.param("a" * 200, "200 characters is too long", id="200-characters"),
        pytest.param(
            "Admin", "'Admin' is sqlgate's own name for the legacy --token", id="reserved"
        ),
        pytest.param("bob smith", "' ' is not allowed", id="space"),
    ],
)
def test_add_refuses_a_bad_name_with_the_rule_and_creates_nothing(
    tmp_path: Path, name: str, phrase: str
) -> None:
    db = tmp_path / "team.db"
    line = error_line(run(db, "add", name, "--tier", "read"), 2)
    assert "cannot use that member name: " + phrase in line
    assert "\x1b" not in line
    assert not db.exists()


def test_add_refuses_a_name_taken_ignoring_case(db: Path) -> None:
    add(db, "bob")
    line = error_line(run(db, "add", "BOB", "--tier", "write"), 2)
    assert "a member named 'bob' exists already" in line
    assert f"`sqlgate members rotate bob --db {db.absolute()}`" in line
    assert [m["tier"] for m in json_lines(succeeded(run(db, "list", "--json")))] == ["read"]


def test_add_refuses_an_unknown_tier_as_a_usage_error(db: Path) -> None:
    line = error_line(run(db, "add", "bob", "--tier", "admin"), 2)
    assert "--tier" in line
    assert "sqlgate members add --help" in line


def test_add_needs_a_tier(db: Path) -> None:
    assert "--tier" in error_line(run(db, "add", "bob"), 2)


# -- list -------------------------------------------------------------------------------------


@pytest.fixture
def team(db: Path) -> dict[str, str]:
    """alice (read, active), bob (write, revoked), carol (destructive, removed)."""
    tokens = {name: add(db, name, tier) for name, tier in
              (("alice", "read"), ("bob", "write"), ("carol", "destructive"))}  # fmt: skip
    succeeded(run(db, "revoke", "bob"))
    succeeded(run(db, "remove", "carol"))
    return tokens


def test_list_in_a_pipe_is_tsv_with_a_header(db: Path, team: dict[str, str]) -> None:
    lines = succeeded(run(db, "list")).splitlines()
    assert lines[0].split("\t") == ["name", "tier", "state", "created (UTC)", "last used (UTC)"]
    assert [line.split("\t")[:3] for line in lines[1:]] == [
        ["alice", "read", "active"],
        ["bob", "write", "revoked"],
    ]


def test_list_all_shows_removed_members_too(db: Path, team: dict[str, str]) -> None:
    records = json_lines(succeeded(run(db, "list", "--all", "--json")))
    assert [(r["name"], r["state"]) for r in records] == [
        ("alice", "active"), ("bob", "revoked"), ("carol", "removed"),
    ]  # fmt: skip
    assert set(records[0]) == {"name", "tier", "state", "created", "last_used"}


def test_list_on_a_terminal_is_a_table(db: Path, team: dict[str, str]) -> None:
    output = re.sub(r"\x1b\[[0-9;]*m", "", succeeded(run(db, "list", env=TERMINAL)))
    assert "┃ name" in output
    assert re.search(r"│ alice\s+│ read\s+│ active", output), output


@pytest.mark.parametrize("flags", [(), ("--json",), ("--all",)], ids=["tsv", "json", "all"])
def test_list_never_shows_a_token_or_a_digest(
    db: Path, team: dict[str, str], flags: tuple[str, ...]
) -> None:
    output = succeeded(run(db, "list", *flags))
    for token in team.values():
        assert token not in output
        assert token_digest(token) not in output


def test_list_shows_the_last_use_of_a_member(db: Path) -> None:
    from sqlgate.engine.records.actors import Caller, acting_as

    add(db, "alice")
    service = Service.open(Settings(db=db))
    try:
        with acting_as(Caller(Identity("alice", "read", "member"), "s-x/alice")):
            service.read_query("SELECT 1")
        ((used,),) = read(db, "SELECT max(ts) FROM query_log WHERE actor = 'alice'")
    finally:
        service.close()
    (record,) = json_lines(succeeded(run(db, "list", "--json")))
    assert record["last_used"] == used


def test_list_of_no_members_says_so_on_stderr_in_a_pipe(db: Path) -> None:
    result = run(db, "list")
    assert result.stdout == ""
    assert "no members" in result.stderr
    assert "sqlgate members add" in result.stderr


def test_list_of_a_missing_database_is_not_found(tmp_path: Path) -> None:
    db = tmp_path / "typo.db"
    assert "no database at" in error_line(run(db, "list"), 3)
    assert not db.exists()


# -- revoke, remove, set, rotate --------------------------------------------------------------


def test_revoke_ends_the_token_and_keeps_the_member(db: Path) -> None:
    token = add(db, "bob", "write")
    output = succeeded(run(db, "revoke", "bob"))
    assert "revoked" in output
    assert "bob" in output
    assert f"`sqlgate members rotate bob --db {db.absolute()}`" in output
    assert refusal_code(db, token) == "token_revoked"
    (record,) = json_lines(succeeded(run(db, "list", "--json")))
    assert (record["name"], record["state"]) == ("bob", "revoked")


def test_remove_frees_the_name_and_its_old_token_says_removed(db: Path) -> None:
    old = add(db, "bob", "write")
    output = succeeded(run(db, "remove", "Bob"))
    assert "removed member 'bob'" in output
    assert refusal_code(db, old) == "member_removed"
    new = add(db, "bob", "read")
    assert authenticate(db, new) == Identity("bob", "read", "member")
    assert refusal_code(db, old) == "member_removed"


def test_set_says_the_old_and_new_tier(db: Path) -> None:
    token = add(db, "bob", "read")
    output = succeeded(run(db, "set", "bob", "--tier", "destructive"))
    assert "read -> destructive" in output
    assert authenticate(db, token) == Identity("bob", "destructive", "member")
    (record,) = json_lines(succeeded(run(db, "set", "bob", "--tier", "write", "--json")))
    assert record == {"name": "bob", "from": "destructive", "to": "write"}


def test_rotate_prints_a_new_token_and_ends_the_old(db: Path) -> None:
    old = add(db, "bob", "write")
    new = succeeded(run(db, "rotate", "bob")).strip()
    assert re.fullmatch(TOKEN_PATTERN, new)
    assert new != old
    assert authenticate(db, new) == Identity("bob", "write", "member")
    assert refusal_code(db, old) == "token_revoked"
    (record,) = json_lines(succeeded(run(db, "rotate", "bob", "--json")))
    assert record["name"] == "bob"
    assert re.fullmatch(TOKEN_PATTERN, record["token"])
    assert refusal_code(db, new) == "token_revoked"


@pytest.mark.parametrize(
    "args", [("revoke", "zed"), ("remove", "zed"), ("set", "zed", "--tier", "read"),
             ("rotate", "zed")], ids=lambda a: a[0],
)  # fmt: skip
def test_changing_an_unknown_member_is_not_found(db: Path, args: tuple[str, ...]) -> None:
    line = error_line(run(db, *args), 3)
    listing = f"`sqlgate members list --db {db.resolve()}`"  # the file as SQLite names it
    assert f"no member named 'zed'; {listing} shows them" in line


@pytest.mark.parametrize(
    "args", [("revoke", "zed"), ("remove", "zed"), ("set", "zed", "--tier", "read"),
             ("rotate", "zed")], ids=lambda a: a[0],
)  # fmt: skip
def test_a_change_on_a_missing_database_is_not_found_and_creates_nothing(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    db = tmp_path / "typo.db"
    assert "no database at" in error_line(run(db, *args), 3)
    assert not db.exists()


# -- the audit --------------------------------------------------------------------------------


def test_every_change_is_audited_as_the_cli_without_the_token(db: Path) -> None:
    first = add(db, "bob", "read")
    succeeded(run(db, "set", "bob", "--tier", "write"))
    second = succeeded(run(db, "rotate", "bob")).strip()
    succeeded(run(db, "revoke", "bob"))
    succeeded(run(db, "remove", "bob"))
    error_line(run(db, "revoke", "bob"), 3)
    rows = audit_rows(db)
    assert [(r["tool"], r["ok"]) for r in rows] == [
        ("members add", 1), ("members set", 1), ("members rotate", 1),
        ("members revoke", 1), ("members remove", 1), ("members revoke", 0),
    ]  # fmt: skip
    assert {r["actor"] for r in rows} == {"cli"}
    assert all(r["session"].startswith("cli-") for r in rows)
    assert len({r["session"] for r in rows}) == len(rows)  # each command its own session
    details = [json.loads(r["detail"]) for r in rows]
    assert details[0] == {"member": "bob", "tier": "read"}
    assert details[1] == {"member": "bob", "from": "read", "to": "write"}
    assert details[3] == {"member": "bob", "tokens_revoked": 1}
    assert "no member named 'bob'" in rows[5]["error"]
    everything = everything_in(db)
    for token in (first, second):
        assert token not in everything
        assert token[4:] not in everything


def test_the_audit_row_of_a_change_is_what_sqlgate_log_shows(db: Path) -> None:
    add(db, "bob", "read")
    records = json_lines(succeeded(CliRunner().invoke(
        main, ["log", "--db", str(db), "--json"], prog_name="sqlgate")))  # fmt: skip
    assert records[0]["tool"] == "members add"


# -- another process on the same database -----------------------------------------------------


@pytest.fixture
def write_lock(db: Path) -> Iterator[None]:
    holder = connect_both(db)
    holder.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        holder.execute("ROLLBACK")
        holder.close()


@pytest.mark.usefixtures("write_lock")
@pytest.mark.parametrize(
    "args", [("add", "bob", "--tier", "read"), ("revoke", "alice"), ("rotate", "alice")],
    ids=lambda a: a[0],
)  # fmt: skip
def test_a_change_waits_for_the_write_lock_then_fails_in_one_line(
    db: Path, args: tuple[str, ...]
) -> None:
    line = error_line(run(db, *args, "--busy-timeout", "0.05"), 5)
    assert "the database is busy" in line
    assert "--busy-timeout" in line


def test_a_busy_change_waits_once_its_audit_row_queued_for_the_next_command(
    db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lock was waited for once (--busy-timeout); closing does not wait a second time
    to write the refused call's row: it stays queued, and the next command writes it."""
    from sqlgate.engine.records.audit import AuditLog

    waits: list[float] = []
    close = AuditLog.close

    def spy(log: AuditLog, wait: float) -> None:
        waits.append(wait)
        close(log, wait)

    monkeypatch.setattr(AuditLog, "close", spy)
    holder = connect_both(db)
    holder.execute("BEGIN IMMEDIATE")
    try:
        error_line(run(db, "add", "bob", "--tier", "read", "--busy-timeout", "0.05"), 5)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert waits == [0.0]
    assert audit_rows(db) == []
    add(db, "carol")
    rows = sorted(audit_rows(db), key=lambda row: row["ok"])  # the queued row may come later
    assert [(r["tool"], r["ok"], json.loads(r["detail"])["member"]) for r in rows] == [
        ("members add", 0, "bob"), ("members add", 1, "carol"),
    ]  # fmt: skip
    assert "the database is busy" in rows[0]["error"]


def test_a_change_waits_for_the_write_lock_and_succeeds_once_free(db: Path) -> None:
    add(db, "alice")
    holder = connect_both(db)
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("ROLLBACK")  # the lock was held and let go: the next change goes through
    holder.close()
    assert "revoked" in succeeded(run(db, "revoke", "alice", "--busy-timeout", "0.05"))


def test_list_reads_while_another_process_holds_the_write_lock(db: Path, write_lock: None) -> None:
    assert succeeded(run(db, "list", "--busy-timeout", "0.05", "--json")) == ""


# -- a running server -------------------------------------------------------------------------


def post_initialize(url: str, token: str, session: str | None = None) -> httpx2.Response:
    headers = {"Authorization": f"Bearer {token}",
               "Accept": "application/json, text/event-stream"}  # fmt: skip
    if session is not None:
        headers["Mcp-Session-Id"] = session
    body = {
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "test", "version": "0"}},
    }  # fmt: skip
    return httpx2.post(url, json=body, headers=headers, timeout=30.0)


def post_ping(url: str, token: str, session: str) -> httpx2.Response:
    headers = {"Authorization": f"Bearer {token}", "Mcp-Session-Id": session,
               "MCP-Protocol-Version": "2025-06-18",
               "Accept": "application/json, text/event-stream"}  # fmt: skip
    body = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    return httpx2.post(url, json=body, headers=headers, timeout=30.0)


@pytest.mark.stdio
def test_a_revoke_ends_an_open_session_of_a_running_server_at_its_next_request(
    db: Path,
) -> None:
    from tests.surfaces.mcp.test_http import start_server

    token = add(db, "bob", "write")
    server = start_server(db, "--token", "admin-token-for-the-tests-0123")
    try:
        opened = post_initialize(server.url, token)
        assert opened.status_code == 200, opened.text
        session = opened.headers["mcp-session-id"]
        assert post_ping(server.url, token, session).status_code == 200
        succeeded(run(db, "revoke", "bob"))
        refused = post_ping(server.url, token, session)
        assert refused.status_code == 401
        assert refused.json()["reason"] == "token_revoked"
        assert "sqlgate members rotate bob" in refused.json()["message"]
        # a new token for the same member works at once, on the same server
        new = succeeded(run(db, "rotate", "bob")).strip()
        assert post_initialize(server.url, new).status_code == 200
        succeeded(run(db, "remove", "bob"))
        assert post_initialize(server.url, new).json()["reason"] == "member_removed"
    finally:
        server.stop()


@pytest.mark.stdio
@pytest.mark.anyio
@pytest.mark.skipif(sys.platform == "win32", reason="SIGTERM is not a signal on Windows")
async def test_a_tier_set_while_the_server_runs_changes_an_open_sessions_tools(db: Path) -> None:
    import anyio

    from sqlgate.surfaces.mcp.tool_tiers import tools_of_tier
    from tests.surfaces.mcp.test_http import connected, start_server

    token = add(db, "bob", "write")
    server = start_server(db, "--token", "admin-token-for-the-tests-0123")
    try:
        with anyio.fail_after(60):
            async with connected(server.url, token) as client:
                before = {tool.name for tool in (await client.list_tools()).tools}
                succeeded(run(db, "set", "bob", "--tier", "read"))
                after = {tool.name for tool in (await client.list_tools()).tools}
                refused = await client.call_tool("write_query", {"query": "CREATE TABLE t (x)"})
        server.process.terminate()  # a clean stop: every audit row written before it ends
        assert "database closed" in server.stderr_until_exit(30)
    finally:
        server.stop()
    assert before == set(tools_of_tier("read", "write"))
    assert after == set(tools_of_tier("read"))
    assert refused.is_error
    rows = read(db, "SELECT actor, tool, ok FROM query_log WHERE tool = 'write_query'")
    assert rows == [("bob", "write_query", 0)]
