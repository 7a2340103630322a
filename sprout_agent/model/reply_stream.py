"""One streamed Messages API response, accumulated from its raw events into our `ModelReply`.

Our own accumulation, not the SDK's: the SDK parses each tool input while it streams and raises on one it
cannot parse (a bare string, `null`, a lone surrogate), which would end the whole run. Here such an input
becomes `{"_invalid": <the raw JSON text>}`: an object, so the history stays valid for the API, which the
loop answers with an error result the model reads. No SDK import: events are read by attribute.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from sprout_agent.core.messages import (
    INVALID_INPUT_KEY,
    Block,
    RedactedThinking,
    ServerToolResult,
    ServerToolUse,
    Text,
    Thinking,
    ToolUse,
    Usage,
)
from sprout_agent.core.protocols import ModelReply
from sprout_agent.core.stop_reasons import ModelStop

_USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


class StreamCut(Exception):
    """The stream ended without message_stop: the reply is incomplete and must not be trusted."""


@dataclass
class _Open:
    kind: str  # text | tool_use | thinking | redacted_thinking | anything else, which is not kept
    id: str = ""
    name: str = ""
    parts: list[str] = field(default_factory=list[str])
    signature: str = ""  # thinking: from signature_delta (or the start block); redacted_thinking: its data
    raw: str = ""  # a server tool's result block as the JSON it came as (the API checks it when sent back)


class ReplyBuilder:
    """Feed it every raw stream event with `add`; `reply()` once the stream has ended."""

    def __init__(
        self,
        on_text: Callable[[str], None],
        on_thinking: Callable[[str], None] | None = None,
        on_server_tool: Callable[[ServerToolUse | ServerToolResult], None] | None = None,
    ) -> None:
        self._on_text = on_text
        self._on_thinking = on_thinking
        self._on_server_tool = on_server_tool  # a web search or fetch as it happens, for the faces' tool lines
        self._blocks: dict[int, _Open] = {}
        self._usage: dict[str, int] = {}
        # The SDK types it as our `ModelStop` (its `StopReason`); a reason newer than both passes through unchecked.
        self._stop_reason: ModelStop | None = None
        self._stopped = False
        self._model = ""
        self._id = ""

    def add(self, event: Any) -> None:
        kind = event.type
        if kind == "message_start":
            self._model = str(event.message.model)
            self._id = str(getattr(event.message, "id", "") or "")
            self._count(event.message.usage)
        elif kind == "content_block_start":
            self._blocks[event.index] = opened = _opened(event.content_block)
            if opened.raw:
                self._server_tool(opened)
        elif kind == "content_block_stop":
            block = self._blocks.get(event.index)
            if block is not None and block.kind == "server_tool_use":
                self._server_tool(block)
        elif kind == "content_block_delta":
            self._delta(self._blocks.get(event.index), event.delta)
        elif kind == "message_delta":
            self._stop_reason = event.delta.stop_reason
            self._count(event.usage)
        elif kind == "message_stop":
            self._stopped = True

    def reply(self) -> ModelReply:
        if not self._stopped or self._stop_reason is None:
            raise StreamCut("the response stream ended before message_stop")
        content = tuple(
            block
            for _, open_block in sorted(self._blocks.items())
            if (block := _finished(open_block, self._model)) is not None
        )
        usage = Usage(
            input_tokens=self._usage.get("input_tokens", 0),
            output_tokens=self._usage.get("output_tokens", 0),
            cache_read_tokens=self._usage.get("cache_read_input_tokens", 0),
            cache_write_tokens=self._usage.get("cache_creation_input_tokens", 0),
            web_searches=self._usage.get("web_search_requests", 0),
            web_fetches=self._usage.get("web_fetch_requests", 0),
        )
        return ModelReply(content, self._stop_reason, usage, self._model, self._id)

    def _server_tool(self, block: _Open) -> None:
        finished = _finished(block, self._model)
        if self._on_server_tool is not None and isinstance(finished, ServerToolUse | ServerToolResult):
            self._on_server_tool(finished)

    def _delta(self, block: _Open | None, delta: Any) -> None:
        if block is None:
            return
        if delta.type == "text_delta" and block.kind == "text":
            block.parts.append(str(delta.text))
            self._on_text(str(delta.text))
        elif delta.type == "input_json_delta" and block.kind in ("tool_use", "server_tool_use"):
            block.parts.append(str(delta.partial_json))
        elif delta.type == "thinking_delta" and block.kind == "thinking":
            block.parts.append(str(delta.thinking))
            if self._on_thinking is not None:
                self._on_thinking(str(delta.thinking))
        elif delta.type == "signature_delta" and block.kind == "thinking":
            block.signature += str(delta.signature)

    def _count(self, usage: Any) -> None:
        """Counts on message_delta are running totals: they replace, and a missing one keeps message_start's."""
        for name in _USAGE_FIELDS:
            value = getattr(usage, name, None)
            if isinstance(value, int):
                self._usage[name] = value
        server = getattr(usage, "server_tool_use", None)
        for name in ("web_search_requests", "web_fetch_requests"):
            value = getattr(server, name, None)
            if isinstance(value, int):
                self._usage[name] = value


def _opened(block: Any) -> _Open:
    if block.type == "text":
        return _Open("text", parts=[str(block.text)] if block.text else [])
    if block.type == "thinking":  # starts empty by the docs, but whatever it carries is part of the block
        return _Open("thinking", parts=[str(block.thinking)] if block.thinking else [], signature=block.signature or "")
    if block.type == "redacted_thinking":
        return _Open("redacted_thinking", signature=str(block.data))
    if str(block.type).endswith("_tool_result") and hasattr(block, "to_dict"):  # web_search_, web_fetch_…
        raw = json.dumps(block.to_dict(mode="json"), ensure_ascii=False)  # the fields the API sent, no defaults
        return _Open(str(block.type), str(block.tool_use_id), raw=raw)
    return _Open(block.type, getattr(block, "id", ""), getattr(block, "name", ""))


def _finished(block: _Open, model: str) -> Block | None:
    if block.kind == "text":
        return Text("".join(block.parts))
    if block.kind == "tool_use":
        return ToolUse(block.id, block.name, tool_input("".join(block.parts)))
    if block.kind == "thinking":
        return Thinking("".join(block.parts), block.signature, model)
    if block.kind == "redacted_thinking":
        return RedactedThinking(block.signature, model)
    if block.kind == "server_tool_use":
        return ServerToolUse(block.id, block.name, tool_input("".join(block.parts)))
    if block.raw:
        return ServerToolResult(block.id, block.kind, block.raw)
    return None


def tool_input(raw: str) -> dict[str, object]:
    """The call's arguments, or `{"_invalid": raw}` when they are not a JSON object we can send back."""
    try:
        # NaN and Infinity parse in Python but are not JSON: no request (nor a stream-json line) could carry them.
        value: object = json.loads(raw, parse_constant=_not_json) if raw.strip() else {}
        json.dumps(value, ensure_ascii=False).encode()  # a lone surrogate parses, but no request can carry it
    except (ValueError, UnicodeEncodeError, RecursionError):
        value = None
    if isinstance(value, dict):
        return cast(dict[str, object], value)  # JSON object keys are strings
    # As text that survives UTF-8 (a raw surrogate becomes its escape), so the history can still be sent.
    return {INVALID_INPUT_KEY: raw.encode("utf-8", "backslashreplace").decode()}


def _not_json(constant: str) -> object:
    raise ValueError(f"{constant} is not JSON")
