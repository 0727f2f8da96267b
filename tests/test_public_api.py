"""The package's public face: `sqlgate.__all__` is complete, importable and light."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys

import sqlgate
import sqlgate.config
import sqlgate.errors


def test_every_name_in_all_is_importable() -> None:
    missing = [name for name in sqlgate.__all__ if not hasattr(sqlgate, name)]
    assert not missing


def test_all_has_no_duplicates() -> None:
    assert len(sqlgate.__all__) == len(set(sqlgate.__all__))


def test_every_public_error_is_exported() -> None:
    assert set(sqlgate.errors.__all__) <= set(sqlgate.__all__)


def test_settings_and_their_loader_are_exported() -> None:
    assert sqlgate.Settings is sqlgate.config.Settings
    assert sqlgate.load_settings is sqlgate.config.load_settings


def test_exported_errors_are_the_same_classes() -> None:
    for name in sqlgate.errors.__all__:
        assert getattr(sqlgate, name) is getattr(sqlgate.errors, name)


def test_star_import_gives_exactly_all() -> None:
    namespace: dict[str, object] = {}
    exec("from sqlgate import *", namespace)
    assert set(namespace) - {"__builtins__"} == set(sqlgate.__all__)


def test_version_matches_the_installed_distribution() -> None:
    assert sqlgate.__version__ == importlib.metadata.version("sqlgate")


def test_importing_sqlgate_loads_no_surface_libraries() -> None:
    code = "import sys, sqlgate; print(sorted({'mcp', 'click', 'rich'} & set(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]"
