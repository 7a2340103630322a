"""An MCP server (the SDK's own MCPServer) that asks its client: a form, a URL, a model call, the roots.

Run in-process by the pool (config `in_process="tests.asking_server"`): each tool makes one request of the
client and answers with what came back, as JSON, so a test reads what the client answered.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping
from typing import Any

import mcp.types as types
from mcp import MCPError
from mcp.server.mcpserver import Context, MCPServer

# A SEP-1034 form: every primitive kind, with defaults, and one required field without a default (`city`).
FORM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Your name", "default": "Ada"},
        "age": {"type": "integer", "minimum": 0, "maximum": 150, "default": 36},
        "score": {"type": "number", "default": 0.5},
        "subscribe": {"type": "boolean", "default": True},
        "colour": {"type": "string", "enum": ["red", "green"], "default": "green"},
        "city": {"type": "string"},
    },
    "required": ["name", "age"],
}


def create_server_in(cwd: str, env: Mapping[str, str] | None = None) -> Any:
    del cwd, env
    return build()._lowlevel_server  # pyright: ignore[reportPrivateUsage]


def build() -> MCPServer:
    server = MCPServer("asking")
    heard: list[str] = []  # the roots/list_changed notifications this server instance received

    async def on_roots_changed(ctx: Any, params: types.NotificationParams) -> None:
        del ctx, params
        heard.append("roots/list_changed")

    server._lowlevel_server.add_notification_handler(  # pyright: ignore[reportPrivateUsage]
        "notifications/roots/list_changed", types.NotificationParams, on_roots_changed
    )

    @server.tool()
    async def ask(ctx: Context, required_city: bool = False) -> str:
        schema = dict(FORM, required=[*FORM["required"], "city"]) if required_city else FORM
        result = await ctx.session.elicit_form("Who are you?", schema)
        return json.dumps({"action": result.action, "content": result.content})

    @server.tool()
    async def visit(ctx: Context) -> str:
        result = await ctx.session.elicit_url("Sign in there", "https://example.com/login", "e1")
        return json.dumps({"action": result.action})

    @server.tool()
    async def sample(ctx: Context, max_tokens: int = 50, audio: bool = False) -> str:
        content: Any = (
            types.AudioContent(type="audio", data="AAAA", mime_type="audio/wav")
            if audio
            else types.TextContent(type="text", text="Say hi")
        )
        try:
            with warnings.catch_warnings():  # sampling is deprecated in the 2026 spec; still what servers use
                warnings.simplefilter("ignore")
                result = await ctx.session.create_message(
                    [types.SamplingMessage(role="user", content=content)],
                    max_tokens=max_tokens,
                    system_prompt="Be brief",
                )
        except MCPError as error:
            return json.dumps({"error": error.message, "code": error.code})
        text = result.content.text if isinstance(result.content, types.TextContent) else ""
        return json.dumps({"text": text, "model": result.model, "stop_reason": result.stop_reason})

    @server.tool()
    async def roots(ctx: Context) -> str:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            listed = await ctx.session.list_roots()
        caps = ctx.session.client_params.capabilities if ctx.session.client_params else None
        declared = caps.model_dump(by_alias=True, exclude_none=True) if caps else {}
        found = {"roots": [[str(r.uri), r.name] for r in listed.roots], "declared": declared, "heard": heard}
        return json.dumps(found)

    return server


if __name__ == "__main__":  # over stdio, for a run of the real CLI
    build().run("stdio")
