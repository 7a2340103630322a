"""THE LOOP: user text → model → (end_turn? `_Stop` gate) → tools → results → repeat.

Emits events, never prints. The hook points it calls are named where they fire; hooks.py runs them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

import anyio

from sprout_agent.core.compaction import Compactor, estimate_tokens
from sprout_agent.core.errors import PromptTooLongError
from sprout_agent.core.events import (
    AssistantText,
    Event,
    ModelReplied,
    ModelWaiting,
    TextDelta,
    TurnChanges,
    TurnFinished,
)
from sprout_agent.core.hooks.calling import HookOutput, Hooks, is_hook
from sprout_agent.core.ledger import Ledger
from sprout_agent.core.limits import Limits
from sprout_agent.core.messages import Image, Message, Text, ToolResult, ToolUse, user_text, with_calls
from sprout_agent.core.protocols import (
    Checkpoints,
    Escalate,
    Model,
    ModelReply,
    ModelRequest,
    Permit,
    Recorder,
    ToolHost,
)
from sprout_agent.core.replies import assistant_message, last_text, reply_text
from sprout_agent.core.stop_reasons import GoingOn, ModelStop, TurnStop
from sprout_agent.core.structured import RETRIES_EXHAUSTED, Answer, OutputContract
from sprout_agent.core.tool_round import ToolRound
from sprout_agent.core.tracing import (
    NO_TRACER,
    FirstToken,
    Tracer,
    reply_attributes,
    request_attributes,
    turn_attributes,
    turn_end_attributes,
)


@dataclass(frozen=True, slots=True)
class TurnResult:
    stop_reason: TurnStop  # the last reply's (end_turn, max_tokens, refusal…), a bound's, a hook's…
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
        tracer: Tracer = NO_TRACER,
        checkpoints: Checkpoints | None = None,  # the turns' checkpoints (None: the tree is not checkpointed)
    ) -> None:
        self.model = model
        self.host = host
        self.hooks = hooks
        self.system = system
        self.ledger = ledger
        self.compactor = compactor
        self.limits = limits
        self.session_id = session_id
        self.cwd = cwd
        self._tool_round = ToolRound(
            host, hooks, emit, self._hook_context, limits, tracer, permit=permit, escalate=escalate, recorder=recorder
        )
        self.output = output  # --json-schema: each turn ends with a valid StructuredOutput call
        self.checkpoints = checkpoints
        self.web = True  # the API's web tools may be offered (with --web); a subagent's definition may leave them out
        self._answer: Answer | None = None
        self.history: list[Message] = []
        self._set_tools()  # the tools offered, by name, and the tokens every request carries besides the history
        self.requests = 0  # main-loop requests this session (summaries not counted)
        self._current_prompt: str | None = None
        # `_SessionStart`'s pairs wait for the next prompt: the history must open with a user turn.
        self._pending: list[HookOutput] = []
        self._ended = True  # no session started yet, so none to end
        self._measured: tuple[int, int] | None = None  # (tokens the API reported, history length then)
        self.hook_fields: dict[str, object] = {}  # a subagent's own fields in every hook context (agent_id…)

    # The tool round reports, traces and records through the same sink, tracer and recorder as the loop: one of
    # each, kept there. The sink and the tracer are the constructor's; the recorder changes with a rewind's fork.
    @property
    def emit(self) -> Callable[[Event], None]:
        return self._tool_round.emit

    @property
    def tracer(self) -> Tracer:
        return self._tool_round.tracer

    @property
    def recorder(self) -> Recorder | None:
        return self._tool_round.recorder

    @recorder.setter
    def recorder(self, recorder: Recorder | None) -> None:
        self._tool_round.recorder = recorder

    @property
    def permit(self) -> Permit | None:
        """The permission policy the tool round asks (faces read it: modes, rules, the editor's answers)."""
        return self._tool_round.permit

    @property
    def escalate(self) -> Escalate | None:
        return self._tool_round.escalate

    def use_system_prompt(self, system: str) -> None:
        """A face's system prompt from the next request on (an SDK's `initialize`), measured as the tools are."""
        self.system = system
        self._measure()

    def enter_with(self, outputs: Sequence[HookOutput]) -> None:
        """What hooks said before the first prompt (`_SubagentStart` for a child): it enters after that prompt."""
        self._pending = list(outputs)

    async def run_turn(self, prompt: str, attachments: Sequence[Image] = ()) -> TurnResult:
        """Runs one user turn to its end; `TurnFinished` reports it (a cancelled turn reports nothing).
        `attachments`: images and PDFs the user attached, checked already (images.attachment)."""
        before, started, spent = self.ledger.usage, time.monotonic(), self.ledger.cost
        with self.tracer.span(
            "invoke_agent sprout-agent", turn_attributes(self.session_id, self.hook_fields, prompt, self.tracer.content)
        ) as span:
            if self.checkpoints is not None:
                await self.checkpoints.turn_started(prompt, self.history)
            try:
                result = await self._run(prompt, tuple(attachments))
            finally:
                changes = await self._turn_changes()
            usage, seconds = self.ledger.usage - before, time.monotonic() - started
            files = len(changes.files) if changes else 0
            span.set(turn_end_attributes(usage, result.stop_reason, result.turns, self.ledger.cost - spent, files))
        finished = TurnFinished(result.stop_reason, result.text, result.turns, usage, self.ledger.cost, seconds)
        self.emit(replace(finished, structured_output=result.structured, error=result.error, changes=changes))
        return result

    async def _turn_changes(self) -> TurnChanges | None:
        """The turn's last checkpoint, taken even when the turn was cancelled: what it changed can be rewound."""
        if self.checkpoints is None:
            return None
        with anyio.CancelScope(shield=True):
            return await self.checkpoints.turn_finished()

    async def start_session(self, source: str) -> None:
        """`_SessionStart` (source: startup, resume or clear); what it says enters with the next prompt."""
        self._ended = False
        self._pending = await self.hooks.on_session_start(self._hook_context(source=source))

    async def end_session(self, reason: str) -> None:
        """`_SessionEnd`, once per session, bounded by the hook timeout (calling.py): exit waits no longer."""
        if self._ended:
            return
        self._ended = True
        self._pending = []
        with anyio.move_on_after(self.hooks.timeout + 0.5):  # a margin so the call's own timeout reports first,
            # on a loaded machine too (at 50 ms both deadlines passed in one tick and the report was cancelled)
            await self.hooks.on_session_end(self._hook_context(reason=reason))

    async def clear_session(self) -> None:
        """/clear: the session ends, the history empties, and a new one starts."""
        await self.end_session("clear")
        self.clear()
        await self.start_session("clear")

    async def _run(self, prompt: str, attachments: tuple[Image, ...]) -> TurnResult:
        self._answer = Answer(self.output) if self.output is not None else None
        if (refused := await self._submit(prompt, attachments)) is not None:
            return refused
        after_objection = objected = False
        turns = 0
        while True:
            if (limited := self._limit_reached(turns)) is not None:
                return limited
            turns += 1
            reply = await self._ask()
            self._append(Message("assistant", reply.content))
            self._measured = (reply.usage.context_tokens + reply.usage.output_tokens, len(self.history))
            uses = [block for block in reply.content if isinstance(block, ToolUse)]
            if uses and reply.stop_reason == "tool_use":
                after_objection = False
                await self._run_tools(uses)
                if self.hooks.take_stop():  # a callback's `continue: false`: the turn ends, the session goes on
                    return TurnResult("hook_stopped", last_text(self.history), turns)
                if self._answer is None or not self._answer.settled:
                    continue
            elif self._paused(reply, uses):
                continue
            finished = await self._finish(reply, turns, after_objection, objected)
            if isinstance(finished, TurnResult):
                return finished
            if finished is GoingOn.OBJECTED:  # a `_Stop` objection keeps the turn going
                after_objection = objected = True

    async def _run_tools(self, uses: list[ToolUse]) -> None:
        """One tool round, between the checkpoints that put what it changed down to its calls."""
        if self.checkpoints is not None:
            # Shielded: a cancel that came meanwhile lands in the round, which answers every call it cut short.
            with anyio.CancelScope(shield=True):
                await self.checkpoints.round_starting(uses, self._by_name)
        await self._tool_round.run(uses, self._by_name, self._answer, self._record_round)
        if self.checkpoints is not None:
            await self.checkpoints.round_finished()

    def _paused(self, reply: ModelReply, uses: list[ToolUse]) -> bool:
        """The API paused its own long search: the reply goes back as it is. A reply cut off mid-call (its input
        may be incomplete) has its calls answered unrun."""
        if reply.stop_reason == "pause_turn" and not uses:
            return True
        if uses:
            self._answer_unrun(uses, f"not run: the reply stopped with {reply.stop_reason}")
        return False

    async def _finish(self, reply: ModelReply, turns: int, again: bool, objected: bool) -> TurnResult | GoingOn:
        """The turn's result: its structured answer or the reply's text. Or the turn goes on: the model was asked
        again for the structured answer it has not given, or a `_Stop` hook objected."""
        if (unanswered := self._unanswered(reply.stop_reason, turns)) is not None:
            return unanswered
        answer = self._answer
        structured = answer.value if answer is not None else None
        text = answer.text() if answer is not None and structured is not None else reply_text(reply)
        ending = reply.stop_reason == "end_turn" or structured is not None
        if ending and await self._stop_objected(text, objected, again):
            return GoingOn.OBJECTED
        return TurnResult("end_turn" if structured is not None else reply.stop_reason, text, turns, structured)

    async def _stop_objected(self, text: str, objected: bool, again: bool) -> bool:
        """`_Stop`: an objection keeps the turn going (a structured answer must then be given again). `objected`: one
        did already (`stop_hook_active`); `again`: just now, so only the callbacks are asked (`_Stop` is not)."""
        context = self._hook_context(last_assistant_message=text, trigger="end_turn", stop_hook_active=objected)
        objections = await self.hooks.on_stop(context, mcp=not again)
        if not objections:
            return False
        self._append(*objections)
        if self._answer is not None:
            self._answer = Answer(self._answer.contract)
        return True

    def _limit_reached(self, turns: int) -> TurnResult | None:
        reached = self.limits.reached(turns, self.ledger.budget_spent())
        return TurnResult(reached, last_text(self.history), turns) if reached is not None else None

    def _unanswered(self, stop_reason: ModelStop, turns: int) -> TurnResult | Literal[GoingOn.ASKED_AGAIN] | None:
        """The reply ended without the StructuredOutput call the turn needs: ASKED_AGAIN when the model is asked,
        the failed turn when its attempts are spent; None when the turn needs no call or has its answer."""
        answer = self._answer
        if answer is None or not answer.wanted_after(stop_reason):
            return None
        if not answer.exhausted and (again := answer.missing()) is not None:
            self._append(again)
            return GoingOn.ASKED_AGAIN
        return TurnResult(RETRIES_EXHAUSTED, "", turns, error=answer.failure())  # no text: it is not the answer

    async def _submit(self, prompt: str, attachments: tuple[Image, ...]) -> TurnResult | None:
        """The prompt enters the history with what the session-start and prompt hooks add; a hook callback that
        blocks it (or stops the session) ends the turn with the prompt unprocessed, outside the history."""
        self._current_prompt = prompt
        self.hooks.take_stop(announce=False)  # one asked for outside a turn (at its Stop point, say) ends nothing
        self._pending = await self.hooks.with_session_start_callbacks(self._pending)
        added = await self.hooks.on_prompt(self._hook_context(prompt=prompt))
        if self.hooks.take_stop():
            return TurnResult("hook_stopped", "", 0)  # what the session start said waits for the next prompt
        started, self._pending = self.hooks.enter_session_start(self._pending), []
        # After the prompt, never before it: earlier requests' bytes (the cached prefix) stay as they were.
        self._append(Message("user", (Text(prompt), *attachments)) if attachments else user_text(prompt))
        self._append(*started, *added)
        return None

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
        await self.hooks.on_pre_compact(reason, focus)
        before = self.context_estimate()
        with self.tracer.span(
            "compaction", {"sprout.compaction.reason": reason, "sprout.tokens_before": before}
        ) as span:
            outcome = await self.compactor.compact(self.history, self._current_prompt, reason=reason, focus=focus)
            self.load(outcome.history, "compaction")
            span.set({"sprout.tokens_after": self.context_estimate()})
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
        self._measure()

    def _measure(self) -> None:
        """What every request carries besides the history (system prompt, tools): compaction cannot shrink it."""
        tool_chars = sum(len(s.name) + len(s.description) + len(json.dumps(s.input_schema)) for s in self.tools)
        self.fixed_tokens = (len(self.system) + tool_chars) // 4

    async def _request(self) -> ModelReply:
        if await self.host.refresh():  # between requests only: never while a reply or a tool batch runs
            self._set_tools()
        self.requests += 1
        self.emit(ModelWaiting(self.requests, self.context_estimate()))
        started = time.monotonic()
        request = ModelRequest(self.system, tuple(self.history), self.tools, web=self.web, partial=True)
        first = FirstToken(started, lambda text: self.emit(TextDelta(text)))
        with self.tracer.span(f"chat {self.model.name}", request_attributes(self.model)) as span:
            reply = await self.model.complete(request, first)
            span.set(reply_attributes(reply, first.seconds()))
        cost = self.ledger.add(reply.usage)
        self.emit(ModelReplied(reply.stop_reason, reply.usage, time.monotonic() - started, cost))
        if text := reply_text(reply):
            self.emit(AssistantText(text))
        self.emit(assistant_message(reply, cost, self._by_name, self.model.name))
        return reply

    def _record_round(self, results: Message, ran: Mapping[str, ToolUse]) -> None:
        """A tool round's results enter the history; the calls that ran with another input show as they ran."""
        self._append(results)
        if ran:
            self._as_ran(ran)

    def _as_ran(self, ran: Mapping[str, ToolUse]) -> None:
        """The history shows each call as it ran, so the model reads what its input did; same ids, still valid."""
        index = max(i for i, message in enumerate(self.history) if message.role == "assistant")
        self.history[index] = with_calls(self.history[index], ran)
        if self.recorder is not None:
            self.recorder.reset(self.history, "tool input updated")

    def _answer_unrun(self, uses: Sequence[ToolUse], reason: str) -> None:
        self._append(Message("user", tuple(ToolResult(u.id, (Text(reason),), True) for u in uses)))

    def _hook_context(self, **extra: object) -> dict[str, object]:
        """What a hook may declare (contract.HOOK_CONTEXT): the session's ids plus the point's own."""
        return {"session_id": self.session_id, "cwd": self.cwd, **self.hook_fields, **extra}
