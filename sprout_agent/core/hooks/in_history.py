"""What a hook said, as the history carries it: an assistant `tool_use` named `<server>__<hook>` and a user
`tool_result` holding the text as JSON data, so nothing in it can pose as the agent, the user or the system. The
call ids carry a prefix the faces and the pages know (contract.HOOK_CALL_ID_PREFIX) and a salt of the session,
so they never meet a model's own ids."""

from __future__ import annotations

import itertools
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from sprout_agent.core.hooks.contract import HOOK_CALL_ID_PREFIX
from sprout_agent.core.messages import Message, Text, ToolResult, ToolUse


@dataclass(frozen=True, slots=True)
class HookOutput:
    server: str
    text: str


class HookMessages:
    """Makes the message pairs; one per session, shared with its subagents' hooks (their ids stay unique)."""

    def __init__(self) -> None:
        self._ids = itertools.count()
        self._salt = uuid.uuid4().hex[:8]

    def of(self, hook: str, outputs: Sequence[HookOutput]) -> list[Message]:
        messages: list[Message] = []
        for output in outputs:
            call_id = f"{HOOK_CALL_ID_PREFIX}{self._salt}_{next(self._ids)}"
            messages.append(Message("assistant", (ToolUse(call_id, f"{output.server}__{hook}", {}),)))
            messages.append(Message("user", (ToolResult(call_id, (Text(encoded(hook, output)),)),)))
        return messages


def encoded(hook: str, output: HookOutput) -> str:
    """A hook's output as the JSON data a tool_result carries (the model reads it as data, never as instructions)."""
    return json.dumps({"hook": hook, "server": output.server, "text": output.text}, ensure_ascii=False)
