"""A server the Claude Agent SDK hosts in its own process (`"type": "sdk"`): the same MCP session, its JSON-RPC
messages carried over the SDK's control channel (`mcp_message`) instead of a pipe.

The client's messages arrive on in-memory streams; each one goes to the SDK as its own control request (tool
calls run concurrently), and the SDK's answer comes back on the client's stream.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp.types as types
from mcp.shared.memory import MessageStream, create_client_server_memory_streams
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from sprout_agent.core.errors import ServerGone
from sprout_agent.mcp.client_features import SdkMessages


@asynccontextmanager
async def open_sdk(name: str, relay: SdkMessages | None) -> AsyncGenerator[tuple[anyio.Event, MessageStream]]:
    """Yields an event set when the link ends, and the client's (read, write) streams."""
    if relay is None:
        raise ServerGone("only a Claude Agent SDK driving this run (--input-format stream-json) can host it")
    ended = anyio.Event()
    async with create_client_server_memory_streams() as (client_streams, (incoming, outgoing)):

        async def forward(message: SessionMessage) -> None:
            data: dict[str, Any] = message.message.model_dump(by_alias=True, mode="json", exclude_none=True)
            request_id = data.get("id") if "method" in data else None
            try:
                answer = await relay.send(name, data)
                reply = types.jsonrpc_message_adapter.validate_python(answer) if request_id is not None else None
            except (Exception, ValidationError) as error:  # the SDK's error, or an answer that is not JSON-RPC
                if request_id is None:
                    return  # a notification: nobody waits for it
                reply = _error(request_id, f"the SDK could not answer: {error}")
            if reply is not None:
                await outgoing.send(SessionMessage(reply))

        async def pump() -> None:
            try:
                async with anyio.create_task_group() as group:
                    async for item in incoming:
                        if isinstance(item, SessionMessage):
                            group.start_soon(forward, item)
            finally:
                ended.set()

        async with anyio.create_task_group() as group:
            group.start_soon(pump)
            try:
                yield ended, client_streams
            finally:
                group.cancel_scope.cancel()


def _error(request_id: types.RequestId, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(
        jsonrpc="2.0", id=request_id, error=types.ErrorData(code=types.INTERNAL_ERROR, message=message)
    )
