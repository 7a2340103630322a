"""Built-in MCP servers inside the agent's process: the same MCP session over in-memory streams.

The agent imports mcp anyway, so a built-in server started here costs milliseconds instead of a second
interpreter importing mcp on a shared core. The server module exposes `create_server_in(cwd, env)`.
"""

from __future__ import annotations

import importlib
from collections.abc import AsyncGenerator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import anyio
from mcp.shared.memory import MessageStream, create_client_server_memory_streams


@asynccontextmanager
async def open_in_process(
    module: str, cwd: str, env: Mapping[str, str] | None = None, served: object = None
) -> AsyncGenerator[tuple[anyio.Event, MessageStream]]:
    """Runs `module`'s server in a task; yields an event set when it ends, and the client's (read, write) streams.

    `env` is the server's config `env` (the sandbox policy): what it would read from its environment standalone.
    `served`: what a server of the agent's own serves (the `agent` server: the session's `Delegation`)."""
    create = importlib.import_module(module).create_server_in
    server: Any = create(cwd, env or {}) if served is None else create(cwd, env or {}, served)
    ended = anyio.Event()
    async with create_client_server_memory_streams() as (client_streams, server_streams):

        async def run() -> None:
            try:
                await server.run(*server_streams, server.create_initialization_options())
            finally:
                ended.set()

        async with anyio.create_task_group() as group:
            group.start_soon(run)
            try:
                yield ended, client_streams
            finally:
                # Cancelling the server task cancels its in-flight handlers: bash kills its process group.
                group.cancel_scope.cancel()
