"""The one factory of a `ServerPool`: a run, `mcp doctor` and `hooks test` start their servers alike (the real
environment, the sandbox, OAuth, the stderr log with --verbose, and the client's roots, elicitation and sampling).

Light on purpose: `mcp list` never loads it, and the pool loads the mcp SDK itself, in a thread, after spawning.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from sprout_agent.config import settings as st
from sprout_agent.config.files import ServerConfig
from sprout_agent.config.sandboxing import SandboxPlan, ServerSandboxes
from sprout_agent.config.settings import Settings
from sprout_agent.core.events import Event, Notice
from sprout_agent.core.late import Handle
from sprout_agent.core.ledger import Ledger
from sprout_agent.core.protocols import Delegation, Model
from sprout_agent.mcp.client_features import ClientFeatures, Roots, SdkMessages, roots_for
from sprout_agent.mcp.elicitation import Elicitor, Unattended
from sprout_agent.mcp.oauth.store import oauth_setup
from sprout_agent.mcp.pool import ServerPool
from sprout_agent.mcp.sampling import Approve, Sampler, always
from sprout_agent.session.prepared import Prepared


@dataclass(frozen=True, slots=True)
class ServerPlace:
    """What every pool starts its servers with, whoever starts them."""

    settings: Settings
    environ: Mapping[str, str]  # the real environment the agent inherited: never a project's .env
    sandbox: SandboxPlan
    cwd: Path
    data: Path | None  # the user data directory: OAuth tokens where the OS has no keyring
    server_log: Path | None  # with --verbose: the servers' stderr is appended here (never to the terminal)
    elicitation: str = "decline"  # what nobody-to-ask answers a server's question (--elicitation)


def place_of(prepared: Prepared) -> ServerPlace:
    """A run's: its options, its inherited environment and its user directories."""
    log = prepared.locations.server_log if prepared.options.verbose else None
    where = (prepared.settings, prepared.inherited_env, prepared.sandbox, prepared.options.cwd)
    return ServerPlace(*where, prepared.locations.data, log, prepared.elicitation)


def server_pool(
    servers: Sequence[ServerConfig],
    place: ServerPlace,
    emit: Callable[[Event], None],
    client: ClientFeatures | None = None,
    *,
    lazy: bool = False,
) -> ServerPool:
    """The pool for `servers`; `client` is what a session offers them (None: roots and unattended answers). `lazy`:
    the built-in servers start at their first call (a session's; `mcp doctor` and `hooks test` start them all)."""
    settings = place.settings
    if place.server_log is not None:
        emit(Notice(f"MCP server stderr is logged to {place.server_log}"))
    return ServerPool(
        servers,
        emit=emit,
        start_timeout=settings.server_start_timeout,
        tool_timeout=settings.tool_timeout,
        result_max_bytes=settings.tool_result_max_bytes,
        child_env=partial(st.child_environment, place.environ),  # never .env: a project file
        stderr_log=place.server_log,
        sandbox=ServerSandboxes(place.sandbox, place.cwd).wrap,
        client=client if client is not None else unattended(place, emit),
        oauth=oauth_setup(place.data, place.environ),
        lazy=lazy,
    )


def unattended(place: ServerPlace, emit: Callable[[Event], None]) -> ClientFeatures:
    """The client with nobody to ask and no model: the roots, and the unattended answer to a server's question."""
    return ClientFeatures(Roots(roots_for(place.cwd)), emit, Unattended(place.elicitation))


@dataclass(frozen=True, slots=True)
class Asking:
    """Whom a session's servers reach through the face: its questions (`elicit`; None: the unattended rules), its
    model calls (`approve`; None: not offered unless --allow-sampling), an SDK's in-process servers (`sdk`)."""

    elicit: Elicitor | None = None
    approve: Approve | None = None
    sdk: SdkMessages | None = None


def session_client(
    prepared: Prepared,
    emit: Callable[[Event], None],
    asking: Asking,
    delegation: Delegation,
    sampling: tuple[Ledger, Handle[Model]],
) -> ClientFeatures:
    """A run's client. Sampling is offered only when something can approve it (the face asks, or
    --allow-sampling), and then runs through the session's model (bound once built), ledger and budget."""
    approve = always if prepared.allow_sampling else asking.approve
    sampler = None
    if approve is not None:
        ledger, model = sampling
        sampler = Sampler(
            model=model,
            ledger=ledger,
            emit=emit,
            approve=approve,
            max_output_tokens=prepared.settings.max_output_tokens,
            max_budget_usd=prepared.options.limits.max_budget_usd,
        )
    answer = asking.elicit or Unattended(prepared.elicitation)
    return ClientFeatures(Roots(roots_for(prepared.options.cwd)), emit, answer, sampler, asking.sdk, delegation)
