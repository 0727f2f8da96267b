"""The manual's generated reference pages (scripts/gen_reference.py) are up to date, and say
what the code does: every tool and argument, every flag and variable, every command and
option, every exit code."""

from __future__ import annotations

import importlib.util
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import click
import pytest

from sqlgate import errors
from sqlgate.config import FLAGS, TOOL_GROUPS

REPO = Path(__file__).resolve().parents[2]
REFERENCE = REPO / "docs" / "reference"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


gen = _load("gen_reference")


@pytest.fixture(scope="module")
def pages() -> dict[Path, str]:
    rendered: dict[Path, str] = gen.render()
    return rendered


@pytest.fixture(scope="module")
def listing() -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = gen.announced()
    return found


def page(name: str) -> str:
    return (REFERENCE / name).read_text(encoding="utf-8")


def sections(text: str) -> dict[str, str]:
    """Each heading's code-span title and the text up to the next heading."""
    found = {}
    parts = re.split(r"^#{2,4} `([^`]+)`\n", text, flags=re.M)
    for title, body in zip(parts[1::2], parts[2::2], strict=True):
        found[title] = body
    return found


# -- up to date -----------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(gen.PAGES))
def test_the_committed_page_is_what_the_generator_writes(name: str, pages: dict[Path, str]) -> None:
    path = REFERENCE / name
    assert path.exists(), f"{path.name} is missing: run python scripts/gen_reference.py"
    assert page(name) == pages[path], (
        f"docs/reference/{name} is stale: run python scripts/gen_reference.py"
    )


def test_each_page_says_it_is_generated_and_how(pages: dict[Path, str]) -> None:
    for text in pages.values():
        first = text.splitlines()[0]
        assert first.startswith("<!-- generated ")
        assert first.endswith(" -->")
        assert "`python scripts/gen_reference.py`" in first


def test_check_names_a_stale_page_and_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(gen, "REFERENCE", tmp_path)
    monkeypatch.setattr(gen, "PAGES", {"flags.md": gen.flags_page, "exit-codes.md":
                                       gen.exit_codes_page})  # fmt: skip
    assert gen.main([]) == 0
    assert gen.main(["--check"]) == 0
    (tmp_path / "flags.md").write_text("edited by hand\n", encoding="utf-8")
    capsys.readouterr()
    assert gen.main(["--check"]) == 1
    stale = capsys.readouterr().err.splitlines()
    assert len(stale) == 1
    assert "flags.md is stale: run python scripts/gen_reference.py" in stale[0]
    assert (tmp_path / "flags.md").read_text(encoding="utf-8") == "edited by hand\n"


def test_the_pages_hold_nothing_of_this_machine(pages: dict[Path, str]) -> None:
    for path, text in pages.items():
        for found in (str(Path.home()), str(REPO), "sqlgate-reference-", "/tmp/"):
            assert found not in text, (path.name, found)


def test_the_cli_page_does_not_depend_on_the_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "37")
    assert gen.cli_page() == page("cli.md")


# -- what they say --------------------------------------------------------------------------
def test_every_flag_is_in_the_flags_page_with_its_variable_and_default() -> None:
    rows = {line.split(" | ")[0].removeprefix("| "): line for line in page("flags.md").splitlines()
            if line.startswith("| `")}  # fmt: skip
    for flag in FLAGS:
        option = "`--audit` / `--no-audit`" if flag.name == "audit" else f"`{flag.option}`"
        assert option in rows, option
        assert f"| `{flag.env_var}` |" in rows[option]
        assert f"| {gen.default_text(flag)} |" in rows[option]


def _serve_help() -> list[tuple[list[str], str | None]]:
    """Each option `sqlgate serve --help` shows: its names and the variable its help names."""
    from sqlgate.surfaces.cli.app import main

    serve = main.get_command(click.Context(main), "serve")
    assert serve is not None
    ctx = click.Context(serve, info_name="serve")
    shown = []
    for param in serve.get_params(ctx):
        record = param.get_help_record(ctx)
        if record is None or "--help" in record[0]:
            continue
        names = re.findall(r"--[a-z][a-z-]*", record[0])
        env = re.search(r"\[env (SQLGATE_[A-Z_]+)", record[1])
        shown.append((names, env.group(1) if env else None))
    return shown


def test_every_option_of_serve_help_is_in_the_flags_page_with_its_variable() -> None:
    rows = [line for line in page("flags.md").splitlines() if line.startswith("| `")]
    shown = _serve_help()
    assert {"--oauth-issuer", "--insecure-no-token", "--transport"} <= {
        name for names, _ in shown for name in names
    }
    for names, env in shown:
        (row,) = [r for r in rows if r.split(" | ")[0].split(" ")[1] == f"`{names[0]}`"]
        for name in names:
            assert f"`{name}`" in row.split(" | ")[0], (name, row)
        if env is not None:
            assert row.split(" | ")[1] == f"`{env}`", (names, row)
        else:
            assert row.split(" | ")[1].startswith("none"), (names, row)
    assert len(rows) == len(shown)


def test_a_default_is_shown_as_settings_has_it() -> None:
    by_name = {flag.name: flag for flag in FLAGS}
    assert gen.default_text(by_name["max_rows"]) == "`1000`"
    assert gen.default_text(by_name["query_timeout"]) == "`10`"
    assert gen.default_text(by_name["tools"]) == "`sql,memory,claims`"
    assert gen.default_text(by_name["audit"]) == "on"
    assert gen.default_text(by_name["replicate"]) == "none"


def _commands(
    command: click.Command, path: tuple[str, ...] = ("sqlgate",)
) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    yield path, command
    if isinstance(command, click.Group):
        ctx = click.Context(command)
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None
            yield from _commands(sub, (*path, name))


def test_every_command_and_every_option_is_in_the_cli_page() -> None:
    from sqlgate.surfaces.cli.app import main

    by_title = sections(page("cli.md"))
    commands = dict(_commands(main))
    assert set(by_title) == {" ".join(path) for path in commands}
    for path, command in commands.items():
        body = by_title[" ".join(path)]
        assert f"```text\n{' '.join(path)} " in body  # its usage line
        for param in command.params:
            if isinstance(param, click.Option):
                for name in (*param.opts, *param.secondary_opts):
                    assert f"`{name}`" in body, (path, name)
            elif isinstance(param, click.Argument):
                assert f"`{param.human_readable_name}`" in body, (path, param.name)


def test_every_group_lists_its_commands() -> None:
    by_title = sections(page("cli.md"))
    for title in ("sqlgate", "sqlgate claims", "sqlgate snapshots", "sqlgate import"):
        subs = [other for other in by_title if other.startswith(title + " ")
                and other.count(" ") == title.count(" ") + 1]  # fmt: skip
        assert subs, title
        for sub in subs:
            assert f"[`{sub}`](#{sub.replace(' ', '-')})" in by_title[title], sub


def test_every_tool_and_argument_is_in_the_tools_page(listing: dict[str, dict[str, Any]]) -> None:
    text = page("tools.md")
    by_title = sections(text)
    assert set(listing) == set(TOOL_GROUPS)
    for group, found in listing.items():
        assert f"(`--tools {group}`)" in text
        for tool in found["tools"]:
            body = by_title[tool["name"]]
            for argument in tool["inputSchema"].get("properties", {}):
                assert f"| `{argument}` |" in body, (tool["name"], argument)
            required = tool["inputSchema"].get("required", [])
            for argument in required:
                assert re.search(rf"\| `{argument}` \| [^|]+ \| yes \|", body), argument
        for resource in found["resources"]:
            assert resource["uri"] in by_title


def test_the_argument_table_shows_types_defaults_and_bounds() -> None:
    body = sections(page("tools.md"))["get_resume_context"]
    assert "| `max_events` | integer | no | `50` | ≥ 1, ≤ 1000 |" in body
    row = "| `exclude_kinds` | array of string, or string | no | — | at most 50 items |"
    assert row in body


def test_every_exit_code_is_in_the_exit_codes_page() -> None:
    row = re.compile(r"^\| (\d+) \| (.+?) \| (.+) \|$", re.M)
    rows = {int(found.group(1)): found.group(2) for found in row.finditer(page("exit-codes.md"))}
    assert set(rows) == set(errors.EXIT_CODES)
    for cls in gen.error_classes():
        assert cls.exit_code in rows, cls.__name__
        line = next(line for line in page("exit-codes.md").splitlines()
                    if line.startswith(f"| {cls.exit_code} |"))  # fmt: skip
        assert f"`{cls.__name__}`" in line
