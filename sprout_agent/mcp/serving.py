"""The MCP server side of `sprout-agent mcp serve`: the mcp SDK's low-level `Server` offering the tools a face hands
it (plain records, no SDK types), over stdio or Streamable HTTP. What the tools do is the face's (faces/mcp_serve/).
"""

from __future__ import annotations

import contextlib
import hmac
import socket
from collections.abc import Awaitable, Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any

from mcp.server import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.types import (
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    Tool,
    ToolAnnotations,
)

from sprout_agent import __version__

# A step of the call: `notifications/progress` when the caller sent a progressToken, nothing otherwise.
Progress = Callable[[str], Awaitable[None]]
HTTP_PATH = "/mcp"


@dataclass(frozen=True, slots=True)
class ToolAnswer:
    """What a served tool answers: the text every client shows and, for clients that read it, the same as data."""

    text: str
    structured: dict[str, Any] | None = None
    is_error: bool = False


@dataclass(frozen=True, slots=True)
class ServedTool:
    name: str
    title: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    call: Callable[[dict[str, Any], Progress], Awaitable[ToolAnswer]]
    read_only: bool = False


def build_server(name: str, tools: Sequence[ServedTool], instructions: str) -> Server[Any]:
    """The low-level server: tools/list answers `tools`, tools/call runs one; a cancelled call (the caller's
    `notifications/cancelled`) is cancelled here by the SDK, and the tool's own code ends its turn."""
    listed = [
        Tool(
            name=tool.name,
            title=tool.title,
            description=tool.description,
            input_schema=tool.input_schema,
            output_schema=tool.output_schema,
            annotations=ToolAnnotations(read_only_hint=tool.read_only, open_world_hint=True),
        )
        for tool in tools
    ]
    by_name = {tool.name: tool for tool in tools}

    async def on_list_tools(ctx: Any, params: PaginatedRequestParams | None) -> ListToolsResult:
        return ListToolsResult(tools=listed)

    async def on_call_tool(ctx: ServerRequestContext[Any], params: CallToolRequestParams) -> CallToolResult:
        tool = by_name.get(params.name)
        if tool is None:
            return _result(ToolAnswer(f"unknown tool {params.name!r}", None, True))
        steps = 0

        async def progress(message: str) -> None:
            nonlocal steps
            steps += 1
            with contextlib.suppress(Exception):  # a caller gone mid-call must not fail the turn
                await ctx.session.report_progress(steps, None, message)

        return _result(await tool.call(dict(params.arguments or {}), progress))

    return Server(
        name, version=__version__, instructions=instructions, on_list_tools=on_list_tools, on_call_tool=on_call_tool
    )


def _result(answer: ToolAnswer) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=answer.text)],
        structured_content=answer.structured,
        is_error=answer.is_error,
    )


async def serve_stdio(server: Server[Any]) -> None:
    """Until the client closes our stdin. The SDK moves the wire onto private descriptors while it serves: fd 1
    becomes stderr and fd 0 /dev/null, so a stray print or a child's output never reaches the client."""
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def listen(host: str, port: int) -> socket.socket:
    """The HTTP server's socket, bound before anything serves (port 0: the system picks; the caller reads it)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.listen(64)
    sock.set_inheritable(False)
    return sock


async def serve_http(server: Server[Any], sock: socket.socket, host: str, token: str | None) -> None:
    """Streamable HTTP at `HTTP_PATH` on `sock` until cancelled. On a loopback host the SDK refuses requests whose
    Host or Origin header is not a loopback one (a web page's DNS rebinding); `token`, when set, is the bearer
    every request must carry."""
    import uvicorn

    class Quiet(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Generator[None]:  # the face watches SIGINT and SIGTERM, for every transport
            yield

    app: Any = server.streamable_http_app(streamable_http_path=HTTP_PATH, host=host)
    if token is not None:
        app = _BearerOnly(app, token)
    await Quiet(uvicorn.Config(app, log_level="warning", lifespan="on", access_log=False)).serve(sockets=[sock])


class _BearerOnly:
    """ASGI: HTTP requests without `Authorization: Bearer <token>` get 401 before the MCP app sees them."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") == "http":
            headers: list[tuple[bytes, bytes]] = scope.get("headers", [])
            given = next((value for name, value in headers if name.lower() == b"authorization"), b"")
            if not hmac.compare_digest(given, self.expected):
                await send({"type": "http.response.start", "status": 401, "headers": [(b"content-length", b"0")]})
                await send({"type": "http.response.body", "body": b""})
                return
        await self.app(scope, receive, send)
