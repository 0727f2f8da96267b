"""The JSON-RPC guard: which messages the SDK could not serve, and the answers to them."""

from __future__ import annotations

import json
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sqlgate.surfaces.mcp.jsonrpc_guard import (
    MAX_JSON_VALUES,
    MAX_REQUEST_BYTES,
    RequestIdScan,
    screen,
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(["id", "method", "x", 'a"b', "ü"]), inner, max_size=4)
    ),
    max_leaves=20,
)
request_ids = st.integers(min_value=-(2**53), max_value=2**53) | st.text(max_size=12)


def scanned(text: bytes, cuts: list[int] | None = None) -> RequestIdScan:
    scan = RequestIdScan()
    edges = [0, *sorted(set(cuts or [])), len(text)]
    for start, end in pairwise(edges):
        scan.feed(text[start:end])
    return scan


@settings(max_examples=300, deadline=None)
@given(
    request_id=request_ids,
    params=st.dictionaries(st.sampled_from(["id", "name", "arguments"]), json_values),
    position=st.integers(min_value=0, max_value=3),
    spaced=st.booleans(),
    ascii_only=st.booleans(),
    data=st.data(),
)
def test_the_scan_finds_the_top_level_id_wherever_it_is_and_however_it_is_cut(
    request_id: int | str,
    params: dict[str, Any],
    position: int,
    spaced: bool,
    ascii_only: bool,
    data: st.DataObject,
) -> None:
    members: list[tuple[str, Any]] = [("jsonrpc", "2.0"), ("method", "m"), ("params", params)]
    members.insert(position, ("id", request_id))
    separators = (", ", ": ") if spaced else (",", ":")
    text = json.dumps(dict(members), separators=separators, ensure_ascii=ascii_only).encode()
    cuts = data.draw(st.lists(st.integers(min_value=0, max_value=len(text)), max_size=6))
    assert scanned(text, cuts).request_id == request_id


@settings(max_examples=200, deadline=None)
@given(params=json_values)
def test_an_id_nested_in_the_params_is_never_taken_for_the_requests(params: Any) -> None:
    message = {"jsonrpc": "2.0", "method": "notifications/x", "params": {"p": params, "id": 5}}
    assert scanned(json.dumps(message).encode()).request_id is None


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(b'{"jsonrpc": "2.0", "id": 3, "result": {}}', id="a-response"),
        pytest.param(b'{"result": {}, "jsonrpc": "2.0", "id": 3}', id="a-response-id-last"),
        pytest.param(b'[{"jsonrpc": "2.0", "id": 3, "method": "x"}]', id="a-batch"),
        pytest.param(b'{"jsonrpc": "2.0", "id": [3], "method": "x"}', id="a-list"),
        pytest.param(b'{"jsonrpc": "2.0", "id": true, "method": "x"}', id="a-boolean"),
        pytest.param(b'{"jsonrpc": "2.0", "id": 1.5, "method": "x"}', id="a-float"),
        pytest.param(b'{"jsonrpc": "2.0", "id": "\\ud800", "method": "x"}', id="a-surrogate"),
        pytest.param(b'{"a": "x, \\"id\\": 3}"}', id="an-id-inside-a-string"),
        pytest.param(b"garbage", id="garbage"),
    ],
)
def test_no_id_is_read_where_there_is_no_request_id(text: bytes) -> None:
    assert scanned(text).request_id is None


def test_an_id_after_megabytes_of_params_is_found_in_the_tail() -> None:
    bulk = "x" * (2 * RequestIdScan.HEAD_BYTES)
    text = json.dumps({"method": "m", "params": {"a": bulk}, "jsonrpc": "2.0", "id": 77}).encode()
    assert scanned(text, list(range(0, len(text), 65536))).request_id == 77
    assert scanned(text).size == len(text)


def request(params: str, request_id: str = "1") -> str:
    return f'{{"jsonrpc": "2.0", "id": {request_id}, "method": "tools/call", "params": {params}}}'


# (message, JSON-RPC code of the answer or None when the SDK can serve it, the answer's id)
SCREENED = [
    pytest.param(request('{"name": "x"}'), None, None, id="a-request"),
    pytest.param('{"jsonrpc": "2.0", "method": "notifications/initialized"}', None, None,
                 id="a-notification"),
    pytest.param('{"jsonrpc": "2.0", "id": 4, "result": {}}', None, None, id="a-response"),
    pytest.param(request('{"a": "' + "é, [x]" * 200_000 + '"}'), None, None,
                 id="commas-and-brackets-inside-a-string-are-no-values"),
    pytest.param(request('{"a": "\\ud800"}', "2"), -32700, 2, id="lone-surrogate"),
    pytest.param(request('{"a": "\\udc00"}', '"z"'), -32700, "z", id="lone-low-surrogate"),
    pytest.param(request('{"a": ' + "[" * 1000 + "]" * 1000 + "}", "3"), -32700, 3,
                 id="1000-deep"),
    pytest.param(request('{"a": ' + "[" * 150 + "]" * 150 + "}", "3"), None, None,
                 id="150-deep"),
    pytest.param('{"jsonrpc": "2.0", "id": 5, "method": "x", ', -32700, 5, id="cut-short"),
    pytest.param("", -32700, None, id="empty"),
    pytest.param("[1, 2]", -32600, None, id="batch"),
    pytest.param("42", -32600, None, id="a-number"),
    pytest.param('{"jsonrpc": "2.0", "id": 6}', -32600, 6, id="no-method"),
    pytest.param('{"jsonrpc": "2.0", "id": 7, "method": 7}', -32600, 7, id="method-number"),
    pytest.param('{"jsonrpc": "2.0", "id": null, "method": "x"}', -32600, None, id="null-id"),
    pytest.param(request('{"a": [' + ",".join(["1"] * (MAX_JSON_VALUES + 10)) + "]}", "8"),
                 -32600, 8, id="too-many-values"),
    pytest.param(request('{"a": "' + "x" * MAX_REQUEST_BYTES + '"}', "9"), -32600, 9,
                 id="over-4-MiB"),
]  # fmt: skip


@pytest.mark.parametrize(("message", "code", "request_id"), SCREENED)
def test_screen_passes_what_the_sdk_can_serve_and_answers_the_rest(
    message: str, code: int | None, request_id: object
) -> None:
    for form in (message, message.encode("utf-8", "surrogatepass")):  # stdio, HTTP
        rejection = screen(form)
        if code is None:
            assert rejection is None
            continue
        assert rejection is not None
        assert (rejection.code, rejection.request_id) == (code, request_id)
        answer = json.loads(rejection.as_json())
        assert answer == {
            "jsonrpc": "2.0",
            "id": request_id,
            "error": {"code": code, "message": rejection.message},
        }


@pytest.mark.parametrize(
    ("message", "phrase"),
    [
        pytest.param(request('{"a": "\\ud800"}'), "unpaired UTF-16 surrogate", id="surrogate"),
        pytest.param(request("[" * 300 + "]" * 300), "more than 200 levels", id="deep"),
        pytest.param(request('{"a": [' + "1," * 150_000 + "1]}"), "150,00", id="values"),
        pytest.param(request('{"a": "' + "x" * MAX_REQUEST_BYTES + '"}'), "4 MiB", id="size"),
        pytest.param("[]", "batches", id="batch"),
        pytest.param('{"jsonrpc": "2.0", "id": 1, "method": "x", "params": 3}', "params",
                     id="shape"),
    ],
)  # fmt: skip
def test_each_answer_says_what_was_wrong(message: str, phrase: str) -> None:
    rejection = screen(message)
    assert rejection is not None
    assert phrase in rejection.message
