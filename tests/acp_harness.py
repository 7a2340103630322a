"""Drives `sprout-agent acp` as a real subprocess from the official ACP Python SDK (the test client)."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import anyio

from tests.bounds import bounded
from tests.fake_anthropic import FakeAnthropic
from tests.harness import agent_env, fake_server

if TYPE_CHECKING:
    from acp.schema import McpServerStdio, RequestPermissionResponse


class EditorClient:
    """What an editor does: records every update and answers permission requests from a script."""

    def __init__(self, answers: list[str | None] | None = None) -> None:
        self.updates: list[tuple[str, Any]] = []  # (session id, update model)
        self.permission_requests: list[Any] = []
        self.answers = list(answers or [])  # option ids in order; None answers "cancelled"
        self._changed = anyio.Event()

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))
        self._changed.set()
        self._changed = anyio.Event()

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> RequestPermissionResponse:
        from acp.schema import AllowedOutcome, DeniedOutcome, RequestPermissionResponse

        self.permission_requests.append((tool_call, options))
        answer = self.answers.pop(0) if self.answers else None
        if answer is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=answer))

    def of(self, session_id: str, kind: str | None = None) -> list[Any]:
        return [u for s, u in self.updates if s == session_id and (kind is None or u.session_update == kind)]

    async def wait_for(self, predicate: Callable[[Any], bool], timeout: float = 30) -> Any:
        """The first update that matches, waiting (bounded: `timeout`, scaled) for it to arrive."""
        with anyio.fail_after(bounded(timeout)):
            while True:
                for _, update in self.updates:
                    if predicate(update):
                        return update
                await self._changed.wait()


def stdio_server(name: str, **knobs: Any) -> McpServerStdio:
    """The fault-knob MCP server as an ACP `mcpServers` entry."""
    from acp.schema import EnvVariable, McpServerStdio

    entry = fake_server(**knobs)
    env = [EnvVariable(name=k, value=v) for k, v in entry["env"].items()]
    return McpServerStdio(name=name, command=entry["command"], args=entry["args"], env=env)


@asynccontextmanager
async def acp_agent(
    tmp_path: Path,
    fake: FakeAnthropic | None,
    client: EditorClient,
    *args: str,
    env: dict[str, str] | None = None,
) -> AsyncIterator[tuple[Any, Any]]:
    """(connection, process); stderr goes to the test's stderr (the SDK never drains a pipe)."""
    from acp import Client, spawn_agent_process

    # The SDK's Client protocol lists every client method (files, terminals, elicitation); its router looks each up
    # with getattr and answers "method not found" for a missing one. sprout-agent only ever sends
    # session/update and session/request_permission, the two EditorClient has.
    async with spawn_agent_process(
        cast(Client, client),
        sys.executable,
        "-m",
        "sprout_agent",
        "acp",
        *args,
        env=agent_env(tmp_path, fake, env),
        cwd=tmp_path,
        transport_kwargs={"stderr": None},
    ) as (conn, process):
        yield conn, process


def texts(updates: list[Any]) -> str:
    return "".join(u.content.text for u in updates if u.session_update == "agent_message_chunk")


def statuses(updates: list[Any], call_id: str) -> list[str | None]:
    return [
        u.status for u in updates if u.session_update in ("tool_call", "tool_call_update") and u.tool_call_id == call_id
    ]


class RawAgent:
    """The agent over bare pipes, for what no SDK will send: bytes that are not JSON, odd shapes."""

    def __init__(self, process: anyio.abc.Process) -> None:
        self.process = process
        self._buffer = b""

    async def send(self, line: str | bytes) -> None:
        data = line.encode() if isinstance(line, str) else line
        assert self.process.stdin is not None
        await self.process.stdin.send(data + b"\n")

    async def request(self, ident: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        await self.send(json.dumps({"jsonrpc": "2.0", "id": ident, "method": method, "params": params}))
        return await self.answer(ident)

    async def answer(self, ident: object, timeout: float = 30) -> dict[str, Any]:
        """Reads messages (bounded) until the one answering `ident`; every line must be JSON (stdout stays clean)."""
        with anyio.fail_after(bounded(timeout)):
            while True:
                message = await self.message()
                if "method" not in message and message.get("id") == ident:
                    return message

    async def message(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        while b"\n" not in self._buffer:
            self._buffer += await self.process.stdout.receive()
        line, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(line)


@asynccontextmanager
async def raw_agent(
    tmp_path: Path, fake: FakeAnthropic | None, env: dict[str, str] | None = None
) -> AsyncIterator[RawAgent]:
    command = [sys.executable, "-m", "sprout_agent", "acp"]
    async with await anyio.open_process(command, env=agent_env(tmp_path, fake, env), cwd=tmp_path, stderr=None) as proc:
        try:
            yield RawAgent(proc)
        finally:
            if proc.returncode is None:
                proc.kill()
