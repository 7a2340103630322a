"""The ACP server in this process, over two pipes: the test writes raw lines (what no SDK would send) and
reads every message back. No subprocess: the real reader, connection, sessions and runtime, in ~ms."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import anyio
import anyio.to_thread
import pytest

from sprout_agent.faces.acp.lines import MAX_LINE_BYTES, LineReader, Writer
from sprout_agent.faces.acp.server import run
from sprout_agent.faces.acp.session_template import AcpSetup
from tests.bounds import bounded
from tests.fake_anthropic import FakeAnthropic
from tests.harness import API_KEY


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class PipeClient:
    def __init__(self, to_agent: int, from_agent: int) -> None:
        self._to_agent: int | None = to_agent
        self._from_agent = from_agent
        self.raw: list[bytes] = []  # every line the server wrote, as written
        self.messages: list[dict[str, Any]] = []
        self._arrived = anyio.Event()

    async def send(self, *lines: str | bytes) -> None:
        """All lines in one write: the server reads them together, as from a client that pipelines."""
        await self.send_raw(b"".join((line.encode() if isinstance(line, str) else line) + b"\n" for line in lines))

    async def send_raw(self, data: bytes) -> None:
        assert self._to_agent is not None
        await anyio.to_thread.run_sync(_write_all, self._to_agent, data)

    async def request(self, ident: object, method: str, params: object) -> dict[str, Any]:
        await self.send(json.dumps({"jsonrpc": "2.0", "id": ident, "method": method, "params": params}))
        return await self.answer(ident)

    async def answer(self, ident: object, timeout: float = 10) -> dict[str, Any]:
        """The first answer to `ident` (None: an error about a message whose id could not be read), bounded."""
        with anyio.fail_after(bounded(timeout)):
            while True:
                for message in self.messages:
                    if "method" not in message and message.get("id") == ident:
                        self.messages.remove(message)
                        return message
                await self._arrived.wait()

    async def question(self, method: str, timeout: float = 30) -> dict[str, Any]:
        """The first request from the agent named `method` (e.g. session/request_permission), taken off the list."""
        with anyio.fail_after(bounded(timeout)):
            while True:
                for message in self.messages:
                    if message.get("method") == method and "id" in message:
                        self.messages.remove(message)
                        return message
                await self._arrived.wait()

    @property
    def input_closed(self) -> bool:
        return self._to_agent is None

    def close_input(self) -> None:
        if self._to_agent is not None:
            os.close(self._to_agent)
            self._to_agent = None

    async def read_all(self) -> None:
        """Collects every line until the server closes its end; each one must be JSON in valid UTF-8."""
        buffer = b""
        while chunk := await anyio.to_thread.run_sync(os.read, self._from_agent, 1 << 16):
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                self.raw.append(line)
                self.messages.append(json.loads(line.decode("utf-8")))
            self._arrived.set()
            self._arrived = anyio.Event()
        assert not buffer, "the last message has no newline"


@asynccontextmanager
async def pipe_agent(
    options: AcpSetup | None = None, max_line_bytes: int = MAX_LINE_BYTES
) -> AsyncIterator[PipeClient]:
    """A served client; leaving closes its input, and the server (with every session) must end within 10 s.

    A crash of the server is the test's exception: `run` returning early fails the test too.
    """
    in_read, in_write = os.pipe()
    out_read, out_write = os.pipe()
    client = PipeClient(in_write, out_read)
    ended = anyio.Event()

    async def serve() -> None:
        try:
            await run(options or AcpSetup(), LineReader(in_read, max_line_bytes), Writer(out_write))
        finally:
            os.close(out_write)
            ended.set()

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(serve)
            group.start_soon(client.read_all)
            try:
                yield client
                assert client.input_closed or not ended.is_set(), "the server stopped before its input ended"
            finally:
                client.close_input()
                with anyio.fail_after(bounded(10)):
                    await ended.wait()
    finally:
        os.close(in_read)
        os.close(out_read)


@asynccontextmanager
async def sdk_agent(client: Any, setup: AcpSetup | None = None) -> AsyncIterator[Any]:
    """The official ACP Python SDK as the editor (`acp.connect_to_agent`, the connection `spawn_agent_process`
    gives), speaking to the server in this process over two pipes: what an editor sends and reads, without an
    interpreter start. Leaving closes the agent's input; the server (with every session) must end, bounded."""
    import asyncio

    from acp import Client, connect_to_agent

    in_read, in_write = os.pipe()
    out_read, out_write = os.pipe()
    ended = anyio.Event()

    async def serve() -> None:
        try:
            await run(setup or AcpSetup(), LineReader(in_read), Writer(out_write))
        finally:
            os.close(out_write)
            ended.set()

    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_LINE_BYTES * 2)
    read_pipe, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(out_read, "rb", buffering=0)
    )
    write_pipe, protocol = await loop.connect_write_pipe(
        lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader()), os.fdopen(in_write, "wb", buffering=0)
    )
    writer = asyncio.StreamWriter(write_pipe, protocol, None, loop)
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(serve)
            conn = connect_to_agent(cast(Client, client), writer, reader)
            try:
                yield conn
            finally:
                await conn.close()
                write_pipe.close()  # end of input: the server ends its sessions and returns
                with anyio.fail_after(bounded(10)):
                    await ended.wait()
    finally:
        read_pipe.close()
        os.close(in_read)


def session_env(monkeypatch: pytest.MonkeyPatch, fake: FakeAnthropic) -> None:
    """What `session/new` reads from the environment: the fake API, no built-in servers."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
    monkeypatch.setenv("SPROUT_AGENT_BUILTIN_SERVERS", "none")


async def new_session(client: PipeClient, cwd: Path, ident: int = 100) -> str:
    created = await client.request(ident, "session/new", {"cwd": str(cwd), "mcpServers": []})
    return created["result"]["sessionId"]


def prompt_line(ident: object, session_id: str, text: str) -> str:
    params = {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
    return json.dumps({"jsonrpc": "2.0", "id": ident, "method": "session/prompt", "params": params})


def notification(method: str, params: object) -> str:
    return json.dumps({"jsonrpc": "2.0", "method": method, "params": params})
