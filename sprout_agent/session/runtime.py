"""The composition root: one async context manager owns a running session.

`open_runtime` spawns the servers (server_pool.py; the built-in ones start at their first call), builds the model
client (model_building.py: anthropic loads in a thread while the servers hand-shake), the transcript store and the
`Agent` (assembly.py); leaving it ends all of them, in reverse order. The faces (repl/, headless/, acp/) enter it
and get the agent; nothing else hands the agent around.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncGenerator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread

from sprout_agent.checkpoints.tracker import Tracker
from sprout_agent.core import collection
from sprout_agent.core.agent import Agent
from sprout_agent.core.errors import ServerStartError
from sprout_agent.core.events import Event, Notice
from sprout_agent.core.hooks.program_callbacks import HookCallbacks
from sprout_agent.core.late import Late
from sprout_agent.core.ledger import Ledger
from sprout_agent.core.permissions import Ask
from sprout_agent.core.protocols import ToolHost
from sprout_agent.core.tracing import NO_TRACER
from sprout_agent.mcp.client_features import SdkMessages
from sprout_agent.mcp.elicitation import Elicitor
from sprout_agent.mcp.pool import ServerPool
from sprout_agent.mcp.sampling import Approve
from sprout_agent.session import store
from sprout_agent.session.assembly import AgentParts, build_agent, child_setup
from sprout_agent.session.delegation import Delegator
from sprout_agent.session.model_building import build_model_in_background
from sprout_agent.session.prepared import Prepared
from sprout_agent.session.server_pool import Asking, place_of, server_pool, session_client
from sprout_agent.session.session_telemetry import close_telemetry, observed, start_telemetry
from sprout_agent.session.taping import Tape

if TYPE_CHECKING:
    from sprout_agent.model.client import AnthropicModel


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
    callbacks: HookCallbacks | None = None,
    tool_host: Callable[[ServerPool], ToolHost] | None = None,
) -> AsyncGenerator[Runtime]:
    """Starts everything a session needs; `ask` is the face's permission question (None: nobody to ask);
    `elicit` answers a server's questions and `approve_sampling` its model calls (None: the unattended rules);
    `sdk` carries the messages of the servers an SDK hosts and `callbacks` are its hook callbacks (None: no SDK
    drives this session); `tool_host` puts a face's route in front of the servers for the loop's calls (an
    editor's files and terminals). Every collaborator is given at construction: nothing is set after."""
    session_id = session_id or new_session_id(prepared)
    telemetry = start_telemetry(prepared, session_id, emit)
    if telemetry is not None:
        emit = observed(emit, telemetry)
    ledger = Ledger(prepared.model, prepared.prices)
    early = _before_the_servers(prepared, emit, session_id, ledger, Asking(elicit, approve_sampling, sdk))
    pool = early.pool
    async with AsyncExitStack() as stack:
        stack.callback(collection.resume)  # a start that fails: the face (ACP's, say) may go on
        if telemetry is not None:  # the last to close: the session's end is in its trace
            stack.push_async_callback(close_telemetry, telemetry, emit)
            stack.callback(telemetry.activate())
        transcript = _make_store(prepared, session_id)
        if transcript is not None:
            stack.callback(transcript.close)
        stack.callback(pool.kill_all_now)  # a cancel between the spawn and the pool's enter orphans nothing
        tape = stack.enter_context(Tape(prepared, session_id, emit))  # --record / --replay (docs/cassettes.md)
        await pool.spawn()  # the processes boot on the other core while mcp loads in a thread
        building = build_model_in_background(prepared, emit, ledger, tape)  # anthropic (~2 s) loads as they hand-shake
        await stack.enter_async_context(pool)
        _check_strict(prepared, pool)
        model, facts = await anyio.to_thread.run_sync(building.result, abandon_on_cancel=True)
        stack.push_async_callback(model.aclose)  # its HTTP connections end with the session, on this loop
        early.model.bind(model)  # until now a server's sampling request is refused: no model yet
        host = tool_host(pool) if tool_host is not None else pool
        tracer = telemetry.tracer if telemetry is not None else NO_TRACER
        parts = AgentParts(
            emit, ask, pool, host, model, facts, session_id, transcript, ledger, tracer, callbacks, early.agent
        )
        agent, tracker = build_agent(prepared, parts)
        early.agent.bind(agent)
        _resume(prepared, agent, session_id, emit)
        await agent.start_session("resume" if prepared.resume is not None else "startup")
        collection.resume()  # the start is over: the session runs with the collector (core/collection.py)
        try:
            yield Runtime(prepared, session_id, pool, agent, tracker, transcript)
        except Exception:
            await agent.end_session("error")
            raise
        # A face that knows better (a signal, an ACP close, /clear) has already ended it: this is a no-op then.
        # A cancelled session gets none: its servers are going down with it (the faces end it before that).
        await agent.end_session("exit")


@dataclass(frozen=True, slots=True)
class _Early:
    """What is made before the servers start: the pool, and the handles to what is built after it."""

    pool: ServerPool
    model: Late[AnthropicModel]  # a server's sampling request and the subagents reach the model through it
    agent: Late[Agent]  # the `agent` server's delegator and the spend record reach the agent through it


def _before_the_servers(
    prepared: Prepared, emit: Callable[[Event], None], session_id: str, ledger: Ledger, asking: Asking
) -> _Early:
    """The servers' side of the two cycles (the `agent` server needs the agent, sampling the model; both need the
    servers): each gets a handle, made here and bound once what it names is built."""
    model: Late[AnthropicModel] = Late("the session's model")
    agent: Late[Agent] = Late("the session's agent")
    definitions = prepared.definitions
    delegator = Delegator(
        definitions.agents,
        definitions.skills,
        child_setup(prepared, model, session_id),
        agent,
        prepared.settings.subagent_depth,
    )
    client = session_client(prepared, emit, asking, delegator, (ledger, model))
    # The built-in servers start at their first call, unless --require-servers wants every server up before the run.
    lazy = not prepared.options.require_servers
    return _Early(server_pool(prepared.loaded.servers, place_of(prepared), emit, client, lazy=lazy), model, agent)


def _resume(prepared: Prepared, agent: Agent, session_id: str, emit: Callable[[Event], None]) -> None:
    """A resumed session's history enters the agent, and its spend goes on (a fork's starts again)."""
    if prepared.resume is None:
        return
    agent.ledger.earlier = prepared.resume.cost_usd if not prepared.options.fork_session else 0.0
    agent.load(prepared.resume.history, "resume")
    old = prepared.resume.session_id
    what = f"session {old}" if old == session_id else f"session {old} into a new session {session_id}"
    emit(Notice(f"resumed {what} ({len(prepared.resume.history)} messages)"))


def _make_store(prepared: Prepared, session_id: str) -> store.SessionStore | None:
    """The transcript: appended to when resuming, else a new file (created at the first message); a fork's
    file starts with the resumed history (the agent records it as the new base)."""
    if prepared.resume is not None and not prepared.options.fork_session:
        return store.SessionStore.resuming(prepared.resume)
    if prepared.locations.sessions is None:
        return None
    return store.SessionStore.new(prepared.locations.sessions, session_id, str(prepared.options.cwd), prepared.model)


def _check_strict(prepared: Prepared, pool: ServerPool) -> None:
    if not prepared.options.require_servers:
        return
    failed = [s.name for s in pool.status() if s.state != "running"]
    if failed:
        raise ServerStartError(f"--require-servers: server(s) failed to start: {', '.join(failed)}")
