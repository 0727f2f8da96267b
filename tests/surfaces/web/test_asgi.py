"""The ASGI helpers sqlgate's middlewares share (surfaces/web/asgi.py): one request header
read, one whole answer sent."""

from __future__ import annotations

import anyio
import pytest

from sqlgate.surfaces.web.asgi import Message, header, send_answer


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        pytest.param([], None, id="none"),
        pytest.param([(b"host", b"127.0.0.1")], b"127.0.0.1", id="one"),
        pytest.param([(b"Host", b"localhost:8766")], b"localhost:8766", id="any-case"),
        pytest.param([(b"host", b"first"), (b"host", b"second")], b"first", id="the-first"),
        pytest.param([(b"x-host", b"no"), (b"hostname", b"no")], None, id="other-names"),
        pytest.param([(b"host", bytearray(b"bytes"))], b"bytes", id="as-bytes"),
        pytest.param([(b"host", b"")], b"", id="empty-is-present"),
    ],
)
def test_a_header_is_the_first_of_its_name_in_any_case(
    headers: list[tuple[bytes, bytes]], expected: bytes | None
) -> None:
    found = header({"type": "http", "headers": headers}, b"host")
    assert found == expected
    assert found is None or type(found) is bytes


@pytest.mark.parametrize(
    ("before", "after"),
    [
        pytest.param([], [], id="alone"),
        pytest.param(
            [(b"www-authenticate", b"Bearer")], [(b"cache-control", b"no-store")], id="both"
        ),
        pytest.param([], [(b"location", b"/"), (b"set-cookie", b"c=1")], id="after"),
    ],
)
@pytest.mark.parametrize("body", [b"", b"{}", "é\n".encode()], ids=["empty", "json", "utf-8"])
def test_an_answer_says_its_type_and_length_between_the_headers_given(
    before: list[tuple[bytes, bytes]], after: list[tuple[bytes, bytes]], body: bytes
) -> None:
    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    anyio.run(lambda: send_answer(send, 418, body, b"text/plain", before=before, after=after))
    length = str(len(body)).encode("ascii")
    assert sent == [
        {
            "type": "http.response.start",
            "status": 418,
            "headers": [
                *before,
                (b"content-type", b"text/plain"),
                (b"content-length", length),
                *after,
            ],
        },
        {"type": "http.response.body", "body": body},
    ]
