"""Every schema `sqlgate serve` announces compiles without a word from ajv (npm, pinned), the
validator Gemini CLI checks tool schemas with: in full strict mode with union types refused, and
configured as Gemini CLI configures it, for every tool, on both protocol revisions.

ajv and ajv-formats are pinned in tests/e2e/ajv/package.json + package-lock.json, installed by a
session fixture with `npm ci` (skipped when npm is missing or the registry is unreachable);
tests/e2e/ajv/compile.js compiles the schemas and reports what ajv logged or threw.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import stdio_client

from sqlgate.surfaces.mcp.server import CLAIMS_TOOLS, MEMORY_TOOLS, SQL_TOOLS
from tests.npm_pins import npm_ci
from tests.surfaces.mcp.test_stdio import serve_params

pytestmark = [pytest.mark.stdio, pytest.mark.e2e, pytest.mark.anyio]

AJV_DIR = Path(__file__).resolve().parents[2] / "e2e" / "ajv"
PACKAGES = ("ajv", "ajv-formats")
RUN_TIMEOUT_S = 60
CONFIGS = {"strict", "strict-2020", "gemini", "gemini-2020"}  # as compile.js names them
REVISIONS = ["legacy", "2026-07-28"]  # the handshake (2025-11-25 and before), and without it


@pytest.fixture(scope="session")
def node() -> str:
    """The `node` binary, with the pinned ajv installed beside compile.js (`npm ci`)."""
    return npm_ci(AJV_DIR)


def ajv_says(node: str, schemas: dict[str, Any]) -> dict[str, list[str]]:
    """What ajv logged or threw compiling each schema, by `name (config)`; only the schemas it
    spoke of."""
    given = [{"name": name, "schema": schema} for name, schema in schemas.items()]
    done = subprocess.run(
        [node, str(AJV_DIR / "compile.js")], input=json.dumps(given), capture_output=True,
        text=True, encoding="utf-8", timeout=RUN_TIMEOUT_S, cwd=AJV_DIR,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    answers = json.loads(done.stdout)
    assert {(a["name"], a["config"]) for a in answers} == {
        (name, config) for name in schemas for config in CONFIGS
    }
    return {f"{a['name']} ({a['config']})": a["said"] for a in answers if a["said"]}


@pytest.fixture
async def announced(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Any]:
    """The tools a `sqlgate serve` process lists, as a client of the revision asked for."""
    errlog = (tmp_path / "server-stderr.txt").open("w+", encoding="utf-8")
    params = serve_params(tmp_path / "agent.db")
    try:
        async with Client(stdio_client(params, errlog=errlog), mode=request.param) as client:
            yield (await client.list_tools()).tools
    finally:
        errlog.close()


@pytest.mark.parametrize(
    "schema",
    [
        pytest.param({"type": "object", "properties": {"a": {"type": ["string", "integer"]}}},
                     id="union-type"),
        pytest.param({"type": "object", "required": ["a"]}, id="required-not-a-property"),
        pytest.param({"type": "array", "items": [{"type": "string"}]}, id="tuple"),
    ],
)  # fmt: skip
def test_ajv_speaks_up_on_a_schema_strict_mode_refuses(node: str, schema: dict[str, Any]) -> None:
    said = ajv_says(node, {"bad": schema})
    assert "bad (strict)" in said
    assert all(line.startswith("error: strict mode") for line in said["bad (strict)"])


def test_ajv_says_nothing_of_gemini_s_union_only_in_strict_mode(node: str) -> None:
    # the warning Gemini CLI prints: logged, not thrown
    said = ajv_says(node, {"bad": {"type": ["string", "integer"]}})
    assert said["bad (gemini)"] == [
        'strict mode: use allowUnionTypes to allow union type keyword at "#" (strictTypes)'
    ]


@pytest.mark.parametrize("announced", REVISIONS, indirect=True)
async def test_every_announced_schema_compiles_without_a_word(node: str, announced: Any) -> None:
    assert sorted(tool.name for tool in announced) == sorted(
        SQL_TOOLS + MEMORY_TOOLS + CLAIMS_TOOLS
    )
    schemas = {f"{tool.name} inputSchema": tool.input_schema for tool in announced}
    schemas |= {
        f"{tool.name} outputSchema": tool.output_schema
        for tool in announced
        if tool.output_schema is not None
    }
    assert ajv_says(node, schemas) == {}
