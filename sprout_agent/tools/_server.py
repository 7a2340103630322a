"""Glue between plain async tool functions and the mcp SDK's low-level `Server`.

The low-level server is used (not `MCPServer`) because it starts faster and builds no pydantic
models from signatures: each tool declares its JSON schema by hand and arguments are checked here.
The mcp SDK is imported only to serve: a tool's listing (`ToolSpec.listed`) is plain data, which the agent
announces to the model before the server starts (mcp/announced.py).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, cast

from sprout_agent.trust.workspace import Refused

if TYPE_CHECKING:  # imported where a server is built or answers: listing a tool needs none of it
    from mcp.server import ServerRequestContext
    from mcp.server.lowlevel import Server
    from mcp.types import CallToolRequestParams, CallToolResult, ListToolsResult, PaginatedRequestParams

Args = dict[str, Any]

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
}

logger = logging.getLogger(__name__)


class ToolError(Refused):
    """A failure the model should read: becomes a tool result with is_error=True (as a path rule's `Refused`)."""


@dataclass(frozen=True)
class Image:
    """Image output: raw base64 text and its MIME type."""

    data_b64: str
    mime_type: str


@dataclass(frozen=True)
class Marked:
    """Text output with result `_meta` for the agent (never shown to the model): what the sandbox stopped, the
    diff of a file change; `is_error` makes it a failed call that still carries its `_meta`."""

    text: str
    meta: Mapping[str, Any]
    is_error: bool = False


DIFF_META = "sprout-agent/diff"  # the result `_meta` key the agent reads a file change's unified diff from

ToolOutput = str | Image | Marked

# The request's `_meta` while a tool runs: the agent's side channel (the model writes only `arguments`).
request_meta: ContextVar[Mapping[str, Any]] = ContextVar("request_meta", default=MappingProxyType({}))
Report = Callable[[str], Awaitable[None]]
"""Sends the caller a progress message while the call runs; only given when the caller asked for progress."""
Handler = Callable[[Args, Report | None], Awaitable[ToolOutput]]


@dataclass(frozen=True)
class ToolSpec:
    """One tool: what the model sees (name, description, schema, hints) and the function to run."""

    name: str
    description: str
    properties: Mapping[str, Any]
    handler: Handler
    required: Sequence[str] = ()
    annotations: Mapping[str, bool] = field(default_factory=dict[str, bool])
    open_args: bool = False  # hooks: accept (and ignore) whatever context the agent sends

    def input_schema(self) -> dict[str, Any]:
        # Keys in the order a client reads them off the wire (mcp 2.3's InputSchema: properties, required, type,
        # then the rest), so the listing offered before the server starts is the bytes it lists after.
        schema: dict[str, Any] = {"properties": dict(self.properties)}
        if self.required:
            schema["required"] = list(self.required)
        schema["type"] = "object"
        if not self.open_args:
            schema["additionalProperties"] = False
        return schema

    def listed(self) -> dict[str, Any]:
        """The tool as `tools/list` gives it (the wire's names): the one source of what the server lists."""
        tool: dict[str, Any] = {"name": self.name, "description": self.description, "inputSchema": self.input_schema()}
        if self.annotations:
            tool["annotations"] = {_HINTS[hint]: value for hint, value in self.annotations.items()}
        return tool


# The annotations' keys here → on the wire.
_HINTS = {
    "read_only_hint": "readOnlyHint",
    "destructive_hint": "destructiveHint",
    "idempotent_hint": "idempotentHint",
    "open_world_hint": "openWorldHint",
}


def _type_ok(value: Any, json_type: str) -> bool:
    if json_type in ("integer", "number") and isinstance(value, bool):
        return False
    if json_type == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, _JSON_TYPES.get(json_type, (object,)))


def check_args(spec: ToolSpec, args: Args) -> Args:
    """Check arguments against the tool's flat schema; returns them with integers normalised."""
    unknown = sorted(set(args) - set(spec.properties))
    if spec.open_args:
        args = {k: v for k, v in args.items() if k in spec.properties}
    elif unknown:
        raise ToolError(f"unknown argument(s) for {spec.name}: {', '.join(unknown)}")
    missing = [name for name in spec.required if args.get(name) is None]
    if missing:
        raise ToolError(f"missing required argument(s) for {spec.name}: {', '.join(missing)}")
    checked: Args = {}
    for name, value in args.items():
        json_type = spec.properties[name].get("type")
        if value is None or json_type is None:
            checked[name] = value
            continue
        if not _type_ok(value, json_type):
            raise ToolError(f"argument {name!r} of {spec.name} must be of type {json_type}")
        checked[name] = int(value) if json_type == "integer" else value
    return checked


_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape_surrogate(match: re.Match[str]) -> str:
    code = ord(match.group())
    # os.fsdecode maps an undecodable byte b to U+DC00+b (surrogateescape): show it as bash's $'\xNN'.
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def clean_text(text: str) -> str:
    """Text any JSON encoder accepts: file names that are not UTF-8 come back escaped (`bad\\xff.txt`),
    since a lone surrogate in a result would fail later, in the agent, far from the tool."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub(_escape_surrogate, text)
    return text


def _result(output: ToolOutput) -> CallToolResult:
    from mcp.types import CallToolResult, ContentBlock, ImageContent, TextContent

    if isinstance(output, Marked):
        text: list[ContentBlock] = [TextContent(type="text", text=clean_text(output.text))]
        return CallToolResult(content=text, _meta=dict(output.meta), is_error=output.is_error)
    if isinstance(output, Image):
        return CallToolResult(content=[ImageContent(type="image", data=output.data_b64, mime_type=output.mime_type)])
    return CallToolResult(content=[TextContent(type="text", text=clean_text(output))])


def _error(message: str) -> CallToolResult:
    from mcp.types import CallToolResult, TextContent

    return CallToolResult(content=[TextContent(type="text", text=clean_text(message))], is_error=True)


async def run_tool(
    specs: Mapping[str, ToolSpec], name: str, args: Args | None, report: Report | None = None
) -> CallToolResult:
    """Run one tool call; every failure becomes an is_error result, never an exception."""
    spec = specs.get(name)
    if spec is None:
        return _error(f"unknown tool {name!r}; available: {', '.join(specs)}")
    try:
        output = await spec.handler(check_args(spec, args or {}), report)
    except Refused as exc:  # ToolError, or a path rule of trust/workspace.py
        return _error(str(exc))
    except Exception as exc:  # a bug or an OS surprise must not take the server down
        logger.exception("tool %s failed", name)
        return _error(f"{name} failed unexpectedly: {type(exc).__name__}: {exc}")
    return _result(output)


def _reporter(ctx: ServerRequestContext[Any]) -> Report | None:
    """Progress for this request, or None when the caller gave no progress token (then nothing is computed).

    The token is read from the request's `_meta`, which every JSON-RPC transport carries (stdio and the
    agent's in-memory streams); `mcp.Client(server)` called directly carries none, so it gets no progress."""
    if ctx.meta is None or ctx.meta.get("progress_token") is None:
        return None
    sent = 0

    async def report(message: str) -> None:
        nonlocal sent
        sent += 1  # the protocol wants `progress` to grow with every notification
        await ctx.session.report_progress(sent, None, message)

    return report


def build_server(name: str, version: str, specs: Sequence[ToolSpec], instructions: str | None = None) -> Server[Any]:
    """A low-level mcp `Server` serving `specs`; usable over stdio or in-process (`mcp.Client(server)`)."""
    from mcp.server.lowlevel import Server
    from mcp.types import ListToolsResult, Tool

    by_name = {spec.name: spec for spec in specs}
    tools = [Tool.model_validate(spec.listed()) for spec in specs]

    async def on_list_tools(ctx: Any, params: PaginatedRequestParams | None) -> ListToolsResult:
        return ListToolsResult(tools=tools)

    async def on_call_tool(ctx: ServerRequestContext[Any], params: CallToolRequestParams) -> CallToolResult:
        token = request_meta.set(cast(Mapping[str, Any], params.meta or {}))
        try:
            return await run_tool(by_name, params.name, params.arguments, _reporter(ctx))
        finally:
            request_meta.reset(token)

    return Server(
        name,
        version=version,
        instructions=instructions,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
    )


def serve_stdio(server: Server[Any]) -> None:
    """Serve `server` on stdin/stdout until stdin closes."""
    import anyio
    from mcp.server.stdio import stdio_server

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(main)
