"""An SDK-built MCP server (the low-level `Server`) with resources, prompts, a tool list that grows mid-session,
logging, and a call that records being cancelled; run in-process by the pool (`create_server_in`).

Tools: echo(text); grow() adds the tool `extra` and sends notifications/tools/list_changed; announce() sends it
with nothing changed; extra() -> "extra ran"; log(text) sends a notifications/message; hang() reports progress
"started", then waits until cancelled; cancelled() waits (bounded by the caller) until a hang() was cancelled and
returns its request id.
Resources: note://readme (text), img://dot (a 1x1 PNG blob), bin://blob (octet-stream), note://big (HUGE bytes).
Prompts: review(file, focus?) -> one user message.
"""

from __future__ import annotations

import base64
import warnings
from collections.abc import Mapping
from typing import Any

import anyio
import mcp.types as t
from mcp.server import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPDeprecationWarning

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
HUGE = 200_000
RESOURCES = {
    "note://readme": ("readme", "text/plain", "read me first"),
    "img://dot": ("dot", "image/png", PNG),
    "bin://blob": ("blob", "application/octet-stream", base64.b64encode(b"\0" * 300).decode()),
    "note://big": ("big", "text/plain", "x" * HUGE),
}


def _tool(name: str, **properties: str) -> t.Tool:
    schema = {"type": "object", "properties": {key: {"type": kind} for key, kind in properties.items()}}
    return t.Tool(name=name, description=f"the {name} tool", input_schema=schema)


def _text(value: str) -> t.CallToolResult:
    return t.CallToolResult(content=[t.TextContent(type="text", text=value)])


def create_server_in(cwd: str, env: Mapping[str, str]) -> Server[Any]:
    tools = [
        _tool("echo", text="string"),
        _tool("grow"),
        _tool("log", text="string"),
        _tool("hang"),
        _tool("cancelled"),
        _tool("announce"),
    ]
    cancelled = anyio.Event()
    cancelled_ids: list[object] = []

    async def list_tools(ctx: Any, params: t.PaginatedRequestParams | None) -> t.ListToolsResult:
        return t.ListToolsResult(tools=list(tools))

    async def call_tool(ctx: ServerRequestContext[Any], params: t.CallToolRequestParams) -> t.CallToolResult:
        args = params.arguments or {}
        if params.name == "announce":  # a list_changed with nothing changed: a server announcing its list late
            await ctx.session.send_tool_list_changed()
            return _text("announced")
        if params.name == "grow":
            tools.append(_tool("extra"))
            await ctx.session.send_tool_list_changed()
            return _text("grown")
        if params.name == "log":
            with warnings.catch_warnings(category=MCPDeprecationWarning, action="ignore"):  # not yet at 2025-11-25
                await ctx.session.send_log_message("warning", args.get("text", ""), logger="feat")
            return _text("logged")
        if params.name == "hang":
            try:
                await ctx.session.report_progress(1, None, "started")
                await anyio.sleep_forever()
            except anyio.get_cancelled_exc_class():
                cancelled_ids.append(ctx.request_id)
                cancelled.set()
                raise
        if params.name == "cancelled":
            await cancelled.wait()
            return _text(f"cancelled request {cancelled_ids[0]!r}")
        return _text("extra ran" if params.name == "extra" else str(args.get("text", "")))

    async def list_resources(ctx: Any, params: t.PaginatedRequestParams | None) -> t.ListResourcesResult:
        return t.ListResourcesResult(
            resources=[t.Resource(uri=uri, name=name, mime_type=mime) for uri, (name, mime, _) in RESOURCES.items()]
        )

    async def read_resource(ctx: Any, params: t.ReadResourceRequestParams) -> t.ReadResourceResult:
        uri = str(params.uri)
        _name, mime, body = RESOURCES[uri]
        if mime.startswith("text/"):
            return t.ReadResourceResult(contents=[t.TextResourceContents(uri=uri, mime_type=mime, text=body)])
        return t.ReadResourceResult(contents=[t.BlobResourceContents(uri=uri, mime_type=mime, blob=body)])

    async def list_prompts(ctx: Any, params: t.PaginatedRequestParams | None) -> t.ListPromptsResult:
        arguments = [t.PromptArgument(name="file", required=True), t.PromptArgument(name="focus")]
        return t.ListPromptsResult(prompts=[t.Prompt(name="review", description="Review a file", arguments=arguments)])

    async def get_prompt(ctx: Any, params: t.GetPromptRequestParams) -> t.GetPromptResult:
        args = params.arguments or {}
        text = f"Review {args.get('file')} focusing on {args.get('focus', 'everything')}"
        return t.GetPromptResult(messages=[t.PromptMessage(role="user", content=t.TextContent(type="text", text=text))])

    return Server(
        "feat",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )
