"""Our messages and tools as the Messages API's JSON: merging, the blocks each request may carry, cache breakpoints.

Stdlib only (client.py sends what this builds). Thinking and server tool result blocks go back verbatim.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, assert_never

from sprout_agent.core.images import PDF
from sprout_agent.core.messages import (
    Block,
    Image,
    Message,
    RedactedThinking,
    ServerToolResult,
    ServerToolUse,
    Text,
    Thinking,
    ToolResult,
    ToolUse,
)
from sprout_agent.core.protocols import ToolSpec
from sprout_agent.model import web_tools as server_tools
from sprout_agent.model.strict_schema import strict_schema

EPHEMERAL: dict[str, str] = {"type": "ephemeral"}


def to_api_tools(tools: Sequence[ToolSpec], *, strict: bool = False) -> list[dict[str, Any]]:
    """`strict`: the model supports structured outputs; a tool that asks for them (`ToolSpec.strict`) is sent with
    `strict: true` and its schema in the subset the API takes, when there is such a form (strict_schema.py)."""
    api_tools: list[dict[str, Any]] = []
    for spec in tools:
        schema = spec.input_schema or {"type": "object"}
        constrained = strict_schema(schema) if strict and spec.strict else None
        tool: dict[str, Any] = {"name": spec.name, "description": spec.description, "input_schema": schema}
        if constrained is not None:
            tool |= {"input_schema": constrained, "strict": True}
        api_tools.append(tool)
    if api_tools:
        api_tools[-1]["cache_control"] = EPHEMERAL
    return api_tools


def to_api_messages(
    history: Sequence[Message],
    *,
    tools_offered: bool = True,
    model: str = "",
    thinking: bool = False,
    web: bool = False,
) -> list[dict[str, Any]]:
    """Serialises history for the API: merges same-role neighbours, drops empty text and empty turns.

    The API rejects empty text blocks and empty turns, and a rejected history would fail every retry;
    merging keeps hook objections (assistant tool_use after an assistant reply) a valid alternation.
    A request without tools may not carry tool blocks (hook pairs when only hook servers are configured),
    so there they become text. Thinking blocks go back verbatim when thinking is on and `model` wrote them;
    otherwise they are left out, which the API allows for earlier turns (and a foreign signature fails).
    Web search and fetch blocks go back verbatim when the request offers those tools (`web`), else as text.
    """
    history = [_kept_thinking(message, model, thinking) for message in history]
    if not web:
        history = [Message(m.role, tuple(map(server_tools.as_text, m.content))) for m in history]
    unsigned = _unsigned_hook_turn(history) if thinking else 0
    merged: list[dict[str, Any]] = []
    for index, message in enumerate(history):
        as_text = not tools_offered or (unsigned and index >= len(history) - unsigned)
        content = _tool_blocks_as_text(message.content) if as_text else message.content
        blocks = [_to_api_block(block) for block in content if not _is_empty_text(block)]
        if not blocks:
            continue
        if merged and merged[-1]["role"] == message.role:
            merged[-1]["content"].extend(blocks)
        else:
            merged.append({"role": message.role, "content": blocks})
    if merged and merged[-1]["content"][-1]["type"] not in _THINKING_TYPES:  # thinking takes no cache_control
        # The newest turn carries a breakpoint so the next round of a tool loop reads it from cache.
        merged[-1]["content"][-1] = {**merged[-1]["content"][-1], "cache_control": EPHEMERAL}
    return merged


_THINKING_TYPES = ("thinking", "redacted_thinking")


def _kept_thinking(message: Message, model: str, thinking: bool) -> Message:
    def kept(block: Block) -> bool:
        if isinstance(block, Thinking | RedactedThinking):
            return thinking and block.model in ("", model)
        return True

    return Message(message.role, tuple(filter(kept, message.content)))


def _unsigned_hook_turn(history: Sequence[Message]) -> int:
    """How many trailing messages form a hook pair with no thinking before it (0: none).

    With thinking on, the API wants the assistant turn that tool results answer to start with its thinking;
    a `_PostCompact` pair after a handoff has none (our hook wrote it, not the model), so it goes as text.
    """
    end = len(history)  # the trailing user messages merge into one turn: the one the API checks
    while end > 0 and history[end - 1].role == "user":
        end -= 1
    answers = any(isinstance(b, ToolResult) for message in history[end:] for b in message.content)
    if end == 0 or end == len(history) or not answers:
        return 0
    start = end
    while start > 0 and history[start - 1].role == "assistant":
        start -= 1
    turn = [block for message in history[start:end] for block in message.content if not _is_empty_text(block)]
    if not turn or isinstance(turn[0], Thinking | RedactedThinking):
        return 0
    uses = [block for block in turn if isinstance(block, ToolUse)]
    hooks_only = bool(uses) and all(use.name.partition("__")[2].startswith("_") for use in uses)
    return len(history) - start if hooks_only else 0


def _tool_blocks_as_text(content: tuple[Block, ...]) -> tuple[Block, ...]:
    blocks: list[Block] = []
    for block in content:
        match block:
            case ToolUse():
                blocks.append(Text(f"[tool call {block.name} {json.dumps(block.input, ensure_ascii=False)}]"))
            case ToolResult():
                blocks.append(Text(f"[tool result{' (error)' if block.is_error else ''}]"))
                blocks.extend(block.content)
            case Thinking() | RedactedThinking():
                continue  # thinking may only precede real tool calls; with them as text it has no place
            case Text() | Image() | ServerToolUse() | ServerToolResult():
                blocks.append(block)
            case _:
                assert_never(block)
    return tuple(blocks)


def _is_empty_text(block: Block) -> bool:
    return isinstance(block, Text) and not block.text.strip()


def _to_api_block(block: Block) -> dict[str, Any]:
    match block:
        case Text():
            return {"type": "text", "text": block.text}
        case Image() if block.media_type == PDF:
            return {"type": "document", "source": {"type": "base64", "media_type": PDF, "data": block.data}}
        case Image():
            return {
                "type": "image",
                "source": {"type": "base64", "media_type": block.media_type, "data": block.data},
            }
        case ToolUse():
            return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
        case Thinking():
            return {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
        case RedactedThinking():
            return {"type": "redacted_thinking", "data": block.data}
        case ServerToolUse():
            return {"type": "server_tool_use", "id": block.id, "name": block.name, "input": block.input}
        case ServerToolResult():
            return server_tools.result_json(block)
        case ToolResult():
            return _tool_result_block(block)
        case _:
            assert_never(block)


def _tool_result_block(block: ToolResult) -> dict[str, Any]:
    content = [_to_api_block(part) for part in block.content if not _is_empty_text(part)]
    if not content:
        content = [{"type": "text", "text": "(no output)"}]
    result: dict[str, Any] = {"type": "tool_result", "tool_use_id": block.tool_use_id, "content": content}
    if block.is_error:
        result["is_error"] = True
    return result
