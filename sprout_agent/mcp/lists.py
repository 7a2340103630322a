"""A server's resources and prompts over its MCP session: listed page by page (bounded), read, fetched; and the
notifications that say a list changed or carry the server's log, turned into plain callbacks.

The pool (pool.py) never imports mcp: it gets `ResourceInfo`, `PromptInfo`, `ToolOutcome` and text from here.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol, TypeVar

import mcp.types as types
from mcp.client.session import ClientSession, IncomingMessage, MessageHandlerFnT

from sprout_agent.core.protocols import PromptInfo, ResourceInfo, ToolOutcome
from sprout_agent.mcp.results import cut_middle, resource_outcome

MAX_PAGES = 50  # as for tools: a cursor that never ends stops here
MAX_ITEMS = 1000  # resources or prompts kept from one server
PROMPT_MAX_BYTES = 256 * 1024  # a prompt's messages, as the user's turn (an @file's bound)


class NoteSink(Protocol):
    """What the pool hears from a server between answers: `kind` is tools, prompts, resources or log."""

    def __call__(self, kind: str, text: str = "", /) -> None: ...


def message_handler(on_note: NoteSink) -> MessageHandlerFnT:
    """The session's `message_handler`. It runs in the session's read loop, so it only records: the pool
    re-lists at the next request boundary, never from here (a request from inside the read loop would wait
    on the loop that must read its answer)."""
    changed: dict[type[object], str] = {
        types.ToolListChangedNotification: "tools",
        types.PromptListChangedNotification: "prompts",
        types.ResourceListChangedNotification: "resources",
    }

    async def handle(message: IncomingMessage) -> None:
        if isinstance(message, types.LoggingMessageNotification):
            params = message.params
            data = params.data if isinstance(params.data, str) else json.dumps(params.data, ensure_ascii=False)
            on_note("log", f"{params.level}: {f'{params.logger}: ' if params.logger else ''}{data}"[:2000])
            return
        kind = changed.get(type(message)) if not isinstance(message, Exception) else None
        if kind is not None:
            on_note(kind)

    return handle


T = TypeVar("T")


async def _paged(
    fetch: Callable[[types.PaginatedRequestParams | None], Awaitable[tuple[Sequence[T], str | None]]],
    what: str,
    notices: list[str],
) -> list[T]:
    items: list[T] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page, cursor = await fetch(types.PaginatedRequestParams(cursor=cursor) if cursor is not None else None)
        items.extend(page)
        if len(items) > MAX_ITEMS:
            notices.append(f"kept the first {MAX_ITEMS} {what}; it lists more")
            return items[:MAX_ITEMS]
        if cursor is None:
            return items
    notices.append(f"stopped listing {what} after {MAX_PAGES} pages; its cursor never ended")
    return items


async def list_resources(session: ClientSession, server: str, notices: list[str]) -> list[ResourceInfo]:
    """Every resource the server lists; [] when it declares no resources capability."""
    capabilities = session.server_capabilities
    if capabilities is None or capabilities.resources is None:
        return []

    async def fetch(params: types.PaginatedRequestParams | None) -> tuple[Sequence[types.Resource], str | None]:
        page = await session.list_resources(params=params)
        return page.resources, page.next_cursor

    listed = await _paged(fetch, "resources", notices)
    return [ResourceInfo(server, str(item.uri), item.name, item.description or "", item.mime_type) for item in listed]


async def list_prompts(session: ClientSession, server: str, notices: list[str]) -> list[PromptInfo]:
    """Every prompt the server offers; [] when it declares no prompts capability."""
    capabilities = session.server_capabilities
    if capabilities is None or capabilities.prompts is None:
        return []

    async def fetch(params: types.PaginatedRequestParams | None) -> tuple[Sequence[types.Prompt], str | None]:
        page = await session.list_prompts(params=params)
        return page.prompts, page.next_cursor

    listed = await _paged(fetch, "prompts", notices)
    return [
        PromptInfo(
            server,
            item.name,
            item.description or "",
            tuple((arg.name, bool(arg.required)) for arg in item.arguments or ()),
        )
        for item in listed
    ]


async def read_resource(session: ClientSession, uri: str, max_bytes: int) -> ToolOutcome:
    return resource_outcome(await session.read_resource(uri), max_bytes)


async def get_prompt(session: ClientSession, name: str, arguments: dict[str, str]) -> str:
    """The prompt's messages as one user turn: each message's text, a non-user message labelled with its role."""
    result = await session.get_prompt(name, arguments)
    parts: list[str] = []
    for message in result.messages:
        content = message.content
        if isinstance(content, types.TextContent):
            text = content.text
        elif isinstance(content, types.EmbeddedResource) and isinstance(content.resource, types.TextResourceContents):
            text = f'<resource uri="{content.resource.uri}">\n{content.resource.text}\n</resource>'
        else:
            text = f"[{content.type} content left out]"
        parts.append(text if message.role == "user" else f"[{message.role}] {text}")
    return cut_middle("\n\n".join(parts), PROMPT_MAX_BYTES)
