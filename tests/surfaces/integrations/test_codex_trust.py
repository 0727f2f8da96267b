"""Whether Codex reads a project's .codex/config.toml (surfaces/integrations/codex_trust.py):
the [projects."PATH"] trust_level of the user's config, matched as Codex 0.171.0 matches it
(the folder, then the project root, then the main checkout's root), and the exact fix."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from sqlgate.surfaces.integrations.client_paths import Where
from sqlgate.surfaces.integrations.codex_trust import codex_trust, trust_fix
from sqlgate.surfaces.integrations.config_files import ConfigMalformed
from tests.surfaces.integrations.fake_home import fake_home


@pytest.fixture
def where(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Where:
    fake_home(tmp_path, monkeypatch)
    return Where.here()


def user_config(where: Where, text: str) -> Path:
    path = where.home / ".codex" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def trusts(path: Path, level: str = "trusted") -> str:
    return f'\n[projects."{path}"]\ntrust_level = "{level}"\n'


def git_repo(folder: Path) -> None:
    (folder / ".git").mkdir()
    (folder / ".git" / "HEAD").write_text("ref: refs/heads/main\n")


def in_sub(where: Where) -> Where:
    """Codex started in project/sub, whose git root is project/."""
    git_repo(where.cwd)
    (where.cwd / "sub").mkdir()
    return replace(where, cwd=where.cwd / "sub")


Layout = Callable[[Where], Where]


def _exact(where: Where) -> Where:
    user_config(where, 'model = "o3"\n' + trusts(where.cwd))
    return where


def _git_root(where: Where) -> Where:
    inner = in_sub(where)
    user_config(where, trusts(where.cwd))
    return inner


def _parent_without_git(where: Where) -> Where:
    (where.cwd / "sub").mkdir()
    user_config(where, trusts(where.cwd))
    return replace(where, cwd=where.cwd / "sub")


def _empty_git_folder(where: Where) -> Where:  # Codex 0.171.0: no HEAD, no repository
    (where.cwd / ".git").mkdir()
    (where.cwd / "sub").mkdir()
    user_config(where, trusts(where.cwd))
    return replace(where, cwd=where.cwd / "sub")


def _worktree(where: Where) -> Where:
    main = where.cwd.parent / "main"
    main.mkdir()
    git_repo(main)
    (main / ".git" / "worktrees" / "wt").mkdir(parents=True)
    (main / ".git" / "worktrees" / "wt" / "gitdir").write_text(f"{where.cwd}/.git\n")
    (main / ".git" / "worktrees" / "wt" / "commondir").write_text("../..\n")
    (where.cwd / ".git").write_text(f"gitdir: {main}/.git/worktrees/wt\n")
    user_config(where, trusts(main))
    return where


def _worktree_not_named_back(where: Where) -> Where:  # Codex checks the main one's record
    _worktree(where)
    (where.cwd.parent / "main" / ".git" / "worktrees" / "wt" / "gitdir").unlink()
    return where


def _untrusted(where: Where) -> Where:
    user_config(where, trusts(where.cwd, "untrusted"))
    return where


def _untrusted_folder_trusted_root(where: Where) -> Where:
    inner = in_sub(where)
    user_config(where, trusts(where.cwd) + trusts(inner.cwd, "untrusted"))
    return inner


def _no_user_config(where: Where) -> Where:
    return where


def _other_project(where: Where) -> Where:
    user_config(where, trusts(where.home / "elsewhere"))
    return where


def _trailing_slash(where: Where) -> Where:  # Codex compares the key as written
    user_config(where, f'\n[projects."{where.cwd}/"]\ntrust_level = "trusted"\n')
    return where


def _markers_disabled(where: Where) -> Where:  # project_root_markers = []: the git root
    inner = in_sub(where)  # still decides, as the repository root
    user_config(where, "project_root_markers = []\n" + trusts(where.cwd))
    return inner


def _other_marker(where: Where) -> Where:  # project_root_markers = [".hg"], no git
    (where.cwd / ".hg").mkdir()
    (where.cwd / "sub").mkdir()
    user_config(where, 'project_root_markers = [".hg"]\n' + trusts(where.cwd))
    return replace(where, cwd=where.cwd / "sub")


def _codex_home(where: Where) -> Where:
    codex_home = where.home / "ch"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(trusts(where.cwd), encoding="utf-8")
    return replace(where, env={**where.env, "CODEX_HOME": str(codex_home)})


def _codex_home_ignores_dot_codex(where: Where) -> Where:
    user_config(where, trusts(where.cwd))  # ~/.codex, which CODEX_HOME replaces
    (where.home / "ch").mkdir()
    return replace(where, env={**where.env, "CODEX_HOME": str(where.home / "ch")})


# (layout, trusted, the key that decided, the key the fix names)
CASES = [
    pytest.param(_exact, True, "cwd", "cwd", id="trusted-exact-path"),
    pytest.param(_git_root, True, "root", "root", id="trusted-git-root-from-subfolder"),
    pytest.param(_parent_without_git, False, None, "cwd", id="trusted-parent-without-git"),
    pytest.param(_empty_git_folder, False, None, "cwd", id="empty-git-folder-is-no-root"),
    pytest.param(_worktree, True, "main", "main", id="worktree-main-checkout-trusted"),
    pytest.param(_worktree_not_named_back, False, None, "cwd", id="worktree-not-named-back"),
    pytest.param(_untrusted, False, "cwd", "cwd", id="marked-untrusted"),
    pytest.param(_untrusted_folder_trusted_root, False, "cwd", "root",
                 id="untrusted-folder-beats-trusted-root"),
    pytest.param(_no_user_config, False, None, "cwd", id="no-user-config"),
    pytest.param(_other_project, False, None, "cwd", id="another-project-trusted"),
    pytest.param(_trailing_slash, False, None, "cwd", id="trailing-slash-is-another-key"),
    pytest.param(_markers_disabled, True, "root", "root", id="root-markers-off-git-root-still"),
    pytest.param(_other_marker, True, "root", "root", id="another-root-marker"),
    pytest.param(_codex_home, True, "cwd", "cwd", id="codex-home-set"),
    pytest.param(_codex_home_ignores_dot_codex, False, None, "cwd",
                 id="codex-home-set-trust-in-dot-codex"),
]  # fmt: skip


def _key(name: str | None, where: Where, original: Where) -> str | None:
    return {
        None: None,
        "cwd": str(where.cwd),
        "root": str(original.cwd),
        "main": str(original.cwd.parent / "main"),
    }[name]


@pytest.mark.parametrize(("layout", "trusted", "decided", "suggested"), CASES)
def test_codex_trusts_a_project_as_codex_0_171_does(
    where: Where, layout: Layout, trusted: bool, decided: str | None, suggested: str
) -> None:
    chosen = layout(where)
    trust = codex_trust(chosen)
    assert trust.applies
    assert trust.trusted is trusted
    assert trust.key == _key(decided, chosen, where)
    assert trust.suggested == _key(suggested, chosen, where)
    fix = trust_fix(trust)
    assert (fix is None) is trusted
    if fix is not None:
        assert str(trust.user_file) in fix
        assert "\n" not in fix


@pytest.mark.parametrize(
    "layout",
    [_parent_without_git, _no_user_config, _other_project, _trailing_slash,
     _codex_home_ignores_dot_codex],
    ids=["parent", "no-user-config", "other-project", "trailing-slash", "codex-home"],
)  # fmt: skip
def test_the_printed_command_trusts_the_project(where: Where, layout: Layout) -> None:
    chosen = layout(where)
    fix = trust_fix(codex_trust(chosen))
    assert fix is not None
    command = fix.split("`")[1]  # the first command the fix quotes
    subprocess.run(["bash", "-c", command], check=True, env=dict(chosen.env))
    assert codex_trust(chosen).trusted


def test_a_project_marked_untrusted_is_changed_not_added(where: Where) -> None:
    fix = trust_fix(codex_trust(_untrusted(where)))
    assert fix is not None
    assert 'trust_level = "untrusted"' in fix
    assert 'to trust_level = "trusted"' in fix
    assert ">>" not in fix  # a second [projects."..."] table would break the file


def test_the_project_file_that_is_the_user_file_is_no_project_layer(
    where: Where, monkeypatch: pytest.MonkeyPatch
) -> None:
    at_home = replace(where, cwd=where.home)  # ./.codex/config.toml is ~/.codex/config.toml
    trust = codex_trust(at_home)
    assert not trust.applies
    assert trust_fix(trust) is None


@pytest.mark.parametrize(
    ("text", "says"),
    [
        pytest.param("[projects\n", "not valid TOML", id="malformed-toml"),
        pytest.param('[projects."/x"]\ntrust_level = "Trusted"\n', '"trusted" or "untrusted"',
                     id="unknown-trust-level"),
        pytest.param('projects = "all"\n', "projects", id="projects-not-a-table"),
    ],
)  # fmt: skip
def test_a_user_config_codex_cannot_read_is_a_clear_message(
    where: Where, text: str, says: str
) -> None:
    path = user_config(where, text)
    with pytest.raises(ConfigMalformed) as caught:
        codex_trust(where)
    assert str(path) in str(caught.value)
    assert says in str(caught.value)


def test_on_windows_keys_match_case_blind_and_the_fix_is_the_lines_by_hand(where: Where) -> None:
    user_config(where, trusts(Path(str(where.cwd).upper())))
    assert codex_trust(replace(where, platform="win32")).trusted
    assert not codex_trust(where).trusted  # elsewhere, case counts
    user_config(where, "")
    fix = trust_fix(codex_trust(replace(where, platform="win32")))
    assert fix is not None
    assert fix.startswith(f'add the two lines `[projects."{where.cwd}"]` and ')
    assert "printf" not in fix


def test_a_file_the_printed_command_would_break_gets_the_lines_by_hand(where: Where) -> None:
    user_config(where, 'projects = { "/elsewhere" = { trust_level = "trusted" } }\n')
    fix = trust_fix(codex_trust(where))
    assert fix is not None
    assert "printf" not in fix
    assert "add the two lines" in fix
