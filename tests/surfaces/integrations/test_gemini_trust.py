"""Gemini CLI's folder trust (surfaces/integrations/gemini_trust.py): the rules of
~/.gemini/trustedFolders.json as Gemini CLI 0.61 applies them, the variables that decide it
first, and a file Gemini itself refuses (named, never a crash)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sqlgate.surfaces.integrations.client_paths import Where
from sqlgate.surfaces.integrations.gemini_trust import (
    folder_trust,
    trust_warning,
    trusted_folders_path,
)

Rules = Callable[[Path], dict[str, str]]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """tmp_path with home/, work/project/ (the folder checked), work/project/sub/."""
    (tmp_path / "home").mkdir()
    (tmp_path / "work" / "project" / "sub").mkdir(parents=True)
    return tmp_path


def where_in(root: Path, env: dict[str, str] | None = None) -> Where:
    base = {"GEMINI_CLI_SYSTEM_SETTINGS_PATH": str(root / "none.json")}
    return Where("linux", root / "home", root / "work" / "project", {**base, **(env or {})})


def write_rules(root: Path, text: str) -> Path:
    path = root / "home" / ".gemini" / "trustedFolders.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


RULES: list[object] = [
    pytest.param(lambda r: {}, False, id="no-rule"),
    pytest.param(lambda r: {str(r / "work/project"): "TRUST_FOLDER"}, True, id="trusted-exactly"),
    pytest.param(lambda r: {str(r / "work"): "TRUST_FOLDER"}, True, id="a-trusted-folder-above"),
    pytest.param(lambda r: {str(r / "work/project"): "TRUST_PARENT"}, True,
                 id="trust-parent-of-itself"),
    pytest.param(lambda r: {str(r / "work/project/sub"): "TRUST_PARENT"}, True,
                 id="trust-parent-of-a-subfolder"),
    pytest.param(lambda r: {str(r / "work/project/sub"): "TRUST_FOLDER"}, False,
                 id="only-a-subfolder-trusted"),
    pytest.param(lambda r: {str(r / "work/proj"): "TRUST_FOLDER"}, False,
                 id="a-name-prefix-is-not-a-parent"),
    pytest.param(lambda r: {str(r / "work/project"): "DO_NOT_TRUST"}, False, id="do-not-trust"),
    pytest.param(lambda r: {str(r / "work"): "TRUST_FOLDER",
                            str(r / "work/project"): "DO_NOT_TRUST"}, False,
                 id="the-longest-rule-wins-distrust"),
    pytest.param(lambda r: {str(r / "work"): "DO_NOT_TRUST",
                            str(r / "work/project"): "TRUST_FOLDER"}, True,
                 id="the-longest-rule-wins-trust"),
    pytest.param(lambda r: {str(r / "work/project") + "/": "TRUST_FOLDER"}, True,
                 id="trailing-slash"),
]  # fmt: skip


@pytest.mark.parametrize(("rules", "trusted"), RULES)
def test_the_rules_of_trusted_folders(root: Path, rules: Rules, trusted: bool) -> None:
    write_rules(root, json.dumps(rules(root), indent=2))
    found = folder_trust(where_in(root))
    assert found.trusted is trusted, found
    if not trusted:
        assert found.fix is not None
        assert str(root / "work" / "project") in found.fix


def test_no_trust_file_is_untrusted_with_the_exact_edit(root: Path) -> None:
    found = folder_trust(where_in(root))
    assert found.trusted is False
    assert found.fix is not None
    folder = json.dumps(str(root / "work" / "project"))
    assert f'{{{folder}: "TRUST_FOLDER"}}' in found.fix
    assert str(root / "home" / ".gemini" / "trustedFolders.json") in found.fix
    assert '"Trust folder"' in found.fix  # Gemini's own dialog, or /permissions


def test_a_distrusting_rule_is_named_in_the_fix(root: Path) -> None:
    rule = str(root / "work")
    write_rules(root, json.dumps({rule: "DO_NOT_TRUST"}))
    found = folder_trust(where_in(root))
    assert found.trusted is False
    assert found.fix is not None
    assert f'{json.dumps(rule)}: "DO_NOT_TRUST"' in found.fix
    assert "TRUST_FOLDER" in found.fix


def test_comments_in_the_trust_file_are_read(root: Path) -> None:
    """Gemini strips comments before parsing (strip-json-comments)."""
    folder = json.dumps(str(root / "work" / "project"))
    write_rules(root, f'// mine\n{{\n  /* here */ {folder}: "TRUST_FOLDER"\n}}\n')
    assert folder_trust(where_in(root)).trusted is True


@pytest.mark.parametrize(
    ("text", "phrase"),
    [
        pytest.param("{not json", "is not valid JSON", id="syntax"),
        pytest.param("[]", "not an object", id="array"),
        pytest.param('{"/x": "YES"}', 'invalid trust level "YES"', id="bad-level"),
        pytest.param('{"/x": 1}', "invalid trust level 1", id="level-not-text"),
    ],
)
def test_a_trust_file_gemini_refuses_is_a_clear_message_not_a_crash(
    root: Path, text: str, phrase: str
) -> None:
    path = write_rules(root, text)
    found = folder_trust(where_in(root))
    assert found.trusted is None
    assert phrase in found.detail
    assert str(path) in found.detail
    assert found.fix is not None
    assert str(path) in found.fix


def test_a_trust_file_that_is_not_utf8_is_a_clear_message(root: Path) -> None:
    path = write_rules(root, "")
    path.write_bytes(b"\xff\xfe{}")
    found = folder_trust(where_in(root))
    assert found.trusted is None
    assert str(path) in found.detail


@pytest.mark.parametrize(
    ("env", "rule", "trusted"),
    [
        pytest.param({"GEMINI_CLI_TRUST_WORKSPACE": "true"}, None, True, id="trust-variable"),
        pytest.param({"GEMINI_CLI_TRUST_WORKSPACE": "false"}, "TRUST_FOLDER", False,
                     id="distrust-variable-beats-the-file"),
        pytest.param({"GEMINI_RESTRICTED_MODE": "true"}, "TRUST_FOLDER", False,
                     id="restricted-mode"),
        pytest.param({"GEMINI_CLI_TRUST_WORKSPACE": "1"}, None, False,
                     id="only-the-word-true-counts"),
    ],
)  # fmt: skip
def test_variables_decide_before_the_file(
    root: Path, env: dict[str, str], rule: str | None, trusted: bool
) -> None:
    if rule:
        write_rules(root, json.dumps({str(root / "work/project"): rule}))
    found = folder_trust(where_in(root, env))
    assert found.trusted is trusted
    if not trusted and rule:
        assert found.fix is not None
        assert next(iter(env)) in found.fix


@pytest.mark.parametrize(
    "where_off",
    [pytest.param("user", id="user-settings"), pytest.param("system", id="system-settings")],
)
def test_folder_trust_turned_off_trusts_every_folder(root: Path, where_off: str) -> None:
    off = '{\n  // mine\n  "security": {"folderTrust": {"enabled": false}}\n}\n'
    path = root / "home/.gemini/settings.json" if where_off == "user" else root / "none.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(off)
    found = folder_trust(where_in(root))
    assert found.trusted is True
    assert "folder trust is off" in found.detail


def test_the_trust_file_moves_with_its_variables(root: Path) -> None:
    elsewhere = root / "trust.json"
    elsewhere.write_text(json.dumps({str(root / "work/project"): "TRUST_FOLDER"}))
    moved = where_in(root, {"GEMINI_CLI_TRUSTED_FOLDERS_PATH": str(elsewhere)})
    assert trusted_folders_path(moved) == elsewhere
    assert folder_trust(moved).trusted is True
    home = where_in(root, {"GEMINI_CLI_HOME": str(root / "gh")})
    assert trusted_folders_path(home) == root / "gh" / ".gemini" / "trustedFolders.json"


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
def test_a_rule_matches_through_a_symlinked_folder(root: Path) -> None:
    link = root / "link"
    link.symlink_to(root / "work" / "project")
    write_rules(root, json.dumps({str(root / "work/project"): "TRUST_FOLDER"}))
    where = Where("linux", root / "home", link, {"GEMINI_CLI_SYSTEM_SETTINGS_PATH": "/none"})
    assert folder_trust(where).trusted is True


@pytest.mark.parametrize(
    ("scope", "rule", "phrase"),
    [
        pytest.param("project", None, "this project's servers", id="project-untrusted"),
        pytest.param("user", None, "user-scope ones too", id="user-untrusted"),
        pytest.param("project", "TRUST_FOLDER", None, id="project-trusted"),
        pytest.param("user", "TRUST_FOLDER", None, id="user-trusted"),
    ],
)  # fmt: skip
def test_install_warns_only_when_the_folder_is_not_trusted(
    root: Path, scope: str, rule: str | None, phrase: str | None
) -> None:
    if rule:
        write_rules(root, json.dumps({str(root / "work/project"): rule}))
    said = trust_warning(scope, where_in(root))
    if phrase is None:
        assert said is None
    else:
        assert said is not None
        assert phrase in said
        assert str(root / "work" / "project") in said


_SEGMENTS = st.lists(st.text("abcxyz", min_size=1, max_size=3), min_size=1, max_size=4)


@settings(max_examples=200, deadline=None)
@given(folder=_SEGMENTS, rule=_SEGMENTS, level=st.sampled_from(["TRUST_FOLDER", "TRUST_PARENT"]))
def test_a_trusting_rule_trusts_exactly_the_folders_under_what_it_covers(
    tmp_path_factory: pytest.TempPathFactory, folder: list[str], rule: list[str], level: str
) -> None:
    """Invariant: one trusting rule trusts a folder iff the folder is the rule's folder (its
    parent for TRUST_PARENT) or under it, segment by segment (never by a name's prefix)."""
    root = tmp_path_factory.getbasetemp() / "nowhere"  # nothing exists: no symlinks to follow
    rules = root / "rules.json"
    rules.parent.mkdir(exist_ok=True)
    rules.write_text(json.dumps({str(root.joinpath(*rule)): level}))
    env = {"GEMINI_CLI_TRUSTED_FOLDERS_PATH": str(rules), "GEMINI_CLI_SYSTEM_SETTINGS_PATH": "/-"}
    where = Where("linux", root / "home", root.joinpath(*folder), env)
    covered = rule[:-1] if level == "TRUST_PARENT" else rule
    assert folder_trust(where).trusted is (folder[: len(covered)] == covered)
