"""What a client may send, and the answer to a message the server cannot read.

Both transports (stdio: `mcp_server`, HTTP: `http`) screen each message before the SDK
parses it. The SDK logs a message it cannot parse at debug level and drops it, so the
client used to wait forever; here every such message gets a JSON-RPC error, with the
request's id when it can be read (else `null`), and the server goes on:

    the message                              answer
    more than 4 MiB                          -32600, counted but never kept or parsed
    more than 100,000 JSON values            -32600, before parsing: the SDK's parser
                                             costs ~250 bytes a value, 4 MiB of `[]`
                                             took 300-500 MB
    not JSON                                 -32700
    nested more than 200 levels              -32700 (the SDK's parser stops there)
    a string with an unpaired surrogate      -32700 (`"\\ud800"` is JSON but not Unicode)
    JSON that is no JSON-RPC message         -32600 (batches too: MCP has none)
    a request whose id is no string/integer  -32600 (the SDK took it for a notification)

The id is read without parsing (`RequestIdScan`), so even an oversized or broken message
is answered with its id.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from mcp.types import (
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCNotification,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError

from sqlgate.service import counted

__all__ = [
    "MAX_JSON_NESTING",
    "MAX_JSON_VALUES",
    "MAX_REQUEST_BYTES",
    "Rejection",
    "RequestIdScan",
    "Unreadable",
    "oversized",
    "rejection_for",
    "screen",
]

# one bound for both transports (the SDK's own HTTP default is the same 4 MiB)
MAX_REQUEST_BYTES = 4 * 1024 * 1024
MAX_JSON_VALUES = 100_000
MAX_JSON_NESTING = 200  # what the SDK's JSON parser reads; stated here, enforced there

RequestId = int | str

_MiB = 1024 * 1024
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')  # linear: no way to split a run twice
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_IN_STRING = re.compile(rb'["\\]')
_NESTED = re.compile(rb'["\[\]{}]')
_TOP = re.compile(rb'["\[\]{}:,]')
# `..., "id": 7}` closing the message, maybe followed by short members (`"jsonrpc": "2.0"`):
# in valid JSON a quote after `,` or `{` opens a key, and a final lone `}` closes the top
_TAIL_ID = re.compile(
    rb'[,{]\s*"id"\s*:\s*(-?\d{1,19}|"[^"\\]{0,128}")\s*'
    rb'(?:,\s*"[A-Za-z_]{1,32}"\s*:\s*(?:"[^"\\]{0,128}"|-?\d{1,19}|true|false|null)\s*)*'
    rb"\}\s*$"
)


@dataclass(frozen=True)
class Rejection:
    """A JSON-RPC error answering a message that could not be served."""

    code: int
    message: str
    request_id: RequestId | None = None

    def as_error(self) -> JSONRPCError:
        return JSONRPCError(
            jsonrpc="2.0",
            id=self.request_id,
            error=ErrorData(code=self.code, message=self.message),
        )

    def as_json(self) -> bytes:
        return self.as_error().model_dump_json(by_alias=True, exclude_unset=True).encode()


class Unreadable(str):
    """What the stdio reader hands the SDK instead of a message it refused: text the SDK
    cannot parse, carrying the answer (`AnsweringStream` sends it)."""

    rejection: Rejection

    def __new__(cls, rejection: Rejection) -> Unreadable:
        made = super().__new__(cls, "\x00 refused by sqlgate")
        made.rejection = rejection
        return made


class RequestIdScan:
    """The top-level `"id"` of a JSON-RPC message read in pieces, without parsing it.

    The first HEAD_BYTES are followed as JSON (strings skipped, nesting counted), which
    finds an id written first, as most clients do, and which top-level keys there are.
    An id written last (the TypeScript SDK does) is found in the last TAIL_BYTES.
    Nothing else is kept, so a message of any size costs a bounded amount of memory.
    """

    HEAD_BYTES = 256 * 1024
    TAIL_BYTES = 512
    _CAPTURE = 256  # longest id text kept

    def __init__(self) -> None:
        self.size = 0
        self.keys: set[bytes] = set()
        self._head_left = self.HEAD_BYTES
        self._tail = b""
        self._carry = b""
        self._depth = 0
        self._done = False  # the top-level value ended, or is no object
        self._in_string = False
        self._string_role: str | None = None  # "key" or "id" while reading such a string
        self._text = bytearray()
        self._expect_key = False
        self._key: bytes | None = None
        self._value_key: bytes | None = None  # the top-level key whose value is being read
        self._scalar: bytearray | None = None  # the text of a non-string id value
        self._id_text: bytes | None = None

    def feed(self, chunk: bytes) -> None:
        self.size += len(chunk)
        self._tail = (self._tail + chunk[-self.TAIL_BYTES :])[-self.TAIL_BYTES :]
        if self._head_left > 0 and not self._done:
            head = chunk[: self._head_left]
            self._head_left -= len(head)
            data, self._carry = self._carry + head, b""
            self._scan(data)

    @property
    def request_id(self) -> RequestId | None:
        """The id to answer with: None when there is none, or the message is no request."""
        if b"method" not in self.keys and self.keys & {b"result", b"error"}:
            return None  # a client's response: its id is not one of our requests'
        text = self._id_text
        if text is None and (found := _TAIL_ID.search(self._tail)) is not None:
            text = found.group(1)
        if text is None or len(text) > self._CAPTURE:
            return None
        try:
            value = json.loads(text)
        except ValueError:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            return None
        if isinstance(value, str) and re.search("[\ud800-\udfff]", value):
            return None  # could not be written back
        return value

    def _scan(self, data: bytes) -> None:
        i, end = 0, len(data)
        while i < end and not self._done:
            if self._in_string:
                i = self._in_string_from(data, i)
                if i < 0:
                    return
                continue
            found = (_TOP if self._depth == 1 else _NESTED).search(data, i)
            if found is None:
                self._keep_scalar(data[i:])
                return
            j = found.start()
            self._keep_scalar(data[i:j])
            self._structure(data[j])
            i = j + 1

    def _in_string_from(self, data: bytes, i: int) -> int:
        """Read string text from `i`; the next index, or -1 when the data ran out."""
        found = _IN_STRING.search(data, i)
        if found is None:
            self._keep_text(data[i:])
            return -1
        j = found.start()
        self._keep_text(data[i:j])
        if data[j] == 0x22:  # the closing quote
            self._in_string = False
            self._string_ended()
            return j + 1
        width = 6 if data[j + 1 : j + 2] == b"u" else 2  # keep an escape whole
        if j + width > len(data):
            self._carry = data[j:]  # cut by the end of this piece: finish it with the next
            return -1
        self._keep_text(data[j : j + width])
        return j + width

    def _structure(self, char: int) -> None:
        if char == 0x22:  # '"'
            self._in_string = True
            self._text.clear()
            if self._depth == 1 and self._expect_key:
                self._string_role = "key"
            elif self._depth == 1 and self._value_key == b"id":
                self._string_role, self._scalar = "id", None
            else:
                self._string_role = None
        elif char in b"[{":
            if self._depth == 0 and char != ord("{"):
                self._done = True  # not an object: there is no id to find
                return
            if self._depth == 1 and self._value_key == b"id":
                self._value_key = self._scalar = None  # an id is never an array or object
            self._depth += 1
            self._expect_key = self._depth == 1
        elif char in b"]}":
            if self._depth == 1:
                self._value_ended()
            self._depth -= 1
            self._done = self._depth <= 0
        elif char == ord(":"):
            self._value_key, self._key = self._key, None
            self._scalar = bytearray() if self._value_key == b"id" else None
        elif char == ord(","):
            self._value_ended()
            self._expect_key = True

    def _keep_text(self, piece: bytes) -> None:
        if self._string_role is not None and len(self._text) <= self._CAPTURE:
            self._text += piece[: self._CAPTURE + 1]

    def _keep_scalar(self, piece: bytes) -> None:
        if self._scalar is not None and len(self._scalar) <= self._CAPTURE:
            self._scalar += piece[: self._CAPTURE + 1]

    def _string_ended(self) -> None:
        if self._string_role == "key":
            self._key = bytes(self._text)
            self.keys.add(self._key)
            self._expect_key = False
        elif self._string_role == "id":
            self._id_text = b'"' + bytes(self._text) + b'"'
            self._value_key = None
        self._string_role = None

    def _value_ended(self) -> None:
        if self._value_key == b"id" and self._scalar is not None:
            self._id_text = bytes(self._scalar).strip()
        self._value_key = self._scalar = None


def _scanned(raw: bytes) -> RequestIdScan:
    scan = RequestIdScan()
    scan.feed(raw)
    return scan


def oversized(scan: RequestIdScan, *, complete: bool = True) -> Rejection:
    """The answer to a message over MAX_REQUEST_BYTES (`complete`: its size is known)."""
    size = (
        counted(scan.size, "byte", spec=",")
        if complete
        else f"more than {counted(MAX_REQUEST_BYTES, 'byte', spec=',')}"
    )
    return Rejection(
        INVALID_REQUEST,
        f"the message is {size}, over sqlgate's limit of {MAX_REQUEST_BYTES // _MiB} MiB "
        "per message; nothing was run. Send less per call: fewer ids or params, shorter "
        "text, or split the work into several calls",
        scan.request_id,
    )


def _structure(text: bytes) -> int:
    return text.count(b",") + text.count(b"[") + text.count(b"{")


def _count_values(raw: bytes) -> int:
    """About how many JSON values `raw` holds: commas and openings outside strings.

    Counted over all of `raw` first (fast, no copies); only when that passes the limit
    are the ones inside strings taken off again, one string at a time (`re.sub` made a
    list of a million pieces: 200 MB)."""
    rough = _structure(raw) + 1
    if rough <= MAX_JSON_VALUES:
        return rough
    return rough - sum(_structure(found.group()) for found in _STRING.finditer(raw))


def screen(message: str | bytes) -> Rejection | None:
    """None when the SDK can serve `message` (one line, or an HTTP body) as it is; else
    the answer to send instead. Parses it as the SDK will (`jsonrpc_message_adapter`)."""
    raw = message if isinstance(message, bytes) else message.encode("utf-8", "surrogatepass")
    if len(raw) > MAX_REQUEST_BYTES:
        return oversized(_scanned(raw))
    # short messages cannot hold too many values: skip the count
    if len(raw) > 2 * MAX_JSON_VALUES and (values := _count_values(raw)) > MAX_JSON_VALUES:
        return Rejection(
            INVALID_REQUEST,
            f"the message holds about {counted(values, 'JSON value', spec=',')}, over sqlgate's "
            f"limit of {MAX_JSON_VALUES:,} per message; nothing was run. Send fewer values per "
            "call",
            _scanned(raw).request_id,
        )
    try:
        parsed = jsonrpc_message_adapter.validate_json(message, by_name=False)
    except ValidationError as exc:
        return rejection_for(exc, raw)
    if isinstance(parsed, JSONRPCNotification) and b"id" in _scanned(raw).keys:
        return Rejection(
            INVALID_REQUEST,
            'the request\'s "id" must be a string or an integer; nothing was run',
        )
    return None


def rejection_for(exc: ValidationError, raw: bytes) -> Rejection:
    """The answer to a message the SDK's JSON-RPC model refused, as `exc` says why."""
    request_id = _scanned(raw).request_id
    errors = exc.errors(include_url=False)
    first = errors[0] if errors else {"type": "", "msg": str(exc), "loc": ()}
    if first["type"] == "json_invalid":
        detail = str(first["msg"]).removeprefix("Invalid JSON: ")
        if "recursion limit" in detail:
            message = (
                f"the message nests JSON more than {counted(MAX_JSON_NESTING, 'level')} deep, "
                "more than sqlgate can read; nothing was run. Send flatter arguments"
            )
        elif "surrogate" in detail or (
            "hex escape" in detail and _SURROGATE_ESCAPE.search(raw) is not None
        ):
            message = (
                f"a string in the message holds an unpaired UTF-16 surrogate escape ({detail}): "
                "\\ud800-\\udfff without its other half is not text; nothing was run. Send "
                "the text as UTF-8, or a character beyond U+FFFF as a surrogate pair"
            )
        else:
            message = (
                f"the message is not valid JSON ({detail}); nothing was run. Send one "
                "JSON-RPC 2.0 message as UTF-8 JSON"
            )
        return Rejection(PARSE_ERROR, message, request_id)
    start = raw.lstrip()[:1]
    if start == b"[":
        message = "JSON-RPC batches (arrays of messages) are not part of MCP; send each alone"
    elif start != b"{":
        message = "the message is JSON but no object; send a JSON-RPC 2.0 message"
    else:
        message = (
            f"the message is JSON but not a JSON-RPC 2.0 message ({_shape_problem(errors)}); "
            'nothing was run. Send e.g. {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}'
        )
    return Rejection(INVALID_REQUEST, message, request_id)


def _shape_problem(errors: list[Any]) -> str:
    """The first complaint about the request's shape, as `params: Input should be ...`."""
    for error in errors:
        location = [str(part) for part in error.get("loc", ())]
        if location[:1] == ["JSONRPCRequest"]:
            return f"{'.'.join(location[1:]) or 'message'}: {error.get('msg', '')}"
    return str(errors[0].get("msg", "")) if errors else "unknown shape"
