"""An agent's session with `sqlgate serve` over stdio, started as an MCP client starts it.

The person behind the agent approves each destructive call it is asked about (elicitation),
and the questions are kept for the test to read.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types import CallToolResult, ElicitRequestParams, ElicitResult

SRC = Path(__file__).resolve().parents[3] / "src"
UNDO_ID = re.compile(r"; undo: sqlgate undo (\d+@[0-9a-f]{8})\b")  # then `--db PATH`, or not


def server_env(home: Path) -> dict[str, str]:
    """sqlgate importable from this checkout; the per-user folders inside the test's `home`
    (nothing of the person running the tests is read or written)."""
    path = os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")]))
    return {
        "PYTHONPATH": path,
        "HOME": str(home),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
    }


def text(result: CallToolResult) -> str:
    first = result.content[0]
    assert first.type == "text"
    return first.text


class Person:
    """The person behind the agent: approves every destructive call, and remembers each
    question."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def __call__(self, context: ClientRequestContext, params: ElicitRequestParams) -> Any:
        self.asked.append(params.message)
        return ElicitResult(action="accept", content={"approve": True})


class Agent:
    """Tool calls that must succeed, on one session."""

    def __init__(self, client: Client, person: Person) -> None:
        self.client = client
        self.person = person

    async def call(self, tool: str, **arguments: Any) -> str:
        result = await self.client.call_tool(tool, arguments)
        assert not result.is_error, f"{tool}({arguments}) answered an error: {text(result)}"
        return text(result)

    async def undo(self, answer: str, reason: str) -> str:
        """Take back the call that answered `answer`, by the id its undo hint names."""
        found = UNDO_ID.search(answer)
        assert found, f"no undo hint in {answer!r}"
        return await self.call("undo_call", audit_id=found.group(1), reason=reason)


def serve_params(argv: list[str], cwd: Path, home: Path) -> StdioServerParameters:
    """`argv` (a `sqlgate ...` command line) run by this Python, in `cwd`."""
    assert argv[0] == "sqlgate", argv
    return StdioServerParameters(command=sys.executable, args=["-m", "sqlgate", *argv[1:]],
                                 env=server_env(home), cwd=cwd)  # fmt: skip


@contextmanager
def unwrapped() -> Iterator[None]:
    """A failed assertion of the test, not the client's task groups wrapped around it."""
    try:
        yield
    except Exception as error:
        leaf: BaseException = error
        while len(getattr(leaf, "exceptions", ())) == 1:
            leaf = leaf.exceptions[0]  # type: ignore[attr-defined]
        if leaf is error:
            raise
        raise leaf from None


@asynccontextmanager
async def agent_session(argv: list[str], cwd: Path, home: Path) -> AsyncIterator[Agent]:
    """A session with the server `argv` starts; a server that does not start fails the test
    with what it said on stderr (its start-up refusal, if any), and a failure later shows its
    stderr among the test's output."""
    home.mkdir(exist_ok=True)
    errlog_path = home / "serve-stderr.txt"
    with errlog_path.open("w+", encoding="utf-8") as errlog, unwrapped():
        async with AsyncExitStack() as stack:
            person = Person()
            client = Client(stdio_client(serve_params(argv, cwd, home), errlog=errlog),
                            elicitation_callback=person)  # fmt: skip
            refused = ""
            try:
                await stack.enter_async_context(client)
            except Exception as error:  # an ExceptionGroup from the client's task group
                errlog.flush()
                said = errlog_path.read_text(encoding="utf-8").strip()
                refused = f"`{' '.join(argv)}` did not start ({type(error).__name__}): {said}"
            if refused:
                pytest.fail(refused, pytrace=False)
            try:
                yield Agent(client, person)
            finally:  # shown with a failure, as the test's captured output
                errlog.flush()
                print(f"sqlgate serve's stderr:\n{errlog_path.read_text(encoding='utf-8')}")
