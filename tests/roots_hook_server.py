"""An MCP server whose `_SessionStart` hook asks its client for the roots: it keeps the hook contract only where
the client offers them, as a session's does (an error result otherwise). Run in-process by the pool (config
`in_process="tests.roots_hook_server"`)."""

import warnings
from collections.abc import Mapping
from typing import Any

from mcp.server.mcpserver import Context, MCPServer


def create_server_in(cwd: str, env: Mapping[str, str] | None = None) -> Any:
    del cwd, env
    return build()._lowlevel_server  # pyright: ignore[reportPrivateUsage]


def build() -> MCPServer:
    server = MCPServer("roots")

    @server.tool(name="_SessionStart", description="Says which directories the session works in.")
    async def session_start(ctx: Context) -> str:
        with warnings.catch_warnings():  # the roots capability is deprecated in a later spec; still what we offer
            warnings.simplefilter("ignore")
            listed = await ctx.session.list_roots()
        return "working in " + ", ".join(str(root.uri) for root in listed.roots)

    return server
