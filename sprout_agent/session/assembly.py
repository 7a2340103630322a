"""How the composition root (runtime.py) builds the session's agent, every part given at construction: its hooks,
compaction fitted to the model's real window, the permission policy, the turns' checkpoints, the tracer, and
what the session's subagents are built with."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from sprout_agent.checkpoints.tracker import Tracker, checkpoint_roots
from sprout_agent.config import settings as st
from sprout_agent.config.definitions import AgentDefinition
from sprout_agent.core.agent import Agent
from sprout_agent.core.compaction import Compactor
from sprout_agent.core.events import Event, Notice
from sprout_agent.core.hooks.calling import Hooks, parse_allowlist
from sprout_agent.core.hooks.notification import notifying
from sprout_agent.core.hooks.program_callbacks import HookCallbacks, chained
from sprout_agent.core.late import Handle, Late
from sprout_agent.core.ledger import Ledger
from sprout_agent.core.permission_mode import PermissionMode
from sprout_agent.core.permissions import Ask, Policy
from sprout_agent.core.protocols import Model, ToolHost
from sprout_agent.core.tracing import Tracer
from sprout_agent.mcp.pool import ServerPool
from sprout_agent.model.facts import ModelFacts
from sprout_agent.model.switch import fitted_window
from sprout_agent.model.system_prompt import build_system_prompt
from sprout_agent.session import checkpointing, store
from sprout_agent.session.command_hooks import settings_hooks
from sprout_agent.session.delegation import ChildRecord, ChildSetup
from sprout_agent.session.keeping import keeper
from sprout_agent.session.prepared import Prepared
from sprout_agent.session.recording import recording
from sprout_agent.trust import sandbox as sb

if TYPE_CHECKING:
    from sprout_agent.model.client import AnthropicModel


@dataclass(frozen=True, slots=True)
class AgentParts:
    """What the runtime has made by the time it builds the agent."""

    emit: Callable[[Event], None]
    ask: Ask | None  # the face's permission question (None: nobody to ask)
    pool: ServerPool  # the servers: hooks call them
    host: ToolHost  # what the loop's tool calls go to (the pool, or a face's route in front of it)
    model: Model
    facts: ModelFacts
    session_id: str
    transcript: store.SessionStore | None
    ledger: Ledger
    tracer: Tracer
    callbacks: HookCallbacks | None  # an SDK's hook callbacks (None: no SDK drives this session)
    itself: Handle[Agent]  # the agent being built, once it is: its transcript of the moment records the spend


def build_agent(p: Prepared, parts: AgentParts) -> tuple[Agent, Tracker | None]:
    """The session's agent, and its checkpoints (None: off, or no data directory)."""
    late_policy: Late[Policy] = Late("the permission policy")  # the command hooks' input names its mode
    callbacks = chained(_command_hooks(p, parts, late_policy), parts.callbacks)
    policy = Policy(
        p.permission_mode,
        allow=p.options.allow_tools,
        deny=p.options.deny_tools,
        ask=notifying(parts.ask, callbacks),
        sandboxed=p.sandboxed_tools,
        read_only_sandbox=p.sandbox.policy.mode == sb.READ_ONLY,
        program_trusted=p.program_trusted,
        rules=p.claude.rules,
        keep=keeper(p, parts.emit) if parts.ask is not None else None,
    )
    late_policy.bind(policy)
    hooks = _hooks(p, parts, callbacks)
    tracker = _make_tracker(p, parts, policy)
    emit = parts.emit
    if parts.transcript is not None:
        emit = recording(emit, lambda: parts.itself.get().recorder, parts.ledger, p.inherited_env)
    agent = Agent(
        model=parts.model,
        host=parts.host,
        hooks=hooks,
        emit=emit,
        system=session_system_prompt(p),
        ledger=parts.ledger,
        compactor=_compactor(p, parts),
        limits=replace(p.options.limits, max_parallel_tools=p.settings.max_parallel_tools),
        cwd=str(p.options.cwd),
        session_id=parts.session_id,
        recorder=parts.transcript,
        output=p.output,
        permit=policy,
        escalate=policy.escalate,
        tracer=parts.tracer,
        checkpoints=tracker,
    )
    return agent, tracker


def session_system_prompt(p: Prepared, replace: str | None = None, append: str | None = None) -> str:
    """The session's system prompt; `replace`/`append` (an SDK's `initialize`) stand in for the flags'."""
    return build_system_prompt(
        p.options.cwd,
        replace=replace if replace is not None else p.options.system_prompt,
        append=p.with_style(append if append is not None else p.options.append_system_prompt),
        skills=p.skills,
        reader=p.reader,
    )


def _hooks(p: Prepared, parts: AgentParts, callbacks: HookCallbacks | None) -> Hooks:
    """The MCP hooks; then, at each point, the settings files' command hooks, then an SDK's callbacks."""
    names = {server.name for server in p.loaded.servers}
    allowlist = parse_allowlist(p.settings.hook_servers)
    if allowlist is not None and not allowlist.everything:
        for missing in sorted(allowlist.names - names):
            parts.emit(Notice(f"MCP_HOOK_SERVERS names '{missing}', but no server has that name", "warning"))
    return Hooks(
        parts.pool,
        allowlist=allowlist,
        timeout_ms=p.settings.hook_timeout_ms,
        stop_max_rejections=p.settings.stop_max_rejections,
        emit=parts.emit,
        tool_hooks=p.settings.tool_hooks,
        pre_tool_max_objections=p.settings.pre_tool_max_objections,
        callbacks=callbacks,
        tracer=parts.tracer,
    )


def _compactor(p: Prepared, parts: AgentParts) -> Compactor:
    """The model's real window (unless SPROUT_AGENT_MAX_CONTEXT_TOKENS says otherwise) sets compaction's."""
    window, threshold = p.window, p.threshold
    if p.settings.max_context_tokens is None and parts.facts.window != p.window:
        window, threshold = fitted_window(parts.facts, p.settings)
    return Compactor(
        model=parts.model,
        window=window,
        threshold=threshold,
        max_compactions=p.settings.max_compactions,
        emit=parts.emit,
        on_usage=parts.ledger.add,
    )


def _make_tracker(p: Prepared, parts: AgentParts, policy: Policy) -> Tracker | None:
    """The turn's checkpoints (docs/rewind.md), in the user data directory; a resumed session goes on from its
    recorded turns. Nothing is checkpointed without a data directory, or with SPROUT_AGENT_CHECKPOINTS=off."""
    if not p.settings.checkpoints:
        return None
    transcript = parts.transcript
    return checkpointing.tracker_for(
        p.locations,
        parts.session_id,
        str(p.options.cwd),
        checkpoint_roots(str(p.options.cwd), [str(p.options.cwd / d) for d in p.options.add_dirs]),
        emit=parts.emit,
        transcript=transcript,
        turns=checkpointing.recorded_turns(transcript.path if transcript is not None else None),
        read_only=lambda: policy.mode is PermissionMode.READ_ONLY,
    )


def child_setup(p: Prepared, model: Handle[AnthropicModel], session_id: str) -> ChildSetup:
    """How the session's subagents are built: a definition's model on the session's client, its prompt where the
    session has ours, its transcript beside the session's (`<id>.agents/`)."""

    def model_for(name: str | None, emit: Callable[[Event], None]) -> Model:
        session_model = model.get()  # bound: no `task` call comes before the agent, and so the model, exists
        wanted = st.provider_model(name, p.settings_env, p.settings.provider) if name else session_model.name
        return session_model.derived(
            wanted, emit
        )  # the session's model too: its events (stream, retries) are the child's

    def system_for(definition: AgentDefinition) -> str:
        return build_system_prompt(p.options.cwd, base=definition.prompt, reader=p.reader)

    def recorder_for(child: ChildRecord) -> store.SessionStore | None:
        if p.locations.sessions is None:
            return None
        directory = p.locations.sessions / f"{session_id}.agents"
        about = {"agent_type": child.agent_type, "parent_tool_use_id": child.parent_tool_use_id}
        return store.SessionStore.new(directory, child.agent_id, str(p.options.cwd), child.model, about)

    return ChildSetup(model_for, system_for, recorder_for)


def _command_hooks(p: Prepared, parts: AgentParts, policy: Handle[Policy]) -> HookCallbacks | None:
    transcript = str(parts.transcript.path) if parts.transcript is not None else ""
    return settings_hooks(p, parts.emit, parts.session_id, transcript, policy)
