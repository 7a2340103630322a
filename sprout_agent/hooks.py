"""MCP-driven lifecycle hooks: `_`-prefixed tools called at `_Stop` and `_PostCompact`.

The whole contract lives here: the allowlist, the per-call timeout and kill-on-second-timeout, the
session-wide `_Stop` rejection budget, context on request, and the JSON-encoded history injection.
"""

from __future__ import annotations

import itertools
import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import anyio

from sprout_agent.events import (
    Event,
    HookCalled,
    HookFailed,
    HookInjected,
    HookObjected,
    HookServerKilled,
    HookTimedOut,
    StopBudgetSpent,
)
from sprout_agent.messages import Message, Text, ToolResult, ToolUse, text_of
from sprout_agent.protocols import HookCallFailed, ToolHost, ToolSpec

STOP = "_Stop"
POST_COMPACT = "_PostCompact"
HOOK_TEXT_MAX_CHARS = 16 * 1024  # documented in docs/hooks.md
CONSECUTIVE_TIMEOUTS_TO_KILL = 2
# Inputs a hook may ask for by declaring them as properties of its inputSchema (docs/hooks.md).
CONTEXT_FIELDS = frozenset(
    {"session_id", "cwd", "objections_so_far", "rejections_left", "last_assistant_message", "trigger"}
)


# The ids of the tool_use/tool_result pairs that carry hook output in the history (ACP replay looks for them).
HOOK_CALL_ID_PREFIX = "sprout_hook_"


def is_hook(spec: ToolSpec) -> bool:
    """A tool whose bare name starts with `_` is a hook: never offered to the model, never callable by it."""
    return spec.tool.startswith("_")


@dataclass(frozen=True, slots=True)
class Allowlist:
    everything: bool
    names: frozenset[str]

    def allows(self, server: str) -> bool:
        return self.everything or server in self.names


def parse_allowlist(raw: str | None) -> Allowlist | None:
    """`MCP_HOOK_SERVERS`: `*` = every server, else comma-separated names; None (hooks off) if nothing is left."""
    names = [name.strip() for name in (raw or "").split(",")]
    names = [name for name in names if name]
    if not names:
        return None
    if names == ["*"]:
        return Allowlist(True, frozenset())
    return Allowlist(False, frozenset(names))


@dataclass(frozen=True, slots=True)
class HookOutput:
    server: str
    text: str


class Hooks:
    """Calls hooks on allowlisted servers and keeps the session's hook state (budget, timeout counts)."""

    def __init__(
        self,
        host: ToolHost,
        *,
        allowlist: Allowlist | None,
        timeout_ms: int,
        stop_max_rejections: int,
        emit: Callable[[Event], None],
    ) -> None:
        self._host = host
        self._allowlist = allowlist
        self._timeout = timeout_ms / 1000
        self._max_rejections = stop_max_rejections
        self._emit = emit
        self._rejections = 0
        self._budget_reported = False
        self._consecutive_timeouts: dict[str, int] = {}
        self._ids = itertools.count()
        self._id_salt = uuid.uuid4().hex[:8]

    @property
    def rejections_left(self) -> int:
        return max(0, self._max_rejections - self._rejections)

    def allows(self, server: str) -> bool:
        """Whether `server`'s hooks are called under MCP_HOOK_SERVERS."""
        return self._allowlist is not None and self._allowlist.allows(server)

    def active(self) -> list[ToolSpec]:
        """Every hook the agent will call, in config order."""
        return [spec for spec in self._host.tools() if is_hook(spec) and self.allows(spec.server)]

    def targets(self, hook: str) -> list[ToolSpec]:
        """Allowlisted servers exposing `hook`, in config order."""
        return [spec for spec in self.active() if spec.tool == hook]

    async def on_stop(self, context: Mapping[str, object]) -> list[Message]:
        """Runs the `_Stop` gate; returns the objection messages to append (empty = the agent may stop)."""
        if self._max_rejections == 0 or not self.targets(STOP):
            return []
        if self._rejections >= self._max_rejections:
            if not self._budget_reported:
                self._budget_reported = True
                self._emit(StopBudgetSpent(self._rejections))
            return []
        context = {**context, "objections_so_far": self._rejections, "rejections_left": self.rejections_left}
        outputs = await self.call(STOP, context)
        for output in outputs:
            self._emit(HookObjected(STOP, output.server, output.text))
        if outputs:
            self._rejections += 1  # one round counts once, however many servers objected
        return self.as_messages(STOP, outputs)

    async def on_post_compact(self, context: Mapping[str, object]) -> list[Message]:
        """Runs `_PostCompact`; returns the messages that carry its text into the fresh context."""
        outputs = await self.call(POST_COMPACT, context)
        for output in outputs:
            self._emit(HookInjected(POST_COMPACT, output.server, output.text))
        return self.as_messages(POST_COMPACT, outputs)

    async def call(self, hook: str, context: Mapping[str, object]) -> list[HookOutput]:
        """Calls `hook` on every target at once; returns the non-empty answers in config order."""
        targets = self.targets(hook)
        if not targets:
            return []
        self._emit(HookCalled(hook, tuple(spec.server for spec in targets)))
        answers: list[str | None] = [None] * len(targets)

        async def call_one(index: int, spec: ToolSpec) -> None:
            answers[index] = await self._call_bounded(hook, spec, _fill_context(spec, context))

        async with anyio.create_task_group() as group:
            for index, spec in enumerate(targets):
                group.start_soon(call_one, index, spec)
        return [HookOutput(spec.server, text) for spec, text in zip(targets, answers, strict=True) if text]

    async def _call_bounded(self, hook: str, spec: ToolSpec, arguments: dict[str, object]) -> str | None:
        server = spec.server
        with anyio.move_on_after(self._timeout):
            try:
                outcome = await self._host.call_hook(spec, arguments)
            except HookCallFailed as error:
                self._emit(HookFailed(hook, server, str(error)))
                return None
            self._consecutive_timeouts.pop(server, None)  # any answer resets the count
            if outcome.is_error:
                self._emit(HookFailed(hook, server, _truncate(text_of(outcome.content))))
                return None
            return _truncate(text_of(outcome.content).strip()) or None
        await self._timed_out(hook, server)
        return None

    async def _timed_out(self, hook: str, server: str) -> None:
        count = self._consecutive_timeouts.get(server, 0) + 1
        self._consecutive_timeouts[server] = count
        self._emit(HookTimedOut(hook, server, count))
        if count >= CONSECUTIVE_TIMEOUTS_TO_KILL:
            del self._consecutive_timeouts[server]
            reason = f"hook {hook} timed out {count} times in a row"
            await self._host.kill(server, reason)
            self._emit(HookServerKilled(server, reason))

    def as_messages(self, hook: str, outputs: Sequence[HookOutput]) -> list[Message]:
        """Each output as an assistant tool_use `<server>__<hook>` plus a user tool_result of JSON data.

        The text is JSON-encoded so nothing in it can pose as the agent, the user or the system.
        """
        messages: list[Message] = []
        for output in outputs:
            call_id = f"{HOOK_CALL_ID_PREFIX}{self._id_salt}_{next(self._ids)}"
            body = json.dumps({"hook": hook, "server": output.server, "text": output.text}, ensure_ascii=False)
            messages.append(Message("assistant", (ToolUse(call_id, f"{output.server}__{hook}", {}),)))
            messages.append(Message("user", (ToolResult(call_id, (Text(body),)),)))
        return messages


def _fill_context(spec: ToolSpec, context: Mapping[str, object]) -> dict[str, object]:
    """The inputs the hook declared from the documented set; a hook that declares none gets `{}`."""
    properties = spec.input_schema.get("properties")
    if not isinstance(properties, dict):
        return {}
    declared = {str(name) for name in properties}  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
    return {name: context[name] for name in sorted(declared & CONTEXT_FIELDS) if name in context}


def _truncate(text: str) -> str:
    if len(text) <= HOOK_TEXT_MAX_CHARS:
        return text
    marker = f"\n… [{len(text) - HOOK_TEXT_MAX_CHARS} characters elided] …\n"
    keep = (HOOK_TEXT_MAX_CHARS - len(marker)) // 2
    return text[:keep] + marker + text[-keep:]
