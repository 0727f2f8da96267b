"""`sqlgate ui`: the host and token rules before anything opens, and the URL it prints."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from sqlgate.surfaces.cli.app import main
from sqlgate.surfaces.ui.serve import console_url
from sqlgate.surfaces.web.access import Token


def test_a_public_host_without_a_chosen_token_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "agent.db"
    result = CliRunner().invoke(main, ["ui", "--db", str(db), "--host", "0.0.0.0"], env={})
    assert result.exit_code == 2
    assert "not a loopback address" in result.output
    assert list(tmp_path.iterdir()) == []


def test_a_short_token_is_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["ui", "--db", str(tmp_path / "a.db"), "--token", "short"])
    assert result.exit_code == 2
    assert "at least 16 characters" in result.output


def test_a_missing_database_is_not_created(tmp_path: Path) -> None:
    db = tmp_path / "missing.db"
    result = CliRunner().invoke(main, ["ui", "--db", str(db), "--port", "0"], env={})
    assert result.exit_code == 3
    assert "no database at" in result.output
    assert not db.exists()


def test_the_printed_url_carries_a_generated_token_only() -> None:
    generated = Token("g" * 20, generated=True)
    chosen = Token("c" * 20, generated=False)
    assert console_url("127.0.0.1", 8766, generated) == f"http://127.0.0.1:8766/?token={'g' * 20}"
    assert console_url("::1", 9, chosen) == "http://[::1]:9/"


def test_ui_is_a_command_with_its_flags() -> None:
    result = CliRunner().invoke(main, ["ui", "--help"])
    assert result.exit_code == 0
    for flag in ("--db", "--host", "--port", "--token", "SQLGATE_TOKEN"):
        assert flag in result.output


def test_the_help_and_the_manual_say_how_long_the_token_is_valid() -> None:
    """The token is valid until the console stops (issue 30): no page says one-time."""
    result = CliRunner().invoke(main, ["ui", "--help"], env={"COLUMNS": "200"})
    assert "valid until the console stops" in " ".join(result.output.split())
    root = Path(__file__).resolve().parents[3]
    pages = [root / "README.md", *sorted((root / "docs").rglob("*.md"))]
    saying = [p.name for p in pages if "one-time" in p.read_text(encoding="utf-8").lower()]
    assert "one-time" not in result.output.lower()
    assert saying == []
