# publish-gate: allow-file - the fake secrets below are this test's fixtures
"""Redaction in both directions: secrets become typed markers, ordinary text survives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sqlgate.errors import InvalidArgument
from sqlgate.memory.privacy import Redactor, load_extra_patterns
from sqlgate.service import Service
from tests.memory.conftest import OpenMemory, append_many, count_rows, rows, witness_of

JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\nq0xs==\n-----END RSA PRIVATE KEY-----"

# (text, what must disappear, marker that must appear)
SECRETS = [
    pytest.param("key AKIAIOSFODNN7EXAMPLE in use", "AKIAIOSFODNN7EXAMPLE", "aws-key", id="aws"),
    pytest.param("temp ASIAIOSFODNN7EXAMPLE", "ASIAIOSFODNN7EXAMPLE", "aws-key", id="aws-temp"),
    pytest.param("sk-proj-abcDEF1234567890ghijKLMN", "abcDEF1234567890", "api-key", id="sk-proj"),
    pytest.param("OPENAI_API_KEY=sk-abcdefghij0123456789XYZ", "sk-abcdefghij", "api-key",
                 id="sk-assigned"),
    pytest.param("ghp_" + "a1B2" * 9, "a1B2a1B2", "github-token", id="ghp"),
    pytest.param("gho_" + "Z9" * 18, "Z9Z9Z9", "github-token", id="gho"),
    pytest.param("github_pat_11ABCDEFG0123456789_abcdefghijkl", "11ABCDEFG", "github-token",
                 id="github-pat"),
    pytest.param("xoxb-1234567890-abcdefghijkl", "1234567890", "slack-token", id="slack-bot"),
    pytest.param("xoxp-98765-43210-zyxw", "98765", "slack-token", id="slack-user"),
    pytest.param("my token is sqg_" + "Q-9_" * 11, "Q-9_Q-9_", "sqlgate-token", id="sqlgate"),
    pytest.param(f"cookie {JWT}", "dozjgNry", "jwt", id="jwt"),
    pytest.param("Authorization: Bearer abc123def456ghi789", "abc123def456", "bearer-token",
                 id="bearer-header"),
    pytest.param("curl -H 'authorization: bearer Zm9vYmFyYmF6cXV4MTIz=='", "Zm9vYmFy",
                 "bearer-token", id="bearer-lowercase"),
    pytest.param(PEM, "MIIEow", "private-key", id="pem-rsa"),
    pytest.param(PEM.replace("RSA", "OPENSSH"), "MIIEow", "private-key", id="pem-openssh"),
    pytest.param("-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE cut off here", "MHcCAQEE",
                 "private-key", id="pem-unterminated"),
    pytest.param("postgres://app:pa55word@db.local/app", "pa55word", "url-password",
                 id="url-password"),
    pytest.param("password=hunter2", "hunter2", "secret", id="password-tight"),
    pytest.param("DB_PASSWORD=correcthorse", "correcthorse", "secret", id="env-assignment"),
    pytest.param("password: 'correct horse'", "correct horse", "secret", id="quoted"),
    pytest.param('{"password": "hunter2!"}', "hunter2", "secret", id="json"),
    pytest.param("{'api_key': 'abcd1234'}", "abcd1234", "secret", id="python-dict"),
    pytest.param("secret: s3cr3t!", "s3cr3t", "secret", id="secret-colon"),
    pytest.param("--token=abc123", "abc123", "secret", id="cli-flag"),
    pytest.param("client_secret = 'Zx9-abc-def'", "Zx9-abc", "secret", id="client-secret"),
    pytest.param("x-api-key: 12ab34cd56", "12ab34cd56", "secret", id="api-key-header"),
    pytest.param("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrX",
                 "secret", id="aws-secret"),
    # a prefixed token glued to a name by `_`, which \b counts as a letter
    pytest.param("AWS_KEY_AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE", "aws-key",
                 id="aws-after-underscore"),
    pytest.param("id=AKIAIOSFODNN7EXAMPLE_prod", "AKIAIOSFODNN7EXAMPLE", "aws-key",
                 id="aws-before-underscore"),
    pytest.param("MY_TOKEN_ghp_" + "a1B2" * 9, "a1B2a1B2", "github-token",
                 id="ghp-after-underscore"),
    pytest.param("SLACK_xoxb-1234567890-abcdefghijkl", "1234567890", "slack-token",
                 id="slack-after-underscore"),
    pytest.param("OPENAI_sk-abcdefghij0123456789XYZ", "abcdefghij0123", "api-key",
                 id="sk-after-underscore"),
    pytest.param(f"SESSION_{JWT}", "dozjgNry", "jwt", id="jwt-after-underscore"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "secret", "marker"), SECRETS)
def test_secrets_are_replaced_by_a_typed_marker(text: str, secret: str, marker: str) -> None:
    redaction = Redactor().redact(text)
    assert secret not in redaction.text
    assert f"[REDACTED:{marker}]" in redaction.text
    assert redaction.counts.get(marker, 0) >= 1


def test_the_context_around_a_secret_is_kept() -> None:
    text = "Authorization: Bearer abc123def456ghi789 then more"
    assert Redactor().redact(text).text == "Authorization: Bearer [REDACTED:bearer-token] then more"
    assert Redactor().redact("password='hunter22';").text == "password='[REDACTED:secret]';"


ORDINARY = [
    pytest.param("set OPENAI_API_KEY before running", id="env-name"),
    pytest.param("echo $GITHUB_TOKEN | gh auth login --with-token", id="env-reference"),
    pytest.param("export OPENAI_API_KEY=$OPENAI_API_KEY", id="env-forwarded"),
    pytest.param("GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}", id="ci-placeholder"),
    pytest.param("head 6fc0a3258c47bbd21190c9f9f16f7eeea6e0bc04bc373adfd906ca13dda4a771",
                 id="sha256-hex"),
    pytest.param("commit 3f2a9c1d4e5b6a7980c1d2e3f4a5b6c7d8e9f0a1", id="git-sha"),
    pytest.param("request 550e8400-e29b-41d4-a716-446655440000 failed", id="uuid"),
    pytest.param("password = get_password()", id="password-call"),
    pytest.param("def f(token: str) -> None:", id="token-annotation"),
    pytest.param("token: Optional[str] = None", id="optional-token"),
    pytest.param("f(token=None, password=pw)", id="keyword-arguments"),
    pytest.param("token = self.token", id="attribute"),
    pytest.param("pwd = os.getcwd()", id="getcwd"),
    pytest.param("max_tokens=1024", id="max-tokens"),
    pytest.param('"max_tokens": 4096', id="max-tokens-json"),
    pytest.param("token_limit=4096", id="token-limit"),
    pytest.param("secret_file=/run/secrets/db", id="secret-file"),
    pytest.param("PWD=/home/ada/project", id="pwd-path"),
    pytest.param("author: Jane", id="author"),
    pytest.param("Author: Jane Doe", id="author-full"),
    pytest.param("auth = True", id="auth-flag"),
    pytest.param("auth: required", id="auth-required"),
    pytest.param("tokenizer: porter", id="tokenizer"),
    pytest.param("see https://example.com/docs?page=2#auth", id="url"),
    pytest.param("git clone ssh://git@github.com/org/repo.git", id="ssh-url"),
    pytest.param("the password is never logged", id="prose-password"),
    pytest.param("Bearer authentication is described in RFC 6750", id="prose-bearer"),
    pytest.param("uses sk-learn and task-1234567890123456789012", id="sk-and-task"),
    pytest.param("AKIA is the prefix of an access key id", id="aws-prefix-word"),
    pytest.param("serial XAKIAIOSFODNN7EXAMPLE", id="aws-inside-a-word"),
    pytest.param("code AKIAIOSFODNN7EXAMPLE2 is longer", id="aws-too-long"),
    pytest.param("base64 aGVsbG8gd29ybGQ= decodes to hello world", id="base64-word"),
    pytest.param("import base64; base64.b64decode(data)", id="base64-code"),
    pytest.param("retry: 3, timeout: 30, credentials: see the vault", id="config-prose"),
    pytest.param("a <b>bold</b> and <privacy> tag", id="html-ish"),
    pytest.param("", id="empty"),
]  # fmt: skip


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_is_left_alone(text: str) -> None:
    redaction = Redactor().redact(text)
    assert redaction.text == text
    assert redaction.counts == {}


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        pytest.param("keep <private>my secret</private> this", "keep  this", id="inline"),
        pytest.param("a <PRIVATE>x\ny</Private> b <private>z</private> c", "a  b  c", id="many"),
        pytest.param("before <private>never closed\nat all", "before ", id="unclosed"),
        pytest.param("a <private>outer <private>inner</private> SECRET</private> b", "a  b",
                     id="nested"),
        pytest.param("a <private>1 <private>2 <private>3</private></private> S</private> b",
                     "a  b", id="nested-deep"),
        pytest.param("a <private>x <private>y</private> SECRET", "a ", id="nested-unclosed"),
        pytest.param("a </private> b <private>c</private> d", "a </private> b  d",
                     id="stray-close-before"),
    ],
)  # fmt: skip
def test_private_blocks_are_dropped_whole(text: str, kept: str) -> None:
    redaction = Redactor().redact(text)
    assert redaction.text == kept
    assert redaction.counts["private"] >= 1


def test_redaction_off_keeps_everything() -> None:
    text = "password=hunter2 <private>x</private> AKIAIOSFODNN7EXAMPLE"
    assert Redactor(enabled=False).redact(text).text == text


# -- through the service ----------------------------------------------------------------
def test_append_stores_the_redacted_text_and_says_what_was_redacted(
    memory: Service, db_path: Path
) -> None:
    answer = json.loads(
        memory.append_event("deploy with password=hunter2 and AKIAIOSFODNN7EXAMPLE")
    )
    assert answer["redacted"] == {"aws-key": 1, "secret": 1}
    (row,) = rows(db_path)
    assert row["content"] == "deploy with password=[REDACTED:secret] and [REDACTED:aws-key]"
    assert "hunter2" not in memory.memory_search("hunter2 deploy")
    assert verify_ok(memory)


def test_checkpoint_summaries_are_redacted_too(memory: Service, db_path: Path) -> None:
    answer = json.loads(memory.checkpoint("state: token=abc123def, <private>notes</private> ok"))
    assert answer["redacted"] == {"private": 1, "secret": 1}
    context = memory.get_resume_context()
    assert "abc123def" not in context
    assert "notes" not in context


def test_redact_off_stores_text_as_is(open_memory: OpenMemory, db_path: Path) -> None:
    service = open_memory(redact="off")
    text = "password=hunter2 <private>kept</private>"
    assert "redacted" not in json.loads(service.append_event(text))
    assert rows(db_path)[0]["content"] == text


@pytest.mark.parametrize(
    "content",
    ["<private>all of it</private>", " <private>a</private>\n<private>b</private> "],
)
def test_content_that_is_all_private_is_an_error_and_writes_nothing(
    memory: Service, db_path: Path, content: str
) -> None:
    append_many(memory, 1)
    witness = witness_of(db_path).read_raw()
    with pytest.raises(InvalidArgument, match="empty once <private> blocks are dropped"):
        memory.append_event(content)
    with pytest.raises(InvalidArgument, match="summary is empty once"):
        memory.checkpoint(content)
    assert count_rows(db_path, "memory_events") == 1
    assert count_rows(db_path, "memory_checkpoints") == 0
    assert witness_of(db_path).read_raw() == witness


def verify_ok(service: Service) -> bool:
    return bool(json.loads(service.verify_chain())["ok"])


# -- extra patterns from a file ---------------------------------------------------------
def test_extra_patterns_file_adds_named_and_numbered_patterns(tmp_path: Path) -> None:
    path = tmp_path / "patterns.txt"
    path.write_text(
        "# internal ticket keys\n\n  employee-id EMP-[0-9]{6}\nACME-[A-Z]{4}-[0-9]{4}\n"
    )
    assert load_extra_patterns(path) == (
        ("employee-id", "EMP-[0-9]{6}"),
        ("custom-4", "ACME-[A-Z]{4}-[0-9]{4}"),
    )
    redactor = Redactor(load_extra_patterns(path))
    text = "EMP-123456 used ACME-ABCD-1234; EMP-12 is too short"
    assert redactor.redact(text).text == (
        "[REDACTED:employee-id] used [REDACTED:custom-4]; EMP-12 is too short"
    )


@pytest.mark.parametrize(
    ("content", "phrase"),
    [
        pytest.param("# fine\ngood [a-z]+x\nbad (unclosed\n", "line 3", id="bad-regex"),
        pytest.param("named-bad [z-a]\n", "line 1", id="bad-range"),
        pytest.param("ok x+\nempty-match x*\n", "line 2: .*matches empty text", id="empty-match"),
        pytest.param("lookahead (?=x)y\n", "line 1", id="not-re2"),
    ],
)
def test_a_bad_extra_pattern_is_an_error_naming_the_line(
    tmp_path: Path, content: str, phrase: str
) -> None:
    path = tmp_path / "patterns.txt"
    path.write_text(content)
    with pytest.raises(InvalidArgument, match=phrase):
        load_extra_patterns(path)


def test_an_unreadable_patterns_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgument, match="cannot read redaction patterns"):
        load_extra_patterns(tmp_path / "missing.txt")


def test_the_service_uses_the_extra_patterns(
    open_memory: OpenMemory, db_path: Path, tmp_path: Path
) -> None:
    path = tmp_path / "patterns.txt"
    path.write_text("ticket TCK-[0-9]+\n")
    service = open_memory(redact_patterns=path)
    service.append_event("see TCK-4242 and password=hunter2")
    assert rows(db_path)[0]["content"] == "see [REDACTED:ticket] and password=[REDACTED:secret]"


def test_a_bad_patterns_file_stops_the_service_before_the_db_is_touched(
    open_memory: OpenMemory, db_path: Path, tmp_path: Path
) -> None:
    path = tmp_path / "patterns.txt"
    path.write_text("bad (\n")
    with pytest.raises(InvalidArgument, match="line 1"):
        open_memory(redact_patterns=path)
    assert not db_path.exists()
