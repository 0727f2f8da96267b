"""What each command imports: every command but `serve` and `ui` runs without the MCP SDK,
starlette, uvicorn or pydantic, without rich when stdout is a pipe, and without sqlglot
unless it parses SQL. Not a timing test: the modules left in `sys.modules` at exit are the
figure (a library that is never imported costs nothing, on any machine).

Each command runs in a fresh interpreter the way the `sqlgate` script runs it (the
console-script target `sqlgate.surfaces.cli:main`), stdout and stderr pipes, on a small
database the server wrote; an `atexit` hook writes the names of `sys.modules` to a file.
`tools` is not here: it lists the tools through the SDK's own client, so the SDK is what
it runs.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import click
import pytest

from sqlgate.config import FLAGS, Settings
from sqlgate.service import Service
from sqlgate.surfaces.cli import main
from tests.surfaces.integrations.test_importers import build_mycorrhiza, build_sqlite_memory

SDK = ("mcp", "mcp_types", "starlette", "uvicorn", "sse_starlette", "pydantic", "pydantic_core")
TERMINAL = ("rich",)
PARSER = ("sqlglot",)

PROBE = """
import atexit, json, sys
def _report():
    with open({out!r}, "w", encoding="utf-8") as f:
        json.dump(sorted(sys.modules), f)
atexit.register(_report)
sys.argv = ["sqlgate", *{args!r}]
from sqlgate.surfaces.cli import main
main(prog_name="sqlgate")
"""

PROMPT = {"hook_event_name": "UserPromptSubmit", "prompt": "fix the login bug"}
TOOL_USE = {
    "hook_event_name": "PostToolUse",
    "tool_name": "Bash",
    "tool_input": {"command": "ls"},
    "tool_response": {"stdout": "README.md", "stderr": "", "interrupted": False},
    "tool_use_id": "toolu_01",
}
STOP = {"hook_event_name": "Stop", "stop_hook_active": False, "last_assistant_message": "done"}
SESSION_START = {"hook_event_name": "SessionStart", "source": "startup"}


def hook(fields: dict[str, object]) -> str:
    common = {"session_id": "4f1c2b9e", "transcript_path": "/nonexistent", "cwd": "/srv/p"}
    return json.dumps({**common, **fields})


@dataclass(frozen=True)
class Case:
    name: str
    args: tuple[str, ...]  # {db}, {call}, {snapshot}, {claim}, {tmp} are filled in
    stdin: str = ""
    parses_sql: bool = False  # sqlglot may be imported
    exit_code: int = 0
    changes: bool = False  # writes what another case reads: run alone, in the list's order


CASES = [
    Case("version", ("--version",)),
    Case("help", ("--help",)),
    Case("serve --help", ("serve", "--help")),
    Case("claims --help", ("claims", "--help")),
    Case("capture PostToolUse", ("capture", "--db", "{db}"), stdin=hook(TOOL_USE)),
    Case("capture UserPromptSubmit", ("capture", "--db", "{db}"), stdin=hook(PROMPT)),
    Case("capture Stop", ("capture", "--db", "{db}"), stdin=hook(STOP)),
    Case("capture SessionStart", ("capture", "--db", "{db}"), stdin=hook(SESSION_START)),
    Case("verify", ("verify", "--db", "{db}")),
    Case("log", ("log", "--db", "{db}")),
    Case("log --json", ("log", "--db", "{db}", "--json")),
    Case("stats", ("stats", "--db", "{db}")),
    Case("export", ("export", "--db", "{db}")),
    Case("snapshots list", ("snapshots", "list", "--db", "{db}")),
    Case("claims list", ("claims", "list", "--db", "{db}")),
    Case("claims search", ("claims", "search", "acme", "--db", "{db}")),
    Case("claims stale", ("claims", "stale", "--db", "{db}")),
    Case("claims contradictions", ("claims", "contradictions", "--db", "{db}")),
    Case("undo --list", ("undo", "--list", "--db", "{db}")),
    Case("members list", ("members", "list", "--db", "{db}")),
    Case("members list --json", ("members", "list", "--all", "--json", "--db", "{db}")),
    Case("migrate --dry-run", ("migrate", "--dry-run", "--db", "{db}")),
    Case("policy check", ("policy", "check", "--hide-column", "notes.body", "--db", "{db}")),
    Case("policy show", ("policy", "show", "--protect-table", "notes", "--db", "{db}")),
    Case("doctor", ("doctor",)),
    Case("doctor --json", ("doctor", "--json")),
    Case("restore, a refused URL", ("restore", "ftp://nowhere", "--db", "{tmp}/r.db"), exit_code=2),
    Case("replicate, a refused URL", ("replicate", "ftp://nowhere", "--db", "{db}"), exit_code=2),
    # these change the database, one after the other
    Case(
        "claims add",
        ("claims", "add", "api", "fact", "slow", "0.8", "uses REST", "--db", "{db}"),
        changes=True,
    ),
    Case("members add", ("members", "add", "zoe", "--tier", "read", "--db", "{db}"), changes=True),
    Case("members set", ("members", "set", "zoe", "--tier", "write", "--db", "{db}"), changes=True),
    Case("members rotate", ("members", "rotate", "zoe", "--db", "{db}"), changes=True),
    Case("members revoke", ("members", "revoke", "zoe", "--db", "{db}"), changes=True),
    Case("members remove", ("members", "remove", "zoe", "--db", "{db}"), changes=True),
    Case("claims confirm", ("claims", "confirm", "{claim}", "--db", "{db}"), changes=True),
    Case("claims retract", ("claims", "retract", "{claim}", "--db", "{db}"), changes=True),
    Case("undo", ("undo", "{call}", "--db", "{db}"), changes=True),
    Case(
        "import mycorrhiza",
        ("import", "mycorrhiza", "{tmp}/mycorrhiza.db", "--db", "{db}"),
        changes=True,
    ),
    Case(
        "import mcp-sqlite-memory",
        ("import", "mcp-sqlite-memory", "{tmp}/sqlite-memory.db", "--db", "{db}"),
        changes=True,
    ),
    Case("install", ("install", "claude-code", "--scope", "project", "--capture"), changes=True),
    Case("uninstall", ("uninstall", "claude-code", "--scope", "project"), changes=True),
    Case(
        "snapshots restore",
        ("snapshots", "restore", "{snapshot}", "--db", "{db}", "--yes"),
        changes=True,
    ),
]


@dataclass(frozen=True)
class Ran:
    modules: frozenset[str]  # top-level names of sys.modules at exit
    returncode: int
    output: str


def seed(tmp: Path) -> dict[str, str]:
    """The database every case reads: a table, audit rows, events, a snapshot, claims and
    an undoable call; and what the cases name in it."""
    db = tmp / "project" / ".sqlgate" / "agent.db"
    db.parent.mkdir(parents=True)
    service = Service.open(Settings(db=db), session="s-seed")
    try:
        service.write_query("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
        service.write_query("INSERT INTO notes (body) VALUES ('a'), ('b'), ('c')")
        service.append_event("first note", "note", ["alpha"])
        snapshot = service.sql.snapshot().name
        claim = json.loads(service.claim_add("acme", "fact", "ships weekly", "slow", 0.8))["id"]
        service.checkpoint("one note")
        answer = service.destructive_query("DELETE FROM notes WHERE body = 'b'", "typo")
    finally:
        service.close()
    call = re.search(r"undo: sqlgate undo (\S+) --db", answer)
    assert call, answer
    build_mycorrhiza(tmp / "mycorrhiza.db", [("an old note", ["x"])])
    build_sqlite_memory(tmp / "sqlite-memory.db", [("note", "an older note")])
    return {"db": str(db), "call": call[1], "snapshot": snapshot, "claim": claim,
            "tmp": str(tmp)}  # fmt: skip


def child_env(tmp: Path) -> dict[str, str]:
    """No SQLGATE_* setting and nothing that tells rich to treat a pipe as a terminal; a fake
    HOME (install and uninstall write there) and this checkout's sqlgate importable."""
    unset = {flag.env_var for flag in FLAGS} | {"TTY_COMPATIBLE", "FORCE_COLOR"}
    env = {k: v for k, v in os.environ.items() if k not in unset}
    for name, folder in (("HOME", "home"), ("XDG_CONFIG_HOME", "xdg"), ("XDG_DATA_HOME", "data")):
        (tmp / folder).mkdir(exist_ok=True)
        env[name] = str(tmp / folder)
    src = str(Path(__file__).resolve().parents[3] / "src")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [src, env.get("PYTHONPATH")]))
    return env


def run_case(case: Case, names: dict[str, str], env: dict[str, str], tmp: Path) -> Ran:
    args = [arg.format(**names) for arg in case.args]
    out = tmp / f"modules-{case.name.replace(' ', '_').replace(',', '')}.json"
    result = subprocess.run(
        [sys.executable, "-c", PROBE.format(out=str(out), args=args)],
        input=case.stdin, capture_output=True, text=True, env=env, cwd=tmp / "project",
        timeout=60, check=False,
    )  # fmt: skip
    loaded = json.loads(out.read_text(encoding="utf-8")) if out.exists() else []
    return Ran(frozenset(name.split(".")[0] for name in loaded), result.returncode,
               result.stdout + result.stderr)  # fmt: skip


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Ran]:
    """Every case, each in its own interpreter: those that only read two at a time, then
    those that change the database one after the other."""
    tmp = tmp_path_factory.mktemp("import-graph")
    names = seed(tmp)
    env = child_env(tmp)
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {case.name: pool.submit(run_case, case, names, env, tmp)
                   for case in CASES if not case.changes}  # fmt: skip
        ran = {name: future.result() for name, future in futures.items()}
    for case in CASES:
        if case.changes:
            ran[case.name] = run_case(case, names, env, tmp)
    return ran


def forbidden(case: Case) -> set[str]:
    return {*SDK, *TERMINAL, *(() if case.parses_sql else PARSER)}


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_a_command_imports_neither_the_sdk_nor_rich_nor_an_unneeded_parser(
    runs: dict[str, Ran], case: Case
) -> None:
    ran = runs[case.name]
    assert ran.returncode == case.exit_code, ran.output
    assert ran.modules, f"the probe reported no modules: {ran.output}"
    loaded = sorted(ran.modules & forbidden(case))
    assert not loaded, f"`sqlgate {' '.join(case.args)}` imported {loaded}"


def test_the_cases_run_every_command_but_ui_and_tools() -> None:
    """A new command gets a case here (or a reason beside `tools` in the docstring)."""
    covered = {case.args[0] for case in CASES}
    assert set(main.list_commands(click.Context(main))) - covered == {"ui", "tools"}
