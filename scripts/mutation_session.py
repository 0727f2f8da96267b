"""Running mutants inside one pytest session: collect once, then fork a child per mutant.

The parent process imports the package and collects the module's tests once (the slow part
of a pytest run). Each mutant then runs in a process forked from it, which puts the mutant
in place and runs only the chosen tests (`-x`: it stops at the first failure):

- inside a function: the function object gets the mutated code, so every reference to it
  (other modules, the tests' own imports) runs the mutant;
- at top level: the module's data statements (not its def and class statements) run again,
  mutated, in its namespace, and every loaded module that copied one of those names at import
  (`from m import NAME`, a test's import too) gets the new value, as a fresh import would give
  it; a value derived from one at import time elsewhere, or a default argument, keeps the old
  one (then a kill may be the test's stale copy, not the mutant: check such a top-level kill
  with `--mutant N` and MUTATE_VERBOSE=1, which shows the tests' output);
- elsewhere (class bodies, default values): a fresh interpreter imports the mutated module
  through an import hook and runs pytest on the chosen tests (slow, and rare).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType, FunctionType, ModuleType
from typing import Any

from mutation_points import Mutant, data_code, find_code, mutated_code, mutated_tree

# the interpreter a mutant outside functions and top-level data runs in (see module doc)
_FRESH = """
import ast, importlib.abc, importlib.util, sys
name, path, mutated, *tests = sys.argv[1:]
code = compile(open(mutated, encoding="utf-8").read(), path, "exec")
class Loader(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, p, target=None):
        if fullname == name:
            return importlib.util.spec_from_file_location(fullname, path, loader=self)
    def create_module(self, spec):
        return None
    def exec_module(self, module):
        exec(code, module.__dict__)
sys.meta_path.insert(0, Loader())
from hypothesis import HealthCheck, settings
settings.register_profile("mutation", database=None, deadline=None, derandomize=True,
                          suppress_health_check=list(HealthCheck))
settings.load_profile("mutation")
import pytest
sys.exit(int(pytest.main(["-x", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", *tests])))
"""


@dataclass
class Outcome:
    status: str  # killed, survived, timeout, error (a run that could not judge the mutant)
    seconds: float


def load_profile() -> None:
    """The same examples for every mutant, no example database, no deadline under load."""
    from hypothesis import HealthCheck, settings

    settings.register_profile(
        "mutation",
        database=None,
        deadline=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    settings.load_profile("mutation")


def _fork(work: Callable[[], int]) -> int:
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        status = 3
        try:
            os.setpgid(0, 0)  # its own group, so a timeout also ends what the tests started
            if not os.environ.get("MUTATE_VERBOSE"):  # the tests' own output, for debugging
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, 1)
                os.dup2(devnull, 2)
            status = work()
        except BaseException:
            traceback.print_exc()  # shown with MUTATE_VERBOSE=1
        finally:
            os._exit(status)
    with contextlib.suppress(OSError):  # the child got there first
        os.setpgid(pid, pid)
    return pid


def status_of(exit_code: int) -> str:
    if exit_code == 0:
        return "survived"
    if exit_code in (1, 2):  # tests failed, or collection failed (the mutant broke an import)
        return "killed"
    return "error"


def run_all(
    jobs: list[tuple[int, Callable[[], int]]],
    workers: int,
    timeout: float,
    on_done: Callable[[int, Outcome], None],
) -> None:
    """Run each (id, work) job in a forked child, `workers` at a time."""
    pending = list(reversed(jobs))
    running: dict[int, tuple[int, float]] = {}  # pid -> (job id, started)
    while pending or running:
        while pending and len(running) < workers:
            job, work = pending.pop()
            running[_fork(work)] = (job, time.monotonic())
        pid, raw = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            now = time.monotonic()
            for child, (job, started) in list(running.items()):
                if now - started > timeout:
                    try:
                        os.killpg(child, signal.SIGKILL)
                    except ProcessLookupError:
                        os.kill(child, signal.SIGKILL)
                    os.waitpid(child, 0)
                    del running[child]
                    on_done(job, Outcome("timeout", now - started))
            time.sleep(0.01)
            continue
        if pid not in running:
            continue
        job, started = running.pop(pid)
        on_done(job, Outcome(status_of(os.waitstatus_to_exitcode(raw)), time.monotonic() - started))


def _unwrap(value: object) -> object:
    for _ in range(8):
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        elif isinstance(value, property):
            value = value.fget
        elif isinstance(value, FunctionType) and hasattr(value, "__wrapped__"):
            value = value.__wrapped__  # contextmanager, functools.wraps
        else:
            break
    return value


def function_of(module: ModuleType, qualified: str) -> FunctionType | None:
    """The outermost function object on the path `Class.method.inner` in a loaded module."""
    holder: object = module
    for part in qualified.split("."):
        found = _unwrap(getattr(holder, "__dict__", {}).get(part))
        if isinstance(found, FunctionType):
            return found
        if not isinstance(found, type):
            return None
        holder = found
    return None


def _rebind_copies(module: ModuleType, before: dict[str, object]) -> None:
    """Where another loaded module (a test, say) copied one of `module`'s data names at
    import (`from m import NAME`), give it the new value, as a fresh import would have."""
    changed = {
        name: (before[name], value)
        for name, value in module.__dict__.items()
        if name in before and before[name] is not value
    }
    for other in list(sys.modules.values()):
        namespace = getattr(other, "__dict__", None)
        if other is module or not isinstance(namespace, dict):
            continue
        for name, (old, new) in changed.items():
            if name in namespace and namespace[name] is old:
                namespace[name] = new


def _cap_examples(items: Sequence[Any], cap: int) -> None:
    """At most `cap` Hypothesis examples per test, whatever its own settings say."""
    from hypothesis import settings

    for item in items:
        test = getattr(item, "obj", None)
        current = getattr(test, "_hypothesis_internal_use_settings", None)
        if current is not None and current.max_examples > cap:
            test._hypothesis_internal_use_settings = settings(  # type: ignore[union-attr]
                current, max_examples=cap, derandomize=True, database=None, deadline=None
            )


class Session:
    """A pytest plugin that takes over the run loop: the baseline, then every mutant."""

    def __init__(
        self,
        module: ModuleType,
        source: str,
        path: Path,
        plan: Callable[[dict[str, list[int]], dict[str, float]], list[tuple[Mutant, list[str]]]],
        workers: int,
        timeout: float | None,
        on_done: Callable[[int, Outcome], None],
        examples: int | None = None,
    ) -> None:
        self.module, self.source, self.path, self.plan = module, source, path, plan
        self.workers, self.timeout, self.on_done = workers, timeout, on_done
        self.examples = examples  # the cap on Hypothesis examples in a mutant's run
        self.items: dict[str, Any] = {}
        self.baseline_seconds = 0.0
        self.failed_baseline = False
        self.scratch = Path(tempfile.mkdtemp(prefix="sqlgate-mutants-"))

    # -- in a child -----------------------------------------------------------------------
    def _run(self, nodeids: Sequence[str], each: Callable[[str], None] | None = None) -> int:
        """Run the tests in this (forked) process, stopping at the first failure."""
        items = [self.items[n] for n in nodeids if n in self.items]
        config = items[0].config if items else None
        if config is None:
            return 0
        factory = getattr(config, "_tmp_path_factory", None)
        if factory is not None:  # each child its own temporary directories
            factory._given_basetemp = self.scratch / f"t{os.getpid()}"
            factory._basetemp = None
        failed: list[str] = []

        class Watch:
            def pytest_runtest_logreport(self, report: Any) -> None:
                if report.failed:
                    failed.append(report.nodeid)
                    if os.environ.get("MUTATE_VERBOSE"):
                        print(f"\nFAILED {report.nodeid}\n{report.longreprtext}", file=sys.stderr)

        if self.examples is not None:
            _cap_examples(items, self.examples)
        config.pluginmanager.register(Watch())
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None and not os.environ.get("MUTATE_VERBOSE"):
            config.pluginmanager.unregister(reporter)  # it writes past the child's devnull
        for at, item in enumerate(items):
            after = items[at + 1] if at + 1 < len(items) else None
            if each is not None:
                each(item.nodeid)
            item.config.hook.pytest_runtest_protocol(item=item, nextitem=after)
            if failed and each is None:
                return 1
        return 1 if failed else 0

    def _baseline(self, out: Path) -> int:
        filename = str(self.path)
        lines: dict[str, set[int]] = {}
        seconds: dict[str, float] = {}
        current: set[int] = set()
        running: list[tuple[str, float]] = []  # the test running now, since when

        def local(frame: FrameType, event: str, arg: object) -> Any:
            if event == "line":
                current.add(frame.f_lineno)
            return local

        def global_(frame: FrameType, event: str, arg: object) -> Any:
            if frame.f_code.co_filename != filename:
                return None
            current.add(frame.f_lineno)
            return local

        def each(nodeid: str) -> None:
            nonlocal current
            now = time.monotonic()
            if running:
                name, since = running.pop()
                seconds[name] = now - since
            running.append((nodeid, now))
            current = lines.setdefault(nodeid, set())
            sys.settrace(global_)
            threading.settrace(global_)

        status = self._run(list(self.items), each)
        sys.settrace(None)
        threading.settrace(None)
        if running:
            name, since = running.pop()
            seconds[name] = time.monotonic() - since
        data = {"lines": {t: sorted(v) for t, v in lines.items()}, "seconds": seconds}
        out.write_text(json.dumps(data), encoding="utf-8")
        return status

    # -- in the parent --------------------------------------------------------------------
    def work_for(self, mutant: Mutant, tests: list[str]) -> Callable[[], int]:
        """How a forked child puts `mutant` in place and runs `tests` (module doc)."""
        path = str(self.path)
        if mutant.in_function:
            function = function_of(self.module, mutant.function)
            if function is not None:
                old = function.__code__
                code = mutated_code(self.source, path, mutant.index)
                new = find_code(code, old.co_name, old.co_firstlineno)
                if new is not None and new.co_freevars == old.co_freevars:

                    def swap() -> int:
                        function.__code__ = new
                        return self._run(tests)

                    return swap
        elif mutant.function == "<module>":
            data = data_code(self.source, path, mutant.index)

            def rebind() -> int:
                namespace = self.module.__dict__
                before = dict(namespace)
                exec(data, namespace)  # noqa: S102 - the mutant under test
                _rebind_copies(self.module, before)
                return self._run(tests)

            return rebind
        import ast

        mutated = self.scratch / f"mutant{mutant.index}.py"
        mutated.write_text(ast.unparse(mutated_tree(self.source, mutant.index)), encoding="utf-8")
        command = [sys.executable, "-c", _FRESH, self.module.__name__, path, str(mutated), *tests]
        return lambda: subprocess.call(command)  # noqa: S603 - our own interpreter

    def pytest_runtestloop(self, session: Any) -> bool:
        self.items = {item.nodeid: item for item in session.items}
        out = self.scratch / "lines.json"
        started = time.monotonic()
        results: list[Outcome] = []
        run_all([(0, lambda: self._baseline(out))], 1, 24 * 3600.0, lambda _, o: results.append(o))
        self.baseline_seconds = time.monotonic() - started
        if results[0].status != "survived":
            self.failed_baseline = True
            return True
        data = json.loads(out.read_text(encoding="utf-8"))
        lines = {t: list(v) for t, v in data["lines"].items()}
        seconds: dict[str, float] = dict(data["seconds"])
        limit = self.timeout or max(60.0, 3 * sum(seconds.values()))
        jobs = [(m.index, self.work_for(m, tests)) for m, tests in self.plan(lines, seconds)]
        run_all(jobs, self.workers, limit, self.on_done)
        return True
