"""The front doors of engine's packages (engine/front_door.py): every name a door lists is
the object its module defines, a name it does not list is refused, and taking a name loads
its module only, not the whole package (a fresh interpreter tells)."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from types import ModuleType

import pytest

PACKAGES = ("statements", "rules", "records", "database", "snapshots", "undo", "running")


def door(package: str) -> ModuleType:
    return importlib.import_module(f"sqlgate.engine.{package}")


@pytest.mark.parametrize("package", PACKAGES)
def test_the_door_lists_what_it_shows(package: str) -> None:
    module = door(package)
    behind = {n for names in module.BEHIND_THE_DOOR.values() for n in names}
    assert sorted(behind) == sorted(module.__all__)


@pytest.mark.parametrize("package", PACKAGES)
def test_every_name_is_the_object_its_module_defines(package: str) -> None:
    module = door(package)
    for source, names in module.BEHIND_THE_DOOR.items():
        inner = importlib.import_module(f"sqlgate.engine.{package}.{source}")
        for name in names:
            assert getattr(module, name) is getattr(inner, name), f"{package}.{name}"


@pytest.mark.parametrize(
    ("package", "name"),
    [
        ("undo", "nothing"),
        ("statements", "_private"),
        ("running", "fold_name"),  # a name its modules import, not one the door shows
        ("records", "Members_"),
    ],
)
def test_a_name_the_door_does_not_list_is_refused(package: str, name: str) -> None:
    with pytest.raises(AttributeError, match=f"has no attribute '{name}'"):
        getattr(door(package), name)
    with pytest.raises(ImportError):
        exec(f"from sqlgate.engine.{package} import {name}", {})


PROBE = """
import json, sys
from sqlgate.engine.{package} import {name}
print(json.dumps(sorted(m for m in sys.modules if m.startswith(("sqlgate", "sqlglot", "re2")))))
"""


@pytest.mark.parametrize(
    ("package", "name", "loaded", "not_loaded"),
    [
        ("statements", "Tier", "sqlgate.engine.statements.policy", "sqlglot"),
        ("statements", "where_filters", "sqlglot", "sqlgate.engine.statements.double_quotes"),
        ("running", "Outcome", "sqlgate.engine.running.outcome", "re2"),
        (
            "records",
            "utc_timestamp",
            "sqlgate.engine.records.audit",
            "sqlgate.engine.records.members",
        ),
        ("undo", "summarize", "sqlgate.engine.undo.capture", "sqlgate.engine.undo.restore"),
    ],
)
def test_taking_a_name_loads_its_module_only(
    package: str, name: str, loaded: str, not_loaded: str
) -> None:
    found = subprocess.run(
        [sys.executable, "-c", PROBE.format(package=package, name=name)],
        capture_output=True,
        text=True,
        check=True,
    )
    modules = set(json.loads(found.stdout))
    assert loaded in modules
    assert not_loaded not in modules
