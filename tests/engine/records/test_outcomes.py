"""A call's outcome as every surface names it: ok, refused (the server's policy said no) or
error (anything else failed), decided once, in Python and in SQL, the two always agreeing."""

from __future__ import annotations

import json
from typing import Any

import apsw
import pytest

from sqlgate.engine.records import OUTCOME_SQL, OUTCOMES, call_outcome

CASES = [
    pytest.param(1, None, "ok", id="ok"),
    pytest.param(1, {"refused": True}, "ok", id="ok-wins"),
    pytest.param(0, {"refused": True, "reason": "tier"}, "refused", id="refused"),
    pytest.param(0, {"refused": False}, "error", id="refused-false"),
    pytest.param(0, {"refused": 1}, "error", id="refused-not-true"),
    pytest.param(0, {}, "error", id="no-detail-keys"),
    pytest.param(0, None, "error", id="no-detail"),
    pytest.param(0, "not json {", "error", id="detail-not-json"),
    pytest.param(0, ["refused"], "error", id="detail-a-list"),
]


def _stored(detail: Any) -> Any:
    """`detail` as query_log holds it: JSON text, or the raw text another program wrote."""
    if detail is None or isinstance(detail, str):
        return detail
    return json.dumps(detail)


@pytest.mark.parametrize(("ok", "detail", "expected"), CASES)
def test_call_outcome_names_ok_refused_or_error(ok: int, detail: Any, expected: str) -> None:
    parsed = json.loads(_stored(detail)) if isinstance(detail, (dict, list)) else detail
    assert call_outcome(bool(ok), parsed) == expected
    assert expected in OUTCOMES


@pytest.mark.parametrize(("ok", "detail", "expected"), CASES)
def test_the_sql_of_each_outcome_selects_the_rows_call_outcome_names_so(
    ok: int, detail: Any, expected: str
) -> None:
    conn = apsw.Connection(":memory:")
    conn.execute("CREATE TABLE query_log (ok INTEGER, detail TEXT)")
    conn.execute("INSERT INTO query_log VALUES (?, ?)", (ok, _stored(detail)))
    matching = [
        outcome
        for outcome in OUTCOMES
        if conn.execute(f"SELECT count(*) FROM query_log WHERE {OUTCOME_SQL[outcome]}").get
    ]
    assert matching == [expected]


def test_the_outcomes_are_the_consoles_three_words_in_order() -> None:
    assert OUTCOMES == ("ok", "refused", "error")
