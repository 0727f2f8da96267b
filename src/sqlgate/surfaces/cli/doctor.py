"""`sqlgate doctor`: check every client sqlgate is installed in (surfaces/integrations/
health.py has the checks), print each verdict with the fix of each problem, and exit 10
when something is broken (warnings alone exit 0)."""

from __future__ import annotations

import click

from sqlgate.errors import InvalidArgument, Unhealthy
from sqlgate.service import counted, in_folder
from sqlgate.surfaces.cli.options import reports_errors
from sqlgate.surfaces.integrations.client_paths import CLIENTS, Where
from sqlgate.surfaces.integrations.health import DEFAULT_TIMEOUT, FAIL, WARN, Check, Doctor, examine
from sqlgate.surfaces.terminal import json_dumps, visible

__all__ = ["doctor"]

_SHOWN = {"ok": "ok  ", "warn": "warn", "fail": "FAIL"}


@click.command()
@click.option("--client", "clients", multiple=True, metavar="NAME",
              type=click.Choice(list(CLIENTS)),
              help="check only this client (repeat for several) [default: all]")  # fmt: skip
@click.option("--name", default=None, metavar="NAME",
              help="check only the entry of this name [default: all running sqlgate]")  # fmt: skip
@click.option("--timeout", default=DEFAULT_TIMEOUT, show_default=True, metavar="SECONDS",
              type=float, help="how long each server has to answer initialize")  # fmt: skip
@click.option("--json", "as_json", is_flag=True,
              help="one JSON object per check per line, for scripts")  # fmt: skip
@reports_errors
def doctor(clients: tuple[str, ...], name: str | None, timeout: float, as_json: bool) -> None:
    """Check each client config that runs `sqlgate serve`, in this project folder.

    \b
    For each entry: the command resolves; the database exists and can be
    written (or serve creates it); the server answers MCP's initialize
    within --timeout; Claude Code's capture hooks name the same database and
    their log holds no error of the last 24 h; no entry of the same name at
    another Claude Code, Codex or Gemini CLI scope hides it (or is hidden by
    it); Codex trusts the project of a project-scope entry (else it ignores
    the project's config); Gemini CLI trusts this folder (else it starts no
    MCP server here); replication (--replicate) runs.

    Each line is ok, warn or FAIL; each problem is followed by its fix. Nothing
    is written: a missing database is not created, and a server that would
    create or upgrade one is not started. Exit 0 when nothing is broken
    (warnings included), 10 when something is.
    """
    if not 0 < timeout <= 600:
        raise InvalidArgument(f"--timeout {timeout:g}: give seconds above 0, at most 600")
    where = Where.here()
    checks = examine(Doctor(where, timeout=timeout), clients, name)
    if as_json and not checks:
        click.echo(json_dumps(_nothing_installed(clients, name).record()))
    elif as_json:
        for check in checks:
            click.echo(json_dumps(check.record()))
    else:
        _print(checks, clients, name)
    failed = [check for check in checks if check.status == FAIL]
    if failed:
        raise Unhealthy(
            f"doctor found {counted(len(failed), 'problem')} ({', '.join(_kinds(failed))}); "
            "apply each fix printed after FAIL, then run "
            f"`{in_folder(where.cwd, 'sqlgate doctor')}` again"
        )


def _kinds(checks: list[Check]) -> list[str]:
    return list(dict.fromkeys(check.check for check in checks))


def _nothing_installed(clients: tuple[str, ...], name: str | None) -> Check:
    limited = f" {name!r}" if name else ""
    among = f" in {', '.join(clients)}" if clients else ""
    fix = f"`sqlgate install claude-code` (or another client: {', '.join(CLIENTS)})"
    return Check("", "", "installed", WARN, f"no sqlgate entry{limited} found{among}", fix)


def _print(checks: list[Check], clients: tuple[str, ...], name: str | None) -> None:
    if not checks:
        nothing = _nothing_installed(clients, name)
        click.echo(visible(f"warn  {nothing.detail}"))
        click.echo(f"      fix: {nothing.fix}")
        return
    target = None
    for check in checks:
        if check.target != target:
            target = check.target
            click.echo(visible(f"{check.target} ({check.file})"))
        click.echo(visible(f"  {_SHOWN[check.status]}  {check.check}: {check.detail}"))
        if check.fix and check.status != "ok":
            click.echo(visible(f"        fix: {check.fix}"))
    problems = sum(check.status == FAIL for check in checks)
    warnings = sum(check.status == WARN for check in checks)
    click.echo(f"{counted(problems, 'problem')}, {counted(warnings, 'warning')}")
