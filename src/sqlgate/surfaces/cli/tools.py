"""`sqlgate tools`: the tools a server announces, as a client lists them, and with --size the
bytes of `tools/list` an agent pays for on every turn."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from sqlgate.service import counted
from sqlgate.surfaces import terminal
from sqlgate.surfaces.cli.listing import Column, is_terminal, print_listing
from sqlgate.surfaces.cli.options import (
    JSON_OPTION,
    reports_errors,
    settings_from,
    settings_options,
)

if TYPE_CHECKING:  # imported when the command runs, not at start-up
    from sqlgate.config import Settings

__all__ = ["tools"]


# -- tools ----------------------------------------------------------------------------------
@click.command()
@click.option("--size", is_flag=True, help="also the bytes of tools/list, per tool and group")
@JSON_OPTION
@settings_options(("tools",))
@reports_errors
def tools(size: bool, as_json: bool, **values: Any) -> None:
    """The tools a server with these --tools groups announces, as a client lists them.

    With --size, the bytes of the `tools/list` result a client receives (an agent pays
    for them on every turn): per tool, per group (a server announcing only that group) and
    for the chosen groups, as sent on a pre-2026 connection (the initialize handshake);
    the 2026-07-28 protocol adds a small envelope, shown beside the total.
    """
    import anyio

    settings = settings_from(values, find_home=False, say=False)  # a database of its own
    with tempfile.TemporaryDirectory(prefix="sqlgate-tools-") as folder:
        listings = anyio.run(_list_tools, replace(settings, db=Path(folder) / "tools.db"))
    report = _tools_report(listings, settings.tools)
    if as_json:
        if not size:
            report.pop("size")
            for tool in report["tools"]:
                tool.pop("bytes")
        click.echo(terminal.json_dumps(report))
    else:
        _print_tools(report, size)


async def _list_tools(settings: Settings) -> list[tuple[str, Any]]:
    """(protocol version, ListToolsResult) of a server on a throwaway database, listed by the
    in-memory client: first on a legacy connection, then on the newest protocol."""
    from mcp import Client

    from sqlgate.service import Service
    from sqlgate.surfaces.mcp.server import build_server

    service = Service.open(settings)
    try:
        server = build_server(service)
        listings = []
        for mode in ("legacy", "auto"):
            async with Client(server, mode=mode) as client:
                listings.append((client.protocol_version, await client.list_tools()))
        return listings
    finally:
        service.close()


def _wire_bytes(model: Any) -> int:
    """Bytes of a received result as it was on the wire: compact JSON of the fields the
    server sent (exclude_unset leaves out the defaults the client's model fills in)."""
    return len(model.model_dump_json(by_alias=True, exclude_unset=True).encode("utf-8"))


def _group_of(name: str) -> str:
    from sqlgate.surfaces.mcp.server import CLAIMS_TOOLS, MEMORY_TOOLS, SQL_TOOLS

    for group, names in (("sql", SQL_TOOLS), ("memory", MEMORY_TOOLS), ("claims", CLAIMS_TOOLS)):
        if name in names:
            return group
    return "other"


def _tools_report(listings: list[tuple[str, Any]], groups: Sequence[str]) -> dict[str, Any]:
    protocol, listed = listings[0]
    rows = []
    for tool in listed.tools:
        hints = tool.annotations
        first_line = (tool.description or "").strip().split("\n", 1)[0]
        rows.append({
            "name": tool.name,
            "group": _group_of(tool.name),
            "annotations": {} if hints is None else hints.model_dump(by_alias=True,
                                                                     exclude_none=True),
            "description": terminal.one_line(first_line),
            "bytes": _wire_bytes(tool),
        })  # fmt: skip
    by_group = {}
    for group in groups:
        alone = [tool for tool in listed.tools if _group_of(tool.name) == group]
        by_group[group] = _wire_bytes(listed.model_copy(update={"tools": alone}))
    size = {
        "protocol": protocol,
        "groups": by_group,
        "total": _wire_bytes(listed),
        "by_protocol": {version: _wire_bytes(result) for version, result in listings},
    }
    return {"tools": rows, "size": size}


def _hints(annotations: dict[str, Any]) -> str:
    words = []
    if annotations.get("readOnlyHint"):
        words.append("read-only")
    elif annotations.get("destructiveHint"):
        words.append("destructive")
    elif annotations.get("readOnlyHint") is False:
        words.append("writes")
    if annotations.get("idempotentHint"):
        words.append("idempotent")
    if annotations.get("openWorldHint"):
        words.append("open-world")
    return ", ".join(words)


def _print_tools(report: dict[str, Any], size: bool) -> None:
    columns = [
        Column("group", "group", keep_whole=True),
        Column("name", "tool", keep_whole=True),
        Column("annotations", "hints", render=_hints),
        Column("description", "description"),
        *([Column("bytes", "bytes", keep_whole=True)] if size else []),
    ]
    print_listing(
        report["tools"], columns, as_json=False,
        title=f"{counted(len(report['tools']), 'tool')} announced", empty="no tools announced",
    )  # fmt: skip
    if size:
        sizes = report["size"]
        per_group = ", ".join(f"{group} {n:,}" for group, n in sizes["groups"].items())
        others = ", ".join(f"{n:,} on {version}" for version, n in sizes["by_protocol"].items()
                           if version != sizes["protocol"])  # fmt: skip
        lines = [
            f"tools/list result: {counted(sizes['total'], 'byte', spec=',')} on protocol "
            f"{sizes['protocol']}",
            f"  each group announced alone: {per_group}",
            *([f"  the same tools: {others}"] if others else []),
        ]
        click.echo("\n".join(lines), err=not is_terminal())
