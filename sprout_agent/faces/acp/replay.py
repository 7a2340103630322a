"""`session/load`: a stored conversation replayed as the updates a live turn would have sent."""

from __future__ import annotations

from collections.abc import Sequence
from typing import assert_never

from sprout_agent.core.hooks.contract import HOOK_CALL_ID_PREFIX
from sprout_agent.core.messages import (
    Image,
    Message,
    RedactedThinking,
    ServerToolResult,
    ServerToolUse,
    Text,
    Thinking,
    ToolResult,
    ToolUse,
    text_of,
)
from sprout_agent.faces.acp import toolview
from sprout_agent.faces.acp.updates import Updates
from sprout_agent.faces.acp.wire import Json


def replay(history: Sequence[Message], updates: Updates, cwd: str) -> None:
    results = {
        block.tool_use_id: block
        for message in history
        if message.role == "user"
        for block in message.content
        if isinstance(block, ToolResult)
    }
    plan: list[Json] | None = None
    for message in history:
        for block in message.content:
            match block:
                case Text():
                    if block.text:
                        kind = "user_message_chunk" if message.role == "user" else "agent_message_chunk"
                        updates.send({"sessionUpdate": kind, "content": {"type": "text", "text": block.text}})
                case ToolUse():
                    result = results.get(block.id)
                    updates.send(_tool_call(block, result, cwd))
                    server, _, tool = block.name.partition("__")
                    entries = toolview.plan_entries(server, tool, block.input)
                    if entries is not None and result is not None and not result.is_error:
                        plan = entries
                case ToolResult():
                    pass  # shown with its call, above
                case Image() | Thinking() | RedactedThinking() | ServerToolUse() | ServerToolResult():
                    pass  # not replayed
                case _:
                    assert_never(block)
    if plan is not None:  # the plan as it stood last: ACP replaces the whole plan on each update
        updates.send({"sessionUpdate": "plan", "entries": plan})


def _tool_call(use: ToolUse, result: ToolResult | None, cwd: str) -> Json:
    server, _, tool = use.name.partition("__")
    text = text_of(result.content) if result is not None else "interrupted"
    status = "failed" if result is None or result.is_error else "completed"
    if use.id.startswith(HOOK_CALL_ID_PREFIX):
        title, kind, locations, content = f"Hook {tool} ({server})", "think", [], []
    else:
        view = toolview.describe(server, tool, use.input, cwd)
        title, kind, locations = view.title, view.kind, view.locations
        content = toolview.diff_content(server, tool, use.input, cwd) if status == "completed" else []
    update: Json = {"sessionUpdate": "tool_call", "toolCallId": use.id, "title": title, "kind": kind}
    update |= {"status": status, "rawInput": use.input}
    update["content"] = content or [{"type": "content", "content": {"type": "text", "text": text[:8192]}}]
    if locations:
        update["locations"] = locations
    return update
