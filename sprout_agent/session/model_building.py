"""The session's model client, built off the loop: anthropic (~2 s of imports) loads in a thread while the servers
hand-shake, and the model's facts come from the day-old cache, else the Models API, else the built-in table."""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import anyio.to_thread

from sprout_agent.core.events import Event, Notice
from sprout_agent.core.ledger import Ledger
from sprout_agent.model import facts as model_facts
from sprout_agent.model.facts import ModelFacts
from sprout_agent.session.prepared import Prepared
from sprout_agent.session.taping import Tape, replayed_facts

if TYPE_CHECKING:
    from sprout_agent.model.client import AnthropicModel
    from sprout_agent.model.credentials import Renewal


def build_model_in_background(
    prepared: Prepared, emit: Callable[[Event], None], ledger: Ledger, tape: Tape | None = None
) -> Future[tuple[AnthropicModel, ModelFacts]]:
    """A plain thread, not a task: a task group here would wrap every error the session raises in a group."""
    executor = ThreadPoolExecutor(1, thread_name_prefix="sprout-model")
    # In the caller's context: the model's facts request is in the session's trace when telemetry is on.
    future = executor.submit(contextvars.copy_context().run, make_model, prepared, emit, ledger, tape)
    executor.shutdown(wait=False)  # the thread ends once the model is built; nobody waits for it to exit
    return future


def make_model(
    prepared: Prepared, emit: Callable[[Event], None], ledger: Ledger, tape: Tape | None = None, retries: int = 4
) -> tuple[AnthropicModel, ModelFacts]:
    """Imports anthropic and reads the model's facts (from the cache, else the Models API), off the loop; with
    --record or --replay, its HTTP client is the tape's."""
    from sprout_agent.model.client import AnthropicModel

    facts = resolve_facts(prepared, prepared.model)
    if prepared.options.verbose:
        emit(Notice(facts.describe()))
    base_url = prepared.settings.base_url
    model = AnthropicModel(
        model=prepared.model,
        max_tokens=prepared.settings.max_output_tokens,
        emit=emit,
        api_key=api_key(prepared),
        base_url=base_url,
        provider=prepared.settings.provider,
        credentials=renewal(prepared),
        retries=retries,
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
        http_client=tape.http_client(facts) if tape is not None else None,
    )
    return model, facts


def renewal(prepared: Prepared) -> Renewal:
    """Your commands that fetch and refresh the credentials (config/credential_commands.py), run with your real
    environment's secret-filtered part (never a project's .env: it may not name them)."""
    from sprout_agent.model.credentials import Renewal

    ttl = prepared.settings.key_helper_ttl_ms / 1000
    return Renewal(prepared.settings.provider, prepared.credentials, prepared.inherited_env, ttl_seconds=ttl)


def api_key(prepared: Prepared) -> str:
    key = prepared.settings_env.get("ANTHROPIC_API_KEY") or prepared.settings_env.get("ANTHROPIC_AUTH_TOKEN")
    return key or "none"  # a keyless local server behind ANTHROPIC_BASE_URL


def resolve_facts(prepared: Prepared, model: str) -> ModelFacts:
    """The model's facts: the day-old cache, else the Models API, else the built-in table (blocking)."""
    from sprout_agent.model.client import retrieve_model_info

    if (recorded := replayed_facts(prepared.tape, model)) is not None:  # --replay: as recorded, no request, no cache
        return recorded
    settings = prepared.settings
    if not settings.provider.features.models_api or prepared.credentials.key_helper is not None:  # the table
        return model_facts.fallback(model)  # Bedrock, Vertex, Foundry have no Models API; a helper's key is not read
    base_url = prepared.settings.base_url
    cache = prepared.locations.cache / "models" if prepared.locations.cache is not None else None
    return model_facts.resolve(model, base_url, cache, partial(retrieve_model_info, model, api_key(prepared), base_url))


async def facts_for(prepared: Prepared, model: str) -> ModelFacts:
    """`/model NAME`: the new model's facts, off the loop (a cold fetch waits at most the Models API timeout)."""
    return await anyio.to_thread.run_sync(resolve_facts, prepared, model, abandon_on_cancel=True)
