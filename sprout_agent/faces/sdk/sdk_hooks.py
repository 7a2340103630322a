"""The Claude Agent SDKs' hook callbacks (`hooks` in `initialize`): matched and called over the control protocol
(`hook_callback`), their output read as Claude Code reads it. The loop calls them at its hook points through
core.hooks.program_callbacks.HookCallbacks, after the MCP hooks of each point (docs/sdk.md#hook-callbacks)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast

import anyio

from sprout_agent.core.events import Event, Notice
from sprout_agent.core.hooks import program_callbacks as cb
from sprout_agent.core.hooks.hook_output import HookCallbackError, matcher_error, matches, read_output
from sprout_agent.core.hooks.hook_output import tool_input as tool_input
from sprout_agent.core.permission_mode import PermissionMode
from sprout_agent.core.permissions import Policy
from sprout_agent.faces.sdk.control import Body, Control, ControlError
from sprout_agent.session.runtime import Runtime
from sprout_agent.session.store import SessionStore

DEFAULT_TIMEOUT = 60.0  # seconds: Claude Code's default for a matcher without `timeout`
MAX_TIMEOUT = 3600.0  # an SDK's timeout beyond this is taken as this: no callback holds a session for a day


@dataclass(frozen=True, slots=True)
class Matcher:
    """One `SDKHookCallbackMatcher`: which subjects it matches, its callbacks, their timeout and failure rule."""

    pattern: str | None  # None, "" or "*": every subject
    callback_ids: tuple[str, ...]
    timeout: float
    block_on_failure: bool  # onFailure other than "continue": a failed callback blocks what the event guards

    def matches(self, subject: str | None) -> bool:
        return matches(self.pattern, subject)


def parse_hooks(raw: object) -> dict[str, list[Matcher]]:
    """`initialize.hooks`: {event: [{matcher, hookCallbackIds, timeout, onFailure}]}; ValueError says what is wrong.
    An event we have no hook point for is refused: a guard registered there would silently never run."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ValueError("initialize: hooks must be an object")
    hooks: dict[str, list[Matcher]] = {}
    for event, matchers in cast(dict[str, object], raw).items():
        if event not in cb.CALLED_EVENTS:
            known = ", ".join(sorted(cb.CALLED_EVENTS))
            raise ValueError(f"initialize: sprout-agent has no {event!r} hook point (it runs {known})")
        if not isinstance(matchers, list):
            raise ValueError(f"initialize: hooks.{event} must be a list")
        hooks[event] = [_matcher(event, item) for item in cast(list[object], matchers)]
    return hooks


def _matcher(event: str, item: object) -> Matcher:
    if not isinstance(item, dict):
        raise ValueError(f"initialize: each hooks.{event} entry must be an object")
    entry = cast(dict[str, Any], item)
    pattern, ids, timeout = entry.get("matcher"), entry.get("hookCallbackIds"), entry.get("timeout")
    if pattern is not None and not isinstance(pattern, str):
        raise ValueError(f"initialize: hooks.{event} matcher must be a string or null")
    if (wrong := matcher_error(pattern)) is not None:
        raise ValueError(f"initialize: hooks.{event} matcher {pattern!r} is not a regular expression: {wrong}")
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in cast(list[object], ids)):
        raise ValueError(f"initialize: hooks.{event} hookCallbackIds must be a list of strings")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0):
        raise ValueError(f"initialize: hooks.{event} timeout must be a positive number of seconds")
    seconds = min(float(timeout), MAX_TIMEOUT) if timeout is not None else DEFAULT_TIMEOUT
    on_failure = entry.get("onFailure")
    return Matcher(pattern, tuple(cast(list[str], ids)), seconds, on_failure not in (None, "continue"))


class SdkHooks:
    """The session's registered callbacks (`register` at `initialize`), called with Claude Code's hook input."""

    def __init__(self, control: Control, emit: Callable[[Event], None]) -> None:
        self.control = control
        self.emit = emit
        self.hooks: dict[str, list[Matcher]] = {}
        self.runtime: Runtime | None = None

    def register(self, raw: object) -> None:
        self.hooks = parse_hooks(raw)

    def wants(self, event: str, subject: str | None = None) -> bool:
        if self.control.closed:  # the SDK has gone (its stdin ended): nobody is left to call
            return False
        return event in cb.CALLED_EVENTS and any(m.matches(subject) for m in self.hooks.get(event, ()))

    async def run(
        self, event: str, fields: Mapping[str, object], subject: str | None = None, tool_use_id: str | None = None
    ) -> list[cb.CallbackAnswer]:
        calls = [(m, i) for m in self.hooks.get(event, ()) if m.matches(subject) for i in m.callback_ids]
        answers: list[cb.CallbackAnswer | None] = [None] * len(calls)
        hook_input = {**self._common(), "hook_event_name": event, **fields}

        async def call(index: int, matcher: Matcher, callback_id: str) -> None:
            answers[index] = await self._call(event, matcher, callback_id, hook_input, tool_use_id)

        async with anyio.create_task_group() as group:  # Claude Code runs an event's callbacks at the same time
            for index, (matcher, callback_id) in enumerate(calls):
                group.start_soon(call, index, matcher, callback_id)
        return [answer for answer in answers if answer is not None]

    async def _call(
        self, event: str, matcher: Matcher, callback_id: str, hook_input: Body, tool_use_id: str | None
    ) -> cb.CallbackAnswer | None:
        fields: Body = {"callback_id": callback_id, "input": hook_input, "tool_use_id": tool_use_id}
        try:
            output = await self.control.request("hook_callback", fields, matcher.timeout)
            answer = read_output(output)
        except (ControlError, HookCallbackError) as error:
            # No objection unless the matcher said onFailure "block" (never on Stop, as in Claude Code).
            failed = f"the SDK's {event} hook callback failed: {error}"
            self.emit(Notice(failed, "warning"))
            return cb.CallbackAnswer(block=failed) if matcher.block_on_failure and event != cb.STOP else None
        if isinstance(message := output.get("systemMessage"), str) and message:
            self.emit(Notice(message, "warning"))
        return answer

    def _common(self) -> Body:
        """BaseHookInput: the session's id, transcript, working directory and permission mode."""
        runtime = self.runtime
        if runtime is None:
            return {}
        agent = runtime.agent
        policy = agent.permit
        mode = policy.permission_mode if isinstance(policy, Policy) else PermissionMode.DEFAULT
        transcript = str(agent.recorder.path) if isinstance(agent.recorder, SessionStore) else ""
        return {
            "session_id": runtime.session_id,
            "transcript_path": transcript,
            "cwd": agent.cwd,
            "permission_mode": mode.claude_name,
        }
