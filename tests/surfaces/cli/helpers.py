"""Helpers for CLI tests: results, their one error line, JSON lines, and reading a database."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import apsw
from click.testing import CliRunner, Result

from sqlgate.surfaces.cli.app import main
from tests.records import connect_both

__all__ = ["error_line", "invoke", "json_lines", "read", "succeeded"]


def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    """Run `sqlgate ARGS` through click's CliRunner."""
    return CliRunner().invoke(main, list(args), env=env, prog_name="sqlgate")


def succeeded(result: Result) -> str:
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result.stdout


def error_line(result: Result, code: int) -> str:
    """The one stderr line an error ends a command with."""
    assert result.exit_code == code, (result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("sqlgate: error: ")
    return lines[0]


def json_lines(output: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in output.splitlines()]


def read(db: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = connect_both(db, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return [tuple(row) for row in conn.execute(sql)]
    finally:
        conn.close()
