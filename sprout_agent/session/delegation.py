"""Subagents: the session's side of the `task` tool (mcp/agent_server.py). Builds a child `Agent` from an agent
definition (config/definitions.py) around the parent's collaborators, runs it on its task, and returns its answer;
the rules of what a child may use are core/subagents.py's. Also reads skills for the `skill` tool.

Each child: a fresh history and transcript (`<sessions>/<session>.agents/<agent-id>.jsonl`), its definition's
system prompt, a subset of the parent's tools, the parent's permission policy, sandbox and hooks (with
`_SubagentStart`/`_SubagentStop`), a model of its own or the parent's, and bounds drawn from the parent's: the
session's `--max-budget-usd` (its spend and its siblings' counted), and `maxTurns` or the parent's `--max-turns` or
50 requests.
"""

from __future__ import annotations

import itertools
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol, runtime_checkable

from sprout_agent.config.definitions import BUILTIN_AGENTS, BUILTIN_TYPES_LINE, INHERIT, AgentDefinition, Skill
from sprout_agent.config.skill_reading import read_skill
from sprout_agent.core import subagents as sa
from sprout_agent.core.agent import Agent
from sprout_agent.core.compaction import Compactor
from sprout_agent.core.errors import SproutError
from sprout_agent.core.events import (
    Event,
    Notice,
    SubagentEvent,
    SubagentFinished,
    SubagentStarted,
    ToolStarted,
)
from sprout_agent.core.late import Handle
from sprout_agent.core.ledger import Ledger
from sprout_agent.core.limits import Limits
from sprout_agent.core.messages import Text
from sprout_agent.core.protocols import Model, Recorder, ToolOutcome
from sprout_agent.core.stop_reasons import StopReason
from sprout_agent.core.tool_names import model_tool_name

TASK_NAME = model_tool_name(*sa.TASK_TOOL)


@runtime_checkable
class Closing(Protocol):
    def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class ChildSetup:
    """What the session supplies to build children: a model for a definition's `model`, a system prompt for a
    definition, and a transcript for a child's id (None: not recorded)."""

    model_for: Callable[[str | None, Callable[[Event], None]], Model]
    system_for: Callable[[AgentDefinition], str]
    recorder_for: Callable[[ChildRecord], Recorder | None]


@dataclass(frozen=True, slots=True)
class ChildRecord:
    """What a child's transcript names in its header: its id, type and model, and the parent's call it answered
    (a session's page nests the child's steps under that call)."""

    agent_id: str
    agent_type: str
    model: str
    parent_tool_use_id: str


@dataclass(frozen=True, slots=True)
class _Caller:
    agent: Agent
    depth: int  # of the children it starts
    emit: Callable[[Event], None]


class Delegator:
    """Implements `protocols.Delegation` for one session. The `agent` server lists its tools as the servers start,
    before the session's agent exists: `parent` is bound to it once it does (a call before that is refused)."""

    def __init__(
        self,
        definitions: Sequence[AgentDefinition],
        skills: Sequence[Skill],
        setup: ChildSetup,
        parent: Handle[Agent],
        max_depth: int = sa.DEFAULT_MAX_DEPTH,
    ) -> None:
        self._definitions = {d.name: d for d in definitions}
        self._skills = tuple(skills)
        self._max_depth = max_depth
        self._parent = parent
        self._setup = setup
        self._callers: dict[str, _Caller] = {}  # a child's own `task` calls, by id: who is asking, how deep
        self._numbers = itertools.count(1)

    def task_description(self) -> str:
        lead = (
            "Hand a self-contained task (say what to report back) to a subagent: it works in a fresh context and "
            "returns only its final answer, keeping its search or review out of this conversation."
        )
        if tuple(self._definitions.values()) == BUILTIN_AGENTS:  # nothing of the user's to choose from: one line
            return f"{lead}\n{BUILTIN_TYPES_LINE}"
        return sa.listing(
            [lead, "Agent types (subagent_type):"], [(d.name, d.description) for d in self._definitions.values()]
        )

    def has_skills(self) -> bool:
        return bool(self._skills)

    def read_skill(self, name: str, file: str | None) -> str:
        return read_skill(self._skills, name, file)

    async def run_task(self, call_id: str, arguments: Mapping[str, object]) -> ToolOutcome:
        caller = self._callers.get(call_id) or self._main_caller()
        if caller is None:
            return _error("subagents are not available in this session")
        prompt, kind = arguments.get("prompt"), arguments.get("subagent_type") or sa.DEFAULT_AGENT
        if not isinstance(prompt, str) or not prompt.strip() or not isinstance(kind, str):
            return _error("task: give `prompt` (the task) and optionally `subagent_type`, as strings")
        definition = self._definitions.get(kind)
        if definition is None:
            return _error(f"no agent type {kind!r}; choose one of: {', '.join(self._definitions)}")
        if caller.depth > self._max_depth:
            return _error(f"a subagent may not start subagents past depth {self._max_depth}")
        description = str(arguments.get("description") or "")
        attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": definition.name}
        with caller.agent.tracer.span(f"invoke_agent {definition.name}", attributes) as span:
            outcome = await self._run(caller, self._setup, (call_id, definition), prompt, description)
            span.set({"sprout.tool.is_error": outcome.is_error})
            return outcome

    def _main_caller(self) -> _Caller | None:
        if not self._parent.bound:
            return None
        parent = self._parent.get()
        return _Caller(parent, 1, parent.emit)

    async def _run(
        self, caller: _Caller, setup: ChildSetup, call: tuple[str, AgentDefinition], prompt: str, description: str
    ) -> ToolOutcome:
        call_id, definition = call
        agent_id = f"agent-{next(self._numbers)}-{uuid.uuid4().hex[:8]}"
        context = caller.agent.hook_fields | {"agent_type": definition.name, "agent_id": agent_id}
        hook_context = {"session_id": caller.agent.session_id, "cwd": caller.agent.cwd, **context}
        refusal, injected = await caller.agent.hooks.on_subagent_start(
            hook_context | {"description": description, "prompt": prompt}
        )
        if refusal is not None:
            return _error(refusal)
        work = sa.ChildWork()
        child = self._build(caller, setup, call, agent_id, work)
        child.enter_with(injected)
        started = time.monotonic()
        caller.emit(SubagentStarted(call_id, definition.name, description, child.model.name, caller.depth))
        result, error = None, ""
        try:
            result = await child.run_turn(prompt)
        except SproutError as failure:  # the API refused or failed: the parent's model reads why
            error = str(failure)
        except Exception as failure:  # a defect of ours: the tool round reports it; the child's line says error
            error = f"internal error: {type(failure).__name__}"
            raise
        finally:
            self._forget(child)
            if isinstance(child.recorder, Closing):
                child.recorder.close()
            usage = child.ledger.usage
            stop: StopReason = result.stop_reason if result is not None else "error" if error else "cancelled"
            turns = result.turns if result is not None else 0
            seconds = time.monotonic() - started
            caller.emit(
                SubagentFinished(call_id, definition.name, stop, turns, usage, child.ledger.cost, seconds, error)
            )
        if result is None:
            return _error(f"the subagent failed: {error}")
        return sa.answer(result.text, result.stop_reason, result.turns, work)

    def _build(
        self, caller: _Caller, setup: ChildSetup, call: tuple[str, AgentDefinition], agent_id: str, work: sa.ChildWork
    ) -> Agent:
        call_id, definition = call
        parent = caller.agent
        selection = sa.select_tools(
            parent.tools,
            definition.tools,
            definition.disallowed_tools,
            may_delegate=caller.depth < self._max_depth,
        )
        label = f"{definition.name} ({agent_id})"
        child: Agent | None = None

        def emit(event: Event) -> None:
            work.saw(event)
            if isinstance(event, ToolStarted) and event.name == TASK_NAME and child is not None:
                self._callers[event.call_id] = _Caller(child, caller.depth + 1, emit)
            caller.emit(SubagentEvent(call_id, definition.name, event))

        for line in selection.left_out:
            emit(Notice(f"subagent {definition.name}: {line}", "warning"))
        model = setup.model_for(None if definition.model == INHERIT else definition.model, emit)
        ledger = Ledger(model.name, parent.ledger.overrides, counted_in=parent.ledger, label=label)
        child = Agent(
            model=model,
            host=sa.ChildHost(parent.host, [spec.name for spec in selection.tools]),
            hooks=parent.hooks.for_subagent(definition.name, emit),
            emit=emit,
            system=setup.system_for(definition),
            ledger=ledger,
            compactor=_compactor(parent.compactor, model, emit, ledger),
            limits=_limits(parent, definition),
            session_id=parent.session_id,
            cwd=parent.cwd,
            permit=parent.permit,
            escalate=parent.escalate,
            recorder=setup.recorder_for(ChildRecord(agent_id, definition.name, model.name, call_id)),
            tracer=parent.tracer,
        )
        child.hook_fields = {"agent_type": definition.name, "agent_id": agent_id}
        child.web = selection.web
        return child

    def _forget(self, child: Agent) -> None:
        for call_id in [i for i, caller in self._callers.items() if caller.agent is child]:
            del self._callers[call_id]


def _limits(parent: Agent, definition: AgentDefinition) -> Limits:
    """The child's bounds, drawn from the parent's: the session's budget (its ledger counts its spend in the
    parent's, `Ledger.counted_in`), and its own or the parent's turn limit."""
    limits = parent.limits
    requests = definition.max_requests or limits.max_requests or sa.CHILD_MAX_REQUESTS
    if limits.max_requests is not None:
        requests = min(requests, limits.max_requests)
    return replace(limits, max_requests=requests)


def _compactor(parent: Compactor | None, model: Model, emit: Callable[[Event], None], ledger: Ledger) -> Compactor:
    window, threshold, count = (
        (parent.window, parent.threshold, parent.max_compactions) if parent else (200_000, None, 0)
    )
    return Compactor(
        model=model, window=window, threshold=threshold, max_compactions=count, emit=emit, on_usage=ledger.add
    )


def _error(text: str) -> ToolOutcome:
    return ToolOutcome((Text(text),), is_error=True)
