"""`sprout-agent mcp serve`: the `sprout` and `sprout-reply` tools over stdio or Streamable HTTP, until the client
closes stdin (stdio), or a signal ends the server."""

from __future__ import annotations

import socket
import sys

from sprout_agent.core.errors import EXIT_OK, EXIT_RUNTIME
from sprout_agent.faces.lifecycle import open_face
from sprout_agent.faces.mcp_serve.arguments import OUTPUT_SCHEMA, REPLY_SCHEMA, SPROUT_SCHEMA
from sprout_agent.faces.mcp_serve.calls import Calls, ServeSetup
from sprout_agent.faces.mcp_serve.listening import TOKEN_ENV, Listening
from sprout_agent.mcp.serving import HTTP_PATH, ServedTool, build_server, listen, serve_http, serve_stdio

INSTRUCTIONS = (
    "sprout-agent is a coding agent. Hand it a whole task with `sprout` (it works in `cwd` with its own tools, "
    "sandbox and hooks, and answers when done); go on with the same conversation through `sprout-reply` and the "
    "session_id it answered with."
)
_SPROUT_DESCRIPTION = (
    "Run a coding agent on a task until it is done: it reads, edits and runs commands in `cwd` under the server's "
    "sandbox and permission rules, and answers with its final text, the session_id (for sprout-reply), what it "
    "cost and the files it changed. Arguments can only narrow what the server allows."
)
_REPLY_DESCRIPTION = "Send the next message to a session a `sprout` call began; answers as `sprout` does."


def tools(calls: Calls) -> list[ServedTool]:
    return [
        ServedTool("sprout", "Run sprout-agent", _SPROUT_DESCRIPTION, SPROUT_SCHEMA, OUTPUT_SCHEMA, calls.sprout),
        ServedTool(
            "sprout-reply",
            "Reply to a sprout-agent session",
            _REPLY_DESCRIPTION,
            REPLY_SCHEMA,
            OUTPUT_SCHEMA,
            calls.reply,
        ),
    ]


def serve(setup: ServeSetup, http: Listening | None) -> int:
    """Runs the server; the exit code."""
    import anyio

    if http is None:
        return anyio.run(_serve, setup, None)
    try:
        sock = listen(http.host, http.port)
    except OSError as error:
        sys.stderr.write(f"sprout-agent: --http {http.host}:{http.port}: {error.strerror or error}\n")
        return EXIT_RUNTIME
    host = f"[{http.host}]" if ":" in http.host else http.host
    sys.stderr.write(f"sprout-agent: serving MCP at http://{host}:{sock.getsockname()[1]}{HTTP_PATH}\n")
    sys.stderr.flush()
    with sock:
        return anyio.run(_serve, setup, (sock, http.host))


async def _serve(setup: ServeSetup, http: tuple[socket.socket, str] | None) -> int:
    async with open_face() as life:
        calls = Calls(setup, life.group)
        server = build_server("sprout-agent", tools(calls), INSTRUCTIONS)
        if http is None:
            await life.turns(lambda: serve_stdio(server), calls.end_all)
        else:
            sock, host = http
            token = setup.environ.get(TOKEN_ENV) or None
            await life.turns(lambda: serve_http(server, sock, host, token), calls.end_all)
        await calls.close()
    return life.exit_code or EXIT_OK
