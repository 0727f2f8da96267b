"""`sqlgate uninstall` removes every folder `sqlgate install` created, and only those (issue 31
§5): installing into an empty HOME and uninstalling again, in any combination and order of
clients and scopes, gives back the HOME tree exactly (the same folders, byte-identical
files); a folder that was there before install stays, and so does one that holds anything
else by then."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlgate.config import FLAGS
from sqlgate.surfaces.cli.app import main
from sqlgate.surfaces.integrations import install_records

TARGETS = [
    ("claude-code", "user"), ("claude-code", "project"), ("claude-desktop", None),
    ("cursor", "user"), ("cursor", "project"), ("vscode", "user"), ("vscode", "project"),
    ("codex", "user"), ("codex", "project"),
]  # fmt: skip
Target = tuple[str, "str | None"]

# folders people may have before they install anything (relative to HOME)
BEFORE = [".config", ".config/Code", ".codex", ".cursor", "project/.vscode", ".claude"]


@contextmanager
def empty_home() -> Iterator[Path]:
    """A fresh HOME (holding the project folder, the cwd) with no XDG_CONFIG_HOME, so that the
    desktop apps' folder is HOME/.config; sqlgate's own data folder is outside it."""
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as patch:
        home = Path(tmp) / "home"
        (home / "project").mkdir(parents=True)
        patch.setenv("HOME", str(home))
        for name in ("XDG_CONFIG_HOME", "CODEX_HOME", "CLAUDE_PROJECT_DIR", "APPDATA"):
            patch.delenv(name, raising=False)
        for flag in FLAGS:
            patch.delenv(flag.env_var, raising=False)
        patch.chdir(home / "project")
        patch.setattr(install_records, "data_dir", lambda: Path(tmp) / "sqlgate-data")
        yield home


def tree(home: Path) -> tuple[frozenset[str], dict[str, bytes]]:
    """Every folder under `home`, and every file with its bytes."""
    folders, files = set(), {}
    for root, dirs, names in os.walk(home):
        for name in dirs:
            folders.add(os.path.relpath(os.path.join(root, name), home))
        for name in names:
            path = os.path.join(root, name)
            files[os.path.relpath(path, home)] = Path(path).read_bytes()
    return frozenset(folders), files


def run(verb: str, target: Target, home: Path) -> None:
    client, scope = target
    scoped = ["--scope", scope] if scope else []
    db = ["--db", str(home.parent / "agent.db")] if scope != "project" else []
    extra = ["--capture"] if verb == "install" and client == "claude-code" else []
    args = [verb, client, *scoped, *(db if verb == "install" else []), *extra]
    result = CliRunner().invoke(main, args, prog_name="sqlgate")
    assert result.exit_code == 0, (args, result.output, result.stderr)


def lay_out_before(home: Path, folders: list[str], with_files: bool) -> None:
    for folder in folders:
        (home / folder).mkdir(parents=True, exist_ok=True)
        if with_files:
            (home / folder / "mine.txt").write_text("keep me\n")


ISSUE = [
    pytest.param([("claude-desktop", None), ("vscode", "user")],
                 [("claude-desktop", None), ("vscode", "user")], id="desktop-vscode-same-order"),
    pytest.param([("claude-desktop", None), ("vscode", "user")],
                 [("vscode", "user"), ("claude-desktop", None)], id="desktop-vscode-reversed"),
    pytest.param([("vscode", "user"), ("claude-desktop", None)],
                 [("vscode", "user"), ("claude-desktop", None)], id="vscode-desktop-same-order"),
    pytest.param(TARGETS, list(reversed(TARGETS)), id="every-client-reversed"),
    pytest.param(TARGETS, TARGETS, id="every-client-same-order"),
]  # fmt: skip


@pytest.mark.parametrize(("installs", "uninstalls"), ISSUE)
@pytest.mark.parametrize("before", [[], BEFORE], ids=["empty-home", "folders-there-before"])
def test_install_then_uninstall_leaves_the_home_tree_as_it_was(
    installs: list[Target], uninstalls: list[Target], before: list[str]
) -> None:
    with empty_home() as home:
        lay_out_before(home, before, with_files=False)
        was = tree(home)
        for target in installs:
            run("install", target, home)
        assert tree(home) != was
        for target in uninstalls:
            run("uninstall", target, home)
        assert tree(home) == was


def test_a_created_folder_that_holds_something_else_stays() -> None:
    with empty_home() as home:
        run("install", ("vscode", "user"), home)
        mine = home / ".config" / "Code" / "User" / "settings.json"
        mine.write_text("{}\n")
        run("uninstall", ("vscode", "user"), home)
        assert mine.read_text() == "{}\n"
        assert not (home / ".config" / "Code" / "User" / "mcp.json").exists()


OPS = st.lists(st.tuples(st.sampled_from(["install", "uninstall"]), st.sampled_from(TARGETS)),
               max_size=8)  # fmt: skip


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    installs=st.lists(st.sampled_from(TARGETS), unique=True),
    ops=OPS,
    finish=st.permutations(TARGETS),
    before=st.lists(st.sampled_from(BEFORE), unique=True),
    with_files=st.booleans(),
)
def test_any_order_of_installs_and_uninstalls_ends_with_the_home_tree_as_it_was(
    installs: list[Target],
    ops: list[tuple[str, Target]],
    finish: list[Target],
    before: list[str],
    with_files: bool,
) -> None:
    with empty_home() as home:
        lay_out_before(home, before, with_files)
        was = tree(home)
        for verb, target in [*(("install", target) for target in installs), *ops]:
            run(verb, target, home)
        for target in finish:  # everything uninstalled, in some order
            run("uninstall", target, home)
        assert tree(home) == was
