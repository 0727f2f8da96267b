"""Write the manual's reference pages from the code, so they cannot drift from it.

    python scripts/gen_reference.py           write docs/reference/{tools,flags,cli,exit-codes}.md
    python scripts/gen_reference.py --check   write nothing; exit 1 naming each stale page

    page            made from
    tools.md        the tools, resources and instructions a server announces, one server per
                    --tools group, listed by an in-memory MCP client (as `sqlgate tools` does)
    flags.md        the options of `sqlgate serve` (`sqlgate.config.FLAGS`, the defaults of
                    `Settings`, and the HTTP options), read from the click command
    cli.md          the click tree of `sqlgate` (lazy commands loaded one by one)
    exit-codes.md   `sqlgate.errors.EXIT_CODES` and the error classes' `exit_code`

The output depends on the code only: no date, no path of this machine, no terminal width.
Markdown helpers are in reference_markdown.py, the tools page in reference_tools.py.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import click

sys.path.insert(0, str(Path(__file__).resolve().parent))
from reference_markdown import COMMAND, anchor, cell, code, header, md_text, paragraphs, table
from reference_tools import announced, tools_page

from sqlgate import errors
from sqlgate.config import FLAGS, Flag, Settings

__all__ = ["PAGES", "announced", "main", "render", "stale_pages"]

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "docs" / "reference"


# -- flags.md -------------------------------------------------------------------------------
_DEFAULTS = {field.name: field.default for field in dataclasses.fields(Settings)}
_SETTINGS = {flag.name: flag for flag in FLAGS}


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


def serve_options() -> Iterator[tuple[click.Option, Flag | None]]:
    """Every option of `sqlgate serve`, in its `--help` order, with its setting (None for
    the options of serve alone: the transport and HTTP ones)."""
    from sqlgate.surfaces.cli.app import main

    serve = main.get_command(click.Context(main), "serve")
    assert serve is not None
    ctx = click.Context(serve, info_name="serve")
    for param in serve.get_params(ctx):
        if isinstance(param, click.Option) and not param.hidden and "--help" not in param.opts:
            yield param, _SETTINGS.get(str(param.name))


def serve_row(param: click.Option) -> list[str]:
    """A row of serve's own options: its names, variable, default and help."""
    ctx = click.Context(click.Command("serve"), info_name="serve")
    env = code(str(param.envvar)) if param.envvar else (
        "none (on purpose: an inherited variable must not turn the token off)"
        if param.name == "insecure_no_token" else "none"
    )  # fmt: skip
    text = re.sub(r"\s*\[env [A-Z_]+\]$", "", param.help or "")
    return [option_names(param), env, option_default(param, ctx), cell(text)]


def flags_page() -> str:
    settings_rows, serve_rows = [], []
    for param, flag in serve_options():
        if flag is not None:
            settings_rows.append(
                [flag_options(flag), code(flag.env_var), default_text(flag), cell(flag.help)]
            )
        else:
            serve_rows.append(serve_row(param))
    return "\n".join(
        [
            header("the options of `sqlgate serve` (`sqlgate.config.FLAGS` and its HTTP options)"),
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
            table(["flag", "environment variable", "default", "what it does"], settings_rows),
            "",
            "## Transport and HTTP options",
            "",
            "These are `sqlgate serve`'s alone (see [`serve`](cli.md#sqlgate-serve) and "
            "[a team server](../how-to/team-server.md)).",
            "",
            table(["flag", "environment variable", "default", "what it does"], serve_rows),
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
    metavar = param.make_metavar(ctx)
    if metavar.startswith("[") and metavar.endswith("]") and "|" in metavar:  # `[rows|file]`
        return " \\| ".join(code(choice) for choice in metavar[1:-1].split("|"))
    return code(metavar)


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
    options = [p for p in command.params if isinstance(p, click.Option) and not p.hidden]
    help_names = command.get_help_option_names(ctx) if command.add_help_option else []
    if help_names:  # built here, not get_params: click caches the help option from the first
        # context that asked, and a context without the root's parent knows no `-h`
        options.append(click.Option(help_names, is_flag=True, help="Show this message and exit."))
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
            [f"[`{name} {sub}`](#{anchor(f'{name} {sub}')})",
             cell(found.get_short_help_str(limit=200))]
            for sub, found in subs
            if found is not None and not found.hidden
        ]  # fmt: skip
        parts += ["", table(["command", "what it does"], rows)]
    return "\n".join(parts)


def cli_page() -> str:
    from sqlgate.surfaces.cli.app import main as cli

    sections = [command_section(*found) for found in walk(cli, ("sqlgate",), None)]
    return "\n".join(
        [
            header("the click tree of `sqlgate`"),
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
            header("`sqlgate.errors.EXIT_CODES` and the error classes"),
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
