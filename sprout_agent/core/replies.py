"""What the loop reads off a model reply and its history: the reply's text, the last text the model gave, and the
reply as the faces get it (`AssistantMessage`, with each call's SDK-facing name)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sprout_agent.core.events import AssistantMessage
from sprout_agent.core.messages import Message, Text, ToolUse
from sprout_agent.core.protocols import ModelReply, ToolSpec
from sprout_agent.core.tool_names import sdk_tool_name


def reply_text(reply: ModelReply) -> str:
    return "".join(block.text for block in reply.content if isinstance(block, Text))


def last_text(history: Sequence[Message]) -> str:
    for message in reversed(history):
        if message.role == "assistant" and message.text.strip():
            return message.text
    return ""


def assistant_message(reply: ModelReply, cost: float, tools: Mapping[str, ToolSpec], model: str) -> AssistantMessage:
    names = {
        block.name: sdk_tool_name(spec.server, spec.tool)
        for block in reply.content
        if isinstance(block, ToolUse) and (spec := tools.get(block.name)) is not None
    }
    return AssistantMessage(reply.id, reply.model or model, reply.content, reply.stop_reason, reply.usage, names, cost)
