# publish-gate: allow-file - the fake secrets below are this test's fixtures
"""No secret reaches query_log: arguments, statements and error messages are redacted before
the audit row is stored, whether the call succeeded, was refused or failed."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlgate.engine.running.textsearch import SearchRequest
from sqlgate.errors import SqlgateError
from sqlgate.service import Service
from tests.records import connect_both

TOKEN = "ghp_" + "Q7x" * 12
AWS = "AKIAIOSFODNN7EXAMPLE"
Call = Callable[[Service], object]


def stored_text(db: Path) -> str:
    """Every text of every query_log row, joined."""
    conn = connect_both(db, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        rows = conn.execute("SELECT ts, session, tool, query, error, detail FROM query_log")
        return "\n".join(str(value) for row in rows for value in row if value is not None)
    finally:
        conn.close()


@pytest.fixture
def ready(service: Service) -> Service:
    service.write_query("CREATE TABLE t(id INTEGER PRIMARY KEY, body TEXT)")
    service.write_query("INSERT INTO t(body) VALUES ('alpha')")
    service.claim_add("acme", "fact", "acme ships weekly")
    return service


CALLS: list[Any] = [
    pytest.param(lambda s: s.append_event("ok", tags=[f"deploy {TOKEN}"]), id="append-tags"),
    pytest.param(lambda s: s.append_event("ok", kind=f"api_key={TOKEN}"), id="append-kind"),
    pytest.param(lambda s: s.append_event(f"deploy with {TOKEN}"), id="append-content"),
    pytest.param(lambda s: s.memory_search("deploy", tags=[TOKEN]), id="search-tags"),
    pytest.param(lambda s: s.memory_search(f"where is {TOKEN}"), id="search-query"),
    pytest.param(lambda s: s.memory_search("x", kind=TOKEN), id="search-kind"),
    pytest.param(lambda s: s.memory_search("x", since=TOKEN), id="search-since"),
    pytest.param(lambda s: s.claims_decayed(as_of=TOKEN), id="decayed-as-of"),
    pytest.param(lambda s: s.claims_contradictions(as_of=TOKEN), id="contradictions-as-of"),
    pytest.param(lambda s: s.claim_add("acme", TOKEN, "x"), id="claim-kind"),
    pytest.param(lambda s: s.claim_add(TOKEN, "fact", "x"), id="claim-entity"),
    pytest.param(lambda s: s.claim_add("acme", "fact", f"uses {TOKEN}"), id="claim-text"),
    pytest.param(lambda s: s.claim_search(TOKEN), id="claim-search"),
    pytest.param(lambda s: s.checkpoint(f"left off at {TOKEN}"), id="checkpoint"),
    pytest.param(lambda s: s.read_query(f"SELECT '{TOKEN}' AS k"), id="read-literal"),
    pytest.param(lambda s: s.read_query(f"SELECT * FROM nope WHERE k = '{TOKEN}'"), id="read-fail"),
    pytest.param(lambda s: s.read_query(f"SELECT {TOKEN} FROM t"), id="read-identifier"),
    pytest.param(
        lambda s: s.write_query(f"INSERT INTO t(body) VALUES ('{AWS}')"), id="write-literal"
    ),
    pytest.param(
        lambda s: s.destructive_query("DELETE FROM t WHERE id = 1", reason=f"key {AWS} leaked"),
        id="destructive-reason",
    ),
    pytest.param(lambda s: s.describe_table(TOKEN), id="describe-missing"),
    pytest.param(lambda s: s.create_view(TOKEN, "SELECT 1"), id="view-name"),
    pytest.param(
        lambda s: s.create_view("v", f"SELECT '{TOKEN}' AS k", description=TOKEN), id="view-sql"
    ),
    pytest.param(lambda s: s.search_text(SearchRequest(TOKEN, "t")), id="search-text-pattern"),
    pytest.param(
        lambda s: s.search_text(SearchRequest("a", "t", where=f"body = '{TOKEN}'")),
        id="search-text-where",
    ),
    pytest.param(lambda s: s.search_text(SearchRequest("a", TOKEN)), id="search-text-table"),
]


@pytest.mark.parametrize("call", CALLS)
def test_no_call_stores_a_secret_in_the_audit_log(
    ready: Service, db_path: Path, call: Call
) -> None:
    before = stored_text(db_path)
    with contextlib.suppress(SqlgateError):
        call(ready)
    after = stored_text(db_path)
    assert after != before  # the call has its row
    assert TOKEN[4:] not in after
    assert AWS not in after


def test_the_agent_still_reads_its_own_error_text(ready: Service) -> None:
    """Redaction is about what is stored: the refusal the agent reads names its argument."""
    with pytest.raises(SqlgateError) as refused:
        ready.describe_table(TOKEN)
    assert TOKEN in str(refused.value)


def test_redaction_off_stores_the_text_as_given(
    make_service: Callable[..., Service], db_path: Path
) -> None:
    service = make_service(redact="off")
    service.read_query(f"SELECT '{TOKEN}' AS k")
    assert TOKEN in stored_text(db_path)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    secret=st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
                   min_size=36, max_size=40),
    before=st.text(alphabet=" ,;:=()'\"\n", max_size=3),
    after=st.text(alphabet=" ,;:=()'\"\n", max_size=3),
    which=st.sampled_from(["kind", "tag", "query", "as_of", "entity", "reason"]),
)  # fmt: skip
def test_a_github_token_anywhere_in_an_argument_is_never_stored(
    ready: Service, db_path: Path, secret: str, before: str, after: str, which: str
) -> None:
    token = f"ghp_{secret}"
    text = f"{before}{token}{after}"
    calls: dict[str, Call] = {
        "kind": lambda s: s.append_event("ok", kind=text),
        "tag": lambda s: s.append_event("ok", tags=[text]),
        "query": lambda s: s.read_query(f"SELECT * FROM nope WHERE x = {text!r}"),
        "as_of": lambda s: s.claims_decayed(as_of=text),
        "entity": lambda s: s.claim_add(text, "fact", "x"),
        "reason": lambda s: s.destructive_query("DELETE FROM t WHERE id = 0", reason=text),
    }
    with contextlib.suppress(SqlgateError):
        calls[which](ready)
    assert secret not in stored_text(db_path)
