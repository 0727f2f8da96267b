r"""Publish gate: refuse to publish when tracked files hold secrets or home-directory paths.

    python scripts/publish_gate.py                  scan `git ls-files` of this checkout
    python scripts/publish_gate.py --untracked      also scan untracked, not ignored files
    python scripts/publish_gate.py FILE ...         scan just these files

Each finding is printed as `path:line: rule: excerpt` (the matched text shortened, so the
gate never reprints a whole secret). Exit status: 0 clean, 1 findings, 2 cannot run.

A line that must hold such a string on purpose (a test fixture) carries the marker
`publish-gate: allow` somewhere on the same line, usually in a comment.

    rule            what trips it
    aws-key-id      AKIA/ASIA followed by 16 upper-case letters or digits
    private-key     a PEM header: -----BEGIN ... PRIVATE KEY-----
    github-token    ghp_/gho_/ghu_/ghs_/ghr_ + 36 or more, or github_pat_ + 22 or more
    slack-token     xoxa-/xoxb-/xoxp-/xoxr- + numeric parts + 8 or more token characters
    openai-key      sk-... with 32 or more characters of mixed case and digits
    password        password = "literal" (or : / JSON) with a literal of 8 or more
    home-path       /home/<name>, /Users/<name>, C:\Users\<name> (either slash), and
                    the root user's home folder
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "ALLOW_FILE_MARKER",
    "ALLOW_MARKER",
    "RULES",
    "Finding",
    "Rule",
    "main",
    "scan_file",
    "scan_text",
]

ALLOW_MARKER = "publish-gate: allow"
ALLOW_FILE_MARKER = "publish-gate: allow-file"
DESCRIPTION = "refuse to publish when tracked files hold secrets or home-directory paths"
MAX_FILE_BYTES = 5_000_000  # larger tracked files are data, not code; report them by name
BINARY_SNIFF_BYTES = 8192


def _mixed(text: str) -> bool:
    """Looks machine-made: upper case, lower case and digits all present."""
    return (
        any(c.isupper() for c in text)
        and any(c.islower() for c in text)
        and any(c.isdigit() for c in text)
    )


def _not_placeholder(text: str) -> bool:
    """`${VAR}`, `<password>`, `{{ secret }}`, `%(pw)s` are templates, and sqlgate's own
    `[REDACTED:name]` markers are what is left of a secret: neither is one."""
    return not text.startswith(("$", "<", "{", "%", "[REDACTED")) and len(set(text)) > 2


@dataclass(frozen=True)
class Rule:
    name: str
    pattern: re.Pattern[str]
    group: int | str = 0  # the part of the match that is the secret
    accept: Callable[[str], bool] | None = None  # extra check on that part


# The start of a path: not preceded by anything that makes it part of a longer word or URL.
_PATH_START = r"(?<![\w.~$%-])"

RULES: tuple[Rule, ...] = (
    Rule("aws-key-id", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    Rule("private-key", re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")),
    Rule(
        "github-token",
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})"),
    ),
    Rule("slack-token", re.compile(r"\bxox[abpr]-(?:[0-9]+-){1,3}[A-Za-z0-9-]{8,}")),
    Rule(
        "openai-key",
        re.compile(r"(?<![\w-])sk-(?:[a-z]+-)?(?P<body>[A-Za-z0-9_-]{32,})"),
        group="body",
        accept=_mixed,
    ),
    Rule(
        "password",
        re.compile(
            r"(?i)(?<![\w])[\w.-]*(?:password|passwd)[\"']?"
            r"(?:\s*:\s*[\w.\[\]| ]+?)?"  # an optional type annotation: `password: str = ...`
            r"\s*[:=]\s*[rbuf]?(?P<quote>[\"'])(?P<value>[^\"'\r\n]{8,})(?P=quote)"
        ),
        group="value",
        accept=_not_placeholder,
    ),
    Rule(
        "home-path",
        re.compile(
            _PATH_START + r"(?:/home/[A-Za-z0-9._-]+(?=[/\\\s\"'`),;:]|$)"
            r"|/Users/[A-Za-z0-9._-]+(?=[/\\\s\"'`),;:]|$)"
            r"|/root(?=/))"
            r"|(?i:\b[A-Z]:(?:\\+|/)Users(?:\\+|/)[A-Za-z0-9._ -]+(?:\\|/))"
        ),
    ),
)


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    rule: str
    excerpt: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.rule}: {self.excerpt}"


def _shorten(secret: str) -> str:
    """Enough to find the spot, not enough to reuse the secret."""
    return secret if len(secret) <= 12 else f"{secret[:8]}…({len(secret)} chars)"


def scan_text(text: str, path: str = "<text>") -> list[Finding]:
    """Every finding in `text`, line by line; lines with the allow marker are skipped, and
    so is a whole file that says `publish-gate: allow-file` in its first five lines (a table
    of fake secrets that a redaction test needs)."""
    findings: list[Finding] = []
    lines = text.splitlines()
    if any(ALLOW_FILE_MARKER in line for line in lines[:5]):
        return findings
    for number, line in enumerate(lines, start=1):
        if ALLOW_MARKER in line:
            continue
        for rule in RULES:
            for match in rule.pattern.finditer(line):
                secret = match.group(rule.group)
                if rule.accept is not None and not rule.accept(secret):
                    continue
                excerpt = match.group(0) if rule.name == "home-path" else _shorten(secret)
                findings.append(Finding(path, number, rule.name, excerpt))
    return findings


def scan_file(path: Path, shown_as: str | None = None) -> list[Finding]:
    """Findings in one file; binary files are skipped, oversized ones reported."""
    name = shown_as or str(path)
    if not path.is_file():  # deleted but still tracked, or a submodule
        return []
    if path.stat().st_size > MAX_FILE_BYTES:
        return [Finding(name, 0, "too-large", f"over {MAX_FILE_BYTES} bytes; check it by hand")]
    data = path.read_bytes()
    if b"\x00" in data[:BINARY_SNIFF_BYTES]:
        return []
    return scan_text(data.decode("utf-8", errors="replace"), name)


def git_files(root: Path, *, untracked: bool = False) -> list[str]:
    """Paths `git ls-files` lists under `root` (relative, `/`-separated)."""
    command = ["git", "-C", str(root), "ls-files", "-z", "--cached"]
    if untracked:
        command += ["--others", "--exclude-standard"]
    result = subprocess.run(command, capture_output=True, check=True)  # noqa: S603
    listed = result.stdout.decode("utf-8", "surrogateescape").split("\0")
    return sorted({name for name in listed if name})


def scan_files(root: Path, names: Iterable[str]) -> list[Finding]:
    findings: list[Finding] = []
    for name in names:
        findings.extend(scan_file(root / name, name))
    return findings


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=DESCRIPTION)
    parser.add_argument("files", nargs="*", help="files to scan (default: git ls-files)")
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--untracked", action="store_true", help="also untracked files")
    args = parser.parse_args(argv)
    root: Path = args.root
    if args.files:
        names: list[str] = list(args.files)
        root = Path.cwd()
    else:
        try:
            names = git_files(root, untracked=args.untracked)
        except (OSError, subprocess.CalledProcessError) as exc:
            print(f"publish gate: cannot list files with git in {root}: {exc}", file=sys.stderr)
            return 2
    findings = scan_files(root, names)
    for finding in findings:
        print(finding)
    if findings:
        print(
            f"publish gate: {len(findings)} finding(s) in {len(names)} files. Remove them, or "
            f"mark a deliberate fixture line with '{ALLOW_MARKER}'.",
            file=sys.stderr,
        )
        return 1
    print(f"publish gate: {len(names)} files clean")
    return 0


if __name__ == "__main__":
    sys.exit(main())
