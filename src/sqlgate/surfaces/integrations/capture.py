"""`sqlgate capture`: one Claude Code hook payload in, one redacted memory event out.

Claude Code runs a command hook with the event as one JSON object on stdin
(https://code.claude.com/docs/en/hooks, "Hook input"). Every event carries the common
fields `session_id`, `transcript_path`, `cwd`, `permission_mode` and `hook_event_name`;
the ones captured here add:

| hook_event_name  | fields read here                                  | stored as      |
|------------------|---------------------------------------------------|----------------|
| SessionStart     | `source` (startup, resume, clear, compact)        | kind `session` |
| UserPromptSubmit | `prompt`                                          | kind `prompt`  |
| PostToolUse      | `tool_name`, `tool_input`, `tool_response`        | kind `tool`    |
| Stop             | `last_assistant_message`, else the transcript     | kind `response`|

Each event is tagged `cc-<session_id>` and written under that session. On SessionStart
the resume context goes to stdout: Claude Code adds a SessionStart hook's stdout to the new
session's context (it does the same for UserPromptSubmit, so that event prints nothing).

A hook must never hold up or break the session: the whole run has a deadline, the
database waits at most a fraction of it for a lock, every failure (bad JSON, an unknown
event, a locked or unwritable database) becomes one line in the capture log, and the
command always exits 0. Text is redacted before it is cut to size, so a cut can never
split a secret into a part the redactor no longer recognises.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from sqlgate.config import Settings, creates_parent
from sqlgate.service import counted, utc_timestamp
from sqlgate.surfaces.terminal import visible, visible_lines

__all__ = [
    "CAPTURED",
    "DEFAULT_DEADLINE",
    "BadPayload",
    "CaptureLog",
    "Hook",
    "Planned",
    "capture",
    "capture_settings",
    "clip",
    "last_assistant_text",
    "parse_hook",
    "plan_event",
    "run_bounded",
    "run_hook",
    "session_tag",
    "summarize",
]

DEFAULT_DEADLINE = 5.0  # seconds for the whole run, lock waits included
MAX_PAYLOAD_BYTES = 8 * 1024 * 1024  # a Read of a large file arrives whole in tool_response
PROMPT_CHARS = 20_000
RESPONSE_CHARS = 20_000
TOOL_CHARS = 4_000  # a tool event: name, input and response together
TOOL_INPUT_CHARS = 1_200
STRING_CHARS = 600  # one string inside a tool's input or response
MAX_ITEMS = 20  # items of one list or object shown in a summary
MAX_DEPTH = 4
RESUME_CHARS = 9_000  # Claude Code shows longer hook output only as a preview (~10,000)
RESUME_CELL_CHARS = 400
RESUME_EVENTS = 50
TRANSCRIPT_TAIL_BYTES = 2 * 1024 * 1024
LOG_MAX_BYTES = 1024 * 1024
CAPTURED = ("SessionStart", "UserPromptSubmit", "PostToolUse", "Stop")
SESSION_TAG_PREFIX = "cc-"
MAX_TAG_CHARS = 64  # memory/inputs.py: a tag is one word of at most 64 characters

# sqlgate's own memory tools, seen through any MCP server name (mcp__<server>__<tool>):
# recording their output as `tool` events would feed the memory back into itself
_OWN_MEMORY_TOOL = re.compile(
    r"mcp__.+__(append_event|checkpoint|get_resume_context|memory_search|memory_timeline|"
    r"memory_details|memory_stats|verify_chain)"
)
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
# what memory/inputs.py refuses: control bytes other than tab and newlines, lone surrogates
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")
_TAG_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


class BadPayload(Exception):
    """The hook input cannot be captured; the message is the log line."""


@dataclass(frozen=True)
class Hook:
    event: str  # hook_event_name
    session_id: str
    data: Mapping[str, Any]


@dataclass(frozen=True)
class Planned:
    """The event a hook becomes, before the memory stores it."""

    kind: str
    content: str
    tags: list[str]


# -- reading the payload ----------------------------------------------------------------
def parse_hook(raw: bytes) -> Hook:
    if len(raw) > MAX_PAYLOAD_BYTES:
        raise BadPayload(f"payload over {MAX_PAYLOAD_BYTES // (1024 * 1024)} MiB; skipped")
    if not raw.strip():
        raise BadPayload("no payload on stdin (expected one JSON object from a Claude Code hook)")
    try:
        data = json.loads(raw)
    except ValueError as exc:  # includes bad UTF-8
        raise BadPayload(f"payload is not JSON: {_one_line(str(exc))}") from None
    if not isinstance(data, dict):
        raise BadPayload(f"payload is a JSON {type(data).__name__}, not an object")
    event = data.get("hook_event_name")
    if not isinstance(event, str) or not event:
        raise BadPayload("payload has no hook_event_name")
    session_id = data.get("session_id")
    if not isinstance(session_id, str) or not _TAG_UNSAFE.sub("", session_id):
        raise BadPayload(f"{_one_line(event)[:40]} payload has no usable session_id")
    return Hook(event, session_id, data)


def session_tag(session_id: str) -> str:
    """`cc-<session id>` as one tag word: unsafe characters become `-`, cut to 64."""
    return (SESSION_TAG_PREFIX + _TAG_UNSAFE.sub("-", session_id))[:MAX_TAG_CHARS]


# -- shaping text -----------------------------------------------------------------------
def clean_text(text: str) -> str:
    """Terminal colours dropped, other control characters shown as U+FFFD (the memory
    refuses them, and tool output is full of them)."""
    return _CONTROL.sub("\ufffd", _ANSI.sub("", text))


def clip(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    longest = f"… [{counted(len(text), 'more character')}]"  # never shorter than the marker
    if limit <= len(longest):
        return text[:limit]
    keep = limit - len(longest)
    return text[:keep] + f"… [{counted(len(text) - keep, 'more character')}]"


class _Budget:
    def __init__(self, chars: int) -> None:
        self.left = chars


def _shorten(value: object, budget: _Budget, depth: int) -> object:
    if isinstance(value, str):
        # cleaned here: json.dumps would turn a control character into a visible \u escape
        cut = clip(clean_text(value), max(20, min(STRING_CHARS, budget.left)))
        budget.left -= len(cut)
        return cut
    if value is None or isinstance(value, (bool, int, float)):
        budget.left -= 6
        return value
    if depth >= MAX_DEPTH:
        budget.left -= 3
        return "…"
    if isinstance(value, Mapping):
        shown: dict[str, object] = {}
        for index, (key, item) in enumerate(value.items()):
            if budget.left <= 0 or index >= MAX_ITEMS:
                shown["…"] = f"{len(value) - index} more"
                break
            name = str(key)[:80]
            budget.left -= len(name) + 4
            shown[name] = _shorten(item, budget, depth + 1)
        return shown
    if isinstance(value, Sequence):
        items: list[object] = []
        for index, item in enumerate(value):
            if budget.left <= 0 or index >= MAX_ITEMS:
                items.append(f"… {len(value) - index} more")
                break
            items.append(_shorten(item, budget, depth + 1))
            budget.left -= 2
        return items
    text = str(value)
    budget.left -= min(len(text), STRING_CHARS)
    return clip(text, STRING_CHARS)


def summarize(value: object, limit: int, redact: Callable[[str], str]) -> str:
    """A bounded, redacted, readable summary of a tool's input or response.

    Long strings and lists are shortened while walking, so the JSON built is small; the
    whole of it is redacted (a secret can span a key and its value) before the final cut.
    """
    shortened = _shorten(value, _Budget(limit), 0)
    text = shortened if isinstance(shortened, str) else _json(shortened)
    return clip(redact(clean_text(text)), limit)


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _one_line(text: str) -> str:
    return " ".join(text.split())


# -- what each hook becomes -------------------------------------------------------------
def plan_event(hook: Hook, redact: Callable[[str], str], max_chars: int) -> Planned | None:
    """The event for `hook`, redacted and cut to size; None when there is nothing to keep.

    Raises BadPayload for an event that is not captured or a field of the wrong type.
    """
    tags = [session_tag(hook.session_id)]
    data = hook.data

    def text(value: str, limit: int) -> str:
        return clip(redact(clean_text(value)), min(limit, max_chars))

    if hook.event == "SessionStart":
        source = data.get("source")
        cwd = data.get("cwd")
        note = "Claude Code session started"
        if isinstance(source, str) and source:
            note += f" ({_one_line(source)[:40]})"
        if isinstance(cwd, str) and cwd:
            note += f" in {cwd}"
        return Planned("session", text(note, 1000), tags)
    if hook.event == "UserPromptSubmit":
        prompt = data.get("prompt")
        if not isinstance(prompt, str):
            raise BadPayload("UserPromptSubmit payload has no prompt text")
        content = text(prompt, PROMPT_CHARS)
        return Planned("prompt", content, tags) if content.strip() else None
    if hook.event == "PostToolUse":
        tool = data.get("tool_name")
        if not isinstance(tool, str) or not tool.strip():
            raise BadPayload("PostToolUse payload has no tool_name")
        if _OWN_MEMORY_TOOL.fullmatch(tool):
            return None
        limit = min(TOOL_CHARS, max_chars)
        name = clean_text(_one_line(tool))[:200]
        given = summarize(data.get("tool_input"), min(TOOL_INPUT_CHARS, limit), redact)
        head = f"{name}\ninput: {given}\nresponse: "
        answer = summarize(data.get("tool_response"), max(200, limit - len(head)), redact)
        return Planned("tool", clip(head + answer, limit), tags)
    if hook.event == "Stop":
        reply = last_assistant_text(data)
        if reply is None or not reply.strip():
            reply = "Claude Code finished its turn (its reply was not in the hook payload)"
        return Planned("response", text(reply, RESPONSE_CHARS), tags)
    raise BadPayload(
        f"hook event {_one_line(hook.event)[:60]!r} is not captured ({', '.join(CAPTURED)} are)"
    )


def last_assistant_text(data: Mapping[str, Any]) -> str | None:
    """The reply that ended the turn: Stop's `last_assistant_message` (newer Claude Code),
    else the text of the last assistant entry in the transcript's tail."""
    message = data.get("last_assistant_message")
    if isinstance(message, str) and message.strip():
        return message
    path = data.get("transcript_path")
    if not isinstance(path, str) or not path:
        return None
    return _transcript_reply(Path(path).expanduser())


def _transcript_reply(path: Path) -> str | None:
    """The transcript is JSON lines; an assistant entry is
    `{"type": "assistant", "message": {"content": [{"type": "text", "text": ...}, ...]}}`.
    Only the tail is read: a long session's transcript is many megabytes."""
    try:
        with path.open("rb") as handle:
            size = handle.seek(0, 2)
            start = max(0, size - TRANSCRIPT_TAIL_BYTES)
            handle.seek(start)
            tail = handle.read()
    except OSError:
        return None
    lines = tail.split(b"\n")
    if start > 0:
        lines = lines[1:]  # the first line is cut
    for line in reversed(lines):
        if b'"assistant"' not in line:
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        text = _entry_text(entry)
        if text:
            return text
    return None


def _entry_text(entry: object) -> str | None:
    if not isinstance(entry, dict) or entry.get("type") != "assistant":
        return None
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content or None
    if not isinstance(content, list):
        return None
    parts = [
        block["text"]
        for block in content
        if isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    ]
    return "\n".join(parts) or None


# -- the capture log --------------------------------------------------------------------
class CaptureLog:
    """One line per problem, appended to `<db>.capture.log`; writing it never raises.

    Past 1 MiB the file moves to `<name>.1` (replacing the previous one), so a broken
    setup cannot fill the disk one hook at a time. `make_folder`: create a missing folder
    for it (sqlgate's own folders only, see config.creates_parent).
    """

    def __init__(
        self,
        path: Path,
        *,
        wall_clock: Callable[[], float] = time.time,
        fallback: Callable[[str], None] | None = None,
        make_folder: bool = False,
    ) -> None:
        self.path = path
        self.make_folder = make_folder
        self.wall_clock = wall_clock
        self.fallback = fallback
        self.lines: list[str] = []  # what this run logged
        self._lock = threading.Lock()

    @staticmethod
    def beside(db: Path) -> Path:
        return db.with_name(db.name + ".capture.log")

    def write(self, message: str, hook: Hook | None = None) -> None:
        where = f"{hook.event} {session_tag(hook.session_id)}" if hook else "-"
        # payloads and errors carry any text; a person reads this file in a terminal
        line = visible(f"{utc_timestamp(self.wall_clock())} {where}: {_one_line(message)}")
        with self._lock:
            self.lines.append(line)
            try:
                self._rotate()
                if self.make_folder:
                    self.path.parent.mkdir(parents=True, exist_ok=True)
                with self.path.open("a", encoding="utf-8", errors="replace") as handle:
                    handle.write(line + "\n")
            except OSError as exc:
                if self.fallback is not None:
                    self.fallback(f"sqlgate capture: cannot write {self.path}: {exc}; {line}")

    def _rotate(self) -> None:
        try:
            big = self.path.stat().st_size > LOG_MAX_BYTES
        except OSError:
            return
        if big:
            self.path.replace(self.path.with_name(self.path.name + ".1"))


class _ToCaptureLog(logging.Handler):
    """The service logs unexpected errors with a traceback; here they become one line."""

    def __init__(self, log: CaptureLog, hook: Hook) -> None:
        super().__init__(logging.WARNING)
        self.log = log
        self.hook = hook

    def emit(self, record: logging.LogRecord) -> None:
        kind = record.exc_info[0] if record.exc_info else None
        cause = f" ({kind.__name__})" if kind else ""
        self.log.write(f"{record.getMessage()}{cause}", self.hook)


@contextmanager
def _service_logs_to(log: CaptureLog, hook: Hook) -> Iterator[None]:
    logger = logging.getLogger("sqlgate")
    handler = _ToCaptureLog(log, hook)
    saved = logger.propagate
    logger.addHandler(handler)
    logger.propagate = False  # no traceback on stderr
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.propagate = saved


# -- the run ----------------------------------------------------------------------------
def capture_settings(settings: Settings, deadline: float) -> Settings:
    """The settings a hook runs with: lock waits short enough that all of them fit in the
    deadline, no audit row (the chain event is the record), and a resume context that
    Claude Code shows whole."""
    return replace(
        settings,
        busy_timeout=max(0.05, min(settings.busy_timeout, deadline * 0.25)),
        audit=False,
        max_cell_chars=min(settings.max_cell_chars, RESUME_CELL_CHARS),
        max_result_bytes=min(settings.max_result_bytes, RESUME_CHARS),
    )


def capture(
    hook: Hook,
    settings: Settings,
    log: CaptureLog,
    *,
    wall_clock: Callable[[], float] = time.time,
) -> str:
    """Store `hook`'s event; answer what goes to stdout (the resume context on
    SessionStart, else nothing). Failures are logged, never raised."""
    from sqlgate.errors import SqlgateError
    from sqlgate.service import Service

    if hook.event not in CAPTURED:
        log.write(
            f"hook event {_one_line(hook.event)[:60]!r} is not captured "
            f"({', '.join(CAPTURED)} are); nothing stored",
            hook,
        )
        return ""
    output = ""
    with _service_logs_to(log, hook):
        try:
            service = Service.open(
                settings,
                session=session_tag(hook.session_id),
                wall_clock=wall_clock,
                create_parent=creates_parent(settings.db),
            )
        except SqlgateError as exc:
            log.write(told(exc), hook)
            return ""
        try:
            redact = service.memory.redactor.redact
            planned = plan_event(hook, lambda t: redact(t).text, settings.max_event_chars)
            if hook.event == "SessionStart":
                # read before the session note is written: the context is the past
                output = _resume(service, settings, log, hook)
            if planned is not None:
                try:
                    service.append_event(planned.content, planned.kind, planned.tags)
                except SqlgateError as exc:
                    log.write(f"{planned.kind} event not stored: {told(exc)}", hook)
        except BadPayload as exc:
            log.write(str(exc), hook)
        finally:
            service.close()
    return output


def _resume(service: Any, settings: Settings, log: CaptureLog, hook: Hook) -> str:
    from sqlgate.errors import SqlgateError

    try:
        context = service.get_resume_context(RESUME_EVENTS, ["tool"])
    except SqlgateError as exc:
        log.write(f"no resume context: {told(exc)}", hook)
        return ""
    header = (
        f"# sqlgate memory from {settings.db} (tool events left out; the sqlgate memory "
        "tools have them)\n"
    )
    # the memory keeps format characters (a bidi override, zero-width text): shown as
    # escapes, to the agent that reads this and to a person who runs it in a terminal
    return clip(visible_lines(header + context), RESUME_CHARS) + "\n"


def told(exc: Exception) -> str:
    """An error as the capture log says it: a busy database names what a hook can change
    (`capture` has no --busy-timeout: it waits a quarter of --deadline at most)."""
    from sqlgate.errors import DatabaseBusy

    if isinstance(exc, DatabaseBusy):
        return (
            f"the database is busy: another writer held its lock for more than "
            f"{exc.seconds:g} s; nothing was stored. A hook waits for the lock at most a "
            "quarter of its --deadline (and no longer than SQLGATE_BUSY_TIMEOUT): to let it "
            "wait longer, add `--deadline SECONDS` to the `sqlgate capture` commands in "
            "Claude Code's hook settings"
        )
    return str(exc)


def run_bounded(work: Callable[[], str], seconds: float) -> str | None:
    """`work()` on a daemon thread; None when it has not finished within `seconds`.

    A thread, because a blocked read of stdin or a SQLite call cannot be interrupted from
    here; the caller ends the process instead of waiting for it.
    """
    done: list[str] = []
    thread = threading.Thread(target=lambda: done.append(work()), daemon=True)
    thread.start()
    thread.join(seconds)
    return done[0] if done else None


def run_hook(
    read_payload: Callable[[], bytes],
    load: Callable[[], Settings],
    log: CaptureLog,
    deadline: float,
    *,
    wall_clock: Callable[[], float] = time.time,
) -> str:
    """Read, parse and capture one payload; what to print. Never raises."""
    hook: Hook | None = None
    try:
        hook = parse_hook(read_payload())
        settings = capture_settings(load(), deadline)
        return capture(hook, settings, log, wall_clock=wall_clock)
    except BadPayload as exc:
        log.write(str(exc), hook)
    except Exception as exc:  # a hook must not fail the session, whatever went wrong
        log.write(f"{type(exc).__name__}: {exc}", hook)
    return ""
