"""server.json, the entry for the official MCP Registry, is valid and says what the code does.

- valid against the registry's 2025-12-11 JSON schema (tests/data/server.schema.json, kept
  byte for byte: its digest is checked), and that schema is what its `$schema` names;
- its name is the README's `mcp-name:` line (how the registry checks the PyPI package is
  ours), its versions are pyproject's;
- its package starts the server: PyPI's `sqlgate`, run as `sqlgate serve` on stdio, and every
  environment variable it names is one the server reads.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from sqlgate.config import FLAGS

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
SCHEMA_FILE = ROOT / "tests" / "data" / "server.schema.json"
SCHEMA_SHA256 = "3fba09590c99f61735d234822279f4223fab9e300c0a81e81c91ab62a4114de0"
SCHEMA_URL = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"


def server_json() -> dict[str, Any]:
    found: dict[str, Any] = json.loads((ROOT / "server.json").read_text(encoding="utf-8"))
    return found


def schema() -> dict[str, Any]:
    found: dict[str, Any] = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    return found


def problems(entry: dict[str, Any]) -> list[str]:
    validator = jsonschema.Draft7Validator(schema(), format_checker=jsonschema.FormatChecker())
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
            for e in validator.iter_errors(entry)]  # fmt: skip


def the_package() -> dict[str, Any]:
    (package,) = server_json()["packages"]
    assert isinstance(package, dict)
    return package


def test_the_stored_schema_is_the_published_2025_12_11_one() -> None:
    assert hashlib.sha256(SCHEMA_FILE.read_bytes()).hexdigest() == SCHEMA_SHA256
    assert schema()["$id"] == SCHEMA_URL
    assert SCHEMA_SHA256 in (ROOT / "tests" / "data" / "README.md").read_text(encoding="utf-8")


def test_server_json_is_valid_against_the_registry_schema() -> None:
    assert server_json()["$schema"] == SCHEMA_URL
    assert problems(server_json()) == []


@pytest.mark.parametrize(
    ("path", "value"),
    [
        pytest.param(("description",), "x" * 101, id="description-over-100"),
        pytest.param(("name",), "sqlgate", id="name-without-namespace"),
        pytest.param(("packages", 0, "version"), "latest", id="package-version-latest"),
        pytest.param(("packages", 0, "transport"), {"type": "carrier-pigeon"}, id="transport"),
    ],
)
def test_the_validation_refuses_a_broken_entry(path: tuple[str | int, ...], value: Any) -> None:
    broken = copy.deepcopy(server_json())
    parent: Any = broken
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = value
    assert problems(broken)


def test_the_versions_are_pyprojects() -> None:
    with (ROOT / "pyproject.toml").open("rb") as file:
        version = tomllib.load(file)["project"]["version"]
    assert server_json()["version"] == version
    assert the_package()["version"] == version


def test_the_name_is_the_readmes_mcp_name_line() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    names = re.findall(r"<!-- mcp-name: (\S+) -->", readme)
    assert names == [server_json()["name"]]


def test_the_package_runs_sqlgate_serve_on_stdio() -> None:
    from click.testing import CliRunner

    from sqlgate.surfaces.cli.app import main

    package = the_package()
    assert (package["registryType"], package["identifier"]) == ("pypi", "sqlgate")
    assert package["transport"] == {"type": "stdio"}
    words = [argument["value"] for argument in package["packageArguments"]]
    assert words == ["serve"]
    result = CliRunner().invoke(main, [*words, "--help"], prog_name="sqlgate")
    assert result.exit_code == 0, result.output
    assert "stdio" in result.output  # what `serve` speaks by default


def test_every_environment_variable_is_one_the_server_reads() -> None:
    known = {flag.env_var for flag in FLAGS}
    named = [variable["name"] for variable in the_package()["environmentVariables"]]
    assert "SQLGATE_DB" in named
    assert set(named) <= known, set(named) - known
    assert len(named) == len(set(named))


def test_each_variables_default_and_choices_are_accepted_by_its_flag() -> None:
    by_variable = {flag.env_var: flag for flag in FLAGS}
    for variable in the_package()["environmentVariables"]:
        flag = by_variable[variable["name"]]
        for value in [variable.get("default"), *variable.get("choices", [])]:
            if value is not None:
                flag.parse(value)  # raises on a value the server would refuse
