"""The manual builds, and the README stays a front door (issue 21).

- `mkdocs build --strict` passes: no broken link, no missing anchor, no page left out of
  the navigation.
- Every page the navigation names exists, and every page under docs/ is in it.
- The README is at most 300 lines, and connects Claude Code within its first 60.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = (ROOT / "README.md").read_text(encoding="utf-8")


def nav() -> list[str]:
    """The pages mkdocs.yml's `nav` names (`- Title: page.md`, at any depth)."""
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    section = config.split("\nnav:\n", 1)[1]
    return re.findall(r"^\s+- [^:\n]+: ([\w/.-]+\.md)$", section, re.M)


def test_the_nav_is_read() -> None:
    assert {"index.md", "tutorial.md", "how-to/undo-and-restore.md"} <= set(nav())


def test_the_manual_builds_strictly(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_page_of_the_nav_exists() -> None:
    missing = [page for page in nav() if not (DOCS / page).is_file()]
    assert missing == []


def test_every_page_under_docs_is_in_the_nav() -> None:
    pages = {path.relative_to(DOCS).as_posix() for path in DOCS.rglob("*.md")}
    assert sorted(pages - set(nav())) == []


def test_the_readme_is_at_most_300_lines() -> None:
    assert len(README.splitlines()) <= 300


def test_the_readme_connects_claude_code_within_its_first_60_lines() -> None:
    first = "\n".join(README.splitlines()[:60])
    assert "sqlgate install claude-code\n" in first


def test_the_readme_carries_the_registry_name() -> None:
    assert "<!-- mcp-name: io.github.sqlgate/sqlgate -->" in README.splitlines()


def test_a_user_looking_for_undo_finds_a_heading() -> None:
    page = (DOCS / "how-to" / "undo-and-restore.md").read_text(encoding="utf-8")
    assert "## Undo" in page.splitlines()
