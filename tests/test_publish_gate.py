"""The publish gate finds committed secrets and home paths, and nothing else.

Lines below that hold secret-shaped fixtures carry the gate's own opt-out marker.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parent.parent


def _load_gate() -> ModuleType:
    spec = importlib.util.spec_from_file_location("publish_gate", REPO / "scripts/publish_gate.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


gate = _load_gate()


def rules_found(text: str) -> list[str]:
    return [finding.rule for finding in gate.scan_text(text)]


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        pytest.param(
            "aws_key = AKIAIOSFODNN7EXAMPLE",  # publish-gate: allow
            "aws-key-id",
            id="aws-akia",
        ),
        pytest.param(
            "ASIAY34FZKBOKMUTVV7A in a log",  # publish-gate: allow
            "aws-key-id",
            id="aws-asia",
        ),
        pytest.param(
            "-----BEGIN RSA PRIVATE KEY-----",  # publish-gate: allow
            "private-key",
            id="pem-rsa",
        ),
        pytest.param(
            "-----BEGIN OPENSSH PRIVATE KEY-----",  # publish-gate: allow
            "private-key",
            id="pem-openssh",
        ),
        pytest.param(
            "-----BEGIN PRIVATE KEY-----",  # publish-gate: allow
            "private-key",
            id="pem-pkcs8",
        ),
        pytest.param(
            "-----BEGIN ENCRYPTED PRIVATE KEY-----",  # publish-gate: allow
            "private-key",
            id="pem-encrypted",
        ),
        pytest.param(
            "-----BEGIN PGP PRIVATE KEY BLOCK-----",  # publish-gate: allow
            "private-key",
            id="pgp-block",
        ),
        pytest.param(
            "token: ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",  # publish-gate: allow
            "github-token",
            id="ghp",
        ),
        pytest.param(
            "gho_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",  # publish-gate: allow
            "github-token",
            id="gho",
        ),
        pytest.param(
            "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",  # publish-gate: allow
            "github-token",
            id="fine-grained-pat",
        ),
        pytest.param(
            "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",  # publish-gate: allow
            "slack-token",
            id="slack-bot",
        ),
        pytest.param(
            "xoxp-1234567890-1234567890-1234567890-0123456789abcdef",  # publish-gate: allow
            "slack-token",
            id="slack-user",
        ),
        pytest.param(
            'KEY = "sk-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789AbCdEfGhIjKl"',  # publish-gate: allow
            "openai-key",
            id="openai-legacy",
        ),
        pytest.param(
            "sk-proj-Ab3dEf6hIj9lMn2pQr5tUv8xYz_1Bc4eFg7iJk0mNo3qRs",  # publish-gate: allow
            "openai-key",
            id="openai-project",
        ),
        pytest.param(
            'password = "correct-horse-9"',  # publish-gate: allow
            "password",
            id="password-assignment",
        ),
        pytest.param(
            "DB_PASSWORD: str = 'hunter2hunter2'",  # publish-gate: allow
            "password",
            id="password-annotated",
        ),
        pytest.param(
            '{"password": "s3cr3t-value"}',  # publish-gate: allow
            "password",
            id="password-json",
        ),
        pytest.param(
            "self.passwd='abcdefgh1'",  # publish-gate: allow
            "password",
            id="passwd-attribute",
        ),
        pytest.param(
            "see /home/alice/project/notes.txt",  # publish-gate: allow
            "home-path",
            id="linux-home",
        ),
        pytest.param(
            "cd /home/alice",  # publish-gate: allow
            "home-path",
            id="linux-home-no-slash",
        ),
        pytest.param(
            "file:///home/alice/x.db",  # publish-gate: allow
            "home-path",
            id="file-url",
        ),
        pytest.param(
            '"/Users/bob/Library/Application Support"',  # publish-gate: allow
            "home-path",
            id="macos-home",
        ),
        pytest.param(
            r"C:\Users\carol\AppData\Local",  # publish-gate: allow
            "home-path",
            id="windows-home",
        ),
        pytest.param(
            "C:\\\\Users\\\\carol\\\\x",  # publish-gate: allow
            "home-path",
            id="windows-home-escaped",
        ),
        pytest.param(
            "c:/users/carol/x",  # publish-gate: allow
            "home-path",
            id="windows-home-forward-slashes",
        ),
        pytest.param(
            "/root/.ssh/id_ed25519",  # publish-gate: allow
            "home-path",
            id="root-home",
        ),
    ],
)
def test_secret_or_home_path_is_found(text: str, rule: str) -> None:
    assert rules_found(text) == [rule]


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("123e4567-e89b-12d3-a456-426614174000", id="uuid"),
        pytest.param(
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", id="sha256-hex"
        ),
        pytest.param(
            "E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855", id="sha256-upper"
        ),
        pytest.param("dGhpcyBpcyBub3QgYSBzZWNyZXQgYXQgYWxs", id="base64-text"),
        pytest.param("$HOME/.local/share/sqlgate/memory.db", id="home-variable"),
        pytest.param("~/.config/sqlgate", id="tilde"),
        pytest.param("~/.local/share/sqlgate/memory.db", id="tilde-data-dir"),
        pytest.param("%LOCALAPPDATA%\\sqlgate\\memory.db", id="windows-variable"),
        pytest.param("/path/to/sqlgate/.venv/bin/sqlgate", id="placeholder-path"),
        pytest.param("/home/<name>/ and /Users/<name>/", id="angle-placeholders"),
        pytest.param("C:\\Users\\<name>\\ or C:\\Users\\%USERNAME%\\", id="windows-placeholders"),
        pytest.param("https://example.com/home/page/", id="url-with-home-segment"),
        pytest.param("/srv/data/home/alice/", id="home-deeper-in-a-path"),
        pytest.param("/usr/local/bin and /var/lib", id="system-paths"),
        pytest.param("/rootfs/x and chroot/ dir", id="root-lookalikes"),
        pytest.param("-----BEGIN PUBLIC KEY-----", id="public-key"),
        pytest.param("-----BEGIN CERTIFICATE-----", id="certificate"),
        pytest.param("ghp_short", id="short-github-prefix"),
        pytest.param("xoxb-your-token-here", id="slack-placeholder"),
        pytest.param("sk-learn", id="sklearn"),
        pytest.param("sk-this-is-a-long-kebab-case-name-for-the-docs", id="sk-kebab-slug"),
        pytest.param("task-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", id="sk-inside-a-word"),
        pytest.param('password = "short"', id="password-too-short"),
        pytest.param('password = os.environ["DB_PASSWORD"]', id="password-from-env"),
        pytest.param('password = "${DB_PASSWORD}"', id="password-template"),
        pytest.param('password = "<your password>"', id="password-angle-placeholder"),
        pytest.param('password_hint = "a long hint text"', id="password-prefix-name"),
        pytest.param('if password == "abcdefghij":', id="password-comparison"),
        pytest.param("password = None", id="password-none"),
    ],
)
def test_harmless_text_is_not_flagged(text: str) -> None:
    assert gate.scan_text(text) == []


@settings(max_examples=100, deadline=None)
@given(st.uuids())
def test_no_uuid_is_flagged(value: object) -> None:
    assert gate.scan_text(f"id = {value}") == []


@settings(max_examples=100, deadline=None)
@given(st.binary(min_size=20, max_size=64))
def test_no_hex_digest_is_flagged(value: bytes) -> None:
    assert gate.scan_text(f"digest = {value.hex()}") == []
    assert gate.scan_text(f"DIGEST = {value.hex().upper()}") == []


def test_allow_marker_exempts_only_its_own_line() -> None:
    key = "AKIA" + "IOSFODNN7EXAMPLE"
    text = f"fixture = '{key}'  # {gate.ALLOW_MARKER}\nleaked = '{key}'\n"
    findings = gate.scan_text(text, "x.py")
    assert [(f.path, f.line, f.rule) for f in findings] == [("x.py", 2, "aws-key-id")]


def test_finding_prints_file_line_rule_and_a_shortened_secret() -> None:
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    (finding,) = gate.scan_text(f"\n\nuse {token}\n", "conf/app.ini")
    printed = str(finding)
    assert printed.startswith("conf/app.ini:3: github-token: ghp_A1b2")
    assert token not in printed


def test_every_match_on_a_line_is_reported() -> None:
    line = "/home/alice/a and /Users/bob/b"  # publish-gate: allow
    assert rules_found(line) == ["home-path", "home-path"]


def test_binary_files_are_skipped(tmp_path: Path) -> None:
    blob = tmp_path / "data.bin"
    blob.write_bytes(b"\x00\x01" + ("AKIA" + "IOSFODNN7EXAMPLE").encode())
    assert gate.scan_file(blob) == []


def test_main_reports_findings_with_exit_code_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dirty = tmp_path / "settings.py"
    dirty.write_text('name = "x"\npassword = "' + "hunter2" * 2 + '"\n', encoding="utf-8")
    clean = tmp_path / "clean.py"
    clean.write_text("path = '~/.config/app'\n", encoding="utf-8")

    assert gate.main([str(clean), str(dirty)]) == 1
    out = capsys.readouterr().out
    assert f"{dirty}:2: password:" in out
    assert str(clean) not in out


def test_main_exits_0_on_clean_files(tmp_path: Path) -> None:
    clean = tmp_path / "clean.md"
    clean.write_text("Data lives in `~/.local/share/sqlgate/memory.db`.\n", encoding="utf-8")
    assert gate.main([str(clean)]) == 0


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_main_exits_2_outside_a_git_checkout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    assert gate.main(["--root", str(tmp_path)]) == 2


def _is_git_checkout(root: Path) -> bool:
    if shutil.which("git") is None or not (root / ".git").exists():
        return False
    probe = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "--is-inside-work-tree"],
        capture_output=True,
        check=False,
    )
    return probe.returncode == 0


def test_this_repository_passes_the_gate() -> None:
    if not _is_git_checkout(REPO):
        pytest.skip("not a git checkout")
    names = gate.git_files(REPO)
    assert "scripts/publish_gate.py" in names or "README.md" in names
    findings = gate.scan_files(REPO, names)
    assert findings == [], "\n".join(map(str, findings))


def test_a_file_marked_allow_file_in_its_first_lines_is_skipped_whole() -> None:
    fake = "key = '" + "AKIA" + "IOSFODNN7EXAMPLE'\n"
    assert rules_found("# publish-gate: " + "allow-file\n" + fake) == []
    late = "\n" * 6 + "# publish-gate: " + "allow-file\n" + fake
    assert rules_found(late) == ["aws-key-id"]
