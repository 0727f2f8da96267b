"""Write the manual's reference pages from the code, so they cannot drift from it.

    python scripts/gen_reference.py           write docs/reference/{tools,flags,cli,exit-codes}.md
    python scripts/gen_reference.py --check   write nothing; exit 1 naming each stale page

    page            made from
    tools.md        the tools, resources and instructions a server announces, one server per
                    --tools group, listed by an in-memory MCP client (as `sqlgate tools` does)
    flags.md        `sqlgate.config.FLAGS` and the defaults of `Settings`
    cli.md          the click tree of `sqlgate` (lazy commands loaded one by one)
    exit-codes.md   `sqlgate.errors.EXIT_CODES` and the error classes' `exit_code`

The output depends on the code only: no date, no path of this machine, no terminal width.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import re
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import click

from sqlgate import errors
from sqlgate.config import FLAGS, TOOL_GROUPS, Flag, Settings

__all__ = ["PAGES", "main", "render", "stale_pages"]

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "docs" / "reference"
COMMAND = "python scripts/gen_reference.py"


def _header(source: str) -> str:
    return f"<!-- generated from {source} by `{COMMAND}`: do not edit; run it again -->\n"


# -- Markdown helpers -----------------------------------------------------------------------
_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.DOTALL)


def md_text(text: str) -> str:
    """Plain text as Markdown: code spans kept, the rest escaped so it renders as written."""
    out: list[str] = []
    last = 0
    for found in _CODE_SPAN.finditer(text):
        out.append(_escape(text[last : found.start()]))
        out.append(found.group(0))
        last = found.end()
    out.append(_escape(text[last:]))
    return "".join(out)


def _escape(text: str) -> str:
    for char, escaped in (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ("*", "\\*"),
                          ("|", "\\|"), ("[", "\\["), ("]", "\\]")):  # fmt: skip
        text = text.replace(char, escaped)
    return text


def cell(text: str) -> str:
    """One table cell: one line, pipes escaped (inside code spans too: the table splits
    on them first)."""
    return " ".join(md_text(text).split()).replace("`|`", "`\\|`") or "—"


def code(value: str) -> str:
    return f"`` {value} ``" if "`" in value else f"`{value}`"


def paragraphs(text: str) -> str:
    """A docstring or description as Markdown paragraphs: a click `\\b` paragraph (kept as
    written) becomes a text block, every other paragraph is one line."""
    blocks = []
    for block in re.split(r"\n\s*\n", inspect.cleandoc(text).split("\f", 1)[0]):
        lines = block.splitlines()
        if lines and lines[0].strip() == "\b":
            blocks.append("```text\n" + "\n".join(lines[1:]) + "\n```")
        elif block.strip():
            blocks.append(md_text(" ".join(block.split())))
    return "\n\n".join(blocks)


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


# -- flags.md -------------------------------------------------------------------------------
_DEFAULTS = {field.name: field.default for field in dataclasses.fields(Settings)}


def default_text(flag: Flag) -> str:
    """A flag's default as the page shows it (the same on every machine)."""
    if flag.name == "db":
        return (
            "`memory.db` in the per-user data folder: `~/.local/share/sqlgate/` on Linux, "
            "`~/Library/Application Support/sqlgate/` on macOS, `%LOCALAPPDATA%\\sqlgate\\` "
            "on Windows"
        )
    value = _DEFAULTS[flag.name]
    if isinstance(value, bool):
        return "on" if value else "off"
    if value is None:
        return "none"
    if isinstance(value, tuple):
        return code(",".join(value))
    if isinstance(value, float):
        return code(f"{value:g}")
    return code(str(value))


def flag_options(flag: Flag) -> str:
    return "`--audit` / `--no-audit`" if flag.name == "audit" else code(flag.option)


def flags_page() -> str:
    rows = [
        [flag_options(flag), code(flag.env_var), default_text(flag), cell(flag.help)]
        for flag in FLAGS
    ]
    return "\n".join(
        [
            _header("`sqlgate.config.FLAGS`"),
            "# Server flags",
            "",
            "Every setting of `sqlgate serve` is a flag and an environment variable. An explicit "
            "flag wins over the environment, which wins over the default. Other commands take "
            "the flags that concern them (each command's own list is in the "
            "[command line reference](cli.md)), and read the same variables.",
            "",
            "A switch's variable takes `1`, `true`, `yes` or `on` (and `0`, `false`, `no` or "
            "`off`); a bad value in a variable stops the command just as a bad flag does "
            "(exit code 2).",
            "",
            table(["flag", "environment variable", "default", "what it does"], rows),
            "",
        ]
    )


# -- cli.md ---------------------------------------------------------------------------------
def walk(
    command: click.Command, path: tuple[str, ...], parent: click.Context | None
) -> Iterator[tuple[tuple[str, ...], click.Command, click.Context]]:
    """Every command under `command`, itself first, groups before their commands."""
    ctx = click.Context(command, info_name=path[-1], parent=parent)
    yield path, command, ctx
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):  # a lazy group imports each command here
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from walk(sub, (*path, name), ctx)


_SETTINGS = {flag.name: flag for flag in FLAGS}


def option_default(param: click.Option, ctx: click.Context) -> str:
    if param.name == "db":  # where that folder is, per platform, is on the flags page
        return "`memory.db` in the per-user data folder ([Server flags](flags.md))"
    if param.name in _SETTINGS:  # the settings' options default to None: load_settings decides
        return default_text(_SETTINGS[param.name])
    default = param.get_default(ctx, call=False)  # a callable is computed here: not shown
    if not isinstance(default, (str, int, float, list, tuple)) or default in ("", ()):
        return "—"  # none, computed when the command runs, or click's "not set"
    if param.is_flag and not default:
        return "off" if param.secondary_opts else "—"
    if param.is_flag:
        return "on"
    if isinstance(default, (list, tuple)):
        return ", ".join(code(str(item)) for item in default)
    if isinstance(default, float):
        return code(f"{default:g}")
    return code(str(default))


def option_value(param: click.Option, ctx: click.Context) -> str:
    if param.is_flag or param.count:
        return "—"
    if isinstance(param.type, click.Choice):
        return " \\| ".join(code(str(choice)) for choice in param.type.choices)
    return code(param.make_metavar(ctx))


def option_names(param: click.Option) -> str:
    names = [code(name) for name in param.opts]
    if param.secondary_opts:
        names.append("/ " + " ".join(code(name) for name in param.secondary_opts))
    return " ".join(names)


def command_section(path: tuple[str, ...], command: click.Command, ctx: click.Context) -> str:
    name = " ".join(path)
    usage = " ".join([name, *command.collect_usage_pieces(ctx)])
    parts = [f"{'#' * min(len(path) + 1, 4)} `{name}`", "", f"```text\n{usage}\n```"]
    if command.help:
        parts += ["", paragraphs(command.help)]
    arguments = [param for param in command.params if isinstance(param, click.Argument)]
    if arguments:
        rows = []
        for argument in arguments:
            kind = argument.type
            accepts = (" \\| ".join(code(str(c)) for c in kind.choices)
                       if isinstance(kind, click.Choice) else kind.name)  # fmt: skip
            many = "one or more" if argument.nargs == -1 else "one"
            rows.append([code(argument.human_readable_name), accepts,
                         "yes" if argument.required else "no", many])  # fmt: skip
        parts += ["", table(["argument", "value", "required", "how many"], rows)]
    options = [p for p in command.get_params(ctx) if isinstance(p, click.Option) and not p.hidden]
    if options:
        rows = [
            [option_names(option), option_value(option, ctx), option_default(option, ctx),
             cell(option.help or "")]
            for option in options
        ]  # fmt: skip
        parts += ["", table(["option", "value", "default", "help"], rows)]
    if isinstance(command, click.Group):
        subs = [(sub, command.get_command(ctx, sub)) for sub in command.list_commands(ctx)]
        rows = [
            [f"[`{name} {sub}`](#{_anchor(f'{name} {sub}')})",
             cell(found.get_short_help_str(limit=200))]
            for sub, found in subs
            if found is not None and not found.hidden
        ]  # fmt: skip
        parts += ["", table(["command", "what it does"], rows)]
    return "\n".join(parts)


def _anchor(title: str) -> str:
    """The id the toc extension gives a heading of this text (letters, digits, dashes)."""
    return re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", title).strip().lower())


def cli_page() -> str:
    from sqlgate.surfaces.cli.app import main as cli

    sections = [command_section(*found) for found in walk(cli, ("sqlgate",), None)]
    return "\n".join(
        [
            _header("the click tree of `sqlgate`"),
            "# Command line",
            "",
            "Every command of `sqlgate`, with its usage, its help and every option. "
            "Server flags (`--db`, `--max-rows`, ...) are described once in "
            "[Server flags](flags.md); each command lists the ones it takes. "
            "How a command ends is in [Exit codes](exit-codes.md).",
            "",
            "\n\n".join(sections),
            "",
        ]
    )


# -- exit-codes.md --------------------------------------------------------------------------
def error_classes() -> list[type[errors.SqlgateError]]:
    found = [
        value
        for value in vars(errors).values()
        if isinstance(value, type) and issubclass(value, errors.SqlgateError)
    ]
    return sorted(found, key=lambda cls: cls.__name__)


_FIXED = {
    0: "",
    1: "any other exception",
    2: "click's usage errors",
    130: "`KeyboardInterrupt` (Ctrl-C)",
}


def exit_codes_page() -> str:
    rows = []
    for exit_code, meaning in sorted(errors.EXIT_CODES.items()):
        raised = [code(cls.__name__) for cls in error_classes() if cls.exit_code == exit_code]
        if _FIXED.get(exit_code):
            raised.append(md_text(_FIXED[exit_code]) if "`" in _FIXED[exit_code]
                          else _FIXED[exit_code])  # fmt: skip
        rows.append([str(exit_code), cell(meaning), ", ".join(raised) or "—"])
    return "\n".join(
        [
            _header("`sqlgate.errors.EXIT_CODES` and the error classes"),
            "# Exit codes",
            "",
            "Every command ends with one of these codes, and a failure with one line on stderr "
            "(`sqlgate: error: …`), never a traceback (except for `1`, a bug). The last column "
            "names the exceptions (in `sqlgate.errors`) that end a command with the code.",
            "",
            table(["code", "meaning", "raised as"], rows),
            "",
            "`serve` exits with 0 when the client closes its stdin. `serve` (stdio and HTTP), `ui` "
            "and `replicate` stop at once on Ctrl-C (130) or SIGTERM (0), a running query "
            "interrupted, after the clean-up of a normal end (audit rows written, the database "
            "closed, Litestream's last sync); a second Ctrl-C changes nothing.",
            "",
        ]
    )


# -- tools.md -------------------------------------------------------------------------------
def _dumped(model: Any) -> dict[str, Any]:
    """A listed item as the client received it (its JSON field names, no unset fields)."""
    dumped: dict[str, Any] = model.model_dump(by_alias=True, exclude_none=True)
    return dumped


async def _announced(group: str, folder: Path) -> dict[str, Any]:
    """What a server announcing only `group` lists: tools, resources and instructions."""
    from mcp import Client

    from sqlgate.service import Service
    from sqlgate.surfaces.mcp.server import build_server

    service = Service.open(Settings(db=folder / f"{group}.db", tools=(group,)))
    try:
        async with Client(build_server(service), mode="legacy") as client:
            tools = await client.list_tools()
            resources = await client.list_resources()
            templates = await client.list_resource_templates()
            instructions = client.instructions
    finally:
        service.close()
    return {
        "tools": [_dumped(tool) for tool in tools.tools],
        "resources": [_dumped(item) for item in resources.resources],
        "templates": [_dumped(item) for item in templates.resource_templates],
        "instructions": instructions or "",
    }


def announced() -> dict[str, dict[str, Any]]:
    import anyio

    async def every_group(folder: Path) -> dict[str, dict[str, Any]]:
        return {group: await _announced(group, folder) for group in TOOL_GROUPS}

    with tempfile.TemporaryDirectory(prefix="sqlgate-reference-") as folder:
        return anyio.run(every_group, Path(folder))


def type_text(schema: dict[str, Any], sep: str = " or ") -> tuple[str, bool]:
    """(the JSON type of a schema in words, whether null is accepted at the top): the kinds
    of a union joined by `sep`, those of an array's items or an object's values by `/`."""
    if "anyOf" in schema:
        options = [type_text(option) for option in schema["anyOf"]]
        named = [text for text, _ in options if text != "null"]
        return ", or ".join(named), any(text == "null" or null for text, null in options)
    given = schema.get("type", "any")
    kinds: list[str] = given if isinstance(given, list) else [given]
    words: list[str] = []
    for kind in kinds:
        if kind == "null":
            continue
        if kind == "array" and "items" in schema:
            words.append(f"array of {type_text(schema['items'], '/')[0]}")
        elif kind == "object" and isinstance(schema.get("additionalProperties"), dict):
            words.append(f"object of {type_text(schema['additionalProperties'], '/')[0]}")
        else:
            words.append(kind)
    null = "null" in kinds
    if sep == "/" and null:  # inside an array or object: null is one of the kinds
        words.append("null")
    return sep.join(words) or "null", null and sep != "/"


_BOUNDS = (
    ("minimum", "≥ {}"), ("maximum", "≤ {}"), ("exclusiveMinimum", "> {}"),
    ("exclusiveMaximum", "< {}"), ("minLength", "at least {} characters"),
    ("maxLength", "at most {} characters"), ("minItems", "at least {} items"),
    ("maxItems", "at most {} items"),
)  # fmt: skip


def bounds_text(schema: dict[str, Any]) -> str:
    words = [form.format(schema[key]) for key, form in _BOUNDS if key in schema]
    if "enum" in schema:
        words.append("one of " + ", ".join(code(json.dumps(value)) for value in schema["enum"]))
    return ", ".join(words) or "—"


def argument_rows(input_schema: dict[str, Any]) -> list[list[str]]:
    required = set(input_schema.get("required", []))
    rows = []
    for name, schema in input_schema.get("properties", {}).items():
        kind, null = type_text(schema)
        default = code(json.dumps(schema["default"])) if "default" in schema else "—"
        rows.append([
            code(name), kind + (" or null" if null else ""), "yes" if name in required else "no",
            default, bounds_text(schema), cell(schema.get("description", "")),
        ])  # fmt: skip
    return rows


def _hints(annotations: dict[str, Any]) -> str:
    return ", ".join(f"`{key}: {json.dumps(value)}`" for key, value in annotations.items())


def _details(title: str, value: Any) -> str:
    body = json.dumps(value, indent=2, ensure_ascii=False)
    indented = "\n".join("    " + line if line else "" for line in body.splitlines())
    return f'??? note "{title}"\n\n    ```json\n{indented}\n    ```'


def tool_section(tool: dict[str, Any]) -> str:
    parts = [f"### `{tool['name']}`", ""]
    if tool.get("title"):
        parts += [f"**{md_text(tool['title'])}**", ""]
    parts.append(paragraphs(tool.get("description", "")))
    if tool.get("annotations"):
        parts += ["", f"Annotations: {_hints(tool['annotations'])}"]
    rows = argument_rows(tool["inputSchema"])
    if rows:
        header = ["argument", "type", "required", "default", "bounds", "description"]
        parts += ["", table(header, rows)]
    else:
        parts += ["", "No arguments."]
    parts += ["", _details("inputSchema, as announced", tool["inputSchema"])]
    if "outputSchema" in tool:
        parts += ["", _details("outputSchema, as announced", tool["outputSchema"])]
    return "\n".join(parts)


def resource_section(resource: dict[str, Any]) -> str:
    uri = resource.get("uri") or resource.get("uriTemplate", "")
    parts = [f"### `{uri}`", ""]
    facts = [f"name {code(resource['name'])}"]
    if resource.get("mimeType"):
        facts.append(f"type {code(resource['mimeType'])}")
    parts.append(f"A resource ({', '.join(facts)}).")
    if resource.get("description"):
        parts += ["", paragraphs(resource["description"])]
    return "\n".join(parts)


_GROUP_TITLES = {"sql": "SQL", "memory": "Memory", "claims": "Claims"}


def tools_page(listing: dict[str, dict[str, Any]] | None = None) -> str:
    listing = announced() if listing is None else listing
    total = sum(len(found["tools"]) for found in listing.values())
    summary = [
        [f"`{group}`", ", ".join(f"[`{tool['name']}`](#{_anchor(tool['name'])})"
                                 for tool in found["tools"]),
         ", ".join(code(item.get("uri") or item.get("uriTemplate", ""))
                   for item in (*found["resources"], *found["templates"])) or "—"]
        for group, found in listing.items()
    ]  # fmt: skip
    sections = []
    for group, found in listing.items():
        parts = [
            f"## {_GROUP_TITLES.get(group, group)} (`--tools {group}`)",
            f"Instructions the server sends at connect when `{group}` is on:",
            "```text\n" + found["instructions"].rstrip("\n") + "\n```",
        ]
        parts += [tool_section(tool) for tool in found["tools"]]
        parts += [resource_section(item) for item in (*found["resources"], *found["templates"])]
        sections.append("\n\n".join(parts))
    return "\n".join(
        [
            _header("the tools a server announces (`tools/list`, `resources/list`)"),
            "# Tools",
            "",
            f"Every tool a sqlgate server can announce: {total} in {len(listing)} groups, chosen "
            "with [`--tools`](flags.md) (all of them by default). Each tool is shown as a client "
            "lists it: its description, its annotations (hints a client may use to decide what "
            "to ask the user first) and its arguments, from the `inputSchema` the server "
            "announces. What each tool answers is described in "
            "[Output format](output-format.md).",
            "",
            table(["group", "tools", "resources"], summary),
            "",
            "\n\n".join(sections),
            "",
        ]
    )


# -- the pages ------------------------------------------------------------------------------
PAGES: dict[str, Callable[[], str]] = {
    "tools.md": tools_page,
    "flags.md": flags_page,
    "cli.md": cli_page,
    "exit-codes.md": exit_codes_page,
}


def render() -> dict[Path, str]:
    """Every generated page: its path and its text."""
    return {REFERENCE / name: make() for name, make in PAGES.items()}


def stale_pages(pages: dict[Path, str]) -> list[Path]:
    return [
        path
        for path, text in pages.items()
        if not path.exists() or path.read_text(encoding="utf-8") != text
    ]


def _shown(path: Path) -> Path:
    return path.relative_to(ROOT) if path.is_relative_to(ROOT) else path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="write the manual's reference pages")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 naming each page that differs")  # fmt: skip
    args = parser.parse_args(argv)
    pages = render()
    stale = stale_pages(pages)
    if args.check:
        for path in stale:
            print(f"{_shown(path)} is stale: run {COMMAND}", file=sys.stderr)
        return 1 if stale else 0
    REFERENCE.mkdir(parents=True, exist_ok=True)
    for path in stale:
        path.write_text(pages[path], encoding="utf-8")
        print(f"wrote {_shown(path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
