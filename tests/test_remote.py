"""Remote MCP servers through the real pool: server-everything over Streamable HTTP and SSE, an mcp-SDK server
over Streamable HTTP that checks a header expanded from `${VAR}`, and a dead URL that fails alone."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from collections.abc import AsyncGenerator, Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
import uvicorn

from sprout_agent.config.files import ServerConfig, load_config
from sprout_agent.core.messages import text_of
from tests.bounds import bounded
from tests.test_servers import Pool

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

EVERYTHING = Path(__file__).resolve().parent.parent / ".ci/peers/node_modules/.bin/mcp-server-everything"

Scope = MutableMapping[str, Any]
Asgi = Callable[[Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def wait_listening(port: int, proc: subprocess.Popen[bytes], timeout: float = 10) -> None:
    with anyio.fail_after(bounded(timeout)):
        while True:
            assert proc.poll() is None, "server-everything exited before it listened"
            try:
                stream = await anyio.connect_tcp("127.0.0.1", port)
            except OSError:
                await anyio.sleep(0.02)
                continue
            await stream.aclose()
            return


@asynccontextmanager
async def everything(mode: str) -> AsyncGenerator[int]:
    """server-everything serving `mode` (streamableHttp or sse) on a port of ours."""
    if not EVERYTHING.exists():
        pytest.skip("server-everything is not installed (.ci/run installs it)")
    port = free_port()
    env = {**os.environ, "PORT": str(port)}
    proc = subprocess.Popen([str(EVERYTHING), mode], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        await wait_listening(port, proc)
        yield port
    finally:
        proc.kill()
        proc.wait(timeout=bounded(5))


@pytest.mark.slow
async def test_server_everything_over_streamable_http_and_sse_and_a_dead_url_fails_alone() -> None:
    dead = free_port()  # nothing listens there
    async with everything("streamableHttp") as http_port, everything("sse") as sse_port:
        configs = (
            ServerConfig("http", "", transport="http", url=f"http://127.0.0.1:{http_port}/mcp"),
            ServerConfig("sse", "", transport="sse", url=f"http://127.0.0.1:{sse_port}/sse"),
            ServerConfig("gone", "", transport="http", url=f"http://127.0.0.1:{dead}/mcp"),
        )
        async with Pool(*configs) as pool:
            for name in ("http", "sse"):
                assert pool.status(name).state == "running", pool.status(name)
                outcome = await pool.pool.call(pool.spec(name, "echo"), {"message": f"over {name}"})
                assert not outcome.is_error and f"over {name}" in text_of(outcome.content)
            reason = pool.failed("gone").reason
            assert "cannot reach the server" in reason and "\n" not in reason


def header_checked(app: Asgi, name: str, value: str) -> Asgi:
    """`app`, answering 401 to any request without the header: the server side of the check."""

    async def guarded(
        scope: Scope, receive: Callable[[], Awaitable[Any]], send: Callable[[Any], Awaitable[None]]
    ) -> None:
        if scope["type"] == "http" and (name.lower().encode(), value.encode()) not in scope["headers"]:
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": b"no"})
            return
        await app(scope, receive, send)

    return guarded


@asynccontextmanager
async def sdk_server(header: str, value: str) -> AsyncGenerator[int]:
    """An mcp-SDK server over Streamable HTTP, in this process, that needs `header: value`."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("checked")

    @server.tool()
    def whoami() -> str:
        return "you passed the header check"

    app = header_checked(server.streamable_http_app(), header, value)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()  # listening before the pool connects: no wait needed
    web = uvicorn.Server(uvicorn.Config(app, log_level="error", lifespan="on", timeout_graceful_shutdown=1))
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: web.serve(sockets=[sock]))
        try:
            yield sock.getsockname()[1]
        finally:
            web.should_exit = True


async def test_a_header_from_a_variable_reaches_the_server_and_a_wrong_one_fails_with_the_status(
    tmp_path: Path,
) -> None:
    async with sdk_server("X-Api-Key", "sekrit-123456") as port:
        url = f"http://127.0.0.1:{port}/mcp"
        entry = {"type": "http", "url": url, "headers": {"X-Api-Key": "${CHECKED_KEY}"}}
        (tmp_path / "mcp.json").write_text(json.dumps({"mcpServers": {"good": entry, "bad": {**entry, "url": url}}}))
        loaded = load_config([Path("mcp.json")], tmp_path, {"CHECKED_KEY": "sekrit-123456"}, None)
        good = next(s for s in loaded.servers if s.name == "good")
        assert good.headers == {"X-Api-Key": "sekrit-123456"}
        bad = ServerConfig("bad", "", transport="http", url=url, headers={"X-Api-Key": "wrong"})
        async with Pool(good, bad) as pool:
            outcome = await pool.pool.call(pool.spec("good", "whoami"), {})
            assert "you passed the header check" in text_of(outcome.content)
            assert "HTTP 401 Unauthorized (it wants credentials" in pool.failed("bad").reason
