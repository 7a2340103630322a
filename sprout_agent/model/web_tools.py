"""Web search and web fetch, the tools the API runs itself (`--web`): their definitions, their blocks as the
faces show them, and their blocks as text for a request that does not offer them. Stdlib only.

Off by default: every search costs money (docs/models.md "Cost") and fetched pages are untrusted text the model reads.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any, assert_never, cast

from sprout_agent.core.events import Event, ToolFinished, ToolRunning, ToolStarted
from sprout_agent.core.messages import (
    Block,
    Image,
    RedactedThinking,
    ServerToolResult,
    ServerToolUse,
    Text,
    Thinking,
    ToolResult,
    ToolUse,
)

# The versions every current model takes; newer ones (dynamic filtering) need code execution alongside.
DEFINITIONS: tuple[dict[str, Any], ...] = (
    {"type": "web_search_20250305", "name": "web_search", "max_uses": 5},
    {"type": "web_fetch_20250910", "name": "web_fetch", "max_uses": 5},
)
SERVER = "anthropic"  # the "server" the faces name for these calls
SUMMARY_TITLES = 3


def definitions(fetch: bool = True) -> list[dict[str, Any]]:
    """Both tools; without `fetch` (a provider that has no web fetch: config/provider.py), search alone."""
    return [dict(tool) for tool in DEFINITIONS if fetch or tool["name"] != "web_fetch"]


def result_json(block: ServerToolResult) -> dict[str, Any]:
    return cast(dict[str, Any], json.loads(block.raw))


def outcome(block: ServerToolResult) -> tuple[bool, str]:
    """(is it an error, a one-line summary): how many results and the first titles, or what was fetched."""
    content = result_json(block).get("content")
    if isinstance(content, list):
        results = [cast(dict[str, Any], r) for r in cast(list[object], content) if isinstance(r, dict)]
        titles = "; ".join(str(r.get("title") or r.get("url") or "") for r in results[:SUMMARY_TITLES])
        return False, f"{len(results)} results" + (f": {titles}" if titles else "")
    item = cast(dict[str, Any], content) if isinstance(content, dict) else {}
    if str(item.get("type", "")).endswith("_error"):
        return True, f"error: {item.get('error_code', 'unknown')}"
    if item.get("type") == "web_fetch_result":
        return False, f"fetched {item.get('url', '')}"
    return False, str(item.get("type", "done"))


def as_text(block: Block) -> Block:
    """A server tool's block as text, for a request without the tools (the API wants them defined for
    their blocks); other blocks as they are."""
    match block:
        case ServerToolUse():
            return Text(f"[{block.name} {json.dumps(block.input, ensure_ascii=False)}]")
        case ServerToolResult():
            failed, summary = outcome(block)
            return Text(f"[{block.kind}{' (error)' if failed else ''}: {summary}]")
        case Text() | Image() | ToolUse() | ToolResult() | Thinking() | RedactedThinking():
            return block
        case _:
            assert_never(block)


class CallLines:
    """Turns a reply's server tool blocks, as they stream, into the tool events every face already shows."""

    def __init__(self, emit: Callable[[Event], None]) -> None:
        self._emit = emit
        self._open: dict[str, tuple[str, float]] = {}

    def seen(self, block: ServerToolUse | ServerToolResult) -> None:
        match block:
            case ServerToolUse():
                self._open[block.id] = (block.name, time.monotonic())
                self._emit(ToolStarted(block.id, block.name, SERVER, block.name, block.input))
                self._emit(ToolRunning(block.id))
            case ServerToolResult():
                kind = block.kind.removesuffix("_tool_result")
                name, started = self._open.pop(block.tool_use_id, (kind, time.monotonic()))
                failed, summary = outcome(block)
                self._emit(ToolFinished(block.tool_use_id, name, failed, time.monotonic() - started, summary))
            case _:
                assert_never(block)
