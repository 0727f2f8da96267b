"""One name per concept (issue 32): `scripts/duplicate_names.py` finds a public name defined in
two modules, and the rooms below the door (engine, memory, claims) define none twice but the
few listed here, each waiting on the module's owner."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "duplicate_names", REPO / "scripts" / "duplicate_names.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


names = _load()

# defined twice in the rooms, in modules another change owns: {name: why it is still there}
KNOWN = {
    "Change": "where.Change (a parsed UPDATE/DELETE) vs undo.changesets.Change (a changed row):"
    " test_where asserts isinstance(change, Change), so undo's is the one to rename",
    "DML_KINDS": "running/queries.py keeps a copy of preflight's set: it should import it",
    "MIB": "running/queries.py and running/writes.py each define 1024 * 1024",
    "REWRITE_MAX_CHARS": "running/execute.py keeps a copy of auto_ids' limit: it should import it",
    "ROWID_NAMES": "undo/keys.py lists the rowid's names in the order it tries them; where.py"
    " tests membership",
}


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / "sqlgate" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


@pytest.mark.parametrize(
    ("files", "found"),
    [
        pytest.param(
            {"a.py": "class Verdict: ...\n", "b.py": "class Verdict: ...\n"},
            {"Verdict": ["sqlgate.a", "sqlgate.b"]},
            id="a-class-twice",
        ),
        pytest.param(
            {"a.py": "def refusal(): ...\n", "engine/b.py": "async def refusal(): ...\n"},
            {"refusal": ["sqlgate.a", "sqlgate.engine.b"]},
            id="a-function-and-a-coroutine",
        ),
        pytest.param(
            {"a.py": "MAX_ID = 1\n", "b.py": "MAX_ID: int = 1\n", "c.py": "X = MAX_ID = 2\n"},
            {"MAX_ID": ["sqlgate.a", "sqlgate.b", "sqlgate.c"]},
            id="constants-plain-annotated-chained",
        ),
        pytest.param(
            {"a.py": "ASK = 'ask'\n", "b.py": "from sqlgate.a import ASK\n"},
            {},
            id="a-re-export-is-no-definition",
        ),
        pytest.param(
            {"a.py": "_rows = 1\n", "b.py": "def _rows(): ...\n"},
            {},
            id="private-names",
        ),
        pytest.param(
            {"a.py": "log = 1\nT = 2\nBEHIND_THE_DOOR = {}\n", "b.py": "log = 1\nT = 2\n"},
            {},
            id="conventional-names",
        ),
        pytest.param(
            {"a.py": "def f():\n    MODES = 1\n", "b.py": "class C:\n    MODES = 2\n"},
            {},
            id="nested-names",
        ),
        pytest.param(
            {"x/__init__.py": "Relation = 1\n", "y.py": "Relation = 2\nRelation = 3\n"},
            {"Relation": ["sqlgate.x", "sqlgate.y"]},
            id="a-package-and-a-module-defining-twice",
        ),
    ],
)
def test_finds_names_defined_in_two_modules(
    tmp_path: Path, files: dict[str, str], found: dict[str, list[str]]
) -> None:
    assert names.duplicates(_tree(tmp_path, files)) == found


@pytest.mark.parametrize(
    ("rooms", "found"),
    [
        pytest.param(
            (), ["sqlgate.engine.a", "sqlgate.engineering", "sqlgate.surfaces.b"], id="all"
        ),
        # `engineering` is not in the room `engine`
        pytest.param(("engine", "memory"), None, id="one-room-holds-one"),
        pytest.param(("engine", "surfaces"), ["sqlgate.engine.a", "sqlgate.surfaces.b"], id="two"),
    ],
)
def test_rooms_narrow_the_search(
    tmp_path: Path, rooms: tuple[str, ...], found: list[str] | None
) -> None:
    modules = ("engine/a.py", "engineering.py", "surfaces/b.py")
    files = dict.fromkeys(modules, "class Verdict: ...\n")
    assert names.duplicates(_tree(tmp_path, files), rooms).get("Verdict") == found


def test_the_rooms_define_each_name_once() -> None:
    found = names.duplicates(names.SRC, ("engine", "memory", "claims"))
    new = {name: modules for name, modules in found.items() if name not in KNOWN}
    assert new == {}, "one name per concept: rename one, or import the other's object"
