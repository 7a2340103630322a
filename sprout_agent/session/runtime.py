"""The composition root: one async context manager owns a running session.

`open_runtime` spawns the servers, builds the model client (anthropic loads in a thread while the servers
hand-shake), the transcript store, the hooks and the `Agent`; leaving it ends all of them, in reverse order.
The faces (repl/, headless/, acp/) enter it and get the agent; nothing else hands the agent around.
"""

from __future__ import annotations

import contextvars
import uuid
from collections.abc import AsyncGenerator, Callable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread

from sprout_agent.checkpoints.tracker import Tracker
from sprout_agent.config import settings as st
from sprout_agent.config.definitions import AgentDefinition
from sprout_agent.config.sandboxing import ServerSandboxes
from sprout_agent.core.agent import Agent
from sprout_agent.core.compaction import Compactor, parse_threshold
from sprout_agent.core.errors import ServerStartError
from sprout_agent.core.events import Event, Notice, TurnFinished
from sprout_agent.core.hooks.calling import Hooks, parse_allowlist
from sprout_agent.core.ledger import Ledger
from sprout_agent.core.permissions import Ask, Policy
from sprout_agent.core.protocols import Model, ToolHost
from sprout_agent.mcp.client_features import ClientFeatures, Roots, SdkMessages, roots_for
from sprout_agent.mcp.elicitation import Elicitor, Unattended
from sprout_agent.mcp.oauth.store import oauth_setup
from sprout_agent.mcp.pool import ServerPool
from sprout_agent.mcp.sampling import Approve, Sampler, always
from sprout_agent.model import facts as model_facts
from sprout_agent.model.facts import ModelFacts
from sprout_agent.model.system_prompt import build_system_prompt
from sprout_agent.session import checkpointing, store
from sprout_agent.session.command_hooks import settings_hooks
from sprout_agent.session.delegation import ChildRecord, ChildSetup, Delegator
from sprout_agent.session.prepared import Prepared
from sprout_agent.session.session_telemetry import close_telemetry, observed, start_telemetry
from sprout_agent.session.taping import Tape, replayed_facts
from sprout_agent.trust import sandbox as sb

if TYPE_CHECKING:
    from sprout_agent.model.client import AnthropicModel
    from sprout_agent.model.key_helper import KeyHelper


@dataclass(frozen=True, slots=True)
class Runtime:
    """A running session, valid inside `open_runtime`."""

    prepared: Prepared
    session_id: str
    pool: ServerPool
    agent: Agent
    checkpoints: Tracker | None = None  # the turns' checkpoints, for /rewind (None: off, or no data directory)
    transcript: store.SessionStore | None = None


def new_session_id(prepared: Prepared) -> str:
    """A resumed session keeps its id (unless --fork-session); a new one gets --session-id or a fresh UUID."""
    if prepared.resume is not None and not prepared.options.fork_session:
        return prepared.resume.session_id
    return (prepared.options.session_id or str(uuid.uuid4())).lower()


@asynccontextmanager
async def open_runtime(
    prepared: Prepared,
    emit: Callable[[Event], None],
    *,
    ask: Ask | None = None,
    session_id: str | None = None,
    elicit: Elicitor | None = None,
    approve_sampling: Approve | None = None,
    sdk: SdkMessages | None = None,
    tool_host: Callable[[ServerPool], ToolHost] | None = None,
) -> AsyncGenerator[Runtime]:
    """Starts everything a session needs; `ask` is the face's permission question (None: nobody to ask);
    `elicit` answers a server's questions and `approve_sampling` its model calls (None: the unattended rules);
    `sdk` carries the messages of the servers an SDK hosts (None: no SDK drives this session); `tool_host` puts
    a face's route in front of the servers for the loop's calls (an editor's files and terminals)."""
    session_id = session_id or new_session_id(prepared)
    telemetry = start_telemetry(prepared, session_id, emit)
    if telemetry is not None:
        emit = observed(emit, telemetry)
    ledger = Ledger(prepared.model, prepared.prices)
    client = _client_features(prepared, emit, ledger, elicit, approve_sampling)
    client.sdk = sdk
    definitions = prepared.definitions
    client.delegation = delegator = Delegator(definitions.agents, definitions.skills, prepared.settings.subagent_depth)
    pool = _make_pool(prepared, emit, client)
    async with AsyncExitStack() as stack:
        if telemetry is not None:  # the last to close: the session's end is in its trace
            stack.push_async_callback(close_telemetry, telemetry, emit)
            stack.callback(telemetry.activate())
        transcript = _make_store(prepared, session_id)
        if transcript is not None:
            stack.callback(transcript.close)
        stack.callback(pool.kill_all_now)  # a cancel between the spawn and the pool's enter orphans nothing
        tape = stack.enter_context(Tape(prepared, session_id, emit))  # --record / --replay (docs/cassettes.md)
        await pool.spawn()  # the processes boot on the other core while mcp loads in a thread
        building = _build_model_in_background(prepared, emit, ledger)  # anthropic (~2 s) loads while they hand-shake
        await stack.enter_async_context(pool)
        _check_strict(prepared, pool)
        model, facts = await anyio.to_thread.run_sync(building.result, abandon_on_cancel=True)
        stack.push_async_callback(model.aclose)  # its HTTP connections end with the session, on this loop
        tape.attach(model, facts)
        if client.sampler is not None:
            client.sampler.model = model  # until now a server's sampling request is refused: no model yet
        host = tool_host(pool) if tool_host is not None else pool
        agent = _build_agent(prepared, emit, ask, (pool, host), model, session_id, transcript, ledger)
        if telemetry is not None:
            agent.tracer = agent.hooks.tracer = telemetry.tracer
        _fit_window(prepared, agent, facts)
        delegator.attach(agent, _child_setup(prepared, model, session_id))
        tracker = agent.checkpoints = checkpointing.session_tracker(prepared, emit, session_id, transcript, agent)
        if transcript is not None:
            agent.emit = _recording_spend(agent.emit, agent, ledger)
        if prepared.resume is not None:
            ledger.earlier = prepared.resume.cost_usd if not prepared.options.fork_session else 0.0
            agent.load(prepared.resume.history, "resume")
            old = prepared.resume.session_id
            what = f"session {old}" if old == session_id else f"session {old} into a new session {session_id}"
            emit(Notice(f"resumed {what} ({len(prepared.resume.history)} messages)"))
        await agent.start_session("resume" if prepared.resume is not None else "startup")
        try:
            yield Runtime(prepared, session_id, pool, agent, tracker, transcript)
        except Exception:
            await agent.end_session("error")
            raise
        # A face that knows better (a signal, an ACP close, /clear) has already ended it: this is a no-op then.
        # A cancelled session gets none: its servers are going down with it (the faces end it before that).
        await agent.end_session("exit")


def _recording_spend(emit: Callable[[Event], None], agent: Agent, ledger: Ledger) -> Callable[[Event], None]:
    """After each turn the transcript records the session's spend, so a resumed session's cost goes on from it: the
    agent's transcript of the moment (a rewind's fork goes on in its own, session/continuing.py)."""

    def recording(event: Event) -> None:
        emit(event)
        if isinstance(event, TurnFinished) and isinstance(transcript := agent.recorder, store.SessionStore):
            transcript.spent(ledger.earlier + ledger.cost)

    return recording


def _make_pool(prepared: Prepared, emit: Callable[[Event], None], client: ClientFeatures) -> ServerPool:
    return ServerPool(
        prepared.loaded.servers,
        emit=emit,
        start_timeout=prepared.settings.server_start_timeout,
        tool_timeout=prepared.settings.tool_timeout,
        result_max_bytes=prepared.settings.tool_result_max_bytes,
        child_env=partial(st.child_environment, prepared.inherited_env),  # never .env: a project file
        stderr_log=_server_log(prepared, emit),
        sandbox=ServerSandboxes(prepared.sandbox, prepared.options.cwd).wrap,
        client=client,
        oauth=oauth_setup(prepared.locations.data, prepared.inherited_env),
    )


def _client_features(
    prepared: Prepared,
    emit: Callable[[Event], None],
    ledger: Ledger,
    elicit: Elicitor | None,
    approve: Approve | None,
) -> ClientFeatures:
    """Roots: the working directory and its git root. Sampling is offered only when something can approve it
    (the face asks, or --allow-sampling), and then runs through the session's model, ledger and budget."""
    if prepared.allow_sampling:
        approve = always
    sampler = None
    if approve is not None:
        sampler = Sampler(
            ledger=ledger,
            emit=emit,
            approve=approve,
            max_output_tokens=prepared.settings.max_output_tokens,
            max_budget_usd=prepared.options.limits.max_budget_usd,
        )
    answer = elicit or Unattended(prepared.elicitation)
    return ClientFeatures(Roots(roots_for(prepared.options.cwd)), emit, answer, sampler)


def _build_model_in_background(
    prepared: Prepared, emit: Callable[[Event], None], ledger: Ledger
) -> Future[tuple[AnthropicModel, ModelFacts]]:
    """A plain thread, not a task: a task group here would wrap every error the session raises in a group."""
    executor = ThreadPoolExecutor(1, thread_name_prefix="sprout-model")
    # In the caller's context: the model's facts request is in the session's trace when telemetry is on.
    future = executor.submit(contextvars.copy_context().run, _make_model, prepared, emit, ledger)
    executor.shutdown(wait=False)  # the thread ends once the model is built; nobody waits for it to exit
    return future


def _make_model(prepared: Prepared, emit: Callable[[Event], None], ledger: Ledger) -> tuple[AnthropicModel, ModelFacts]:
    """Imports anthropic and reads the model's facts (from the cache, else the Models API), off the loop."""
    from sprout_agent.model.client import AnthropicModel

    facts = resolve_facts(prepared, prepared.model)
    if prepared.options.verbose:
        emit(Notice(facts.describe()))
    base_url = prepared.settings.base_url
    model = AnthropicModel(
        model=prepared.model,
        max_tokens=prepared.settings.max_output_tokens,
        emit=emit,
        api_key=_api_key(prepared),
        base_url=base_url,
        provider=prepared.settings.provider,
        key_helper=_key_helper(prepared),
        env=prepared.settings_env,
        on_attempt=ledger.attempted,
        facts=facts,
        thinking=prepared.thinking,
        effort=prepared.effort,
        thinking_budget=prepared.settings.thinking_budget,
        web=prepared.web,
        fallback_model=prepared.options.fallback_model,
        partial_messages=prepared.options.include_partial_messages and prepared.options.output_format == "stream-json",
        rate_gate=Path(gate) if (gate := prepared.inherited_env.get("SPROUT_AGENT_RATE_GATE")) else None,
        timeout=prepared.settings.api_timeout_ms / 1000,
        waiting_notice=prepared.settings.api_waiting_ms / 1000,
    )
    return model, facts


def _key_helper(prepared: Prepared) -> KeyHelper | None:
    """SPROUT_AGENT_API_KEY_HELPER, run in your environment (never a project's .env: it may not set it)."""
    from sprout_agent.model.key_helper import KeyHelper

    command = prepared.settings.key_helper
    ttl = prepared.settings.key_helper_ttl_ms / 1000
    return KeyHelper(command, ttl, prepared.inherited_env) if command is not None else None


def _api_key(prepared: Prepared) -> str:
    key = prepared.settings_env.get("ANTHROPIC_API_KEY") or prepared.settings_env.get("ANTHROPIC_AUTH_TOKEN")
    return key or "none"  # a keyless local server behind ANTHROPIC_BASE_URL


def resolve_facts(prepared: Prepared, model: str) -> ModelFacts:
    """The model's facts: the day-old cache, else the Models API, else the built-in table (blocking)."""
    from sprout_agent.model.client import retrieve_model_info

    replayed = replayed_facts(prepared.tape, model)  # --replay: as recorded, no request, no cache
    settings = prepared.settings
    if replayed is not None or not settings.provider.features.models_api or settings.key_helper is not None:
        return replayed or model_facts.fallback(model)  # Bedrock, Vertex, Foundry have no Models API; a helper's key
    base_url = prepared.settings.base_url
    cache = prepared.locations.cache / "models" if prepared.locations.cache is not None else None
    return model_facts.resolve(
        model, base_url, cache, partial(retrieve_model_info, model, _api_key(prepared), base_url)
    )


async def facts_for(prepared: Prepared, model: str) -> ModelFacts:
    """`/model NAME`: the new model's facts, off the loop (a cold fetch waits at most the Models API timeout)."""
    return await anyio.to_thread.run_sync(resolve_facts, prepared, model, abandon_on_cancel=True)


def _fit_window(prepared: Prepared, agent: Agent, facts: ModelFacts) -> None:
    """The model's real window (unless SPROUT_AGENT_MAX_CONTEXT_TOKENS says otherwise) sets compaction's."""
    settings = prepared.settings
    if agent.compactor is None or settings.max_context_tokens is not None or facts.window == prepared.window:
        return
    reserve = min(settings.max_output_tokens, facts.max_output or settings.max_output_tokens)
    agent.compactor.window = facts.window
    agent.compactor.threshold = parse_threshold(settings.compact_threshold, facts.window, reserve)


def _server_log(prepared: Prepared, emit: Callable[[Event], None]) -> Path | None:
    """With --verbose, servers' stderr goes to a log file (never to the terminal)."""
    path = prepared.locations.server_log
    if not prepared.options.verbose or path is None:
        return None
    emit(Notice(f"MCP server stderr is logged to {path}"))
    return path


def _make_store(prepared: Prepared, session_id: str) -> store.SessionStore | None:
    """The transcript: appended to when resuming, else a new file (created at the first message); a fork's
    file starts with the resumed history (the agent records it as the new base)."""
    if prepared.resume is not None and not prepared.options.fork_session:
        return store.SessionStore.resuming(prepared.resume)
    if prepared.locations.sessions is None:
        return None
    return store.SessionStore.new(prepared.locations.sessions, session_id, str(prepared.options.cwd), prepared.model)


def _child_setup(p: Prepared, model: AnthropicModel, session_id: str) -> ChildSetup:
    """How the session's subagents are built: a definition's model on the session's client, its prompt where the
    session has ours, its transcript beside the session's (`<id>.agents/`)."""

    def model_for(name: str | None, emit: Callable[[Event], None]) -> Model:
        wanted = st.provider_model(name, p.settings_env, p.settings.provider) if name else model.name
        return model.derived(wanted, emit)  # the session's model too: its events (stream, retries) are the child's

    def system_for(definition: AgentDefinition) -> str:
        return build_system_prompt(p.options.cwd, base=definition.prompt, reader=p.reader)

    def recorder_for(child: ChildRecord) -> store.SessionStore | None:
        if p.locations.sessions is None:
            return None
        directory = p.locations.sessions / f"{session_id}.agents"
        about = {"agent_type": child.agent_type, "parent_tool_use_id": child.parent_tool_use_id}
        return store.SessionStore.new(directory, child.agent_id, str(p.options.cwd), child.model, about)

    return ChildSetup(model_for, system_for, recorder_for)


def _check_strict(prepared: Prepared, pool: ServerPool) -> None:
    if not prepared.options.require_servers:
        return
    failed = [s.name for s in pool.status() if s.state != "running"]
    if failed:
        raise ServerStartError(f"--require-servers: server(s) failed to start: {', '.join(failed)}")


def _build_agent(
    p: Prepared,
    emit: Callable[[Event], None],
    ask: Ask | None,
    hosts: tuple[ServerPool, ToolHost],  # the servers (hooks call them), and what the loop's tool calls go to
    model: Model,
    session_id: str,
    transcript: store.SessionStore | None,
    ledger: Ledger,
) -> Agent:
    pool, host = hosts
    names = {server.name for server in p.loaded.servers}
    allowlist = parse_allowlist(p.settings.hook_servers)
    if allowlist is not None and not allowlist.everything:
        for missing in sorted(allowlist.names - names):
            emit(Notice(f"MCP_HOOK_SERVERS names '{missing}', but no server has that name", "warning"))
    compactor = Compactor(
        model=model,
        window=p.window,
        threshold=p.threshold,
        max_compactions=p.settings.max_compactions,
        emit=emit,
        on_usage=ledger.add,
    )
    hooks = Hooks(
        pool,
        allowlist=allowlist,
        timeout_ms=p.settings.hook_timeout_ms,
        stop_max_rejections=p.settings.stop_max_rejections,
        emit=emit,
        tool_hooks=p.settings.tool_hooks,
        pre_tool_max_objections=p.settings.pre_tool_max_objections,
    )
    policy = Policy(
        p.permission_mode,
        allow=p.options.allow_tools,
        deny=p.options.deny_tools,
        ask=ask,
        sandboxed=p.sandboxed_tools,
        read_only_sandbox=p.sandbox.policy.mode == sb.READ_ONLY,
        program_trusted=p.program_trusted,
        rules=p.claude.rules,
    )
    transcript_path = str(transcript.path) if transcript is not None else ""
    hooks.callbacks = settings_hooks(p, emit, session_id, transcript_path, policy)
    return Agent(
        model=model,
        host=host,
        hooks=hooks,
        emit=emit,
        system=build_system_prompt(
            p.options.cwd,
            replace=p.options.system_prompt,
            append=p.with_style(p.options.append_system_prompt),
            skills=p.skills,
            reader=p.reader,
        ),
        ledger=ledger,
        compactor=compactor,
        limits=replace(p.options.limits, max_parallel_tools=p.settings.max_parallel_tools),
        cwd=str(p.options.cwd),
        session_id=session_id,
        recorder=transcript,
        output=p.output,
        permit=policy,
        escalate=policy.escalate,
    )
