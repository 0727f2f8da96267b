"""The mutation runner's own logic, without running a mutant: which mutants a source has,
what each one changes, which tests reach it, and how results are counted."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


points = _load("mutation_points")
session = _load("mutation_session")
mutate = _load("mutate")

SOURCE = '''"""A module."""
from __future__ import annotations

LIMIT = 3
NAMES = {"a", "b"}


def check(x: int, name: str) -> bool:
    """Docstrings are not mutated."""
    if x < LIMIT and name in ("a", "c"):
        return True
    if not x:
        raise ValueError("a message is not mutated")
    return x - 1 == 0 or name in NAMES
'''


def run(source: str, index: int, *args: object) -> Any:
    namespace: dict[str, Any] = {}
    exec(points.mutated_code(source, "<test>", index), namespace)
    return namespace["check"](*args)


def test_every_operator_finds_its_points() -> None:
    found = points.find_mutants(SOURCE)
    changes = {(m.operator, m.change) for m in found}
    assert ("compare", "`x < LIMIT`: `<` -> `>=`") in changes
    assert ("compare", "`x < LIMIT`: `<` -> `<=`") in changes
    assert ("compare", "`name in ('a', 'c')`: `in` -> `not in`") in changes
    assert ("boolop", "drop `x < LIMIT` from `and`") in changes
    assert ("not", "`not x` -> operand") in changes
    assert ("binop", "`x - 1` -> left operand") in changes
    assert ("return", "`return x` -> `return None`") in changes
    assert ("raise", "`raise` -> `pass`") in changes
    assert ("constant", "3 -> 4") in changes
    assert ("constant", "True -> False") in changes
    assert ("member", "drop member `'a'`") in changes
    assert ("member", "drop member `'c'`") in changes
    assert not any("message" in m.change or "Docstrings" in m.change for m in found)
    assert len({m.key() for m in found}) == len(found), "keys are unique"


def test_each_mutant_changes_exactly_its_point() -> None:
    found = points.find_mutants(SOURCE)
    by_change = {m.change: m.index for m in found}
    assert run(SOURCE, by_change["`x < LIMIT`: `<` -> `<=`"], 3, "a") is True
    assert run(SOURCE, by_change["3 -> 4"], 3, "a") is True
    assert run(SOURCE, by_change["drop member `'c'`"], 2, "c") is False
    assert run(SOURCE, by_change["`raise` -> `pass`"], 0, "z") is False
    first_return = next(m.index for m in found if m.operator == "return")
    assert run(SOURCE, first_return, 1, "a") is None


def test_a_mutant_knows_the_lines_a_test_must_reach_and_whether_import_runs_it() -> None:
    found = points.find_mutants(SOURCE)
    limit = next(m for m in found if m.change == "3 -> 4")
    assert (limit.line, limit.in_function, limit.function) == (4, False, "<module>")
    compare = next(m for m in found if m.change == "`x < LIMIT`: `<` -> `>=`")
    assert (compare.lines, compare.in_function, compare.function) == ((10, 10), True, "check")
    assert compare.function_lines == (8, 14)


def test_tests_are_chosen_by_the_lines_they_ran_fastest_first() -> None:
    lines = mutate.LineMap(
        {"slow": {10, 11}, "fast": {10, 12}, "other": {14}},
        {"slow": 2.0, "fast": 0.1, "other": 0.5},
    )
    found = {m.change: m for m in points.find_mutants(SOURCE)}
    compare = found["`x < LIMIT`: `<` -> `>=`"]
    assert mutate.select(compare, SOURCE, 10, lines) == ["fast", "slow"]
    # LIMIT is read on line 10; NAMES on line 14
    assert mutate.select(found["3 -> 4"], SOURCE, 4, lines) == ["fast", "slow"]
    names = next(m for m in points.find_mutants(SOURCE) if m.line == 5)
    assert mutate.select(names, SOURCE, 5, lines) == ["other"]
    # a line no test ran: the tests that ran its function (a header may log no line event)
    assert mutate.select(found["`raise` -> `pass`"], SOURCE, 13, lines) == ["fast", "other", "slow"]
    assert mutate.select(found["`raise` -> `pass`"], SOURCE, 13, mutate.LineMap()) == []


def test_a_name_read_only_elsewhere_is_reached_by_every_test() -> None:
    source = "KINDS = ('a', 'b')\n"
    (first, _) = points.find_mutants(source)
    lines = mutate.LineMap({"t1": set(), "t2": set()}, {"t1": 1.0, "t2": 0.5})
    assert mutate.select(first, source, 1, lines) == ["t2", "t1"]


def test_equivalents_are_left_out_of_the_score_and_stale_ones_found(tmp_path: Path) -> None:
    listed = tmp_path / "equivalents.toml"
    listed.write_text(
        '[[equivalent]]\nmodule = "m.py"\nfunction = "f"\nline = "x = 1"\n'
        'change = "1 -> 2"\nreason = "x is never read"\n',
        encoding="utf-8",
    )
    (entry,) = mutate.load_equivalents(listed, "m.py")
    assert entry.key() == ("f", "x = 1", "1 -> 2")
    assert mutate.load_equivalents(listed, "other.py") == []
    assert mutate.judge("survived", True) == "equivalent"
    assert mutate.judge("killed", True) == "not-equivalent"
    assert mutate.judge("timeout", False) == "timeout"
    report = mutate.Report("m.py", [])
    report.mutants = [
        {"result": r} for r in ("killed", "killed", "timeout", "survived", "equivalent")
    ]
    assert report.score() == pytest.approx(75.0)
    assert "| m.py | 5 | 2 | 1 | 1 | 1 | 75.0% |" in mutate.table([report])


@pytest.mark.parametrize(
    ("code", "status"), [(0, "survived"), (1, "killed"), (2, "killed"), (5, "error")]
)
def test_a_pytest_exit_code_judges_the_mutant(code: int, status: str) -> None:
    assert session.status_of(code) == status


@pytest.mark.parametrize("module", sorted(mutate.TARGETS))
def test_the_equivalents_file_reads_for_every_target(module: str) -> None:
    """The project's own list parses (two merged entries once ran together) and names only
    modules that exist."""
    for entry in mutate.load_equivalents(mutate.EQUIVALENTS, module):
        assert entry.key()[0]
    assert (REPO / "src" / "sqlgate" / module).is_file()
