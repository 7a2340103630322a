"""Hook callbacks: a second source of hooks at the same hook points, for a program that drives the session (the
Claude Agent SDKs' `hooks`). The loop calls them through `HookCallbacks`; `Hooks` (calling.py) merges their answers
with the MCP hooks' under one rule (docs/sdk.md#hook-callbacks). Events and fields are Claude Code's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from sprout_agent.core.messages import Image, Text

# The source named in the history's hook pairs and in hook events, where an MCP hook names its server.
CALLBACK_SOURCE = "sdk"
# Claude Code's events for the hook points we have (contract.py's names are the MCP hooks').
PRE_TOOL_USE = "PreToolUse"
POST_TOOL_USE = "PostToolUse"
POST_TOOL_USE_FAILURE = "PostToolUseFailure"
USER_PROMPT_SUBMIT = "UserPromptSubmit"
STOP = "Stop"
PRE_COMPACT = "PreCompact"
SESSION_START = "SessionStart"
SESSION_END = "SessionEnd"
NOTIFICATION = "Notification"
SUBAGENT_START = "SubagentStart"
SUBAGENT_STOP = "SubagentStop"
CALLED_EVENTS = frozenset(
    {
        PRE_TOOL_USE,
        POST_TOOL_USE,
        POST_TOOL_USE_FAILURE,
        USER_PROMPT_SUBMIT,
        STOP,
        PRE_COMPACT,
        SESSION_START,
        SESSION_END,
        NOTIFICATION,
        SUBAGENT_START,
        SUBAGENT_STOP,
    }
)
# Our `_SessionEnd` reasons → Claude Code's ExitReason.
SESSION_END_REASONS = {"clear": "clear", "exit": "prompt_input_exit"}

HookPermission = Literal["allow", "ask"]


@dataclass(frozen=True, slots=True)
class CallbackAnswer:
    """One callback's answer, read from Claude Code's hook output (the parsing is the face's)."""

    context: str = ""  # additionalContext: text for the model
    block: str | None = None  # decision "block" (or a failure under onFailure "block"): its reason
    permission: Literal["allow", "deny", "ask"] | None = None  # PreToolUse's permissionDecision
    permission_reason: str = ""
    updated_input: dict[str, object] | None = None  # PreToolUse: the call runs with this input
    stop: str | None = None  # `continue: false`: its stopReason ("" when none was given)


class HookCallbacks(Protocol):
    """The callbacks a driving program registered, by Claude Code event name."""

    def wants(self, event: str, subject: str | None = None) -> bool:
        """Whether a callback is registered for `event` whose matcher matches `subject` (a tool's name, a source…)."""
        ...

    async def run(
        self, event: str, fields: Mapping[str, object], subject: str | None = None, tool_use_id: str | None = None
    ) -> list[CallbackAnswer]:
        """Runs every matching callback (each bounded by its own timeout); answers in registration order.
        `fields` are the event's own input fields; the common ones (session_id, cwd, …) are the runner's."""
        ...


class Chained:
    """Two sources of callbacks at the same points, run one after the other: the settings files' command hooks,
    then a driving program's (docs/hooks.md gives the order)."""

    def __init__(self, first: HookCallbacks, then: HookCallbacks) -> None:
        self.sources = (first, then)

    def wants(self, event: str, subject: str | None = None) -> bool:
        return any(source.wants(event, subject) for source in self.sources)

    async def run(
        self, event: str, fields: Mapping[str, object], subject: str | None = None, tool_use_id: str | None = None
    ) -> list[CallbackAnswer]:
        answers: list[CallbackAnswer] = []
        for source in self.sources:
            if source.wants(event, subject):
                answers += await source.run(event, fields, subject, tool_use_id)
        return answers


def chained(first: HookCallbacks | None, then: HookCallbacks | None) -> HookCallbacks | None:
    """`first`, then `then` (either may be None); chaining the same source again changes nothing."""
    if first is None or then is None or first is then:
        return first or then
    if isinstance(first, Chained) and first.sources[1] is then:
        return first
    return Chained(first, then)


@dataclass(frozen=True, slots=True)
class PreToolVerdict:
    """What the PreToolUse callbacks decided about one call, merged: deny wins over ask, ask over allow."""

    refusal: str | None = None  # denied: what the model reads instead of a result
    permission: HookPermission | None = None  # allow: no question; ask: the question even if a rule allows it
    updated_input: dict[str, object] | None = None
    context: tuple[str, ...] = ()


def pre_tool_verdict(answers: Sequence[CallbackAnswer]) -> PreToolVerdict:
    """Claude Code's precedence: any deny (or block) refuses the call; else any ask asks; else any allow allows.
    The last updatedInput given by a callback that did not deny is the input the call runs with."""
    context = tuple(answer.context for answer in answers if answer.context)
    denials = [a for a in answers if a.permission == "deny" or (a.block is not None and a.permission is None)]
    if denials:
        reasons = [a.permission_reason or a.block or "" for a in denials]
        why = "; ".join(reason for reason in reasons if reason) or "no reason given"
        return PreToolVerdict(refusal=f"denied by a {PRE_TOOL_USE} hook: {why}", context=context)
    updated = next((a.updated_input for a in reversed(answers) if a.updated_input is not None), None)
    kinds = {answer.permission for answer in answers}
    permission: HookPermission | None = "ask" if "ask" in kinds else "allow" if "allow" in kinds else None
    return PreToolVerdict(permission=permission, updated_input=updated, context=context)


def tool_response(content: Sequence[Text | Image]) -> list[dict[str, object]]:
    """A result as PostToolUse's `tool_response`: MCP content blocks (an image's data left out)."""
    return [
        {"type": "text", "text": block.text}
        if isinstance(block, Text)
        else {"type": "image", "mimeType": block.media_type}
        for block in content
    ]


def tool_fields(context: Mapping[str, object]) -> dict[str, object]:
    """Claude Code's fields for a tool's callbacks: its SDK-facing name, the input as it runs, the call's id."""
    return {
        "tool_name": context.get("sdk_tool_name", ""),
        "tool_input": context.get("arguments", {}),
        "tool_use_id": context.get("tool_use_id"),
    }
