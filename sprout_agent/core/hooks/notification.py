"""Claude Code's `Notification` hook point where we notify: a tool call waiting for a person's permission (the REPL's
question, an ACP editor's, an SDK's can_use_tool), heard by the settings files' command hooks and an SDK's callbacks
alike, with Claude Code's fields (`message`, `notification_type`, the matcher's subject)."""

from __future__ import annotations

import anyio

from sprout_agent.core.hooks.program_callbacks import NOTIFICATION, HookCallbacks
from sprout_agent.core.messages import ToolUse
from sprout_agent.core.permissions import Ask, Decision
from sprout_agent.core.protocols import ToolSpec
from sprout_agent.core.tool_names import sdk_tool_name

PERMISSION_PROMPT = "permission_prompt"


def notifying(ask: Ask | None, callbacks: HookCallbacks | None) -> Ask | None:
    """`ask`, with the Notification hooks told each time it asks. They run beside the question, not before it: a
    slow hook never holds the question back (each is bounded by its own timeout, and the answer waits for it)."""
    if ask is None or callbacks is None:
        return ask
    hooks: HookCallbacks = callbacks
    question: Ask = ask

    async def asking(spec: ToolSpec, use: ToolUse, *, outside_sandbox: str | None = None) -> Decision:
        if not hooks.wants(NOTIFICATION, PERMISSION_PROMPT):  # an SDK registers its callbacks after the start
            return await question(spec, use, outside_sandbox=outside_sandbox)
        message = f"Claude needs your permission to use {sdk_tool_name(spec.server, spec.tool)}"
        fields = {"message": message, "notification_type": PERMISSION_PROMPT}
        decided: list[Decision] = []

        async def answer() -> None:
            decided.append(await question(spec, use, outside_sandbox=outside_sandbox))

        async with anyio.create_task_group() as group:
            group.start_soon(hooks.run, NOTIFICATION, fields, PERMISSION_PROMPT)
            group.start_soon(answer)
        return decided[0]

    return asking
