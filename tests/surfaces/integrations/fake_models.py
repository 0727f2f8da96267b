"""Fake model endpoints on loopback, for a real client's tool call without a real model.

Each speaks just enough of one API for one turn: the first request gets one function call
(the scripted `Call`), and a request that carries the call's output gets a final text. Every
request is kept (path and JSON body), so a test can read what the client sent back: the
tool's result as the model would have seen it.

- `ResponsesModel`: the OpenAI Responses API as Codex streams it, `POST {base}/responses`
  answered with server-sent events `response.created`, `response.output_item.done` (a
  `function_call` item; an MCP tool is named by its `namespace`, `mcp__<server>`, and its
  own name) and `response.completed`, as in Codex's test support
  (openai/codex, codex-rs/core/tests/common/responses.rs: `ev_function_call_with_namespace`,
  `ev_completed`). The call's output comes back as a `function_call_output` input item.
- `GeminiModel`: the Gemini API's `POST {base}/v1beta/models/{model}:streamGenerateContent
  ?alt=sse`, one `data:` event of `GenerateContentResponse` with a `functionCall` part; the
  output comes back as a `functionResponse` part of the last user content.
- `MessagesModel`: the Anthropic Messages API, `POST {base}/v1/messages` with `stream: true`
  answered with the named events of Anthropic's streaming docs: `message_start`,
  `content_block_start` (a `tool_use` block: id, name, empty input), `content_block_delta`
  (`input_json_delta`: the input as `partial_json`), `content_block_stop`, `message_delta`
  (`stop_reason` `tool_use`, else `end_turn`) and `message_stop`. Claude Code names an MCP
  tool `mcp__<server>__<tool>`; the output comes back as a `tool_result` block (its
  `tool_use_id` the call's id) in the next user message. `count_tokens` gets a count.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any


@dataclass(frozen=True)
class Call:
    """The one tool call the fake model asks for."""

    tool: str
    arguments: dict[str, Any]
    namespace: str | None = None  # Codex: the MCP server's tools are `mcp__<server>`
    call_id: str = "call-1"


@dataclass(frozen=True)
class Request:
    path: str
    body: dict[str, Any]


@dataclass
class FakeModel:
    """A loopback HTTP server answering model requests; use it as a context manager."""

    call: Call
    final_text: str = "done"
    requests: list[Request] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def __enter__(self) -> FakeModel:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, str, bytes]:
        """Status, content type and body for one request."""
        raise NotImplementedError

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        model = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._send(404, "application/json", b"{}")

            def do_HEAD(self) -> None:  # Claude Code starts with `HEAD /`
                self.send_response(200)
                self.end_headers()

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                body = json.loads(raw) if raw else {}
                model.requests.append(Request(self.path, body))
                self._send(*model.answer(self.path, body))

            def _send(self, status: int, kind: str, payload: bytes) -> None:
                self.send_response(status)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        return Handler


def sse(events: Iterator[dict[str, Any]], *, named: bool) -> bytes:
    """Server-sent events, each `data:` one JSON object (with `event: <type>` when named)."""
    lines = []
    for event in events:
        head = f"event: {event['type']}\n" if named else ""
        lines.append(f"{head}data: {json.dumps(event)}\n\n")
    return "".join(lines).encode("utf-8")


class ResponsesModel(FakeModel):
    """The OpenAI Responses API, streamed, as Codex's `wire_api = "responses"` expects."""

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, str, bytes]:
        if not path.endswith("/responses"):
            return 404, "application/json", b"{}"
        return 200, "text/event-stream", sse(self._events(body), named=True)

    def _events(self, body: dict[str, Any]) -> Iterator[dict[str, Any]]:
        turn = f"resp-{len(self.requests)}"
        yield {"type": "response.created", "response": {"id": turn}}
        if self.call_output(body) is None:
            item: dict[str, Any] = {
                "type": "function_call",
                "call_id": self.call.call_id,
                "name": self.call.tool,
                "arguments": json.dumps(self.call.arguments),
            }
            if self.call.namespace is not None:
                item["namespace"] = self.call.namespace
        else:
            text = {"type": "output_text", "text": self.final_text}
            item = {"type": "message", "role": "assistant", "id": "msg-1", "content": [text]}
        yield {"type": "response.output_item.done", "item": item}
        usage = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
        yield {"type": "response.completed", "response": {"id": turn, "usage": usage}}

    def call_output(self, body: dict[str, Any]) -> str | None:
        """The text of the scripted call's output in a request's input, if it carries one."""
        for item in body.get("input", []):
            if item.get("type") == "function_call_output" and item["call_id"] == self.call.call_id:
                output = item["output"]
                if isinstance(output, str):
                    return output
                return "\n".join(part.get("text", "") for part in output)
        return None

    def tools_offered(self) -> dict[str, list[str]]:
        """The first request's tools: each namespace's functions ("" for the top level)."""
        offered: dict[str, list[str]] = {}
        for tool in self.requests[0].body.get("tools", []):
            if tool.get("type") == "namespace":
                offered[tool["name"]] = [inner["name"] for inner in tool["tools"]]
            elif "name" in tool:
                offered.setdefault("", []).append(tool["name"])
        return offered


class GeminiModel(FakeModel):
    """The Gemini API's streamGenerateContent (SSE), as Gemini CLI calls it."""

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, str, bytes]:
        if ":streamGenerateContent" not in path:
            return 404, "application/json", b"{}"
        if self.function_response(body) is None:
            part: dict[str, Any] = {
                "functionCall": {"name": self.call.tool, "args": self.call.arguments}
            }
        else:
            part = {"text": self.final_text}
        chunk = {
            "candidates": [
                {"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": {
                "promptTokenCount": 1,
                "candidatesTokenCount": 1,
                "totalTokenCount": 2,
            },
        }
        return 200, "text/event-stream", sse(iter([chunk]), named=False)

    def function_response(self, body: dict[str, Any]) -> dict[str, Any] | None:
        """The `response` of the scripted call's functionResponse in a request, if any."""
        for content in body.get("contents", []):
            for part in content.get("parts", []):
                answer = part.get("functionResponse")
                if answer is not None and answer.get("name") == self.call.tool:
                    response: dict[str, Any] = answer["response"]
                    return response
        return None

    def tools_offered(self) -> list[str]:
        """The function declarations' names in the first model request."""
        return [
            declaration["name"]
            for tool in self.requests[0].body.get("tools", [])
            for declaration in tool.get("functionDeclarations", [])
        ]

    def declaration(self, name: str) -> dict[str, Any]:
        """The function declaration `name` of the first model request."""
        for tool in self.requests[0].body.get("tools", []):
            for declaration in tool.get("functionDeclarations", []):
                if declaration["name"] == name:
                    found: dict[str, Any] = declaration
                    return found
        raise KeyError(name)


class MessagesModel(FakeModel):
    """The Anthropic Messages API, as Claude Code calls it (`ANTHROPIC_BASE_URL`)."""

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, str, bytes]:
        route = path.split("?")[0]
        if route == "/v1/messages/count_tokens":
            return 200, "application/json", json.dumps({"input_tokens": 1}).encode("utf-8")
        if route != "/v1/messages":
            return 404, "application/json", b"{}"
        block, stop = self._turn(body)
        message = {
            "id": f"msg-{len(self.requests)}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "fake"),
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
        if not body.get("stream"):
            whole = {**message, "content": [block], "stop_reason": stop}
            return 200, "application/json", json.dumps(whole).encode("utf-8")
        return 200, "text/event-stream", sse(self._events(message, block, stop), named=True)

    def _turn(self, body: dict[str, Any]) -> tuple[dict[str, Any], str]:
        """The answer's one content block and its stop reason: the scripted call while the
        request offers tools and carries no result of the call, else the final text (so a
        side request without tools, a title or a summary, gets text)."""
        if body.get("tools") and self.tool_result(body) is None:
            call = {"type": "tool_use", "id": self.call.call_id, "name": self.call.tool}
            return {**call, "input": self.call.arguments}, "tool_use"
        return {"type": "text", "text": self.final_text}, "end_turn"

    @staticmethod
    def _events(
        message: dict[str, Any], block: dict[str, Any], stop: str
    ) -> Iterator[dict[str, Any]]:
        """The stream of one message with one content block, the block's content in a delta."""
        yield {"type": "message_start", "message": message}
        if block["type"] == "tool_use":
            start = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        yield {"type": "content_block_start", "index": 0, "content_block": start}
        yield {"type": "content_block_delta", "index": 0, "delta": delta}
        yield {"type": "content_block_stop", "index": 0}
        ending = {"stop_reason": stop, "stop_sequence": None}
        yield {"type": "message_delta", "delta": ending, "usage": {"output_tokens": 1}}
        yield {"type": "message_stop"}

    def tool_result(self, body: dict[str, Any]) -> str | None:
        """The text of the scripted call's tool_result in a request's messages, if any."""
        for message in body.get("messages", []):
            content = message.get("content")
            for block in content if isinstance(content, list) else []:
                if block.get("type") == "tool_result" and block["tool_use_id"] == self.call.call_id:
                    result = block.get("content", "")
                    if isinstance(result, str):
                        return result
                    return "\n".join(part.get("text", "") for part in result)
        return None

    def tools_offered(self) -> list[str]:
        """The tools' names in the first model request."""
        return [tool["name"] for tool in self.requests[0].body.get("tools", [])]
