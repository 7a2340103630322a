"""MCP-driven lifecycle hooks: `_`-prefixed tools called at every hook point of the loop.

The sovereignty rules live here: the allowlist, the per-call timeout and kill-on-second-timeout, the
session-wide `_Stop` and `_PreToolUse` objection budgets, context on request, and the JSON-encoded
injection. The names and the context each hook may declare are in contract.py. A driving program's hook
callbacks (program_callbacks.py) run at the same points, and their answers go through the same rules.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import anyio

from sprout_agent.core.events import (
    Event,
    HookAnswered,
    HookBudgetSpent,
    HookCalled,
    HookFailed,
    HookInjected,
    HookObjected,
    HookServerKilled,
    HookTimedOut,
    Notice,
    StopBudgetSpent,
)
from sprout_agent.core.hooks import program_callbacks as cb
from sprout_agent.core.hooks.contract import (
    CONSECUTIVE_TIMEOUTS_TO_KILL,
    POST_COMPACT,
    POST_TOOL_USE,
    PRE_TOOL_USE,
    RESULT_TEXT_MAX_CHARS,
    SESSION_END,
    SESSION_START,
    STOP,
    SUBAGENT_START,
    SUBAGENT_STOP,
    TOOL_HOOKS,
    USER_PROMPT_SUBMIT,
    Allowlist,
    answer_kind,
    blocked,
    fill_context,
    truncate,
)
from sprout_agent.core.hooks.contract import is_hook as is_hook
from sprout_agent.core.hooks.contract import parse_allowlist as parse_allowlist
from sprout_agent.core.hooks.in_history import HookMessages, encoded
from sprout_agent.core.hooks.in_history import HookOutput as HookOutput
from sprout_agent.core.messages import Image, Message, Text, text_of
from sprout_agent.core.protocols import HookCallFailed, ToolHost, ToolSpec
from sprout_agent.core.tracing import NO_TRACER, Tracer


@dataclass(slots=True)
class _Tally:
    """What a session's hooks share with its subagents' (`Hooks.for_subagent`): the `_PreToolUse` budget."""

    pre_tool_objections: int = 0


class Hooks:
    """Calls hooks on allowlisted servers and keeps the session's hook state (budgets, timeout counts)."""

    def __init__(
        self,
        host: ToolHost,
        *,
        allowlist: Allowlist | None,
        timeout_ms: int,
        stop_max_rejections: int,
        emit: Callable[[Event], None],
        tool_hooks: bool = False,
        pre_tool_max_objections: int | None = None,
        callbacks: cb.HookCallbacks | None = None,
        tracer: Tracer = NO_TRACER,
    ) -> None:
        self._host = host
        self.tracer = tracer
        self._allowlist = allowlist
        self.timeout = timeout_ms / 1000
        self._max_rejections = stop_max_rejections
        self._emit = emit
        self.tool_hooks = tool_hooks  # SPROUT_AGENT_TOOL_HOOKS=1
        self._pre_tool_max = pre_tool_max_objections  # None: unlimited
        self._rejections = 0
        self._tally = _Tally()
        self._budget_reported: set[str] = set()
        self._consecutive_timeouts: dict[str, int] = {}
        self._messages = HookMessages()
        self.callbacks = callbacks  # the SDK's hook callbacks, run after the MCP hooks at each point
        self._stop: str | None = None  # a callback's `continue: false` (or a blocked prompt): the turn ends
        self._source: str | None = None  # a session start whose SessionStart callbacks wait for its first prompt
        self.subagent: str | None = None  # a subagent's hooks (`for_subagent`): its definition's name
        self._parent: Hooks | None = None  # a subagent's: its parent's hooks, whose turn a `continue: false` ends too

    def for_subagent(self, agent_type: str, emit: Callable[[Event], None]) -> Hooks:
        """The hooks a subagent's loop runs: the same servers, timeouts, kill rule and `_PreToolUse` budget as the
        session's, but `_SubagentStop` where the session has `_Stop` (with a budget of its own), and no
        `_UserPromptSubmit` (the child's prompt is the parent's call, which `_PreToolUse` saw)."""
        child = copy.copy(self)  # shallow: the timeout counts, the tally and the reported budgets are shared
        child._emit, child.subagent, child._parent = emit, agent_type, self
        child._rejections, child._stop, child._source = 0, None, None
        return child

    @property
    def _stop_point(self) -> tuple[str, str]:
        """The MCP hook and the callback event run when the loop would end its turn."""
        return (STOP, cb.STOP) if self.subagent is None else (SUBAGENT_STOP, cb.SUBAGENT_STOP)

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
        """Allowlisted servers exposing `hook`, in config order (none for tool hooks unless opted in)."""
        if hook in TOOL_HOOKS and not self.tool_hooks:
            return []
        return [spec for spec in self.active() if spec.tool == hook]

    async def on_stop(self, context: Mapping[str, object], *, mcp: bool = True) -> list[Message]:
        """Runs the `_Stop` gate; returns the objection messages to append (empty = the agent may stop). `mcp`
        False: right after an objection, where the spec does not ask `_Stop` again but the callbacks are asked
        (with `stop_hook_active`), within the same budget."""
        hook, event = self._stop_point
        if self._max_rejections == 0 or not ((mcp and self.targets(hook)) or self._wanted(event)):
            return []
        if self._rejections >= self._max_rejections:
            self._spent(hook, self._rejections)
            return []
        context = {**context, "objections_so_far": self._rejections, "rejections_left": self.rejections_left}
        outputs = await self.call(hook, context) if mcp else []
        names = ("stop_hook_active", "last_assistant_message", "agent_id", "agent_type")
        answers = await self.run_callbacks(event, {k: context[k] for k in names if k in context})
        outputs += [HookOutput(cb.CALLBACK_SOURCE, text) for a in answers if (text := a.block or a.context)]
        if self._stop is not None:
            return []  # `continue: false` wins over any objection: the agent stops
        for output in outputs:
            self._emit(HookObjected(hook, output.server, output.text))
        if outputs:
            self._rejections += 1  # one round counts once, however many servers objected
        return self.as_messages(hook, outputs)

    async def on_subagent_start(self, context: Mapping[str, object]) -> tuple[str | None, list[HookOutput]]:
        """`_SubagentStart` and the SubagentStart callbacks: (why the child is refused, when a hook answered
        `{"decision": "block"}`; else None, and what the hooks give the child to read)."""
        outputs = await self.call(SUBAGENT_START, context)
        fields = {k: context[k] for k in ("agent_id", "agent_type") if k in context}
        answers = await self.run_callbacks(cb.SUBAGENT_START, fields, str(context.get("agent_type", "")))
        blocks = [(o.server, why) for o in outputs if (why := blocked(o.text)) is not None]
        blocks += [(cb.CALLBACK_SOURCE, a.block) for a in answers if a.block is not None]
        if blocks:
            for server, why in blocks:
                self._emit(HookObjected(SUBAGENT_START, server, why))
            reasons = "; ".join(f"{server}: {why}" for server, why in blocks if why) or "no reason given"
            return f"not run: a {SUBAGENT_START} hook refused this subagent ({reasons})", []
        if self._stop is not None:  # `continue: false` (here or from a sibling's call): the turn is ending
            return f"not run: {self._stop}", []
        return None, [*outputs, *(HookOutput(cb.CALLBACK_SOURCE, a.context) for a in answers if a.context)]

    async def inject(self, hook: str, context: Mapping[str, object]) -> list[Message]:
        """Runs an injecting hook (`_PostCompact`, `_SessionStart`, `_UserPromptSubmit`): its tool-result pairs."""
        outputs = await self.call(hook, context)
        for output in outputs:
            self._emit(HookInjected(hook, output.server, output.text))
        return self.as_messages(hook, outputs)

    async def on_post_compact(self, context: Mapping[str, object]) -> list[Message]:
        return await self.inject(POST_COMPACT, context)

    async def on_session_start(self, context: Mapping[str, object]) -> list[HookOutput]:
        """`_SessionStart`'s answers, kept by the agent until the next prompt: see `enter_session_start`."""
        self._source = str(context.get("source", "startup"))
        return await self.call(SESSION_START, context)

    async def with_session_start_callbacks(self, outputs: Sequence[HookOutput]) -> list[HookOutput]:
        """The held `_SessionStart` answers plus the SessionStart callbacks', run once, with the session's first
        prompt: an SDK registers them in `initialize`, which may come after the session started."""
        source, self._source = self._source, None
        answers = await self.run_callbacks(cb.SESSION_START, {"source": source}, source) if source else []
        return [*outputs, *(HookOutput(cb.CALLBACK_SOURCE, a.context) for a in answers if a.context)]

    def enter_session_start(self, outputs: Sequence[HookOutput]) -> list[Message]:
        """The held session-start answers as they enter the history (reported then, inside the turn)."""
        hook = SESSION_START if self.subagent is None else SUBAGENT_START
        for output in outputs:
            self._emit(HookInjected(hook, output.server, output.text))
        return self.as_messages(hook, outputs)

    async def on_prompt(self, context: Mapping[str, object]) -> list[Message]:
        """`_UserPromptSubmit` and its callbacks; a callback's block (or `continue: false`) ends the turn unrun."""
        if self.subagent is not None:
            return []
        outputs = await self.call(USER_PROMPT_SUBMIT, context)
        answers = await self.run_callbacks(cb.USER_PROMPT_SUBMIT, {"prompt": context.get("prompt", "")})
        blocks = [a.block for a in answers if a.block is not None]
        if blocks and self._stop is None:
            self._stop = f"a {cb.USER_PROMPT_SUBMIT} hook blocked the prompt: {'; '.join(blocks) or 'no reason given'}"
        outputs += [HookOutput(cb.CALLBACK_SOURCE, a.context) for a in answers if a.context]
        for output in outputs:
            self._emit(HookInjected(USER_PROMPT_SUBMIT, output.server, output.text))
        return self.as_messages(USER_PROMPT_SUBMIT, outputs)

    async def before_permission(self, context: Mapping[str, object]) -> cb.PreToolVerdict:
        """PreToolUse callbacks, before the permission policy (as Claude Code runs them): they may refuse the
        call, let it run without a question, force the question, or change its input."""
        name = str(context.get("sdk_tool_name", ""))
        if not self._wanted(cb.PRE_TOOL_USE, name):
            return cb.PreToolVerdict()
        fields = cb.tool_fields(context)
        answers = await self.run_callbacks(cb.PRE_TOOL_USE, fields, name, str(context.get("tool_use_id", "")))
        verdict = cb.pre_tool_verdict(answers)
        if verdict.refusal is not None:
            self._emit(HookObjected(cb.PRE_TOOL_USE, cb.CALLBACK_SOURCE, verdict.refusal))
        return verdict

    async def on_pre_tool(self, context: Mapping[str, object]) -> str | None:
        """`_PreToolUse`: the error text the model gets instead of the call's result, or None (the call runs)."""
        if self._pre_tool_max == 0 or not self.targets(PRE_TOOL_USE):
            return None
        tally = self._tally
        if self._pre_tool_max is not None and tally.pre_tool_objections >= self._pre_tool_max:
            self._spent(PRE_TOOL_USE, tally.pre_tool_objections)
            return None
        outputs = await self.call(PRE_TOOL_USE, context)
        if not outputs:
            return None
        tally.pre_tool_objections += 1  # one call counts once, however many servers objected
        for output in outputs:
            self._emit(HookObjected(PRE_TOOL_USE, output.server, output.text))
        lines = [f"not run: a {PRE_TOOL_USE} hook objected to this call"]
        return "\n".join([*lines, *(encoded(PRE_TOOL_USE, output) for output in outputs)])

    async def on_post_tool(
        self, context: Mapping[str, object], content: tuple[Text | Image, ...], is_error: bool
    ) -> list[Text]:
        """`_PostToolUse` and the PostToolUse (or, for an error result, PostToolUseFailure) callbacks: extra
        JSON-encoded text blocks for the call's result `content` (none: nothing to add)."""
        if not self.tool_hooks and self.callbacks is None:
            return []
        result_text = truncate(text_of(content), RESULT_TEXT_MAX_CHARS)
        response = cb.tool_response(content)
        context = {**context, "result_text": result_text, "is_error": is_error, "tool_response": response}
        outputs = await self.call(POST_TOOL_USE, context) if self.tool_hooks else []
        outputs += [HookOutput(cb.CALLBACK_SOURCE, text) for text in await self._post_tool_callbacks(context)]
        for output in outputs:
            self._emit(HookInjected(POST_TOOL_USE, output.server, output.text))
        return [Text(encoded(POST_TOOL_USE, output)) for output in outputs]

    async def _post_tool_callbacks(self, context: Mapping[str, object]) -> list[str]:
        name, failed = str(context.get("sdk_tool_name", "")), context.get("is_error") is True
        event = cb.POST_TOOL_USE_FAILURE if failed else cb.POST_TOOL_USE
        if not self._wanted(event, name):
            return []
        fields = cb.tool_fields(context)
        if failed:
            fields["error"] = context.get("result_text", "")
        else:
            fields["tool_response"] = context.get("tool_response", [])
        answers = await self.run_callbacks(event, fields, name, str(context.get("tool_use_id", "")))
        return [text for answer in answers for text in (answer.block, answer.context) if text]

    async def on_session_end(self, context: Mapping[str, object]) -> None:
        """`_SessionEnd`: its answers are logged, nothing else; a timeout kills nobody (the session is ending)."""
        for output in await self.call(SESSION_END, context, kill=False):
            self._emit(HookAnswered(SESSION_END, output.server, output.text))
        reason = cb.SESSION_END_REASONS.get(str(context.get("reason")), "other")
        await self.run_callbacks(cb.SESSION_END, {"reason": reason}, reason)

    async def on_pre_compact(self, trigger: str, focus: str | None) -> None:
        """PreCompact callbacks (no MCP hook has this point): told, before a compaction, what triggered it."""
        trigger = "manual" if trigger == "manual" else "auto"
        await self.run_callbacks(cb.PRE_COMPACT, {"trigger": trigger, "custom_instructions": focus}, trigger)

    def _wanted(self, event: str, subject: str | None = None) -> bool:
        return self.callbacks is not None and self.callbacks.wants(event, subject)

    async def run_callbacks(
        self, event: str, fields: Mapping[str, object], subject: str | None = None, tool_use_id: str | None = None
    ) -> list[cb.CallbackAnswer]:
        """The matching callbacks' answers (after the MCP hooks of the point: the order the docs give); the first
        `continue: false` is kept for the loop (`take_stop`)."""
        if self.callbacks is None or not self.callbacks.wants(event, subject):
            return []
        self._emit(HookCalled(event, (cb.CALLBACK_SOURCE,)))
        answers = await self.callbacks.run(event, fields, subject, tool_use_id)
        stops = [answer.stop for answer in answers if answer.stop is not None]
        if stops:
            self._stop_turn(f"a {event} hook stopped the session" + (f": {stops[0]}" if stops[0] else ""))
        return answers

    def _stop_turn(self, why: str) -> None:
        """`continue: false` ends the session's turn (docs/sdk.md), so a subagent's stops its parent's too: the
        parent's calls not yet past their check do not run, and its turn ends after the batch."""
        if self._stop is None:
            self._stop = why
        if self._parent is not None:
            self._parent._stop_turn(why)

    @property
    def stopping(self) -> str | None:
        """Why a callback asked to stop (`continue: false`), while the turn still winds down; None: it did not. A
        subagent's: its own, or its parent's (a sibling's call was answered so: the session's turn is ending)."""
        return self._stop or (self._parent.stopping if self._parent is not None else None)

    def callback_blocks(self, texts: Sequence[str]) -> tuple[Text, ...]:
        """PreToolUse callbacks' additionalContext, as extra blocks of the call's result (JSON, like `_PostToolUse`)."""
        return tuple(Text(encoded(cb.PRE_TOOL_USE, HookOutput(cb.CALLBACK_SOURCE, text))) for text in texts)

    def take_stop(self, *, announce: bool = True) -> bool:
        """Whether a callback ended the turn (`continue: false`, a blocked prompt), once; the notice says why."""
        stop, self._stop = self._stop, None
        if stop is None and self._parent is not None and self._parent.stopping is not None:
            return True  # a sibling's `continue: false`: this child ends too; its parent's turn says why
        if stop is not None and announce:
            self._emit(Notice(stop, "warning"))
        return stop is not None

    async def call(self, hook: str, context: Mapping[str, object], *, kill: bool = True) -> list[HookOutput]:
        """Calls `hook` on every target at once; returns the non-empty answers in config order."""
        targets = self.targets(hook)
        if not targets:
            return []
        self._emit(HookCalled(hook, tuple(spec.server for spec in targets)))
        answers: list[str | None] = [None] * len(targets)

        async def call_one(index: int, spec: ToolSpec) -> None:
            answers[index] = await self._call_bounded(hook, spec, fill_context(spec, context), kill)

        async with anyio.create_task_group() as group:
            for index, spec in enumerate(targets):
                group.start_soon(call_one, index, spec)
        return [HookOutput(spec.server, text) for spec, text in zip(targets, answers, strict=True) if text]

    async def _call_bounded(self, hook: str, spec: ToolSpec, arguments: dict[str, object], kill: bool) -> str | None:
        with self.tracer.span(f"hook {hook}", {"sprout.hook.point": hook, "sprout.hook.server": spec.server}) as span:
            answer, how = await self._answer(hook, spec, arguments, kill)
            span.set({"sprout.hook.decision": how if answer is None else answer_kind(hook)})
            return answer

    async def _answer(
        self, hook: str, spec: ToolSpec, arguments: dict[str, object], kill: bool
    ) -> tuple[str | None, str]:
        """The hook's answer (None: none) and, without one, why: silent, error, failed, timeout or killed."""
        server = spec.server
        with anyio.move_on_after(self.timeout):
            try:
                outcome = await self._host.call_hook(spec, arguments)
            except HookCallFailed as error:
                self._emit(HookFailed(hook, server, str(error)))
                return None, "failed"
            self._consecutive_timeouts.pop(server, None)  # any answer resets the count
            if outcome.is_error:
                self._emit(HookFailed(hook, server, truncate(text_of(outcome.content))))
                return None, "error"
            answer = truncate(text_of(outcome.content).strip()) or None
            return answer, "silent"
        killed = await self._timed_out(hook, server, kill)
        return None, "killed" if killed else "timeout"

    async def _timed_out(self, hook: str, server: str, kill: bool) -> bool:
        """Counts a timeout; True when it was the second in a row and the server was killed for it."""
        count = self._consecutive_timeouts.get(server, 0) + 1
        self._consecutive_timeouts[server] = count
        self._emit(HookTimedOut(hook, server, count))
        if kill and count >= CONSECUTIVE_TIMEOUTS_TO_KILL:
            del self._consecutive_timeouts[server]
            reason = f"hook {hook} timed out {count} times in a row"
            await self._host.kill(server, reason)
            self._emit(HookServerKilled(server, reason))
            return True
        return False

    def _spent(self, hook: str, objections: int) -> None:
        """Reports a spent budget once per session."""
        if hook in self._budget_reported:
            return
        self._budget_reported.add(hook)
        self.tracer.event("hook budget spent", {"sprout.hook.point": hook, "sprout.hook.objections": objections})
        self._emit(StopBudgetSpent(objections) if hook == STOP else HookBudgetSpent(hook, objections))

    def as_messages(self, hook: str, outputs: Sequence[HookOutput]) -> list[Message]:
        """Each output as an assistant tool_use `<server>__<hook>` plus a user tool_result of JSON data."""
        return self._messages.of(hook, outputs)
