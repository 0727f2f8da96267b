"""The command line: `sqlgate serve` and the commands humans use to inspect and restore.

Errors end a command with one readable line on stderr and the error's exit code:
1 unexpected, 2 bad usage or argument, 3 not found, 4 refused by policy, 5 limit (or a busy
database), 6 SQLite error, 7 snapshot or undo problem, 8 the database cannot be opened (or
replication cannot start), 9 the memory chain is broken (`sqlgate verify`, `sqlgate
restore`), 10 `sqlgate doctor` found a problem, 130 Ctrl-C. `errors.EXIT_CODES` is the
reference (docs/reference/exit-codes.md is generated from it); a test holds them equal.

A usage error (unknown option, missing argument, bad value...) is one such line too, exit 2,
naming the command's `--help` (`usage.UsageLines`).

Every command but `serve` lives in its own module and is imported only when it runs
(`lazy.LazyGroup`): `sqlgate capture` never pays for the MCP SDK that `serve` needs, and
`--help` imports none of them. To add a command, add one line to `COMMANDS`: its name,
`"module:attr"` and its one-line help, the first sentence of its docstring as `--help`
shows it (tests/surfaces/cli/test_lazy_commands.py holds the two equal).
"""

from __future__ import annotations

from typing import Any

import click

from sqlgate import __version__
from sqlgate.surfaces.cli.lazy import LazyCommand
from sqlgate.surfaces.cli.options import reports_errors, settings_options
from sqlgate.surfaces.cli.usage import UsageLines
from sqlgate.surfaces.mcp.http_options import http_options

__all__ = ["COMMANDS", "main"]

_CLI = "sqlgate.surfaces.cli"

# name: where the command lives, and its one-line help (register a new command here)
COMMANDS: dict[str, LazyCommand] = {
    "capture": LazyCommand(
        f"{_CLI}.capture:capture",
        "Record one Claude Code hook payload (JSON on stdin) as a memory event.",
    ),
    "claims": LazyCommand(
        f"{_CLI}.claims:claims",
        "Beliefs about entities that decay over time, and their contradictions.",
    ),
    "doctor": LazyCommand(
        f"{_CLI}.doctor:doctor",
        "Check each client config that runs `sqlgate serve`, in this project folder.",
    ),
    "export": LazyCommand(
        f"{_CLI}.export:export",
        "Memory events, checkpoints, claims and claims history as JSON lines.",
    ),
    "import": LazyCommand(
        f"{_CLI}.imports:import_group",
        "Import memory or claims from another tool's SQLite file (verified "
        "first, redacted, never duplicated, all or nothing; the source file "
        "is only read).",
    ),
    "install": LazyCommand(
        f"{_CLI}.install:install",
        "Add sqlgate to CLIENT's MCP config "
        "(claude-code, claude-desktop, cursor, vscode, codex, gemini).",
    ),
    "log": LazyCommand(
        f"{_CLI}.inspection:log", "The audit log (query_log): one row per tool call, newest first."
    ),
    "members": LazyCommand(
        f"{_CLI}.members:members",
        "Members of an HTTP team server, each with a token and a tier.",
    ),
    "migrate": LazyCommand(
        f"{_CLI}.migrate:migrate",
        "Move sqlgate 0.1.0's tables out of a database into .sqlgate/, keeping a backup.",
    ),
    "policy": LazyCommand(
        f"{_CLI}.policy:policy",
        "The table rules: hidden columns, protected and append-only tables.",
    ),
    "replicate": LazyCommand(
        f"{_CLI}.replicate:replicate",
        "Replicate the database and its records to URL until stopped (Ctrl-C or SIGTERM).",
    ),
    "restore": LazyCommand(
        f"{_CLI}.replicate:restore",
        "Restore the replica at URL into a new database and its records, then verify the chain.",
    ),
    "snapshots": LazyCommand(
        f"{_CLI}.snapshots:snapshots",
        "List and restore whole-file snapshots (taken before destructive schema changes).",
    ),
    "stats": LazyCommand(
        f"{_CLI}.inspection:stats",
        "Memory, claims and audit counts, and the rows of every table (chain checked cheaply).",
    ),
    "tools": LazyCommand(
        f"{_CLI}.tools:tools",
        "The tools a server with these --tools groups announces, as a client lists them.",
    ),
    "ui": LazyCommand(
        "sqlgate.surfaces.ui.serve:ui",
        "A local, read-only web console: activity, destructive calls, memory, claims, tables.",
    ),
    "undo": LazyCommand(
        f"{_CLI}.undo:undo",
        "Put back what call CALL changed: its id as the agent's answer gave it "
        "(AUDIT_ID@DATABASE_ID, e.g.",
    ),
    "uninstall": LazyCommand(
        f"{_CLI}.install:uninstall",
        "Remove sqlgate's entry from CLIENT's MCP config; nothing else changes.",
    ),
    "verify": LazyCommand(
        f"{_CLI}.inspection:verify",
        "Recompute every hash and link of the memory chain and check its witness.",
    ),
}


@click.group(cls=UsageLines, lazy=COMMANDS,
             context_settings={"help_option_names": ["-h", "--help"]})  # fmt: skip
@click.version_option(__version__, prog_name="sqlgate")
def main() -> None:
    """sqlgate: SQL over one SQLite file for coding agents, with the safety in the server."""


@main.command()
@settings_options()
@click.option(
    "--transport", type=click.Choice(["stdio", "http"]), default="stdio", show_default=True,
    help="how clients connect: stdio (one client) or streamable http (several, with a token)",
)  # fmt: skip
@http_options
@reports_errors
def serve(
    transport: str,
    host: str,
    port: int,
    token: str | None,
    insecure_no_token: bool,
    oauth_issuer: str | None,
    oauth_audience: str | None,
    oauth_name_claim: str,
    **values: Any,
) -> None:
    """Serve MCP on stdio for one client (what MCP clients launch), or over HTTP.

    Only protocol messages go to stdout; errors and logs go to stderr. Ctrl-C (exit 130)
    and SIGTERM (exit 0) stop it cleanly.
    """
    from sqlgate.errors import InvalidArgument
    from sqlgate.surfaces.cli.serve import run_server
    from sqlgate.surfaces.mcp.http_options import OAuthOptions

    if oauth_issuer is None and oauth_audience is not None:
        raise InvalidArgument(
            "--oauth-audience applies only with --oauth-issuer; give both, or neither"
        )
    oauth = None if oauth_issuer is None else OAuthOptions(
        oauth_issuer, oauth_audience, oauth_name_claim
    )  # fmt: skip
    run_server(values, transport=transport, host=host, port=port, token=token,
               insecure_no_token=insecure_no_token, oauth=oauth)  # fmt: skip


def _entry() -> None:  # pragma: no cover - `python -m sqlgate`
    main(prog_name="sqlgate")


if __name__ == "__main__":  # pragma: no cover
    _entry()
