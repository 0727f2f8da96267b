"""The real clients from npm (Codex CLI, Gemini CLI, Claude Code), each run in a fake HOME.

Each client is pinned in tests/e2e/<folder>/package.json + package-lock.json and installed by
`install_client` with `npm ci --ignore-scripts`, like the MCP Inspector
(tests/surfaces/mcp/test_inspector.py): skipped where npm/node are missing or the registry is
unreachable, an existing install of the pinned version reused. None needs its install script:
Codex and Claude Code bring their native program as an optional dependency
(@openai/codex-linux-x64, @anthropic-ai/claude-code-linux-x64, …). Codex's bin/codex.js finds
it itself; Claude Code's postinstall only copies it over a placeholder bin/claude.exe, so the
tests start Claude Code through the package's own cli-wrapper.cjs, which finds it the same way.

`ClientHome` is the fake HOME: home/ (the clients' settings), project/ (the working folder and
the database), no SQLGATE_* setting, no API key or proxy from the developer's shell, and the
clients' update checks and telemetry off, so nothing leaves the machine but loopback.
`sqlgate install` writes the entries, as a user would.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlgate.surfaces.mcp.server import CLAIMS_TOOLS, MEMORY_TOOLS, SQL_TOOLS
from tests.npm_pins import E2E_DIR, installed_version, npm_ci, pinned
from tests.surfaces.mcp.test_stdio import child_env

ALL_TOOLS = sorted(SQL_TOOLS + MEMORY_TOOLS + CLAIMS_TOOLS)  # what every client must list
RUN_TIMEOUT_S = 90
# Settings of the developer's shell a client would act on: where it keeps its files, which
# account or endpoint it uses, and the proxies (the fake model is on loopback).
SHELL_PREFIXES = ("CODEX_", "OPENAI_", "GEMINI_", "GOOGLE_", "ANTHROPIC_", "CLAUDE_")
PROXIES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")
QUIET = {  # no update check, telemetry or other traffic the test does not ask for
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "NO_COLOR": "1",
}


@dataclass(frozen=True)
class NpmClient:
    """A client pinned in tests/e2e/<folder>/ and the script, inside the package, that runs it."""

    folder: str
    package: str
    script: str  # relative to the package's folder in node_modules

    @property
    def root(self) -> Path:
        return E2E_DIR / self.folder

    @property
    def package_dir(self) -> Path:
        return self.root / "node_modules" / self.package

    def pinned_version(self) -> str:
        return pinned(self.root)[self.package]

    def installed_version(self) -> str | None:
        return installed_version(self.root, self.package)


CODEX = NpmClient("codex", "@openai/codex", "bin/codex.js")
GEMINI = NpmClient("gemini", "@google/gemini-cli", "bundle/gemini.js")
CLAUDE_CODE = NpmClient("claude-code", "@anthropic-ai/claude-code", "cli-wrapper.cjs")


def install_client(client: NpmClient) -> list[str]:
    """The argv that runs `client` (node and its script), installed with `npm ci` when needed."""
    node = npm_ci(client.root)
    return [node, str(client.package_dir / client.script)]


@dataclass(frozen=True)
class ClientHome:
    """A fake HOME with a project folder (the clients' working folder) and its database."""

    root: Path

    @classmethod
    def make(cls, root: Path) -> ClientHome:
        for name in ("home", "project", "xdg-config", "xdg-data", "xdg-state", "xdg-cache"):
            (root / name).mkdir(parents=True)
        return cls(root)

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def project(self) -> Path:
        return self.root / "project"

    @property
    def db(self) -> Path:
        return self.project / "agent.db"

    def env(self, **extra: str) -> dict[str, str]:
        """The clients' environment: this HOME, nothing of the developer's clients or proxies."""
        env = {
            key: value
            for key, value in child_env().items()
            if not key.startswith(SHELL_PREFIXES) and key.lower() not in PROXIES
        }
        # A project-scope entry runs the `sqlgate` on PATH: this installation's.
        path = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
        env.update(
            PATH=path,
            HOME=str(self.home),
            XDG_CONFIG_HOME=str(self.root / "xdg-config"),
            XDG_DATA_HOME=str(self.root / "xdg-data"),
            XDG_STATE_HOME=str(self.root / "xdg-state"),
            XDG_CACHE_HOME=str(self.root / "xdg-cache"),
            **QUIET,
        )
        env.update(extra)
        return env

    def run(
        self, argv: list[str], *, timeout: float = RUN_TIMEOUT_S, **extra: str
    ) -> subprocess.CompletedProcess[str]:
        """`argv` in the project folder with this HOME; its output, whatever its exit code."""
        return subprocess.run(
            argv,
            cwd=self.project,
            env=self.env(**extra),
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
            stdin=subprocess.DEVNULL,
            timeout=timeout,
        )

    def sqlgate(self, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        """This installation's `sqlgate ARGS` in the project folder; it must succeed."""
        done = self.run([sys.executable, "-m", "sqlgate", *args], **extra)
        assert done.returncode == 0, done.stdout + done.stderr
        return done

    def install(self, client: str) -> None:
        """`sqlgate install CLIENT` (user scope) for this HOME's database."""
        self.sqlgate("install", client, "--db", str(self.db))

    def audit_log(self, **extra: str) -> list[dict[str, Any]]:
        """The server's audit log (`sqlgate log --json`), oldest call first (`extra`: the
        environment the client gave the server, where it differs from this HOME's)."""
        done = self.sqlgate("log", "--json", "--limit", "0", "--db", str(self.db), **extra)
        return [json.loads(line) for line in reversed(done.stdout.splitlines())]
