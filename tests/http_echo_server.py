"""An mcp-SDK server with one `echo` tool over Streamable HTTP, as a process: `python -m tests.http_echo_server PORT`.

For scripts/bench's remote group (start-up and per-round cost of a loopback HTTP server next to a stdio one).
"""

from __future__ import annotations

import sys

import uvicorn
from mcp.server.mcpserver import MCPServer


def main() -> None:
    server = MCPServer("remote-echo")

    @server.tool()
    def echo(text: str) -> str:  # pyright: ignore[reportUnusedFunction]  # registered by the decorator
        return text

    port = int(sys.argv[1])
    uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=port, log_level="error")


if __name__ == "__main__":
    main()
