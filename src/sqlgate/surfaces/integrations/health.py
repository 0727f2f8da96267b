"""`sqlgate doctor`: for each client entry that runs `sqlgate serve`, the checks and their
verdicts (ok, warn, fail), each problem with its fix as a command or an exact edit.

    config       the client's config file parses (else nothing in it can be checked)
    command      the command resolves: an absolute program that exists and may be run, or
                 a name found on PATH
    database     the database exists and can be written (db_health.py), or serve creates it
    initialize   the entry's command, started as the client starts it, answers MCP's
                 `initialize` within --timeout (server_probe.py); not tried when that would
                 create or upgrade the database (doctor writes nothing)
    hooks        Claude Code: the capture hooks of the entry's scope name its database
    capture-log  Claude Code with hooks: no capture error in the last 24 h
    scopes       Claude Code, Codex and Gemini CLI: no entry of the same name at another
                 scope hides this one (a warning when this one hides another, or is hidden
                 by one; codex_scopes.py, gemini_scopes.py)
    trust        Codex, a project-scope entry: Codex trusts the project, else it ignores
                 the project's .codex/config.toml (codex_trust.py); Gemini CLI: it trusts
                 this folder, else it starts no MCP server here (gemini_trust.py); the fix
                 is the client's own trust step
    permissions  Claude Code: its permission rules still ask before each destructive tool
                 (the second lock; permission_health.py); a warning when one runs without
                 asking, naming the settings file and the rule to put back
    replication  an entry with --replicate: the replicating process runs (status.json and
                 its lock, replication/status.py)

Facts are gathered by the functions here and in db_health.py; clocks, the probe and PATH
lookups are injected (`Doctor`), so tests build a fake home per problem.
"""

from __future__ import annotations

import os
import shlex
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlgate.errors import InvalidArgument
from sqlgate.service import counted, db_option, in_folder
from sqlgate.surfaces.integrations import installed as found
from sqlgate.surfaces.integrations.client_paths import Where
from sqlgate.surfaces.integrations.codex_scopes import judge_codex_scopes, judge_codex_trust
from sqlgate.surfaces.integrations.db_health import (
    DbVerdict,
    db_facts,
    judge_db,
    judge_log,
    log_facts,
)
from sqlgate.surfaces.integrations.gemini_scopes import judge_gemini_scopes
from sqlgate.surfaces.integrations.gemini_trust import trust_verdict
from sqlgate.surfaces.integrations.installed import DbChoice, Installed
from sqlgate.surfaces.integrations.permission_health import judge_permissions, permission_facts
from sqlgate.surfaces.integrations.scopes import removal_command, scope_conflict
from sqlgate.surfaces.integrations.server_probe import Answer, ask_initialize
from sqlgate.surfaces.replication.status import replication_report

__all__ = ["DEFAULT_TIMEOUT", "FAIL", "OK", "WARN", "Check", "Doctor", "examine", "reinstall"]

OK, WARN, FAIL = "ok", "warn", "fail"
DEFAULT_TIMEOUT = 10.0  # a loaded machine starts a Python server in seconds
Ask = Callable[[Sequence[str], Mapping[str, str], Path, float], Answer]


@dataclass(frozen=True)
class Check:
    """One check of one entry: what was checked, the verdict, and the fix of a problem."""

    target: str  # `claude-code user "sqlgate"`, or the file for `config`
    file: str
    check: str
    status: str
    detail: str
    fix: str | None = None

    def record(self) -> dict[str, Any]:
        return {"target": self.target, "file": self.file, "check": self.check,
                "status": self.status, "detail": self.detail, "fix": self.fix}  # fmt: skip


@dataclass(frozen=True)
class Doctor:
    """What the checks depend on: the machine (Where), the clock, the probe, PATH."""

    where: Where
    now: Callable[[], float] = time.time
    timeout: float = DEFAULT_TIMEOUT
    ask: Ask = ask_initialize
    which: Callable[..., str | None] = shutil.which


def _one(inst: Installed, check: str, verdict: DbVerdict | tuple[str, str, str | None]) -> Check:
    status, detail, fix = (
        (verdict.status, verdict.detail, verdict.fix) if isinstance(verdict, DbVerdict) else verdict
    )
    return Check(inst.label(), str(inst.path), check, status, detail, fix)


def reinstall(
    inst: Installed,
    db: DbChoice,
    folder: Path,
    *,
    capture: bool = False,
    db_arg: str | None = None,
) -> str:
    """The install command that rewrites this entry (this installation's sqlgate, the
    same database, or `db_arg`); a project's entry is the one of `folder`."""
    if inst.scope == "local":
        return (f"`{removal_command(inst.name, 'local', folder)}`, then `sqlgate install "
                "claude-code --scope user`")  # fmt: skip
    words = ["sqlgate", "install", inst.client]
    if inst.scope is not None:
        words += ["--scope", inst.scope]
    if inst.name != "sqlgate":
        words += ["--name", inst.name]
    if db_arg is not None:
        words += ["--db", db_arg]
    elif db.per_project:
        words.append("--project-db")
    elif db.how == "--db":
        words += ["--db", inst.option("--db") or str(db.path)]
    if capture:
        words.append("--capture")
    command = shlex.join(words)
    return f"`{in_folder(folder, command) if inst.scope == 'project' else command}`"


def check_command(inst: Installed, db: DbChoice, doctor: Doctor) -> Check:
    command = inst.command
    env = found.which_env(inst, doctor.where)
    if Path(command).is_absolute():
        if found.is_executable(Path(command)):
            return _one(inst, "command", (OK, f"{command} exists and may be run", None))
        problem = "does not exist" if not Path(command).exists() else "may not be run"
        fix = _command_fix(inst, db, doctor.where.cwd)
        return _one(inst, "command", (FAIL, f"{command} {problem}", fix))
    located = doctor.which(command, path=env.get("PATH"))
    if located:
        return _one(inst, "command", (OK, f"{command} is {located} (from PATH)", None))
    fix = _command_fix(inst, db, doctor.where.cwd)
    return _one(inst, "command", (FAIL, f"{command!r} is not on PATH", fix))


def _command_fix(inst: Installed, db: DbChoice, folder: Path) -> str:
    if inst.scope == "project":
        return ("put sqlgate on PATH: `pipx install sqlgate` (or `uv tool install sqlgate`); a "
                "project's committed config runs `sqlgate` from PATH")  # fmt: skip
    return f"reinstall with this sqlgate: {reinstall(inst, db, folder)}"


def check_database(inst: Installed, db: DbChoice, doctor: Doctor) -> tuple[Check, bool]:
    verdict = judge_db(db_facts(db.path),
                       "point the entry at a file of its own: "
                       f"{reinstall(inst, db, doctor.where.cwd, db_arg='NEW.db')}")  # fmt: skip
    how = {"--project-db": " (--project-db, this project)", "env": " (SQLGATE_DB)",
           "default": " (the per-user default)"}.get(db.how, "")  # fmt: skip
    shown = DbVerdict(verdict.status, verdict.detail + how, verdict.fix, verdict.ready)
    return _one(inst, "database", shown), verdict.ready


def check_initialize(inst: Installed, ready: bool, failed: bool, doctor: Doctor) -> Check:
    if failed:
        return _one(inst, "initialize", (WARN, "not tried: fix the problems above first", None))
    if not ready:
        return _one(inst, "initialize", (WARN, "not tried: serve would create or upgrade the "
                    "database, and doctor writes nothing; start the client once, then run "
                    f"`{in_folder(doctor.where.cwd, 'sqlgate doctor')}` again", None))  # fmt: skip
    argv = [inst.command, *found.without_option(inst.args, "--replicate")]
    # without --replicate: a second replicating process would be refused while the client's
    # server replicates (the replication check looks at that instead)
    env = found.which_env(inst, doctor.where)
    env.pop("SQLGATE_REPLICATE", None)
    answer = doctor.ask(argv, env, doctor.where.cwd, doctor.timeout)
    if answer.ok:
        said = f"{answer.detail} ({answer.server} {answer.version})"
        return _one(inst, "initialize", (OK, said, None))
    fix = (f"run it by hand to see why: `{found.shown_command(inst)}` (in {doctor.where.cwd}); "
           "a slow machine may need a longer --timeout")  # fmt: skip
    return _one(inst, "initialize", (FAIL, f"the server {answer.detail}", fix))


def check_hooks(inst: Installed, db: DbChoice, doctor: Doctor) -> list[Check]:
    """Claude Code: the capture hooks of the entry's scope name its database; their log."""
    if inst.client != "claude-code":
        return []
    settings = found.hook_settings_file(inst.scope, doctor.where)
    try:
        hooks = found.capture_hooks(inst.scope, doctor.where)
    except InvalidArgument as exc:
        return [_one(inst, "hooks", (FAIL, str(exc), f"fix {settings} by hand"))]
    if not hooks:
        return [_one(inst, "hooks", (OK, f"no capture hooks in {settings} (`install --capture` "
                                     "records sessions)", None))]  # fmt: skip
    env = dict(doctor.where.env)
    named: dict[DbChoice, list[found.HookLine]] = {}
    for hook in hooks:
        named.setdefault(found.db_of_words(hook.words, env, doctor.where), []).append(hook)
    wrong = [choice for choice in named if not _same(choice, db)]
    checks = []
    if wrong:
        said = "; ".join(f"{', '.join(h.event for h in named[c])} on {c.path}"
                         + (" (--project-db)" if c.per_project else "") for c in wrong)  # fmt: skip
        checks.append(_one(inst, "hooks", (FAIL, f"the server uses {db.path} but the capture "
                      f"hooks in {settings} write elsewhere: {said}",
                      f"reinstall both on one database: "
                      f"{reinstall(inst, db, doctor.where.cwd, capture=True)}")))  # fmt: skip
    else:
        checks.append(_one(inst, "hooks", (OK, f"{counted(len(hooks), 'capture hook')} in "
                      f"{settings}, naming the server's database", None)))  # fmt: skip
    for choice, lines in named.items():
        log = found.option_value(lines[0].words, "--log")
        path = found.expand(log, doctor.where) if log else choice.path.with_name(
            choice.path.name + ".capture.log")  # fmt: skip
        verdict = judge_log(log_facts(path, choice.path), doctor.now())
        checks.append(_one(inst, "capture-log", verdict))
    return checks


def _same(hook: DbChoice, server: DbChoice) -> bool:
    if hook.per_project != server.per_project:
        return False  # the same file in this project, but not in the next one
    return _real(hook.path) == _real(server.path)


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def check_trust(inst: Installed, doctor: Doctor) -> Check | None:
    """Whether the client runs this entry here at all: Codex ignores a project's config
    until it trusts the project; Gemini CLI starts no server in a folder it does not trust."""
    if inst.client == "codex" and inst.scope == "project":
        return _one(inst, "trust", judge_codex_trust(inst.name, doctor.where))
    if inst.client == "gemini":
        return _one(inst, "trust", trust_verdict(inst.scope, doctor.where))
    return None


def check_scopes(inst: Installed, doctor: Doctor) -> Check | None:
    if inst.client in ("codex", "gemini"):
        judge = judge_codex_scopes if inst.client == "codex" else judge_gemini_scopes
        verdict = judge(inst.name, inst.scope, doctor.where)
        return _one(inst, "scopes", verdict) if verdict else None
    if inst.client != "claude-code":
        return None
    try:
        conflict = scope_conflict(inst.name, doctor.where)
    except InvalidArgument as exc:
        return _one(inst, "scopes", (FAIL, str(exc), "fix the file by hand"))
    if conflict is None:
        return _one(inst, "scopes", (OK, "no other scope has an entry of this name", None))
    others = ", ".join(f"{e.scope} ({e.path})" for e in conflict.entries if e.scope != inst.scope)
    winner = conflict.connected
    if winner is not None and winner.scope == inst.scope:
        verb = "has" if len(conflict.entries) == 2 else "have"
        fixes = " or ".join(f"`{removal_command(inst.name, e.scope, doctor.where.cwd)}`"
                            for e in conflict.entries if e.scope != inst.scope)  # fmt: skip
        return _one(inst, "scopes", (WARN, f'Claude Code reports "Conflicting scopes": {others} '
                    f"also {verb} {inst.name!r}; this entry is the one it connects here",
                    f"remove the others: {fixes}"))  # fmt: skip
    hider = f"the {winner.scope}-scope entry ({winner.path})" if winner else "nothing yet"
    why = (" (a project entry waits for approval, and is not offered while another scope has "
           "its name)" if inst.scope == "project" and winner and winner.scope == "user"
           else "")  # fmt: skip
    fix = (f"`{removal_command(inst.name, winner.scope, doctor.where.cwd)}`, or reinstall this "
           f"one under another name (`--name {inst.name}-{inst.scope}`)" if winner
           else "approve it in Claude Code's /mcp")  # fmt: skip
    return _one(inst, "scopes", (FAIL, f"hidden: Claude Code connects {hider} for "
                f"{inst.name!r} here{why}", fix))  # fmt: skip


def check_permissions(inst: Installed, doctor: Doctor) -> Check | None:
    if inst.client != "claude-code":
        return None
    facts = permission_facts(inst.name, inst.scope, doctor.where)
    return _one(inst, "permissions", judge_permissions(facts))


def check_replication(inst: Installed, db: DbChoice, doctor: Doctor) -> Check | None:
    url = inst.option("--replicate") or inst.env.get("SQLGATE_REPLICATE")
    if not url:
        return None
    report = replication_report(db.path)
    state = report.get("state")
    stats = f"`sqlgate stats {db_option(db.path)}`"
    problem = (report.get("witness_log") or {}).get("problem")
    if problem:
        return _one(inst, "replication", (FAIL, f"the witness log is stuck: {problem}", stats))
    if state == "running":
        if report.get("url") != url:
            return _one(inst, "replication", (WARN, f"running, but to {report.get('url')}, not "
                        f"the entry's {url}", f"restart the client; then {stats}"))  # fmt: skip
        return _one(inst, "replication", (OK, f"running to {url} (Litestream pid "
                    f"{report.get('litestream_pid')})", None))  # fmt: skip
    if state == "not configured":
        return _one(inst, "replication", (WARN, f"unknown: nothing has replicated {db.path} yet "
                    "(no status.json beside it)", f"start the client, then {stats}"))  # fmt: skip
    if state == "stopped":
        return _one(inst, "replication", (WARN, f"stopped at {report.get('updated_at')}: no "
                    "server runs on this database now",
                    f"start the client, then {stats}"))  # fmt: skip
    detail = {"gone": "the replicating process ended without stopping it (killed?)",
              "restarting": "Litestream exited and is being restarted"}.get(
                  str(state), f"state {state}")  # fmt: skip
    error = (report.get("last_error") or {}).get("message")
    said = detail + (f"; last error: {error}" if error else "")
    return _one(inst, "replication", (FAIL, said, f"restart the client; then {stats}"))


def examine(doctor: Doctor, clients: Sequence[str] = (), name: str | None = None) -> list[Check]:
    """Every check of every sqlgate entry found (see the module's table)."""
    entries, unreadable = found.find_installed(doctor.where, clients, name)
    checks = [Check(f"{u.client} {u.scope or ''}".strip(), str(u.path), "config", FAIL,
                    u.message, f"fix {u.path} by hand") for u in unreadable]  # fmt: skip
    for inst in entries:
        env = found.which_env(inst, doctor.where)
        db = found.db_of_words(inst.serve, env, doctor.where)
        command = check_command(inst, db, doctor)
        database, ready = check_database(inst, db, doctor)
        failed = FAIL in (command.status, database.status)
        checks += [command, database, check_initialize(inst, ready, failed, doctor)]
        checks += check_hooks(inst, db, doctor)
        checks += [
            c
            for c in (
                check_trust(inst, doctor),
                check_scopes(inst, doctor),
                check_permissions(inst, doctor),
                check_replication(inst, db, doctor),
            )
            if c
        ]
    return checks
