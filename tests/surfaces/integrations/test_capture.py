"""`sqlgate capture`: Claude Code hook payloads become redacted memory events, and the
command never fails or holds up the client's session."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest
from click.testing import CliRunner, Result
from hypothesis import given, settings
from hypothesis import strategies as st

from sqlgate.config import FLAGS, Settings
from sqlgate.memory.inputs import event_tags
from sqlgate.memory.privacy import Redactor
from sqlgate.service import Service
from sqlgate.surfaces.cli import capture as cli_capture
from sqlgate.surfaces.cli.app import main
from sqlgate.surfaces.integrations import capture as capture_module
from sqlgate.surfaces.integrations.capture import (
    LOG_MAX_BYTES,
    MAX_TAG_CHARS,
    RESUME_CHARS,
    TOOL_CHARS,
    BadPayload,
    CaptureLog,
    capture_settings,
    clip,
    parse_hook,
    run_bounded,
    session_tag,
    summarize,
)
from tests.records import connect_both
from tests.surfaces.mcp.test_stdio import child_env

SESSION = "4f1c2b9e-0a7d-4c3e-9b1f-2d6e8a0c5f11"
TAG = f"cc-{SESSION}"
REDACT = Redactor((), enabled=True)


@pytest.fixture(autouse=True)
def no_sqlgate_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings from the developer's shell must not leak into these tests."""
    for flag in FLAGS:
        monkeypatch.delenv(flag.env_var, raising=False)


def payload(event: str, session: str = SESSION, **fields: Any) -> bytes:
    """A hook payload with the common fields Claude Code sends with every event."""
    body = {
        "session_id": session,
        "transcript_path": "/nonexistent/transcript.jsonl",
        "cwd": "/srv/dev/project",
        "permission_mode": "default",
        "hook_event_name": event,
        **fields,
    }
    return json.dumps(body).encode()


def run(db: Path, stdin: bytes, *args: str) -> Result:
    return CliRunner().invoke(
        main, ["capture", "--db", str(db), *args], input=stdin, prog_name="sqlgate"
    )


def events(db: Path) -> list[tuple[str, str, list[str], str]]:
    """(session, kind, tags, content) of every stored event, oldest first."""
    if not db.exists():
        return []
    conn = connect_both(db, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        rows = conn.execute("SELECT session, kind, tags, content FROM memory_events ORDER BY id")
        return [(s, k, json.loads(t), c) for s, k, t, c in rows]
    finally:
        conn.close()


def log_lines(db: Path) -> list[str]:
    log = CaptureLog.beside(db)
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


def assert_quiet_success(result: Result) -> None:
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert "Traceback" not in result.output


# -- each hook event ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("stdin", "kind", "content"),
    [
        pytest.param(
            payload("UserPromptSubmit", prompt="fix the login bug; password=hunter2x"),
            "prompt",
            "fix the login bug; password=[REDACTED:secret]",
            id="prompt",
        ),
        pytest.param(
            payload("Stop", stop_hook_active=False, last_assistant_message="Fixed. token=abc123"),
            "response",
            "Fixed. token=[REDACTED:secret]",
            id="response-from-last-assistant-message",
        ),
        pytest.param(
            payload(
                "PostToolUse",
                tool_name="Bash",
                tool_input={"command": "export API_KEY=sk-abcdefghijklmnopqrstuvwx"},
                tool_response={"stdout": "ok", "stderr": "", "interrupted": False},
                tool_use_id="toolu_01",
            ),
            "tool",
            'Bash\ninput: {"command": "export API_KEY=[REDACTED:api-key]"}\n'
            'response: {"stdout": "ok", "stderr": "", "interrupted": false}',
            id="tool",
        ),
    ],
)
def test_each_hook_event_is_stored_redacted_with_its_kind_and_session_tag(
    db_path: Path, stdin: bytes, kind: str, content: str
) -> None:
    result = run(db_path, stdin)
    assert_quiet_success(result)
    assert events(db_path) == [(TAG, kind, [TAG], content)]
    assert log_lines(db_path) == []


def test_capture_writes_no_audit_rows(db_path: Path) -> None:
    run(db_path, payload("UserPromptSubmit", prompt="hello"))
    conn = connect_both(db_path, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        assert conn.execute("SELECT count(*) FROM query_log").fetchone() == (0,)
    finally:
        conn.close()


def test_session_start_prints_the_resume_context_and_notes_the_session(db_path: Path) -> None:
    run(db_path, payload("UserPromptSubmit", session="old-session", prompt="migrate the users"))
    run(db_path, payload("PostToolUse", session="old-session", tool_name="Read", tool_input={}))

    result = run(db_path, payload("SessionStart", source="startup"))

    assert result.exit_code == 0
    assert result.stdout.startswith(f"# sqlgate memory from {db_path}")
    assert "# chain: ok, 2 events" in result.stdout
    assert "migrate the users" in result.stdout
    assert ",tool," not in result.stdout  # tool events are left out of the context
    assert result.stderr == ""
    assert events(db_path)[-1] == (
        TAG,
        "session",
        [TAG],
        "Claude Code session started (startup) in /srv/dev/project",
    )


def test_session_start_on_a_new_database_prints_an_empty_context(db_path: Path) -> None:
    result = run(db_path, payload("SessionStart", source="resume"))
    assert result.exit_code == 0
    assert "# no checkpoint yet" in result.stdout
    assert "# 0 events in the memory" in result.stdout


def test_resume_context_fits_what_claude_code_shows_whole(db_path: Path) -> None:
    for number in range(30):
        run(db_path, payload("UserPromptSubmit", prompt=f"prompt {number} " + "word " * 400))
    result = run(db_path, payload("SessionStart", source="startup"))
    assert len(result.stdout) <= RESUME_CHARS + 1
    assert "prompt 29" in result.stdout  # the newest are kept


def test_empty_prompt_stores_nothing_and_logs_nothing(db_path: Path) -> None:
    assert_quiet_success(run(db_path, payload("UserPromptSubmit", prompt="   ")))
    assert events(db_path) == []
    assert log_lines(db_path) == []


def test_control_characters_in_a_prompt_are_replaced_not_refused(db_path: Path) -> None:
    run(db_path, payload("UserPromptSubmit", prompt="red \x1b[31malert\x1b[0m bell\x07"))
    assert events(db_path)[0][3] == "red alert bell\ufffd"


def test_long_tool_output_is_cut_to_size(db_path: Path) -> None:
    huge = {"stdout": "x" * 200_000, "lines": [f"line {n}" for n in range(5000)]}
    result = run(
        db_path,
        payload(
            "PostToolUse", tool_name="Bash", tool_input={"command": "cat big"}, tool_response=huge
        ),
    )
    assert_quiet_success(result)
    (_, kind, _, content) = events(db_path)[0]
    assert kind == "tool"
    assert len(content) <= TOOL_CHARS
    assert content.startswith('Bash\ninput: {"command": "cat big"}\nresponse: {"stdout": "xxx')
    assert "more characters]" in content


def test_own_memory_tool_calls_are_not_recorded_again(db_path: Path) -> None:
    call = payload(
        "PostToolUse",
        tool_name="mcp__sqlgate__memory_search",
        tool_input={"query": "login"},
        tool_response="id,kind,content\n1,prompt,fix the login bug",
    )
    assert_quiet_success(run(db_path, call))
    assert events(db_path) == []


def test_stop_without_the_message_reads_the_transcripts_last_reply(
    db_path: Path, tmp_path: Path
) -> None:
    transcript = tmp_path / "session.jsonl"
    entries = [
        {"type": "user", "message": {"role": "user", "content": "hi"}},
        {"type": "assistant", "message": {"content": [{"type": "text", "text": "first"}]}},
        {
            "type": "assistant",
            "message": {
                "content": [
                    {"type": "text", "text": "All tests pass."},
                    {"type": "tool_use", "name": "Bash", "input": {}},
                    {"type": "text", "text": "secret: s3cr3t!"},
                ]
            },
        },
        {"type": "assistant", "message": {"content": [{"type": "tool_use", "name": "Read"}]}},
    ]
    transcript.write_text("\n".join(json.dumps(e) for e in entries) + "\n{broken", "utf-8")

    run(db_path, payload("Stop", transcript_path=str(transcript)))

    assert events(db_path)[0][1:] == (
        "response",
        [TAG],
        "All tests pass.\nsecret: [REDACTED:secret]",
    )


def test_stop_without_any_reply_stores_a_short_note(db_path: Path) -> None:
    run(db_path, payload("Stop", stop_hook_active=True))
    (_, kind, _, content) = events(db_path)[0]
    assert kind == "response"
    assert "finished its turn" in content


# -- bad input: exit 0, a log line, nothing else -----------------------------------------
@pytest.mark.parametrize(
    ("stdin", "phrase"),
    [
        pytest.param(b"{not json", "payload is not JSON", id="malformed-json"),
        pytest.param(b"", "no payload on stdin", id="empty-stdin"),
        pytest.param(b"\xff\xfe\x00garbage", "payload is not JSON", id="not-utf8"),
        pytest.param(b"[1, 2]", "JSON list, not an object", id="array"),
        pytest.param(b'{"session_id": "x"}', "no hook_event_name", id="no-event"),
        pytest.param(payload("Stop", session=""), "no usable session_id", id="no-session"),
        pytest.param(
            payload("PreToolUse", tool_name="Bash"), "is not captured", id="unknown-event"
        ),
        pytest.param(payload("PostToolUse"), "no tool_name", id="tool-without-name"),
        pytest.param(
            payload("UserPromptSubmit", prompt=42), "no prompt text", id="prompt-not-text"
        ),
    ],
)
def test_bad_payload_exits_0_with_one_log_line_and_nothing_stored(
    db_path: Path, stdin: bytes, phrase: str
) -> None:
    result = run(db_path, stdin)
    assert_quiet_success(result)
    assert result.stderr == ""
    lines = log_lines(db_path)
    assert len(lines) == 1, lines
    assert phrase in lines[0]
    assert events(db_path) == []


@pytest.fixture
def write_locked(db_path: Path) -> Iterator[None]:
    """Another process holds the database's write lock for the whole test."""
    Service.open(Settings(db=db_path)).close()
    holder = connect_both(db_path)
    holder.execute("BEGIN IMMEDIATE")
    yield
    holder.execute("ROLLBACK")
    holder.close()


@pytest.mark.usefixtures("write_locked")
def test_locked_database_exits_0_with_a_log_line(db_path: Path) -> None:
    result = run(db_path, payload("UserPromptSubmit", prompt="hello"), "--deadline", "0.4")
    assert_quiet_success(result)
    (line,) = log_lines(db_path)
    assert "prompt event not stored: the database is busy" in line
    # the way out that `capture` itself has: it takes no --busy-timeout
    assert "--busy-timeout" not in line
    assert "add `--deadline SECONDS` to the `sqlgate capture` commands" in line


def test_unexpected_error_in_the_service_is_logged_without_a_traceback(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_: object) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr("sqlgate.memory.store.Memory.append_event", broken)
    result = run(db_path, payload("UserPromptSubmit", prompt="hello"))
    assert_quiet_success(result)
    assert result.stderr == ""
    lines = log_lines(db_path)
    assert "append_event failed unexpectedly (RuntimeError)" in lines[0]
    assert "prompt event not stored: append_event failed with an internal error" in lines[1]


def test_lock_waits_fit_in_the_deadline(db_path: Path) -> None:
    chosen = capture_settings(Settings(db=db_path, busy_timeout=30), deadline=5)
    assert chosen.busy_timeout * 4 <= 5  # open, verify, resume and append could each wait
    assert chosen.audit is False


def test_unwritable_database_path_exits_0_with_a_log_line(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    log = tmp_path / "capture.log"
    result = CliRunner().invoke(
        main,
        ["capture", "--db", str(blocker / "memory.db"), "--log", str(log)],
        input=payload("UserPromptSubmit", prompt="hello"),
    )
    assert_quiet_success(result)
    (line,) = log.read_text("utf-8").splitlines()
    assert "UserPromptSubmit" in line


def test_unwritable_log_falls_back_to_one_stderr_line(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    result = CliRunner().invoke(
        main,
        ["capture", "--db", str(tmp_path / "m.db"), "--log", str(blocker / "x.log")],
        input=b"{oops",
    )
    assert result.exit_code == 0
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert "payload is not JSON" in result.stderr


def test_bad_deadline_is_logged_and_the_default_used(db_path: Path) -> None:
    result = run(db_path, payload("UserPromptSubmit", prompt="hi"), "--deadline", "soon")
    assert_quiet_success(result)
    assert "--deadline 'soon'" in log_lines(db_path)[0]
    assert events(db_path)[0][1] == "prompt"


def test_bad_setting_in_the_environment_is_logged_not_raised(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SQLGATE_BUSY_TIMEOUT", "never")
    result = run(db_path, payload("UserPromptSubmit", prompt="hi"))
    assert_quiet_success(result)
    assert "SQLGATE_BUSY_TIMEOUT" in log_lines(db_path)[0]


def test_work_past_the_deadline_is_abandoned_with_a_log_line(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = threading.Event()
    abandoned: list[bool] = []

    def stuck(*_: object, **__: object) -> str:
        release.wait(10)
        return "too late"

    monkeypatch.setattr(cli_capture, "run_hook", stuck)
    monkeypatch.setattr(cli_capture, "_abandon", lambda: abandoned.append(True))
    try:
        result = run(db_path, payload("Stop"), "--deadline", "0.05")
    finally:
        release.set()
    assert_quiet_success(result)
    assert abandoned == [True]
    assert "gave up after 0.05 s" in log_lines(db_path)[0]


def test_run_bounded_answers_none_when_work_overruns() -> None:
    release = threading.Event()
    try:
        assert run_bounded(lambda: "late" if release.wait(10) else "", 0.01) is None
    finally:
        release.set()
    assert run_bounded(lambda: "done", 10) == "done"


def test_log_moves_aside_past_its_size_limit(tmp_path: Path) -> None:
    path = tmp_path / "c.log"
    with path.open("wb") as handle:
        handle.truncate(LOG_MAX_BYTES + 1)
    CaptureLog(path, wall_clock=lambda: 0.0).write("fresh")
    assert path.read_text("utf-8") == "1970-01-01T00:00:00.000Z -: fresh\n"
    assert path.with_name("c.log.1").stat().st_size == LOG_MAX_BYTES + 1


def test_log_lines_show_control_and_bidi_characters_visibly(tmp_path: Path) -> None:
    path = tmp_path / "c.log"
    CaptureLog(path, wall_clock=lambda: 0.0).write("bad \x1b[2K\x9b2J\u202eevil")
    assert path.read_text("utf-8") == "1970-01-01T00:00:00.000Z -: bad \\x1b[2K\\x9b2J\\u202eevil\n"


def test_resume_context_shows_bidi_characters_visibly(db_path: Path) -> None:
    # the memory refuses control bytes but keeps format characters such as an override
    run(db_path, payload("UserPromptSubmit", session="old", prompt="pay \u202e0001\u202c now"))
    result = run(db_path, payload("SessionStart", source="startup"))
    assert result.exit_code == 0
    assert "pay \\u202e0001\\u202c now" in result.stdout
    assert "\u202e" not in result.stdout


# -- the pieces ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("session", "tag"),
    [
        pytest.param(SESSION, TAG, id="uuid"),
        pytest.param("a b\tc/d", "cc-a-b-c-d", id="spaces-and-slashes"),
        pytest.param("x" * 100, "cc-" + "x" * (MAX_TAG_CHARS - 3), id="long"),
    ],
)
def test_session_tag_is_one_word(session: str, tag: str) -> None:
    assert session_tag(session) == tag


@settings(max_examples=100, deadline=None)
@given(st.text(min_size=1).filter(lambda s: any(c.isascii() and c.isalnum() for c in s)))
def test_any_session_id_makes_a_valid_tag(session: str) -> None:
    assert event_tags([session_tag(session)]) == [session_tag(session)]


@settings(max_examples=200, deadline=None)
@given(text=st.text(), limit=st.integers(min_value=0, max_value=200))
def test_clip_never_exceeds_its_limit(text: str, limit: int) -> None:
    cut = clip(text, limit)
    assert len(cut) <= limit
    assert cut == text or len(text) > limit


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=2000),
    lambda inner: st.lists(inner, max_size=50) | st.dictionaries(st.text(max_size=20), inner),
    max_leaves=200,
)


@settings(max_examples=60, deadline=None)
@given(value=json_values, limit=st.integers(min_value=50, max_value=4000))
def test_summary_is_bounded_and_free_of_control_characters(value: object, limit: int) -> None:
    text = summarize(value, limit, lambda t: REDACT.redact(t).text)
    assert len(text) <= limit
    assert not any(ord(c) < 32 and c not in "\t\n\r" for c in text)


def test_summary_redacts_a_secret_split_between_key_and_value() -> None:
    text = summarize({"password": "hunter2"}, 500, lambda t: REDACT.redact(t).text)
    assert text == '{"password": "[REDACTED:secret]"}'


def test_parse_hook_refuses_an_oversized_payload() -> None:
    with pytest.raises(BadPayload, match="over 8 MiB"):
        parse_hook(b" " * (capture_module.MAX_PAYLOAD_BYTES + 1))


# -- as Claude Code runs it: a real process ---------------------------------------------------
def _capture_process(db: Path, stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "sqlgate", "capture", "--db", str(db)],
        input=stdin,
        capture_output=True,
        env=child_env(),
        timeout=60,
        check=False,
    )


def test_real_process_prints_only_the_context_and_survives_garbage(db_path: Path) -> None:
    stored = _capture_process(db_path, payload("UserPromptSubmit", prompt="deploy to café"))
    assert (stored.returncode, stored.stdout, stored.stderr) == (0, b"", b"")

    started = _capture_process(db_path, payload("SessionStart", source="startup"))
    assert started.returncode == 0
    assert started.stderr == b""
    assert started.stdout.decode("utf-8").startswith("# sqlgate memory from")
    assert "deploy to café" in started.stdout.decode("utf-8")

    garbage = _capture_process(db_path, b"\x00\x01 not a payload")
    assert (garbage.returncode, garbage.stdout, garbage.stderr) == (0, b"", b"")
    assert "payload is not JSON" in log_lines(db_path)[-1]
    assert [kind for _, kind, _, _ in events(db_path)] == ["prompt", "session"]
