"""One tool round: the calls of one model reply, run in parallel and answered in call order.

Owns what running a call takes: the tool host, the hooks (PreToolUse callbacks, `_PreToolUse`, `_PostToolUse`),
the permission policy, the person asked to run a call again outside the OS sandbox, the bound on parallel calls,
and where each call is recorded and reported as it finishes. Not the conversation: the loop (agent.py) owns the
history and is handed the round's results, and the calls as they ran, to add to it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Literal

import anyio

from sprout_agent.core.errors import sprout_error_in
from sprout_agent.core.events import Event, ToolFinished, ToolProgress, ToolRunning, ToolStarted
from sprout_agent.core.hooks.calling import Hooks
from sprout_agent.core.images import checked
from sprout_agent.core.limits import Limits
from sprout_agent.core.messages import (
    INVALID_INPUT_KEY,
    Image,
    Message,
    Text,
    ToolResult,
    ToolUse,
    invalid_input,
    text_of,
)
from sprout_agent.core.protocols import Escalate, Permit, Recorder, ToolHost, ToolOutcome, ToolSpec
from sprout_agent.core.structured import STRUCTURED_OUTPUT_TOOL, Answer
from sprout_agent.core.tool_names import sdk_tool_name
from sprout_agent.core.tracing import NO_TRACER, Attribute, Tracer

# Receives the round's tool_result message and the calls that ran with another input than the model's.
RoundRecorded = Callable[[Message, Mapping[str, ToolUse]], None]


class ToolRound:
    """Runs a reply's tool calls; one per agent, used by each of its rounds in turn."""

    def __init__(
        self,
        host: ToolHost,
        hooks: Hooks,
        emit: Callable[[Event], None],
        hook_context: Callable[..., dict[str, object]],
        limits: Limits,
        tracer: Tracer = NO_TRACER,
        *,
        permit: Permit | None = None,
        escalate: Escalate | None = None,
        recorder: Recorder | None = None,
    ) -> None:
        self.host = host
        self.hooks = hooks
        self.emit = emit
        self.hook_context = hook_context  # the session's ids plus a point's own fields (agent.py)
        self.permit = permit
        self.escalate = escalate
        self.recorder = recorder
        self._limiter = anyio.CapacityLimiter(limits.max_parallel_tools)
        self.tracer = tracer

    async def run(
        self, uses: Sequence[ToolUse], tools: Mapping[str, ToolSpec], answer: Answer | None, recorded: RoundRecorded
    ) -> None:
        """Runs the calls concurrently; results go back in call order, every tool_use answered even on cancel.
        `tools`: the tools offered, by name; `answer`: the turn's structured answer (`--json-schema`), if any."""
        results: list[ToolResult | None] = [None] * len(uses)
        ran: dict[str, ToolUse] = {}  # calls that ran with another input than the model's (a hook, the callback)

        async def run_one(index: int, use: ToolUse) -> None:
            async with self._limiter:
                results[index] = await self._call(use, tools.get(use.name), answer, ran)

        try:
            async with anyio.create_task_group() as group:
                for index, use in enumerate(uses):
                    group.start_soon(run_one, index, use)
        except BaseExceptionGroup as group:
            if (error := sprout_error_in(group)) is None:  # a transcript that cannot be written ends the run
                raise
            raise error from None
        finally:
            # On cancel or error the history must stay valid: every tool_use keeps a tool_result.
            answered = tuple(
                result or ToolResult(use.id, (Text("interrupted: the call was cancelled"),), is_error=True)
                for use, result in zip(uses, results, strict=True)
            )
            recorded(Message("user", answered), ran)

    async def _call(
        self, use: ToolUse, spec: ToolSpec | None, answer: Answer | None, ran: dict[str, ToolUse]
    ) -> ToolResult:
        """One call, in its span: the MCP SDK's own span for the request (and the server's, if it traces) nest
        under it, since the call runs in this task's context."""
        with self.tracer.span(f"execute_tool {use.name}", self._tool_attributes(use, spec)) as span:
            result, denied = await self._traced_call(use, spec, answer, ran)
            outcome = "denied" if denied else "error" if result.is_error else "ok"
            span.set({"sprout.tool.outcome": outcome, "sprout.tool.is_error": result.is_error})
            if self.tracer.content:
                span.set({"sprout.tool.result": text_of(result.content)})
            return result

    def _tool_attributes(self, use: ToolUse, spec: ToolSpec | None) -> dict[str, Attribute]:
        attributes: dict[str, Attribute] = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": use.name}
        attributes |= {"gen_ai.tool.call.id": use.id, "sprout.mcp.server": spec.server if spec else ""}
        if self.tracer.content:
            attributes["gen_ai.tool.call.arguments"] = json.dumps(use.input, ensure_ascii=False)
        return attributes

    async def _traced_call(
        self, use: ToolUse, spec: ToolSpec | None, answer: Answer | None, ran: dict[str, ToolUse]
    ) -> tuple[ToolResult, bool]:
        self.emit(ToolStarted(use.id, use.name, spec.server if spec else "", spec.tool if spec else "", use.input))
        started, denied, refused = time.monotonic(), False, None
        if spec is not None and use.name == STRUCTURED_OUTPUT_TOOL and answer is not None:
            outcome = answer.offer(use.input)  # ours, not a server's: no permission asked, no hook
        elif spec is None:
            outcome = ToolOutcome((Text(f"unknown tool: {use.name}"),), is_error=True)
        elif INVALID_INPUT_KEY in use.input and len(use.input) == 1:
            outcome = ToolOutcome((Text(invalid_input(use.input[INVALID_INPUT_KEY])),), is_error=True)
        else:
            outcome, denied, as_run, started = await self._gated(spec, use)
            if as_run.input != use.input:
                ran[use.id] = as_run
                refused = as_run.input if denied else None  # permission_denials lists the input that was refused
        # Any host's images, not only MCP's: one the API refuses would fail every later request.
        content = tuple(checked(block) if isinstance(block, Image) else block for block in outcome.content)
        result = ToolResult(use.id, content, outcome.is_error)
        if self.recorder is not None:  # now, not with the batch: a kill while a sibling runs must not lose it
            self.recorder.result(result)  # and before any face shows it
        summary = text_of(content).strip().split("\n", 1)[0][:200]
        seconds = time.monotonic() - started
        sandboxed = outcome.sandbox_denied is not None
        self.emit(
            ToolFinished(
                use.id, use.name, outcome.is_error, seconds, summary, content, outcome.diff, denied, sandboxed, refused
            )
        )
        return result, denied

    async def _gated(self, spec: ToolSpec, use: ToolUse) -> tuple[ToolOutcome, bool, ToolUse, float]:
        """PreToolUse callbacks, the permission policy, `_PreToolUse`, then the call: (outcome, denied, the call as
        it ran, when it started). Callbacks first, as in Claude Code: their allow, ask and input feed the policy."""
        verdict = await self.hooks.before_permission(self._tool_context(spec, use))
        added = self.hooks.callback_blocks(verdict.context)
        if verdict.refusal is not None:
            return ToolOutcome((Text(verdict.refusal), *added), is_error=True), True, use, time.monotonic()
        as_run = use if verdict.updated_input is None else ToolUse(use.id, use.name, verdict.updated_input)
        refusal, as_run = await self._permitted(spec, as_run, verdict.permission)
        if refusal is not None:
            return ToolOutcome((Text(refusal), *added), is_error=True), True, as_run, time.monotonic()
        if (why := self.hooks.stopping) is not None:
            return ToolOutcome((Text(f"not run: {why}"),), is_error=True), False, as_run, time.monotonic()
        if (objection := await self.hooks.on_pre_tool(self._tool_context(spec, as_run))) is not None:
            return ToolOutcome((Text(objection),), is_error=True), False, as_run, time.monotonic()  # only refusals
        started = time.monotonic()  # a person's time answering the permission question is not the tool's
        outcome = await self._run_allowed(spec, as_run, changed=as_run.input != use.input)
        outcome = ToolOutcome((*outcome.content, *added), outcome.is_error, outcome.sandbox_denied, outcome.diff)
        return outcome, False, as_run, started

    async def _permitted(
        self, spec: ToolSpec, use: ToolUse, hook: Literal["allow", "ask"] | None
    ) -> tuple[str | None, ToolUse]:
        """The policy's refusal, if any, and the call as it runs or was refused. A PreToolUse callback's input
        comes in as `use`; an input the permission answer gave (can_use_tool's updatedInput) is a new call too and
        is decided again, once, by every rule: that answer stands for the question, so a rewrite never loops."""
        if self.permit is None:
            return None, use
        permitted = await self.permit.decide(spec, use, hook)
        if not isinstance(permitted, ToolUse):
            return permitted, use
        again = await self.permit.decide(spec, permitted, hook, answered=True)
        return (again if isinstance(again, str) else None), permitted

    async def _run_allowed(self, spec: ToolSpec, use: ToolUse, *, changed: bool = False) -> ToolOutcome:
        self.emit(ToolRunning(use.id, use.input if changed else None))
        outcome = await self.host.call(spec, use.input, self._progress_of(use), call_id=use.id)
        if outcome.sandbox_denied is not None and self.escalate is not None:
            outcome = await self._escalated(spec, use, outcome, outcome.sandbox_denied)
        if added := await self.hooks.on_post_tool(self._tool_context(spec, use), outcome.content, outcome.is_error):
            return ToolOutcome((*outcome.content, *added), outcome.is_error, outcome.sandbox_denied, outcome.diff)
        return outcome

    def _tool_context(self, spec: ToolSpec, use: ToolUse) -> dict[str, object]:
        """A tool hook's context: the MCP hooks' fields, plus the call's id and its SDK-facing name for callbacks."""
        sdk_name = sdk_tool_name(spec.server, spec.tool)
        return self.hook_context(tool_name=use.name, arguments=use.input, sdk_tool_name=sdk_name, tool_use_id=use.id)

    async def _escalated(self, spec: ToolSpec, use: ToolUse, sandboxed: ToolOutcome, why: str) -> ToolOutcome:
        """The call run again outside the OS sandbox if a person says so; else the sandboxed outcome."""
        assert self.escalate is not None
        if not await self.escalate(spec, use, why):
            return sandboxed
        self.emit(ToolRunning(use.id))
        outcome = await self.host.call(spec, use.input, self._progress_of(use), outside_sandbox=True, call_id=use.id)
        note = Text(
            f"[the OS sandbox stopped the first run ({why}); the user approved running it again outside the "
            "sandbox, and this is that second run]"
        )
        return ToolOutcome((note, *outcome.content), outcome.is_error)

    def _progress_of(self, use: ToolUse) -> Callable[[str], None]:
        return lambda tail: self.emit(ToolProgress(use.id, tail))
