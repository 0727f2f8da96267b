"""`sqlgate install CLIENT` and `sqlgate uninstall CLIENT`: edit an MCP client's own config.

The logic (locations, editing, the atomic writer) is in `surfaces/integrations/`; this module
turns options into a plan, prints it, and carries it out unless `--dry-run`.
"""

from __future__ import annotations

import difflib
import os
import shutil
from pathlib import Path
from typing import Any

import click

from sqlgate.config import PROJECT_DB, load_settings
from sqlgate.errors import InvalidArgument
from sqlgate.home import HOME_DIR
from sqlgate.surfaces.cli.options import reports_errors, settings_from, settings_options
from sqlgate.surfaces.integrations import codex_scopes, gemini_scopes, scopes
from sqlgate.surfaces.integrations import install as setup
from sqlgate.surfaces.integrations.gemini_trust import trust_warning
from sqlgate.surfaces.terminal import json_dumps, visible

__all__ = ["install", "uninstall"]


def _common(fn: Any) -> Any:
    for option in reversed((
        click.argument("client", metavar="CLIENT"),
        click.option("--name", default="sqlgate", show_default=True,
                     help="the server's name in the client's config"),
        click.option("--scope", default=None,
                     help="user (every project; the default) or project (the current "
                          "folder's config, to commit); not for claude-desktop"),
        click.option("--dry-run", is_flag=True, help="print the change; write nothing"),
        click.option("--json", "as_json", is_flag=True,
                     help="one JSON object per file changed (or not), for scripts"),
    )):  # fmt: skip
        fn = option(fn)
    return fn


@click.command()
@_common
@settings_options(("db",))
@click.option(
    "--capture/--no-capture", default=None,
    help="claude-code only: also register hooks that record the session into sqlgate's memory "
         "(--no-capture takes them out; neither: hooks already there follow the server)",
)  # fmt: skip
@reports_errors
def install(
    client: str,
    name: str,
    scope: str | None,
    dry_run: bool,
    as_json: bool,
    capture: bool | None,
    **values: Any,
) -> None:
    """Add sqlgate to CLIENT's MCP config (claude-code, claude-desktop, cursor, vscode, codex,
    gemini).

    \b
    --scope user (the default): this installation's `sqlgate serve --db DB`,
      absolute paths (DB: --db, else SQLGATE_DB, else the per-user database).
      Claude Code and Gemini CLI without either get `serve --project-db`: each
      project its own PROJECT/.sqlgate/agent.db (Claude Code: for the server
      and the hooks alike).
    --scope project: a file to commit, so nothing of this machine: `sqlgate`
      from PATH and a database inside the project (--db, default
      .sqlgate/agent.db; `serve` creates the folder, with a .gitignore that
      keeps it out of git). VS Code and Cursor get ${workspaceFolder}/.sqlgate/agent.db.

    For gemini it says when Gemini CLI does not trust this folder (it then
    starts no MCP server here) and how to trust it; it never writes Gemini's
    trustedFolders.json.

    For claude-code, codex and gemini it warns when another scope has an entry
    of NAME with another command, and which one the client runs.

    For claude-code it also writes permissions into Claude Code's settings:
    allow for the read and write tools, ask before destructive_query and
    undo_call (merged into yours; uninstall takes out only what it added).

    Running it again with the same options changes nothing; with another --db it
    updates the entry, moves the capture hooks with it, and says what changed
    (old → new). Comments in the file (JSONC) are kept, and so are other servers
    and settings. The old file is first copied to sqlgate's data folder
    (backups/CLIENT/, the newest 10 kept); the new one replaces it atomically.
    `sqlgate uninstall CLIENT` takes it all out again.
    """
    spec = setup.client_named(client)
    chosen = setup.resolve_scope(spec, scope)
    if capture is not None and spec.name != "claude-code":
        flag = "--capture" if capture else "--no-capture"
        raise InvalidArgument(f"{flag} is only for claude-code (it uses its hooks)")
    where = setup.Where.here()
    named, per_project = _chosen_db(values, chosen)
    db = setup.database_for(spec, chosen, named, per_project=per_project)
    changes = _install_plans(spec, name, chosen, db, capture, where)
    _carry_out(changes, dry_run, as_json, spec.name, name)
    if warning := _scope_warning(spec.name, name, chosen, changes[0], where):
        click.echo(visible(warning), err=True)
    if spec.name == "gemini" and (untrusted := trust_warning(chosen, where)):
        click.echo(visible(untrusted), err=True)
    if not dry_run and chosen == "project" and db is not None:
        _guard(db, where)
    if as_json or dry_run or not any(change.needed for change in changes):
        return
    _say_what_follows(spec, name, chosen, changes[0], db, where, warning)


def _guard(db: Path, where: setup.Where) -> None:
    """A project's existing database is noted in the project's `.sqlgate/` at once, so the
    commands run in the project (`log`, `stats`, ...) find it before the client first
    starts the server; its records are made by that first start."""
    from sqlgate.home import Home, home_of, note_guarded

    full = db if db.is_absolute() else where.cwd / db
    if full.is_file() and full.parent.name != HOME_DIR:
        home = home_of(full)
        if home.root is None:  # no repository around it: the project is the install's folder
            home = Home(where.cwd / HOME_DIR, where.cwd)
        note_guarded(full, home)


def _install_plans(
    spec: setup.Client,
    name: str,
    chosen: str | None,
    db: Path | None,
    capture: bool | None,
    where: setup.Where,
) -> list[setup.Change]:
    """The entry's change, then for claude-code its settings' (capture hooks, permissions)."""
    if chosen == "project":
        launcher = setup.PORTABLE
    else:
        launcher = setup.find_launcher(platform=where.platform)
    changes = [setup.plan_install(spec, name, launcher, db, chosen, where)]
    if spec.name == "claude-code":
        if chosen == "project":
            assert db is not None
            command = setup.project_capture_command(db, where)
        else:
            command = setup.capture_command(launcher, db, where.platform)
        hooks = {True: "register", False: "remove", None: "follow"}[capture]
        edit = setup.SettingsEdit(hooks, command, permissions="add", server=name)
        changes.append(setup.plan_settings(edit, chosen, where))
    return changes


def _say_what_follows(
    spec: setup.Client,
    name: str,
    chosen: str | None,
    change: setup.Change,
    db: Path | None,
    where: setup.Where,
    warning: str | None,
) -> None:
    """After a written install: where the database is, what to keep out of git, what
    became of the database the entry used before, and when the client uses the entry."""
    if chosen == "project":
        assert db is not None
        shown = setup.project_db(db, where).as_posix()
        if shown.startswith(".sqlgate/"):
            kept = ".sqlgate/ keeps it and sqlgate's records of it out of git (its own .gitignore)"
        else:
            kept = (f"keep it out of git: add {shown}* to .gitignore; sqlgate keeps its records "
                    "of it in .sqlgate/ (which ignores itself)")  # fmt: skip
        click.echo(f"the project's database is {shown} (relative to the project folder); {kept}")
        if shutil.which("sqlgate") is None:
            click.echo("note: no `sqlgate` on this machine's PATH; the project's config runs "
                       "`sqlgate` from PATH: install it where every clone's users can run it "
                       "(pipx or `uv tool install`)")  # fmt: skip
    elif db is None:
        click.echo(f"each project gets its own database, PROJECT/{PROJECT_DB.as_posix()} "
                   f"(PROJECT: the folder {spec.title} runs in); .sqlgate/ keeps itself out "
                   "of git (its own .gitignore)")  # fmt: skip
    old = _old_db(change)
    if old is not None and old != setup.PER_PROJECT and db is None:
        click.echo(f"the database it used ({visible(old)}) stays where it is; to keep "
                   f"serving it to every project, install with --db {visible(old)}")  # fmt: skip
    click.echo(_restart_line(spec, name, warning))


def _scope_warning(
    client: str, name: str, scope: str | None, change: setup.Change, where: setup.Where
) -> str | None:
    """The warning when the client will not run the entry just written (another scope's
    wins, or Codex ignores the project's file), or when it hides another scope's."""
    if client == "codex":
        return codex_scopes.planned_codex_warning(name, scope, change, where)
    if client == "gemini":
        return gemini_scopes.planned_gemini_warning(name, scope, change, where)
    return scopes.planned_warning(client, name, scope, change, where)


def _restart_line(spec: setup.Client, name: str, warning: str | None) -> str:
    if spec.name == "codex" and warning and warning.startswith("warning: Codex ignores"):
        return f"Codex uses {name!r} here once it trusts the project (see the warning)"
    return f"restart {spec.title} (or reload its MCP servers) to use {name!r}"


def _chosen_db(values: dict[str, Any], scope: str | None) -> tuple[Path | None, bool]:
    """The database the person named (--db, or SQLGATE_DB at user scope), and whether they
    asked for the project's own (--project-db, or SQLGATE_PROJECT_DB at user scope)."""
    given = values.get("db")
    if scope == "project":  # a committed file: nothing of this machine's environment
        if given is not None and values.get("project_db"):
            load_settings({"db": given, "project_db": True}, env={})  # the usage error
        return (Path(given) if given is not None else None), bool(values.get("project_db"))
    settings = settings_from(values, find_home=False, say=False)  # what the entry names
    named = given is not None or bool(os.environ.get("SQLGATE_DB", "").strip())
    if settings.project_db or not named:
        return None, settings.project_db
    return Path(os.path.abspath(settings.db)), False


def _old_db(change: setup.Change) -> str | None:
    for field, old, _ in change.changed:
        if field == "db":
            return old
    return None


@click.command()
@_common
@reports_errors
def uninstall(client: str, name: str, scope: str | None, dry_run: bool, as_json: bool) -> None:
    """Remove sqlgate's entry from CLIENT's MCP config; nothing else changes.

    What install added goes: the entry, a servers object or hook list it created once empty,
    and a config file it created that holds nothing else (with the folders it made for it).
    For claude-code it also removes the capture hooks of the same scope, and the permission
    rules install added for NAME (rules you had before, or moved, stay).
    """
    spec = setup.client_named(client)
    chosen = setup.resolve_scope(spec, scope)
    where = setup.Where.here()
    changes = [setup.plan_uninstall(spec, name, chosen, where)]
    if spec.name == "claude-code" and setup.settings_path(chosen, where).exists():
        edit = setup.SettingsEdit("remove", permissions="remove", server=name)
        changes.append(setup.plan_settings(edit, chosen, where))
    _carry_out(changes, dry_run, as_json, spec.name, name)


def _carry_out(
    changes: list[setup.Change], dry_run: bool, as_json: bool, client: str, name: str
) -> None:
    """Every plan is made (and every file checked) before the first write."""
    for change in changes:
        shown = visible(str(change.path))
        target = setup.link_target(change.path)
        link = f"the link {shown} -> {visible(str(target))}" if target else ""
        backup = None
        if change.needed and not dry_run:
            backup = setup.apply(change)
        if as_json:
            click.echo(json_dumps(_record(change, client, name, dry_run, backup, target)))
        elif not change.needed:
            click.echo(f"{visible(change.summary)} ({shown})")
        elif dry_run:
            through = f" (through {link})" if link else ""
            click.echo(f"would write {shown}{through}: {visible(change.summary)}")
            click.echo(_diff(change), nl=False)
        else:
            if change.delete:
                made = f"{shown} removed; backup: {visible(str(backup))}"
            elif backup:
                made = f"{shown}; backup: {visible(str(backup))}"
            else:
                made = f"{shown}; new file"
            click.echo(f"{visible(change.summary)} ({made})")
            if link:
                click.echo(f"  wrote through {link}; the link is kept")


def _record(
    change: setup.Change,
    client: str,
    name: str,
    dry_run: bool,
    backup: Path | None,
    target: Path | None,
) -> dict[str, Any]:
    return {
        "client": client,
        "name": name,
        "file": str(change.path),
        "through_link_to": str(target) if target else None,
        "action": change.action if change.needed else "none",
        "summary": change.summary,
        "changed": {f: {"old": old, "new": new} for f, old, new in change.changed},
        "dry_run": dry_run,
        "written": change.needed and not dry_run,
        "new_file": change.needed and change.before is None,
        "file_removed": change.needed and change.delete,
        "backup": str(backup) if backup else None,
    }


def _diff(change: setup.Change) -> str:
    """A unified diff; each line shown visibly (the file can hold any text)."""
    before = (change.before or "").splitlines(keepends=True)
    after = [] if change.delete else (change.after or "").splitlines(keepends=True)
    label = str(change.path)
    lines = difflib.unified_diff(before, after, "(none)" if change.before is None else label,
                                 "(removed)" if change.delete else label)  # fmt: skip
    return "".join(visible(line.removesuffix("\n").removesuffix("\r")) + "\n" for line in lines)
