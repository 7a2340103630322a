"""THE LOOP: user text → model → (end_turn? `_Stop` gate) → tools → results → repeat.

Emits events, never prints. The hook points it calls are named where they fire; hooks.py runs them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import anyio

from sprout_agent.core.compaction import Compactor, estimate_tokens
from sprout_agent.core.errors import PromptTooLongError, sprout_error_in
from sprout_agent.core.events import (
    AssistantMessage,
    AssistantText,
    Event,
    ModelReplied,
    ModelWaiting,
    TextDelta,
    ToolFinished,
    ToolProgress,
    ToolRunning,
    ToolStarted,
    TurnFinished,
)
from sprout_agent.core.hook_contract import RESULT_TEXT_MAX_CHARS, truncate
from sprout_agent.core.hooks import HookOutput, Hooks, is_hook
from sprout_agent.core.images import checked
from sprout_agent.core.ledger import Ledger
from sprout_agent.core.limits import Limits
from sprout_agent.core.messages import INVALID_INPUT_KEY, Image, Message, Text, ToolResult, ToolUse, text_of, user_text
from sprout_agent.core.protocols import (
    Escalate,
    Model,
    ModelReply,
    ModelRequest,
    Permit,
    Recorder,
    ToolHost,
    ToolOutcome,
    ToolSpec,
)
from sprout_agent.core.structured import RETRIES_EXHAUSTED, STRUCTURED_OUTPUT_TOOL, Answer, OutputContract
from sprout_agent.core.tool_names import sdk_tool_name


@dataclass(frozen=True, slots=True)
class TurnResult:
    stop_reason: str  # end_turn, max_tokens, refusal, max_turns, budget, structured_output_retries…
    text: str  # the final assistant text (with --json-schema: the value as JSON)
    turns: int  # model requests made in this turn
    structured: dict[str, object] | None = None  # --json-schema: the answer, valid against the schema
    error: str = ""  # why the turn failed (structured output: the last problem)


class Agent:
    """Holds one conversation and runs user turns against a model and a set of MCP tools."""

    def __init__(
        self,
        *,
        model: Model,
        host: ToolHost,
        hooks: Hooks,
        emit: Callable[[Event], None],
        system: str,
        ledger: Ledger,
        compactor: Compactor | None = None,
        limits: Limits = Limits(),  # noqa: B008 (frozen: one shared default is safe)
        session_id: str = "",
        cwd: str = "",
        permit: Permit | None = None,
        escalate: Escalate | None = None,
        recorder: Recorder | None = None,
        output: OutputContract | None = None,
    ) -> None:
        self.model = model
        self.host = host
        self.hooks = hooks
        self.emit = emit
        self.system = system
        self.ledger = ledger
        self.compactor = compactor
        self.limits = limits
        self.session_id = session_id
        self.cwd = cwd
        self.permit = permit
        self.escalate = escalate
        self.recorder = recorder
        self.output = output  # --json-schema: each turn ends with a valid StructuredOutput call
        self._answer: Answer | None = None
        self.history: list[Message] = []
        self._limiter = anyio.CapacityLimiter(limits.max_parallel_tools)
        self.tools: tuple[ToolSpec, ...] = ()
        self._by_name: dict[str, ToolSpec] = {}
        self.fixed_tokens = 0
        self._set_tools()
        self.requests = 0  # main-loop requests this session (summaries not counted)
        self._current_prompt: str | None = None
        # `_SessionStart`'s pairs wait for the next prompt: the history must open with a user turn.
        self._pending: list[HookOutput] = []
        self._ended = True  # no session started yet, so none to end
        self._measured: tuple[int, int] | None = None  # (tokens the API reported, history length then)

    async def run_turn(self, prompt: str, attachments: Sequence[Image] = ()) -> TurnResult:
        """Runs one user turn to its end; `TurnFinished` reports it (a cancelled turn reports nothing).
        `attachments`: images and PDFs the user attached, checked already (images.attachment)."""
        before, started = self.ledger.usage, time.monotonic()
        result = await self._run(prompt, tuple(attachments))
        usage, seconds = self.ledger.usage - before, time.monotonic() - started
        finished = TurnFinished(result.stop_reason, result.text, result.turns, usage, self.ledger.cost, seconds)
        self.emit(replace(finished, structured_output=result.structured, error=result.error))
        return result

    async def start_session(self, source: str) -> None:
        """`_SessionStart` (source: startup, resume or clear); what it says enters with the next prompt."""
        self._ended = False
        self._pending = await self.hooks.on_session_start(self._hook_context(source=source))

    async def end_session(self, reason: str) -> None:
        """`_SessionEnd`, once per session, bounded by the hook timeout (hooks.py): exit waits no longer."""
        if self._ended:
            return
        self._ended = True
        self._pending = []
        with anyio.move_on_after(self.hooks.timeout + 0.05):  # a margin so the call's own timeout reports first
            await self.hooks.on_session_end(self._hook_context(reason=reason))

    async def clear_session(self) -> None:
        """/clear: the session ends, the history empties, and a new one starts."""
        await self.end_session("clear")
        self.clear()
        await self.start_session("clear")

    async def _run(self, prompt: str, attachments: tuple[Image, ...]) -> TurnResult:
        self._current_prompt = prompt
        self._answer = Answer(self.output) if self.output is not None else None
        self._append(Message("user", (Text(prompt), *attachments)) if attachments else user_text(prompt))
        # After the prompt, never before it: earlier requests' bytes (the cached prefix) stay as they were.
        pending, self._pending = self._pending, []
        started = self.hooks.enter_session_start(pending)
        self._append(*started, *await self.hooks.on_prompt(self._hook_context(prompt=prompt)))
        after_objection = False
        turns = 0
        while True:
            if (limited := self._limit_reached(turns)) is not None:
                return limited
            turns += 1
            reply = await self._ask()
            self._append(Message("assistant", reply.content))
            self._measured = (reply.usage.context_tokens + reply.usage.output_tokens, len(self.history))
            uses = [block for block in reply.content if isinstance(block, ToolUse)]
            answer = self._answer
            if uses and reply.stop_reason == "tool_use":
                after_objection = False
                await self._run_tools(uses)
                if answer is None or not answer.settled:
                    continue
            elif reply.stop_reason == "pause_turn" and not uses:  # the API paused its own long search: send it back
                continue
            elif uses:  # cut off mid-call: the input may be incomplete, so nothing is run
                self._answer_unrun(uses, f"not run: the reply stopped with {reply.stop_reason}")
            if (unanswered := self._unanswered(reply.stop_reason, turns)) is not None:
                if isinstance(unanswered, TurnResult):
                    return unanswered
                continue
            structured = answer.value if answer is not None else None
            text = answer.text() if answer is not None and structured is not None else _text(reply)
            ending = reply.stop_reason == "end_turn" or structured is not None
            if ending and not after_objection and await self._stop_objected(text):
                after_objection = True
                continue
            return TurnResult("end_turn" if structured is not None else reply.stop_reason, text, turns, structured)

    async def _stop_objected(self, text: str) -> bool:
        """`_Stop`: a hook that objects keeps the turn going (a structured answer must then be given again)."""
        objections = await self.hooks.on_stop(self._hook_context(last_assistant_message=text, trigger="end_turn"))
        if not objections:
            return False
        self._append(*objections)
        if self._answer is not None:
            self._answer = Answer(self._answer.contract)
        return True

    def _limit_reached(self, turns: int) -> TurnResult | None:
        if self.limits.max_turns is not None and turns >= self.limits.max_turns:
            return TurnResult("max_turns", self._last_text(), turns)
        if self.limits.max_budget_usd is not None and self.ledger.cost >= self.limits.max_budget_usd:
            return TurnResult("budget", self._last_text(), turns)
        return None

    def _unanswered(self, stop_reason: str, turns: int) -> TurnResult | bool | None:
        """The reply ended without the StructuredOutput call the turn needs: True when the model is asked again,
        the failed turn when its attempts are spent; None when the turn needs no call or has its answer."""
        answer = self._answer
        if answer is None or answer.value is not None or stop_reason not in _NO_ANSWER:
            return None
        if not answer.exhausted and (again := answer.missing()) is not None:
            self._append(again)
            return True
        return TurnResult(RETRIES_EXHAUSTED, "", turns, error=answer.failure())  # no text: it is not the answer

    def clear(self) -> None:
        self.load([], "clear")

    def load(self, history: Sequence[Message], reason: str) -> None:
        """Replaces the history (resume, /clear, compaction) and records the new base."""
        self.history[:] = history
        self._measured = None
        if self.recorder is not None:
            self.recorder.reset(self.history, reason)

    def _append(self, *messages: Message) -> None:
        self.history.extend(messages)
        if self.recorder is not None:
            for message in messages:
                self.recorder.appended(message)

    def context_estimate(self) -> int:
        """Tokens the next request would carry: the last reported usage plus what was appended since."""
        if self._measured is None:
            return estimate_tokens(self.history) + self.fixed_tokens
        reported, length = self._measured
        return reported + estimate_tokens(self.history[length:])

    async def compact(self, reason: str, focus: str | None = None) -> None:
        """Summarise (or, failing that, truncate) the history, then let `_PostCompact` hooks add to it."""
        if self.compactor is None or not self.history:
            return
        outcome = await self.compactor.compact(self.history, self._current_prompt, reason=reason, focus=focus)
        self.load(outcome.history, "compaction")
        # After a summary or a truncation alike, hooks may restore state the old history carried.
        context = self._hook_context(last_assistant_message="", trigger=reason)
        self._append(*await self.hooks.on_post_compact(context))

    async def _ask(self) -> ModelReply:
        compactor = self.compactor
        if compactor is not None and compactor.due(self.context_estimate(), self.requests + 1, self.fixed_tokens):
            await self.compact("auto")
        try:
            return await self._request()
        except PromptTooLongError:
            if self.compactor is None:
                raise
            await self.compact("prompt too long")  # reactive: one compaction, one retry
            return await self._request()

    def _set_tools(self) -> None:
        # The tool list changes only when a server's does (`refresh`), so the cached prefix stays byte-stable.
        offered = tuple(s for s in self.host.tools() if not is_hook(s))  # `server__tool`: never our tool's name
        self.tools = (*offered, self.output.spec()) if self.output is not None else offered
        self._by_name = {spec.name: spec for spec in self.tools}
        # What every request carries besides the history; compaction cannot shrink it.
        tool_chars = sum(len(s.name) + len(s.description) + len(json.dumps(s.input_schema)) for s in self.tools)
        self.fixed_tokens = (len(self.system) + tool_chars) // 4

    async def _request(self) -> ModelReply:
        if await self.host.refresh():  # between requests only: never while a reply or a tool batch runs
            self._set_tools()
        self.requests += 1
        self.emit(ModelWaiting(self.requests, self.context_estimate()))
        started = time.monotonic()
        request = ModelRequest(system=self.system, messages=tuple(self.history), tools=self.tools, partial=True)
        reply = await self.model.complete(request, lambda text: self.emit(TextDelta(text)))
        cost = self.ledger.add(reply.usage)
        self.emit(ModelReplied(reply.stop_reason, reply.usage, time.monotonic() - started, cost))
        if text := _text(reply):
            self.emit(AssistantText(text))
        self.emit(self._assistant_message(reply, cost))
        return reply

    def _assistant_message(self, reply: ModelReply, cost: float) -> AssistantMessage:
        names = {
            block.name: sdk_tool_name(spec.server, spec.tool)
            for block in reply.content
            if isinstance(block, ToolUse) and (spec := self._by_name.get(block.name)) is not None
        }
        model = reply.model or self.model.name
        return AssistantMessage(reply.id, model, reply.content, reply.stop_reason, reply.usage, names, cost)

    async def _run_tools(self, uses: Sequence[ToolUse]) -> None:
        """Runs the calls concurrently; results go back in call order, every tool_use answered even on cancel."""
        results: list[ToolResult | None] = [None] * len(uses)

        async def run_one(index: int, use: ToolUse) -> None:
            async with self._limiter:
                results[index] = await self._call(use)

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
            self._append(Message("user", answered))

    async def _call(self, use: ToolUse) -> ToolResult:
        spec = self._by_name.get(use.name)
        self.emit(ToolStarted(use.id, use.name, spec.server if spec else "", spec.tool if spec else "", use.input))
        started, denied = time.monotonic(), False
        if spec is not None and use.name == STRUCTURED_OUTPUT_TOOL and self._answer is not None:
            outcome = self._answer.offer(use.input)  # ours, not a server's: no permission asked, no hook
        elif spec is None:
            outcome = ToolOutcome((Text(f"unknown tool: {use.name}"),), is_error=True)
        elif INVALID_INPUT_KEY in use.input and len(use.input) == 1:
            outcome = ToolOutcome((Text(_invalid_input(use.input[INVALID_INPUT_KEY])),), is_error=True)
        elif self.permit is not None and (refusal := await self.permit(spec, use)) is not None:
            outcome, denied = ToolOutcome((Text(refusal),), is_error=True), True
        elif (objection := await self.hooks.on_pre_tool(self._tool_context(use))) is not None:
            outcome = ToolOutcome((Text(objection),), is_error=True)  # after the policy: hooks only add refusals
        else:
            started = time.monotonic()  # a person's time answering the permission question is not the tool's
            outcome = await self._run_allowed(spec, use)
        # Any host's images, not only MCP's: one the API refuses would fail every later request.
        content = tuple(checked(block) if isinstance(block, Image) else block for block in outcome.content)
        result = ToolResult(use.id, content, outcome.is_error)
        if self.recorder is not None:  # now, not with the batch: a kill while a sibling runs must not lose it
            self.recorder.result(result)  # and before any face shows it
        summary = text_of(content).strip().split("\n", 1)[0][:200]
        seconds = time.monotonic() - started
        self.emit(ToolFinished(use.id, use.name, outcome.is_error, seconds, summary, content, outcome.diff, denied))
        return result

    async def _run_allowed(self, spec: ToolSpec, use: ToolUse) -> ToolOutcome:
        self.emit(ToolRunning(use.id))
        outcome = await self.host.call(spec, use.input, self._progress_of(use))
        if outcome.sandbox_denied is not None and self.escalate is not None:
            outcome = await self._escalated(spec, use, outcome, outcome.sandbox_denied)
        if not self.hooks.tool_hooks:
            return outcome
        result_text = truncate(text_of(outcome.content), RESULT_TEXT_MAX_CHARS)
        context = self._tool_context(use, result_text=result_text, is_error=outcome.is_error)
        if added := await self.hooks.on_post_tool(context):
            return ToolOutcome((*outcome.content, *added), outcome.is_error, diff=outcome.diff)
        return outcome

    def _tool_context(self, use: ToolUse, **extra: object) -> dict[str, object]:
        return self._hook_context(tool_name=use.name, arguments=use.input, **extra)

    async def _escalated(self, spec: ToolSpec, use: ToolUse, sandboxed: ToolOutcome, why: str) -> ToolOutcome:
        """The call run again outside the OS sandbox if a person says so; else the sandboxed outcome."""
        assert self.escalate is not None
        if not await self.escalate(spec, use, why):
            return sandboxed
        self.emit(ToolRunning(use.id))
        outcome = await self.host.call(spec, use.input, self._progress_of(use), outside_sandbox=True)
        note = Text(
            f"[the OS sandbox stopped the first run ({why}); the user approved running it again outside the "
            "sandbox, and this is that second run]"
        )
        return ToolOutcome((note, *outcome.content), outcome.is_error)

    def _progress_of(self, use: ToolUse) -> Callable[[str], None]:
        return lambda tail: self.emit(ToolProgress(use.id, tail))

    def _answer_unrun(self, uses: Sequence[ToolUse], reason: str) -> None:
        self._append(Message("user", tuple(ToolResult(u.id, (Text(reason),), True) for u in uses)))

    def _hook_context(self, **extra: object) -> dict[str, object]:
        """What a hook may declare (hook_contract.HOOK_CONTEXT): the session's ids plus the point's own."""
        return {"session_id": self.session_id, "cwd": self.cwd, **extra}

    def _last_text(self) -> str:
        for message in reversed(self.history):
            if message.role == "assistant" and message.text.strip():
                return message.text
        return ""


# The reply ended without a StructuredOutput call the turn needs: the model is asked again (while attempts last).
_NO_ANSWER = frozenset({"end_turn", "tool_use", "max_tokens", "stop_sequence"})


def _text(reply: ModelReply) -> str:
    return "".join(block.text for block in reply.content if isinstance(block, Text))


def _invalid_input(raw: object) -> str:
    shown = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)
    return f"tool input must be a JSON object of valid Unicode text (no lone surrogates); got: {shown[:200]}"
