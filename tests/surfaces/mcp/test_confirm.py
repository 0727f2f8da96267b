"""--confirm: destructive_query asks the person (elicitation) before anything is touched."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from typing import Any

import pytest
from mcp import Client
from mcp.client.session import ClientRequestContext, ElicitationFnT
from mcp.types import CallToolResult, ElicitRequestParams, ElicitResult

from sqlgate.config import load_settings
from sqlgate.errors import InvalidArgument
from sqlgate.service import Service
from sqlgate.surfaces.mcp.confirm import CANCELLED, CANNOT_ASK, DECLINED, confirmation_message
from sqlgate.surfaces.mcp.server import build_server

pytestmark = pytest.mark.anyio

# both ways a client can be asked: a request mid-call, or an InputRequiredResult round trip
ERAS = [
    pytest.param("legacy", id="elicitation-request"),
    pytest.param("2026-07-28", id="input-required"),
]
DELETE = {"query": "DELETE FROM notes WHERE id = ?", "reason": "drop the typo", "params": [2]}


def text(result: CallToolResult) -> str:
    first = result.content[0]
    assert first.type == "text"
    return first.text


class Person:
    """An elicitation callback answering every question the same way, and remembering them."""

    def __init__(self, action: str, content: dict[str, Any] | None = None) -> None:
        self.action = action
        self.content = content
        self.questions: list[str] = []

    async def __call__(self, context: ClientRequestContext, params: ElicitRequestParams) -> Any:
        self.questions.append(params.message)
        return ElicitResult(action=self.action, content=self.content)  # type: ignore[arg-type]


def make(make_service: Callable[..., Service], confirm: str) -> Service:
    """Whole-file snapshots (--undo file): a snapshot taken shows the statement ran."""
    service = make_service(confirm=confirm, undo="file")
    service.write_query("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    service.write_query("INSERT INTO notes (body) VALUES ('one'), ('two'), ('three')")
    return service


def notes(service: Service) -> str:
    return service.read_query("SELECT id FROM notes ORDER BY id")


def snapshots(service: Service) -> list[str]:
    folder = service.settings.snapshot_dir
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


async def call(
    service: Service, mode: str, person: ElicitationFnT | None, arguments: dict[str, Any]
) -> CallToolResult:
    async with Client(build_server(service), mode=mode, elicitation_callback=person) as client:
        return await client.call_tool("destructive_query", arguments)


def audited_errors(service: Service) -> str:
    return service.read_query("SELECT tool, error FROM query_log WHERE ok = 0")


# -- a client that can ask ----------------------------------------------------------------


def confirmed_by(service: Service) -> str:
    return service.read_query(
        "SELECT ok, json_extract(detail, '$.confirmed_by') AS who FROM query_log "
        "WHERE tool = 'destructive_query' ORDER BY id"
    )


@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize(
    ("action", "content", "row"),
    [
        pytest.param("accept", {"approve": True}, "1,local", id="approved"),
        pytest.param("accept", {"approve": False}, "0,", id="unticked"),
        pytest.param("decline", None, "0,", id="declined"),
    ],
)
async def test_the_audit_row_says_who_confirmed_the_call(
    make_service: Callable[..., Service], mode: str, action: str, content: Any, row: str
) -> None:
    """issue 22: the question goes to the caller's own session, so its answerer is that
    caller (here the stdio agent's person: `local`); a refused call names no one."""
    service = make(make_service, "auto")
    await call(service, mode, Person(action, content), DELETE)
    assert confirmed_by(service).splitlines()[1] == row


async def test_a_call_nobody_was_asked_about_names_no_confirmer(
    make_service: Callable[..., Service],
) -> None:
    service = make(make_service, "never")
    await call(service, "legacy", Person("accept", {"approve": True}), DELETE)
    assert confirmed_by(service).splitlines()[1] == "1,"


@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize("confirm", ["auto", "always"])
async def test_approved_statement_runs_after_the_person_saw_statement_values_and_reason(
    make_service: Callable[..., Service], mode: str, confirm: str
) -> None:
    service = make(make_service, confirm)
    person = Person("accept", {"approve": True})
    result = await call(service, mode, person, DELETE)
    assert not result.is_error, text(result)
    assert "ok: 1 row affected; snapshot:" in text(result)
    assert len(person.questions) == 1
    question = person.questions[0]
    assert "DELETE FROM notes WHERE id = ?" in question
    assert "with values: [2]" in question
    assert "The agent's reason: drop the typo" in question
    assert str(service.settings.db) in question
    assert "2" not in notes(service).splitlines()[1:3]
    assert len(snapshots(service)) == 1


@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize(
    ("answer", "content", "phrase"),
    [
        pytest.param("decline", None, DECLINED, id="declined"),
        pytest.param("cancel", None, CANCELLED, id="cancelled"),
        pytest.param("accept", {"approve": False}, DECLINED, id="accepted-but-unticked"),
    ],
)
async def test_refused_confirmation_is_an_error_with_nothing_changed_and_no_snapshot(
    make_service: Callable[..., Service],
    mode: str,
    answer: str,
    content: dict[str, Any] | None,
    phrase: str,
) -> None:
    service = make(make_service, "auto")
    before = notes(service)
    person = Person(answer, content)
    result = await call(service, mode, person, DELETE)
    assert result.is_error
    assert phrase in text(result)
    assert len(person.questions) == 1
    assert notes(service) == before
    assert snapshots(service) == []
    assert phrase in audited_errors(service)  # the refusal is in the audit log too


@pytest.mark.parametrize("mode", ERAS)
async def test_never_runs_without_asking_even_a_client_that_can_ask(
    make_service: Callable[..., Service], mode: str
) -> None:
    service = make(make_service, "never")
    person = Person("decline")
    result = await call(service, mode, person, DELETE)
    assert not result.is_error, text(result)
    assert person.questions == []
    assert len(snapshots(service)) == 1


@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize(
    ("arguments", "phrase"),
    [
        pytest.param({"query": "SELECT 1", "reason": "r"}, "read_query", id="not-destructive"),
        pytest.param({"query": "DELETE FROM notes", "reason": " "}, "reason", id="no-reason"),
        pytest.param(
            {"query": "DELETE FROM notes; DROP TABLE notes", "reason": "r"},
            "one",
            id="two-statements",
        ),
        pytest.param(
            {"query": "DELETE FROM notes WHERE id = ?", "reason": "r", "params": {"": 1}},
            "params",
            id="bad-params",
        ),
    ],
)
async def test_call_the_checks_refuse_is_refused_without_asking(
    make_service: Callable[..., Service], mode: str, arguments: dict[str, Any], phrase: str
) -> None:
    service = make(make_service, "always")
    before = notes(service)
    person = Person("accept", {"approve": True})
    result = await call(service, mode, person, arguments)
    assert result.is_error
    assert phrase in text(result)
    assert person.questions == []
    assert notes(service) == before
    assert snapshots(service) == []


@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize("person", [Person("accept", {"approve": True}), None], ids=["can", "not"])
async def test_a_drop_if_exists_of_nothing_is_answered_without_asking(
    make_service: Callable[..., Service], mode: str, person: Person | None
) -> None:
    # nothing would change, so there is nothing to confirm, even under --confirm always
    service = make(make_service, "always")
    arguments = {"query": "DROP TABLE IF EXISTS missing", "reason": "tidy"}
    result = await call(service, mode, person, arguments)
    assert not result.is_error, text(result)
    assert "ok: nothing to drop: no table `missing`" in text(result)
    assert person is None or person.questions == []
    assert snapshots(service) == []


@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize("person", [Person("accept", {"approve": True}), None], ids=["can", "not"])
async def test_a_create_if_not_exists_of_what_exists_is_answered_without_asking(
    make_service: Callable[..., Service], mode: str, person: Person | None
) -> None:
    service = make(make_service, "always")
    sql = "CREATE TRIGGER IF NOT EXISTS seen AFTER DELETE ON notes BEGIN SELECT 1; END"
    service.db.writer.execute(sql.replace("IF NOT EXISTS ", ""))  # there already
    result = await call(service, mode, person, {"query": sql, "reason": "make sure"})
    assert not result.is_error, text(result)
    assert "ok: nothing created: trigger `seen` already exists" in text(result)
    assert person is None or person.questions == []
    assert snapshots(service) == []


@pytest.mark.parametrize("mode", ERAS)
async def test_statement_the_policy_refuses_after_approval_takes_no_snapshot(
    make_service: Callable[..., Service], mode: str
) -> None:
    # the authorizer's policy (server tables) is checked by the dry run after the answer
    service = make(make_service, "auto")
    result = await call(
        service, mode, Person("accept", {"approve": True}),
        {"query": "DROP TABLE query_log", "reason": "tidy"},
    )  # fmt: skip
    assert result.is_error
    assert snapshots(service) == []


# -- a client that cannot ask -------------------------------------------------------------


@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize("confirm", ["auto", "never"])
async def test_client_without_elicitation_runs_under_auto_and_never(
    make_service: Callable[..., Service], mode: str, confirm: str
) -> None:
    service = make(make_service, confirm)
    result = await call(service, mode, None, DELETE)
    assert not result.is_error, text(result)
    assert "ok: 1 row affected" in text(result)
    assert len(snapshots(service)) == 1


@pytest.mark.parametrize("mode", ERAS)
async def test_always_refuses_a_client_without_elicitation_and_says_why(
    make_service: Callable[..., Service], mode: str
) -> None:
    service = make(make_service, "always")
    before = notes(service)
    result = await call(service, mode, None, DELETE)
    assert result.is_error
    assert CANNOT_ASK in text(result)
    assert "--confirm always" in text(result)
    assert "elicitation" in text(result)
    assert notes(service) == before
    assert snapshots(service) == []


# -- the question and the setting ---------------------------------------------------------


def test_question_cuts_a_huge_statement_and_says_how_much_is_not_shown() -> None:
    query = "DELETE FROM t WHERE x IN (" + ",".join(["1"] * 5000) + ")"
    message = confirmation_message("/db", query, "why", None)
    assert "more characters not shown" in message
    assert "with values" not in message
    assert len(message) < 5000


def test_question_says_how_the_change_can_be_undone() -> None:
    message = confirmation_message("/db", "DELETE FROM t WHERE x = 1", "why", None)
    assert "`sqlgate undo`" in message
    assert "snapshot of the whole database for a schema change" in message


def test_question_under_undo_file_says_a_whole_file_snapshot_comes_first() -> None:
    message = confirmation_message("/db", "DELETE FROM t WHERE x = 1", "why", None, undo="file")
    assert "sqlgate keeps what undoes it: a snapshot of the whole database, taken first" in message
    assert "`sqlgate undo`" not in message


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        pytest.param(None, "auto", id="default"),
        pytest.param("always", "always", id="always"),
        pytest.param(" NEVER ", "never", id="case-and-space"),
    ],
)
def test_confirm_setting_comes_from_sqlgate_confirm(raw: str | None, expected: str) -> None:
    env = {} if raw is None else {"SQLGATE_CONFIRM": raw}
    assert load_settings({"db": "x.db"}, env).confirm == expected


def test_unknown_confirm_mode_names_the_variable() -> None:
    with pytest.raises(InvalidArgument, match="SQLGATE_CONFIRM"):
        load_settings({"db": "x.db"}, {"SQLGATE_CONFIRM": "sometimes"})


def test_question_shows_control_characters_visibly_and_indents_the_agents_lines() -> None:
    payload = "\x1b[2K\x1b[1A\x9b2J\u202e\x07\r"
    query = f"DELETE FROM t\n WHERE x = '{payload}'"
    reason = f"cleanup{payload}\n\nsqlgate keeps what undoes it. Run it?"
    message = confirmation_message("/db", query, reason, [payload])
    shown = [c for c in message if c != "\n" and unicodedata.category(c) in {"Cc", "Cf"}]
    assert shown == []
    assert "\\x1b[2K\\x1b[1A\\x9b2J\\u202e\\x07\\r" in message
    assert 'with values: ["\\u001b[2K' in message
    # a line the agent wrote never starts where sqlgate's own lines start
    agent_lines = [line for line in message.splitlines() if "sqlgate keeps" in line]
    assert len(agent_lines) == 2
    assert [line.startswith(" ") for line in agent_lines] == [True, False]
    assert "    DELETE FROM t\n     WHERE x = " in message
    assert "The agent's reason: cleanup" in message
