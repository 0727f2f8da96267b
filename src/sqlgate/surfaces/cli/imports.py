"""`sqlgate import SOURCE PATH`: memory and claims from other tools' SQLite files.

Exit codes: 0 imported (or already imported, or nothing new), 2 the source is not the
expected format, its chain is broken, or a claim cannot be imported (without --skip-bad),
3 no such source file; the source is never written to, and on an error nothing is
written to the database either. The formats: docs/importers.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from sqlgate.service import counted
from sqlgate.surfaces.cli.options import reports_errors, settings_from, settings_options
from sqlgate.surfaces.terminal import json_dumps, visible

__all__ = ["import_group"]

DB_OPTIONS = ("db", "busy_timeout", "redact", "redact_patterns", "max_event_chars", "adopt_db")
SOURCE_HELP = {
    "mycorrhiza": "a mycorrhiza hash chain (table `chain`) as memory events",
    "mcp-sqlite-memory": "mcp-sqlite-memory's memory_events and memory_checkpoints",
    "claims-mcp": "claims-mcp's claims file as claims",
}


@click.group("import")
def import_group() -> None:
    """Import memory or claims from another tool's SQLite file (verified first, redacted,
    never duplicated, all or nothing; the source file is only read). Each accepted format
    (tables, columns, hash rule) is in docs/importers.md. A claims import refuses a file
    with a claim sqlgate cannot hold, listing them; `import claims-mcp --skip-bad` imports
    the rest."""


def _print(report: dict[str, Any], as_json: bool) -> None:
    """The report; names and paths come from the source file and the command line, so
    control characters in them are shown as escapes (surfaces/terminal.py)."""
    if as_json:
        click.echo(json_dumps(report))
        return
    what = ", ".join(
        counted(report[key], noun)
        for key, noun in (("events", "event"), ("checkpoints", "checkpoint"), ("claims", "claim"))
        if report.get(key)
    )
    line = f"{report['status']}: {what or 'nothing'} from {report['source']} {report['path']}"
    if report.get("after"):
        line += f" (after seq/id {report['after']})"
    click.echo(visible(line))
    for label in ("redacted", "skipped"):
        if report.get(label):
            parts = ", ".join(f"{name} {count}" for name, count in sorted(report[label].items()))
            click.echo(f"  {label}: {visible(parts)}")
    from sqlgate.surfaces.integrations.importers.claim_plan import SHOWN_BAD_CLAIMS

    bad = report.get("bad") or []
    for item in bad[:SHOWN_BAD_CLAIMS]:
        click.echo(visible(f"  bad claim {item['ref']}: {item['problem']}"))
    if len(bad) > SHOWN_BAD_CLAIMS:
        more = counted(len(bad) - SHOWN_BAD_CLAIMS, "more bad claim")
        click.echo(f"  and {more} (--json lists all)")
    if report.get("provenance_event"):
        click.echo(f"  recorded as event {report['provenance_event']} (kind import)")


def _command(source: str) -> click.Command:
    @click.argument("path", type=click.Path(path_type=Path))
    @click.option("--dry-run", is_flag=True, help="verify and plan; write nothing")
    @click.option("--json", "as_json", is_flag=True, help="print one JSON object for scripts")
    @settings_options(DB_OPTIONS)
    @reports_errors
    def command(path: Path, dry_run: bool, as_json: bool, **values: Any) -> None:
        from sqlgate.surfaces.integrations.importers import run_import

        skip_bad = bool(values.pop("skip_bad", False))
        report = run_import(settings_from(values), source, path, dry_run=dry_run, skip_bad=skip_bad)
        _print(report.as_dict(), as_json)

    if source == "claims-mcp":
        command = click.option(
            "--skip-bad",
            is_flag=True,
            help="import the claims sqlgate can hold and list the others (default: a bad "
            "claim refuses the whole import, listing every bad one)",
        )(command)
    command.__doc__ = f"Import {SOURCE_HELP[source]} from PATH. Formats: docs/importers.md."
    return click.command(source)(command)


for _source in SOURCE_HELP:
    import_group.add_command(_command(_source))
