"""Public names defined in more than one module: one name per concept (issue 32).

    python scripts/duplicate_names.py                  every such name under src/sqlgate
    python scripts/duplicate_names.py engine memory    only names defined twice among these rooms

A definition is a top-level class, function or assignment whose name does not start with `_`;
an import is not one, so a module that passes another's object on (a front door, a re-export)
does not count. Names every module may spell its own way by convention are left out: a module's
logger (`log`), a TypeVar (`T`) and a front door's table (`BEHIND_THE_DOOR`). Exit status 1 when
any name is found, 0 when none.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
PACKAGE = "sqlgate"
CONVENTIONAL = frozenset({"log", "T", "BEHIND_THE_DOOR"})


def defined_names(tree: ast.Module) -> list[str]:
    """The public names a module's top level defines (imports are not definitions)."""
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names += [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
    return [n for n in names if not n.startswith("_") and n not in CONVENTIONAL]


def module_name(path: Path, src: Path) -> str:
    parts = path.relative_to(src).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def duplicates(src: Path, rooms: Iterable[str] = ()) -> dict[str, list[str]]:
    """{name: the modules that define it} for each public name defined in more than one
    module of `src`'s package (of the given rooms, `engine`, `memory`..., when any)."""
    wanted = [f"{PACKAGE}.{room}" for room in rooms]
    defined: dict[str, list[str]] = defaultdict(list)
    for path in sorted((src / PACKAGE).rglob("*.py")):
        module = module_name(path, src)
        if wanted and not any(module == w or module.startswith(f"{w}.") for w in wanted):
            continue
        for name in dict.fromkeys(defined_names(ast.parse(path.read_text(encoding="utf-8")))):
            defined[name].append(module)
    return {name: modules for name, modules in sorted(defined.items()) if len(modules) > 1}


def main(argv: Sequence[str]) -> int:
    found = duplicates(SRC, argv)
    for name, modules in found.items():
        print(f"{name}: {', '.join(modules)}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
