"""The repository passes its own linters: ruff (rules and format) and mypy --strict.

Each check runs the tool from this Python environment (`python -m ...`), so the suite
checks with the versions `pip install -e '.[dev]'` installed. A tool that is missing is a
skip, not a failure: the `test` extra alone does not install them.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

CHECKS = [
    pytest.param("ruff", ["check", "--no-cache", "."], id="ruff-check"),
    pytest.param("ruff", ["format", "--check", "--no-cache", "."], id="ruff-format"),
    pytest.param("mypy", [], id="mypy-src"),  # files and strictness from pyproject.toml
    pytest.param("mypy", ["scripts/publish_gate.py"], id="mypy-publish-gate"),
]


@pytest.mark.parametrize(("tool", "arguments"), CHECKS)
def test_repository_passes(tool: str, arguments: list[str]) -> None:
    if importlib.util.find_spec(tool) is None:
        pytest.skip(f"{tool} is not installed in this environment")
    result = subprocess.run(
        [sys.executable, "-m", tool, *arguments],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert result.returncode == 0, f"{tool} {' '.join(arguments)}:\n{result.stdout}{result.stderr}"
