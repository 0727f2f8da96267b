"""Redaction: secrets never reach the memory tables, so they never reach the chain.

Every pattern is RE2 (linear time, so an extra pattern from a file cannot hang a call) and
replaces what it matches with a typed marker, `[REDACTED:<name>]`. Text inside
`<private>…</private>` is dropped whole, nested blocks included (the block ends at the
`</private>` that closes the first `<private>`; an unclosed one drops the rest). A token
with a known prefix (AKIA…, ghp_…, xoxb-…, sqg_…, sk-…, eyJ…) counts as one when no letter or digit
touches it, so `AWS_KEY_AKIA…` and `MY_TOKEN=ghp_…` are caught, while `task-123…` is not.

What is meant to survive: environment variable *names* (`OPENAI_API_KEY`, `$GITHUB_TOKEN`),
hex digests (the chain's own hashes), UUIDs, and ordinary code such as
`password = get_password()` or `token: str`. An assignment's value is redacted when it is a
quoted literal (its quotes are kept: `{"password": "[REDACTED:secret]"}`, and a quoted
key counts), or a bare value written tightly (`password=hunter2`, `--token=abc123`), or a
bare value with a digit or symbol in it (`secret: s3cr3t!`), but not when it is a variable
reference, a placeholder or an identifier (`token = self.token`), a code literal
(`token=None`), a path (`PWD=/srv/app`), or when the key names something about the secret
rather than the secret itself (`token_limit=4096`, `secret_file=...`, `access_key_id=...`).
A bearer token must look like one (a digit in it, or 24+ characters), so prose such as
"Bearer authentication" survives.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlgate.errors import InvalidArgument

__all__ = ["DEFAULT_PATTERNS", "Redaction", "Redactor", "load_extra_patterns"]

# (marker name, RE2 pattern); the whole match is replaced unless the pattern has a group
# named `secret`, in which case only that group is
DEFAULT_PATTERNS: tuple[tuple[str, str], ...] = (
    ("private-key",
     r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----(?s:.*?)(?:-----END[A-Z0-9 ]*PRIVATE KEY-----|\z)"),
    ("aws-key", r"(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}"),
    ("github-token", r"(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})"),
    ("slack-token", r"xox[abposr]-[A-Za-z0-9-]{10,}"),
    # a sqlgate member's token (engine/records/members.py): sqg_ and 43 URL-safe characters
    ("sqlgate-token", r"sqg_[A-Za-z0-9_-]{40,}"),
    ("api-key", r"sk-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_]{20,}"),
    ("jwt", r"eyJ[A-Za-z0-9_-]{6,}\.eyJ[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{6,}"),
    ("bearer-token", r"(?i)\bbearer\s+(?P<secret>[A-Za-z0-9._~+/-]{12,}=*)"),
    ("url-password", r"[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]+:(?P<secret>[^/\s@]+)@"),
)  # fmt: skip

# key = value assignments whose key names a secret
_ASSIGNMENT = (
    # the secret word ends the key or is followed by a separator: `auth_token`, `secret_key`,
    # but not `max_tokens` or `author`
    r"(?i)(?P<key>[A-Za-z0-9_.-]*?(?:password|passwd|pwd|secret|token|api[_-]?key|"
    r"access[_-]?key|private[_-]?key|credentials?|auth)(?:[_.-][A-Za-z0-9_.-]*)?)"
    r"(?P<sep>[\"']?\s*[:=]\s*)"  # a quoted key (JSON, dicts) closes its quote
    r"(?P<value>\"[^\"\n]*\"|'[^'\n]*'|[^\s,;&\"'()\[\]{}<>]+)"
)
_REFERENCE_STARTS = ("$", "%", "{{", "<", "*", "os.", "env.", "process.env", "self.", "this.")
_PATH_STARTS = ("/", "~/", "./", "../")
_CODE_LITERALS = frozenset(["none", "null", "nil", "true", "false", "undefined"])
# a key ending in one of these words names something about a secret, not the secret
_ABOUT_WORDS = frozenset((
    "id", "ids", "name", "names", "type", "kind", "count", "limit", "len", "length", "size",
    "max", "min", "timeout", "ttl", "expiry", "expires", "file", "path", "dir", "url", "uri",
    "endpoint", "env", "var", "header", "field", "prompt", "policy", "mode", "required",
    "enabled", "disabled",
))  # fmt: skip
_KEY_PARTS = re.compile(r"[_.-]")
_SYMBOLS = set("0123456789!@#%^*+/=~-_")
_DIGIT = re.compile(r"[0-9]")
# named patterns whose match must also pass a plausibility check to be redacted
_PLAUSIBLE: dict[str, Callable[[str], bool]] = {
    "bearer-token": lambda token: bool(_DIGIT.search(token)) or len(token) >= 24,
}
# prefixed tokens: a match counts only where no letter or digit touches it on either side
# (RE2's \b would take `_` for a letter, and miss AWS_KEY_AKIA…)
_ALONE = frozenset({"aws-key", "github-token", "slack-token", "api-key", "jwt"})
PRIVATE_TAG = r"(?i)<(/?)private>"
_NAMED_GROUP = re.compile(r"\(\?P<\w+>")
_CACHED_TEXTS, _CACHED_CHARS = 4096, 512  # at most 2 MiB of short texts remembered
_ESCAPE_BEFORE = re.compile(r"\\(?:[ntrfvab0]|x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8})\Z")
Replace = Callable[[Any], str]


@dataclass
class Redaction:
    """Redacted text and how many of each marker were put in."""

    text: str
    counts: dict[str, int] = field(default_factory=dict)


def _options() -> Any:
    import re2  # on the first compile: a command that redacts nothing never loads it

    options = re2.Options()
    options.log_errors = False
    options.max_mem = 16 << 20
    return options


def _compile(name: str, pattern: str) -> Any:
    import re2

    try:
        return re2.compile(pattern, _options())
    except re2.error as exc:
        detail = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else exc
        raise InvalidArgument(f"redaction pattern {name!r} is not valid RE2: {detail}") from None


def _stands_alone(text: str, start: int, end: int) -> bool:
    """Whether no letter or digit touches text[start:end] on either side. An escape such as
    `\\n` or `\\x0a` just before it (a value shown with repr() in a message) is a boundary."""
    before = text[start - 1] if start > 0 else ""
    after = text[end] if end < len(text) else ""
    if after.isalnum():
        return False
    return (
        not before.isalnum() or _ESCAPE_BEFORE.search(text, max(0, start - 10), start) is not None
    )


def _looks_secret(key: str, value: str, separator: str) -> bool:
    """Whether an assignment's value is a literal secret rather than code or a reference."""
    if _KEY_PARTS.split(key.lower())[-1] in _ABOUT_WORDS:
        return False
    if value[:1] in "\"'":
        inner = value[1:-1]
        return len(inner) >= 4 and not inner.startswith(_REFERENCE_STARTS)
    if (
        len(value) < 4
        or value.startswith(_REFERENCE_STARTS + _PATH_STARTS)
        or value.endswith(":")
        or value.lower() in _CODE_LITERALS
    ):
        return False
    tight = not any(c.isspace() for c in separator)
    return tight or bool(_SYMBOLS.intersection(value) - {"_"} and not value.isidentifier())


@dataclass(frozen=True)
class _Rules:
    private: Any
    patterns: list[tuple[str, Any]]
    assignment: Any
    any: Any


class Redactor:
    """Applies the private-block rule, the named patterns, then secret assignments."""

    def __init__(self, extra: tuple[tuple[str, str], ...] = (), *, enabled: bool = True) -> None:
        self.enabled = enabled
        self._extra = extra
        self._remembered = functools.lru_cache(maxsize=_CACHED_TEXTS)(
            lambda text: self.redact(text).text
        )
        if extra:
            _ = self._rules  # a bad extra pattern stops the caller here, not at the first text

    @functools.cached_property
    def _rules(self) -> _Rules:
        """The compiled patterns, built on first use: the defaults are known to compile, and
        a command that stores no text (capture's SessionStart) never pays for them."""
        extra = self._extra
        # one linear search that matches wherever any rule could: most texts (SQL, ids,
        # words) match none, and need no pass of their own per pattern
        every = (PRIVATE_TAG, *(p for _, p in (*DEFAULT_PATTERNS, *extra)), _ASSIGNMENT)
        return _Rules(
            private=_compile("private", PRIVATE_TAG),
            patterns=[(name, _compile(name, p)) for name, p in (*DEFAULT_PATTERNS, *extra)],
            assignment=_compile("assignment", _ASSIGNMENT),
            any=_compile("any", "|".join(f"(?:{_NAMED_GROUP.sub('(?:', p)})" for p in every)),
        )

    def redact(self, text: str) -> Redaction:
        if not self.enabled or self._rules.any.search(text) is None:
            return Redaction(text)
        counts: dict[str, int] = {}

        def count(name: str) -> None:
            counts[name] = counts.get(name, 0) + 1

        text = self._without_private(text, count)
        for name, pattern in self._rules.patterns:
            text = pattern.sub(self._marker(name, pattern, count), text)
        text = self._rules.assignment.sub(self._assigned(count), text)
        return Redaction(text, counts)

    def redact_text(self, text: str) -> str:
        """`redact(text).text`: for texts the server stores about a call (the audit log).

        Short texts are remembered: agents repeat their statements, and every audit row
        redacts a few texts (the statement, its fingerprint, its kind)."""
        if not self.enabled:
            return text
        if len(text) <= _CACHED_CHARS:
            return self._remembered(text)
        return self.redact(text).text

    def _without_private(self, text: str, count: Callable[[str], None]) -> str:
        """`text` without its `<private>` blocks; a block ends where its nesting closes."""
        kept: list[str] = []
        depth, start = 0, 0
        for tag in self._rules.private.finditer(text):
            if tag.group(1):  # a closing tag
                if depth == 0:
                    continue  # closes nothing: it is just text
                depth -= 1
                if depth == 0:
                    start = tag.end()
            else:
                if depth == 0:
                    kept.append(text[start : tag.start()])
                    count("private")
                depth += 1
        if depth == 0:
            kept.append(text[start:])
        return "".join(kept)

    @staticmethod
    def _marker(name: str, pattern: Any, count: Callable[[str], None]) -> Replace:
        # with a `secret` group only that group is replaced, the context around it is kept
        group = pattern.groupindex.get("secret")

        plausible = _PLAUSIBLE.get(name)
        alone = name in _ALONE

        def replace(match: Any) -> str:
            secret = match.group(group) if group is not None else None
            if plausible is not None and not plausible(str(secret or match.group(0))):
                return str(match.group(0))
            if alone and not _stands_alone(match.string, match.start(), match.end()):
                return str(match.group(0))
            count(name)
            marker = f"[REDACTED:{name}]"
            if secret is None:
                return marker
            start, end = match.span(group)
            whole_start, whole = match.start(), str(match.group(0))
            return whole[: start - whole_start] + marker + whole[end - whole_start :]

        return replace

    @staticmethod
    def _assigned(count: Callable[[str], None]) -> Replace:
        def replace(match: Any) -> str:
            key, sep, value = match.group("key"), match.group("sep"), match.group("value")
            if "[REDACTED:" in value or not _looks_secret(key, value, sep):
                return str(match.group(0))
            count("secret")
            quote = value[0] if value[0] in "\"'" else ""  # a quoted value keeps its quotes
            return f"{key}{sep}{quote}[REDACTED:secret]{quote}"

        return replace


def load_extra_patterns(path: Path) -> tuple[tuple[str, str], ...]:
    """Patterns from a file: one per line, `NAME REGEX` or just `REGEX`; `#` starts a comment.

    NAME (letters, digits, - and _) becomes the marker, `[REDACTED:NAME]`; a line without
    one is named `custom-<line number>`. A line that is not valid RE2, or whose pattern
    matches the empty string (it would put a marker between every two characters), is an
    error naming the file and line.
    """
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise InvalidArgument(f"cannot read redaction patterns {path}: {reason}") from None
    patterns: list[tuple[str, str]] = []
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, _, rest = line.partition(" ")
        if not (rest.strip() and all(c.isalnum() or c in "-_" for c in name)):
            name, rest = f"custom-{number}", line
        pattern = rest.strip()
        try:
            compiled = _compile(name, pattern)  # report a bad line now, not at the first append
        except InvalidArgument as exc:
            raise InvalidArgument(f"{path} line {number}: {exc}") from None
        if compiled.search("") is not None:
            raise InvalidArgument(
                f"{path} line {number}: redaction pattern {name!r} matches empty text; "
                "it must match at least one character"
            )
        patterns.append((name, pattern))
    return tuple(patterns)
