"""What a remote MCP server sends is held to the stdio cap: through the real pool, against a hand-rolled Streamable
HTTP server in a thread (tests/raw_http_server.py) that streams replies of any size and shape; the cap's body hook
on its own, over httpx2's MockTransport; and the HTTP+SSE transport's limit, which is the mcp SDK's own."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator

import anyio
import httpx2
import pytest
import uvicorn

from sprout_agent.config.files import ServerConfig
from sprout_agent.core.messages import text_of
from tests.bounds import bounded
from tests.raw_http_server import RawHttpServer, serving
from tests.test_servers import Pool

pytestmark = pytest.mark.anyio

MIB = 1024 * 1024


def remote(server: RawHttpServer) -> ServerConfig:
    return ServerConfig("raw", "", transport="http", url=server.url)


async def huge_then_echo(server: RawHttpServer, **shape: object) -> tuple[bool, str]:
    """Calls huge with `shape`, then echo: the huge call's (is_error, text); the server must still serve."""
    async with Pool(remote(server)) as pool:
        with anyio.fail_after(bounded(60)):
            outcome = await pool.pool.call(pool.spec("raw", "huge"), dict(shape))
            after = await pool.pool.call(pool.spec("raw", "echo"), {"text": "still here"})
        assert (after.is_error, text_of(after.content)) == (False, "still here")
        assert pool.status("raw").state == "running"
    return outcome.is_error, text_of(outcome.content)


@pytest.mark.parametrize(
    ("shape", "error"),
    [
        ({"length": True}, f"result too large: {64 * MIB} bytes, limit {{cap}}"),
        ({"length": False}, "result too large: over the limit of {cap} bytes"),
        ({"gzip": True}, "result too large: over the limit of {cap} bytes"),
    ],
    ids=["declared by its length", "ended by the connection", "a gzip bomb"],
)
async def test_a_remote_json_answer_over_the_cap_is_an_error_for_its_call_not_a_whole_body_in_memory(
    shape: dict[str, object], error: str
) -> None:
    from sprout_agent.mcp.transports.framing import MAX_MESSAGE_BYTES

    # Was read whole by the SDK: 400 MB took 2.1 GB, and gzipped it crossed the wire as 0.4 MB.
    with serving() as server:
        assert await huge_then_echo(server, bytes=64 * MIB, **shape) == (True, error.format(cap=MAX_MESSAGE_BYTES))
        assert server.finished.wait(timeout=bounded(30))
    if not shape.get("gzip"):  # the client stopped reading: what the server got out is short of the whole
        assert server.sent < 48 * MIB


@pytest.mark.parametrize("gzip", [False, True], ids=["plain", "a gzip bomb"])
async def test_an_answer_event_over_the_cap_is_an_error_for_its_call_and_the_server_stays_up(gzip: bool) -> None:
    from sprout_agent.mcp.transports.framing import MAX_MESSAGE_BYTES

    # Was "connection closed" and the server marked gone: the SDK fails the call with that code. Gzipped, httpx2
    # would inflate each network chunk whole before the SDK's parser could count it.
    with serving() as server:
        error = f"result too large: over the limit of {MAX_MESSAGE_BYTES} bytes"
        assert await huge_then_echo(server, bytes=MAX_MESSAGE_BYTES + 1000, sse=True, gzip=gzip) == (True, error)


async def test_an_answer_event_over_the_sdks_own_1_mib_limit_but_under_the_cap_arrives() -> None:
    with serving() as server:
        is_error, text = await huge_then_echo(server, bytes=2 * MIB, sse=True)
    assert not is_error and text.startswith("xxxx")


async def test_an_answer_that_does_not_inflate_is_an_error_for_its_call_and_the_server_stays_up() -> None:
    with serving() as server:
        is_error, text = await huge_then_echo(server, bytes=100, gzip=True, corrupt=True)
    assert is_error and text.startswith("the server's answer does not inflate:")


async def test_an_over_cap_answer_to_a_json_rpc_request_becomes_its_error_and_to_anything_else_a_failed_read() -> None:
    from sprout_agent.mcp.transports.framing import MAX_MESSAGE_BYTES
    from sprout_agent.mcp.transports.http_cap import BodyRefused, cap_body

    async def body() -> AsyncIterator[bytes]:  # streamed, as an answer off the network is
        yield b"{" + b" " * MAX_MESSAGE_BYTES + b"}"

    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, content=body())

    hooks = {"response": [cap_body]}
    async with httpx2.AsyncClient(transport=httpx2.MockTransport(answer), event_hooks=hooks) as client:
        with pytest.raises(BodyRefused, match="result too large"):
            await client.get("http://127.0.0.1/.well-known/oauth-protected-resource")
        answered = await client.post("http://127.0.0.1/mcp", json={"jsonrpc": "2.0", "id": 3, "method": "ping"})
    error = {"code": -32603, "message": f"result too large: over the limit of {MAX_MESSAGE_BYTES} bytes"}
    assert answered.json() == {"jsonrpc": "2.0", "id": 3, "error": error}


async def test_an_sse_transport_event_over_the_sdks_1_mib_fails_its_call_and_ends_that_server_saying_why() -> None:
    from mcp.server.mcpserver import MCPServer

    # mcp 2.3.0's sse_client sets no event limit of its own: httpx2's 1 MiB default holds, and over it the SDK's
    # transport ends. When the SDK lets us pass the cap there too, this test will say so.
    server = MCPServer("legacy")

    @server.tool()
    def big(n: int) -> str:
        return "x" * n

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()  # listening before the pool connects: no wait needed
    web = uvicorn.Server(uvicorn.Config(server.sse_app(), log_level="error", timeout_graceful_shutdown=1))
    config = ServerConfig("legacy", "", transport="sse", url=f"http://127.0.0.1:{sock.getsockname()[1]}/sse")
    async with anyio.create_task_group() as group:
        group.start_soon(lambda: web.serve(sockets=[sock]))
        try:
            async with Pool(config) as pool:
                with anyio.fail_after(bounded(30)):
                    small = await pool.pool.call(pool.spec("legacy", "big"), {"n": 1000})
                    over = await pool.pool.call(pool.spec("legacy", "big"), {"n": 2 * MIB})
                state, reason = pool.status("legacy").state, pool.status("legacy").last_error
        finally:
            web.should_exit = True
    assert not small.is_error and over.is_error
    assert (state, reason) == ("dead", "its event stream failed: Server-sent event exceeded the 1048576 byte limit.")
