"""Mutation testing: change one expression of a module at a time and run the tests that reach it.

    python scripts/mutate.py engine/names.py               every mutant of one module
    python scripts/mutate.py engine/names.py --survivors   only the last run's survivors again
    python scripts/mutate.py engine/names.py --mutant 12   one mutant (repeatable)
    python scripts/mutate.py engine/names.py --list        the mutants, without running them
    python scripts/mutate.py --targets                     the modules and their test selections
    python scripts/mutate.py --summary                     the table of the last run of each module

The changes (operators) are listed in `scripts/mutation_points.py`. The module's test
selection (`TARGETS`) is collected once, in one pytest session (`scripts/mutation_session.py`);
it first runs unmutated under a line tracer that records which lines of the module each test
executes and how long it takes. Then each mutant runs in a forked child against the tests
that execute its line (fastest first, `-x`), or, for a top-level statement, the tests that
execute a line reading the names it binds (every test when only other modules read them).
A failing run kills the mutant; a passing run lets it survive; a run past the timeout counts
as killed and is reported apart; a mutant no test reaches survives without a run. Choosing
fewer tests can only let more mutants survive: the score is never flattered by it. Tests that
start another Python process run the unmutated code there: keep them out of a selection.

Hypothesis runs derandomized, without its example database and without deadlines, so every
mutant meets the same examples however loaded the machine is.

Results go to `.mutation/<module>.json`. Mutants that no test can kill are listed in
`scripts/mutation_equivalents.toml` (module, function, line text, change, reason); they are
still run (one that dies is reported: drop it from the list), left out of the score, and an
entry that matches no mutant any more is reported as stale.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import hashlib
import importlib
import json
import shutil
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mutation_points import Mutant, find_mutants
from mutation_session import Outcome, Session, load_profile

# tomllib is 3.11+; tomli is its 3.10 backport (a dependency of the project there)
tomllib = importlib.import_module("tomllib" if sys.version_info >= (3, 11) else "tomli")

REPO = Path(__file__).resolve().parent.parent
SRC = REPO / "src"
PACKAGE = "sqlgate"
RESULTS = REPO / ".mutation"
EQUIVALENTS = REPO / "scripts" / "mutation_equivalents.toml"

_UNDO = (
    "tests/engine/undo/test_undo.py",
    "tests/engine/undo/test_undo_restore.py",
    "tests/engine/undo/test_undo_checks.py",
    "tests/engine/undo/test_undo_properties.py",
    "tests/engine/undo/test_undo_writes.py",
    "tests/engine/undo/test_undo_storage.py",
    "tests/engine/undo/test_undo_next_steps.py",
    "tests/engine/undo/test_undo_keys.py",
    "tests/engine/undo/test_undo_raw_text.py",
    "tests/engine/test_raw_text.py",
)
_UNDO_DDL = (
    "tests/engine/undo/test_undo_ddl.py",
    "tests/engine/undo/test_undo_ddl_views.py",
    "tests/engine/undo/test_undo_ddl_properties.py",
    "tests/engine/undo/test_undo_raw_text.py",
)
_CHAIN = (
    "tests/memory/test_chain.py",
    "tests/memory/test_chain_edges.py",
    "tests/memory/test_hash_contract_doc.py",
    "tests/memory/test_witness.py",
    "tests/memory/test_witness_check.py",
    "tests/memory/test_verification_paths.py",
    "tests/memory/test_verification_edges.py",
    "tests/memory/test_verification.py",
    # in-process: another connection holds the write lock (the judgement without it)
    "tests/test_service_contention.py",
)
_CLAIMS = (
    "tests/claims/test_model.py",
    "tests/claims/test_rules.py",
    "tests/claims/test_rules_edges.py",
    "tests/claims/test_kinds.py",
    "tests/claims/test_store_edges.py",
    "tests/claims/test_store.py",
)
# an import landing in the chain and in the claims (issue 32): the rooms write, importers plan
_LANDING = (
    "tests/memory/test_landing.py",
    "tests/claims/test_landing.py",
    "tests/surfaces/integrations/test_importers.py",
)
# the security tables (tests/security) also reach the policy, through whole services: each
# mutant would spend minutes in them; the policy's own tables are pure and pin every rule
_POLICY = (
    "tests/engine/test_names.py",
    "tests/engine/statements/test_policy.py",
    "tests/engine/statements/test_policy_edges.py",
    "tests/engine/statements/test_policy_records.py",
)
# module (under src/sqlgate) -> the test files that target it
TARGETS: dict[str, tuple[str, ...]] = {
    "engine/names.py": _POLICY,
    "engine/statements/policy.py": _POLICY,
    "engine/statements/preflight.py": (
        "tests/engine/statements/test_preflight.py",
        "tests/engine/statements/test_statement_shapes.py",
        "tests/test_service_refusals.py",
    ),
    "engine/statements/tier_check.py": (
        "tests/engine/statements/test_preflight.py",
        "tests/test_service_refusals.py",
    ),
    "engine/statements/where.py": ("tests/engine/statements/test_where.py",),
    # through whole services: the facts come from a real schema, the fallback from SQLite
    "engine/running/where_check.py": ("tests/test_service_where.py",),
    "engine/running/where_columns.py": ("tests/test_service_where.py",),
    # a rewrite is offered only when the called tool would take it, and never run (issue 34)
    "engine/dialects/traps.py": (
        "tests/engine/dialects/test_traps.py",
        "tests/engine/running/test_other_dialects.py",
    ),
    "engine/running/other_dialects.py": (
        "tests/engine/running/test_other_dialects.py",
        "tests/engine/dialects/test_success_path.py",
    ),
    "engine/undo/capture.py": _UNDO,
    "engine/undo/writes.py": _UNDO,
    "engine/undo/keys.py": _UNDO,
    "engine/running/writes.py": _UNDO,
    "engine/records/identity.py": (
        "tests/engine/records/test_identity.py",
        "tests/engine/undo/test_undo_writes.py",
    ),
    # who a caller is (issue 22): the tier order, the name rule, tokens and their reasons
    "engine/records/actors.py": (
        "tests/engine/records/test_actors.py",
        "tests/engine/records/test_members.py",
    ),
    "engine/records/members.py": ("tests/engine/records/test_members.py",),
    # the records bound to their file (issue 33): moved, replaced, copied, history lost
    "engine/records/binding.py": ("tests/engine/records/test_binding.py",),
    "surfaces/mcp/http_identity.py": ("tests/surfaces/mcp/test_http_identity.py",),
    "surfaces/mcp/oauth_claims.py": ("tests/surfaces/mcp/test_oauth.py",),
    # the user's protected and append-only tables (issue 23)
    "engine/rules/guarded_policy.py": (
        "tests/engine/rules/test_guarded_policy.py",
        "tests/security/test_protected_tables.py",
    ),
    "engine/rules/guard_facts.py": ("tests/engine/rules/test_guard_facts.py",),
    # the rules by (database, table) (issue 33): the records are the server policy's
    "engine/rules/rule_policy.py": (
        "tests/engine/rules/test_rule_policy.py",
        "tests/engine/rules/test_records_rules.py",
        "tests/engine/rules/test_guarded_policy.py",
        "tests/engine/rules/test_hidden_policy.py",
    ),
    "engine/rules/table_rules.py": (
        "tests/engine/rules/test_table_rules.py",
        "tests/engine/rules/test_records_rules.py",
        "tests/engine/rules/test_policy_file.py",
    ),
    # what a statement changed or left behind in a guarded table's world (issue 30)
    "engine/running/guard_rows.py": ("tests/engine/running/test_guard_rows.py",),
    "engine/rules/guard_schema.py": ("tests/engine/rules/test_guard_schema.py",),
    "engine/rules/hidden_policy.py": (
        "tests/engine/rules/test_hidden_policy.py",
        "tests/security/test_hidden_columns.py",
        "tests/security/test_hidden_surfaces.py",
    ),
    # issue 30 §3: error texts, reads in any row order, the server's columns of row values
    "engine/rules/hidden_errors.py": ("tests/engine/rules/test_hidden_errors.py",),
    "engine/rules/hidden_order.py": ("tests/engine/rules/test_hidden_order.py",),
    "engine/server_columns.py": ("tests/engine/test_server_columns.py",),
    "engine/undo/checks.py": _UNDO,
    "engine/undo/restore.py": _UNDO,
    "engine/undo/lookup.py": _UNDO,
    "engine/undo/ddl.py": _UNDO_DDL,
    "engine/undo/ddl_checks.py": _UNDO_DDL,
    # text that is not UTF-8 (issue 30): the changesets the undo reads, the rows it digests
    "engine/undo/changesets.py": (
        "tests/engine/undo/test_changesets.py",
        "tests/engine/undo/test_undo_raw_text.py",
    ),
    "engine/raw_text.py": (
        "tests/engine/test_raw_text.py",
        "tests/engine/undo/test_undo_raw_text.py",
        "tests/test_service_raw_text.py",
    ),
    "memory/contract.py": _CHAIN,
    "memory/chain.py": _CHAIN,
    "memory/verification.py": _CHAIN,
    "memory/witness_check.py": _CHAIN,
    "memory/landing.py": _LANDING,
    # what replication reads of a copy of the chain: the witness log, a restore's verdict
    "memory/chain_copy.py": (
        "tests/memory/test_chain_copy.py",
        "tests/surfaces/replication/test_witness_log.py",
    ),
    "claims/arguments.py": _CLAIMS,
    "claims/model.py": _CLAIMS,
    "claims/rules.py": _CLAIMS,
    "claims/store.py": _CLAIMS,
    "claims/landing.py": _LANDING,
}
# Hypothesis examples per test in a run (the baseline too, so its line map matches): fewer can only
# let more mutants survive, and the slowest property tests take minutes at their own count
EXAMPLES = 25
# imported once in the parent, so each forked mutant run starts with them loaded
PRELOAD = ("pytest", "hypothesis", "apsw", "sqlglot", "anyio", "re2", "mcp", "click", "rich")


# -- equivalents --------------------------------------------------------------------------
@dataclass(frozen=True)
class Equivalent:
    module: str
    function: str
    line: str
    change: str
    reason: str

    def key(self) -> tuple[str, str, str]:
        return (self.function, self.line, self.change)


def load_equivalents(path: Path, module: str | None = None) -> list[Equivalent]:
    if not path.exists():
        return []
    entries = tomllib.loads(path.read_text(encoding="utf-8")).get("equivalent", [])
    found = [
        Equivalent(e["module"], e["function"], e["line"], e["change"], e["reason"]) for e in entries
    ]
    return [e for e in found if module is None or e.module == module]


# -- which tests reach a mutant -----------------------------------------------------------
@dataclass
class LineMap:
    """What the unmutated run saw: the module's lines each test executed, and its duration."""

    lines: dict[str, set[int]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    def tests_for(self, first: int, last: int) -> list[str]:
        span = set(range(first, last + 1))
        hit = [test for test, lines in self.lines.items() if lines & span]
        return sorted(hit, key=lambda test: self.seconds.get(test, 0.0))


def readers(source: str, statement_line: int) -> list[tuple[int, int]]:
    """Line spans reading the names bound by the top-level statement at `statement_line`,
    following names bound from those names at top level too (a set built from a set)."""
    tree = ast.parse(source)
    bound: dict[int, set[str]] = {}
    for node in tree.body:
        names = {
            n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
        }
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        bound[node.lineno] = names
    wanted = set(next((names for line, names in bound.items() if line == statement_line), set()))
    spans: list[tuple[int, int]] = []
    for _ in range(5):  # names built from names, a few levels deep
        for node in tree.body:
            loads = {
                n.id
                for n in ast.walk(node)
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
            }
            if loads & wanted and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                wanted |= bound[node.lineno]
    for name in ast.walk(tree):
        if isinstance(name, ast.Name) and isinstance(name.ctx, ast.Load) and name.id in wanted:
            spans.append((name.lineno, name.end_lineno or name.lineno))
    return spans


def select(mutant: Mutant, source: str, top: int, lines: LineMap) -> list[str]:
    """The tests to run against `mutant`, fastest first; empty when no test reaches it."""
    if mutant.in_function:
        return lines.tests_for(*mutant.lines) or lines.tests_for(*mutant.function_lines)
    chosen: set[str] = set()
    for span in readers(source, top):
        chosen.update(lines.tests_for(*span))
    if not chosen:  # read only from other modules (or not at all): every test may reach it
        chosen = set(lines.seconds)
    return sorted(chosen, key=lambda test: lines.seconds.get(test, 0.0))


def top_statement(source: str, line: int) -> int:
    """The first line of the top-level statement holding `line`."""
    for node in ast.parse(source).body:
        if node.lineno <= line <= (node.end_lineno or node.lineno):
            return node.lineno
    return line


# -- reporting ----------------------------------------------------------------------------
@dataclass
class Report:
    module: str
    tests: list[str]
    source_sha256: str = ""
    mutants: list[dict[str, Any]] = field(default_factory=list)
    stale: list[dict[str, str]] = field(default_factory=list)
    seconds: float = 0.0
    baseline_seconds: float = 0.0

    def counts(self) -> dict[str, int]:
        counts = {"total": len(self.mutants)}
        for name in ("killed", "survived", "timeout", "error", "equivalent", "not-equivalent"):
            counts[name] = sum(1 for m in self.mutants if m["result"] == name)
        return counts

    def score(self) -> float:
        c = self.counts()
        judged = c["total"] - c["equivalent"]
        caught = c["killed"] + c["timeout"] + c["not-equivalent"]
        return 100.0 if judged == 0 else 100.0 * caught / judged


def judge(status: str, equivalent: bool) -> str:
    """The result recorded: an equivalent mutant that survives is `equivalent`; one that dies
    is `not-equivalent` (counted as killed, and its list entry should go)."""
    if not equivalent:
        return status
    return "not-equivalent" if status in ("killed", "timeout") else "equivalent"


def table(reports: Sequence[Report]) -> str:
    head = "| module | mutants | killed | survived | equivalent | timeouts | score | wall |"
    rows = [head, "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in reports:
        c = r.counts()
        rows.append(
            f"| {r.module} | {c['total']} | {c['killed'] + c['not-equivalent']} | "
            f"{c['survived'] + c['error']} | {c['equivalent']} | {c['timeout']} | "
            f"{r.score():.1f}% | {r.seconds / 60:.1f} min |"
        )
    return "\n".join(rows)


def _result_path(module: str, suffix: str = ".json") -> Path:
    return RESULTS / (module.replace("/", "__").removesuffix(".py") + suffix)


def load_report(module: str) -> Report | None:
    path = _result_path(module)
    if not path.exists():
        return None
    return Report(**json.loads(path.read_text(encoding="utf-8")))


def mutate(
    module: str,
    *,
    workers: int,
    only: set[int] | None,
    timeout: float | None,
    examples: int | None = EXAMPLES,
) -> Report:
    """Run the mutants of one module (all, or those in `only`) and write the results file."""
    tests = list(TARGETS[module])
    path = SRC / PACKAGE / module
    name = f"{PACKAGE}." + module.removesuffix(".py").replace("/", ".")
    source = path.read_text(encoding="utf-8")
    digest = hashlib.sha256(source.encode()).hexdigest()
    mutants = find_mutants(source)
    equivalents = load_equivalents(EQUIVALENTS, module)
    listed = {e.key() for e in equivalents}
    report = Report(module, tests, source_sha256=digest)
    report.stale = [asdict(e) for e in equivalents if e.key() not in {m.key() for m in mutants}]
    previous = load_report(module) if only is not None else None
    if previous is not None and previous.source_sha256 != digest:
        raise SystemExit(f"{module} changed since its last run: run it whole again")
    results: dict[int, dict[str, Any]] = {}
    if previous is not None:
        results = {m["index"]: m for m in previous.mutants}

    def done(index: int, outcome: Outcome, unreached: bool = False) -> None:
        mutant = mutants[index]
        result = judge(outcome.status, mutant.key() in listed)
        entry = {**asdict(mutant), "result": result, "seconds": round(outcome.seconds, 2)}
        if unreached:
            entry["unreached"] = True
        results[index] = entry
        mark = "." if result in ("killed", "not-equivalent", "equivalent") else result[0].upper()
        print(mark, end="", flush=True)

    def plan(
        found: dict[str, list[int]], seconds: dict[str, float]
    ) -> list[tuple[Mutant, list[str]]]:
        lines = LineMap({test: set(hit) for test, hit in found.items()}, seconds)
        planned = []
        for m in mutants:
            if only is not None and m.index not in only:
                continue
            chosen = select(m, source, top_statement(source, m.line), lines)
            if chosen:
                planned.append((m, chosen))
            else:  # no test executes it: it survives without a run
                done(m.index, Outcome("survived", 0.0), unreached=True)
        return planned

    for library in PRELOAD:  # imported once here, so every forked child starts with them
        with contextlib.suppress(ImportError):
            importlib.import_module(library)
    load_profile()
    loaded = importlib.import_module(name)
    session = Session(loaded, source, path, plan, workers, timeout, done, examples)
    started = time.monotonic()
    args = ["-q", "-p", "no:cacheprovider", "-p", "no:randomly", "--no-header", *tests]
    try:
        code = pytest.main(args, plugins=[session])
    finally:
        shutil.rmtree(session.scratch, ignore_errors=True)
    print()
    if session.failed_baseline or code != 0:
        raise SystemExit(f"the tests fail without a mutant (exit {code}): {' '.join(tests)}")
    report.baseline_seconds = session.baseline_seconds
    report.mutants = [results[i] for i in sorted(results) if i < len(mutants)]
    report.seconds = time.monotonic() - started
    if previous is not None:
        report.seconds += previous.seconds
    RESULTS.mkdir(exist_ok=True)
    _result_path(module).write_text(json.dumps(asdict(report), indent=1), encoding="utf-8")
    return report


def describe(report: Report) -> Iterator[str]:
    yield table([report])
    for m in report.mutants:
        if m["result"] in ("survived", "error", "not-equivalent"):
            what = {"not-equivalent": "KILLED BUT LISTED EQUIVALENT"}.get(m["result"], m["result"])
            if m.get("unreached"):
                what += " (no test reaches it)"
            yield f"{what}: #{m['index']} line {m['line']} in {m['function']}: {m['change']}"
            yield f"    {m['text']}"
    for e in report.stale:
        yield f"STALE equivalent entry (no such mutant now): {e['function']}: {e['line']!r}"
        yield f"    {e['change']}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "module", nargs="?", help="a module under src/sqlgate, e.g. engine/statements/policy.py"
    )
    parser.add_argument("--jobs", type=int, default=2, help="mutants run at once (default 2)")
    parser.add_argument("--timeout", type=float, help="seconds per mutant (default 3x the tests)")
    parser.add_argument("--survivors", action="store_true", help="rerun the last survivors only")
    parser.add_argument("--mutant", type=int, action="append", help="run only this mutant id")
    parser.add_argument(
        "--examples",
        type=int,
        default=EXAMPLES,
        help=f"Hypothesis examples cap (default {EXAMPLES})",
    )
    parser.add_argument("--list", action="store_true", help="print the mutants, run nothing")
    parser.add_argument("--targets", action="store_true", help="print modules and their tests")
    parser.add_argument("--summary", action="store_true", help="table of the last results")
    args = parser.parse_args(argv)
    if args.targets:
        for module, tests in TARGETS.items():
            print(f"{module}: {' '.join(tests)}")
        return 0
    if args.summary:
        print(table([r for r in map(load_report, TARGETS) if r is not None]))
        return 0
    if args.module not in TARGETS:
        parser.error(f"name one of: {', '.join(TARGETS)} (or add it to TARGETS)")
    if args.list:
        source = (SRC / PACKAGE / args.module).read_text(encoding="utf-8")
        for m in find_mutants(source):
            print(f"#{m.index} line {m.line} {m.function} [{m.operator}] {m.change}: {m.text}")
        return 0
    only: set[int] | None = set(args.mutant) if args.mutant else None
    if args.survivors:
        previous = load_report(args.module)
        if previous is None:
            parser.error(f"no earlier results for {args.module}: run it whole first")
        only = {m["index"] for m in previous.mutants if m["result"] in ("survived", "error")}
    report = mutate(
        args.module, workers=args.jobs, only=only, timeout=args.timeout, examples=args.examples
    )
    for line in describe(report):
        print(line)
    return 1 if report.counts()["survived"] else 0


if __name__ == "__main__":
    sys.exit(main())
