"""docs/importers.md works as printed: each format's example builds a source that imports,
and the doc names every column the readers require and every source the CLI offers."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sqlgate.config import Settings
from sqlgate.surfaces.cli.imports import SOURCE_HELP
from sqlgate.surfaces.integrations.importers import SOURCES, run_import

DOC = Path(__file__).resolve().parents[3] / "docs" / "importers.md"
README = DOC.parents[1] / "README.md"
_SECTION = re.compile(r"^## (?P<name>[\w-]+)\n(?P<body>.*?)(?=^## |\Z)", re.M | re.S)
_EXAMPLE = re.compile(r"^```python\n(?P<body>.*?)^```$", re.M | re.S)


def sections() -> dict[str, str]:
    return {m["name"]: m["body"] for m in _SECTION.finditer(DOC.read_text(encoding="utf-8"))}


def test_the_doc_has_a_section_for_every_source() -> None:
    assert set(sections()) == set(SOURCES) == set(SOURCE_HELP)


@pytest.mark.parametrize(
    ("source", "counts"),
    [
        pytest.param("mycorrhiza", {"events": 2}, id="mycorrhiza"),
        pytest.param("mcp-sqlite-memory", {"events": 2, "checkpoints": 1}, id="sqlite-memory"),
        pytest.param("claims-mcp", {"claims": 2}, id="claims-mcp"),
    ],
)
def test_each_example_builds_a_source_that_imports(
    tmp_path: Path, source: str, counts: dict[str, int]
) -> None:
    (example,) = _EXAMPLE.findall(sections()[source])
    path = str(tmp_path / "source.db")
    exec(compile(example, f"docs/importers.md ({source})", "exec"), {"path": path})
    report = run_import(Settings(db=tmp_path / "agent.db"), source, Path(path))
    assert report.status == "imported"
    assert {key: getattr(report, key) for key in counts} == counts
    assert (report.skipped, report.redacted) == ({}, {})


@pytest.mark.parametrize(
    ("source", "columns"),
    [
        pytest.param(
            "mycorrhiza", ["seq", "ts", "prev_hash", "content", "tags", "hash"], id="mycorrhiza"
        ),
        pytest.param(
            "mcp-sqlite-memory",
            ["id", "ts", "session", "kind", "content", "prev_hash", "hash", "tags", "summary",
             "last_event_id", "head_hash"],
            id="sqlite-memory",
        ),
        pytest.param(
            "claims-mcp",
            ["id", "entity", "kind", "claim", "volatility", "confidence", "asserted_rank",
             "rank", "state", "last_confirmed", "updated_at", "created_at"],
            id="claims-mcp",
        ),
    ],
)  # fmt: skip
def test_the_doc_names_every_column_a_reader_reads(source: str, columns: list[str]) -> None:
    body = sections()[source]
    assert [c for c in columns if f"`{c}`" not in body] == []


def test_the_readme_links_the_formats_and_the_doc_names_each_command() -> None:
    assert "(docs/importers.md)" in README.read_text(encoding="utf-8")
    doc = DOC.read_text(encoding="utf-8")
    assert [s for s in SOURCES if f"`sqlgate import {s} PATH" not in doc] == []
    assert "--skip-bad" in doc
