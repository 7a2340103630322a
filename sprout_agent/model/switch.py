"""`/effort LEVEL` and `/model NAME` in a running session: the settings checked against the model's facts.

The REPL and the editors' commands share these; each returns the lines to show, so no face prints here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, TypeGuard

from sprout_agent.config.settings import Settings
from sprout_agent.core.compaction import parse_threshold
from sprout_agent.model.facts import EFFORT_LEVELS, ModelFacts

if TYPE_CHECKING:
    from sprout_agent.core.agent import Agent

DEFAULT_WORDS = ("default", "auto")  # `/effort default`: send no effort, the API's own default


class Tunable(Protocol):
    """What `AnthropicModel` offers for a switch; a test double without it cannot be switched."""

    facts: ModelFacts
    effort: str | None
    thinking: str | None

    def switch(self, model: str, facts: ModelFacts) -> list[str]: ...


def effort_choices(facts: ModelFacts) -> tuple[str, ...]:
    """The levels `/effort` takes for this model: the ones it lists, or all of ours when it is unknown."""
    levels = facts.effort_levels
    return EFFORT_LEVELS if levels is None else tuple(level for level in EFFORT_LEVELS if level in levels)


def effort_command(model: object, argument: str) -> tuple[str, bool]:
    """(the line to show, whether it is an error): no argument shows the current level and the choices."""
    if not _tunable(model):
        return "this model client has no effort setting", True
    facts = model.facts
    choices = effort_choices(facts)
    listed = ", ".join(choices) or "none"
    if not argument:
        current = model.effort or "the API's default"
        return f"effort: {current} (choices for {facts.model}: {listed}; `default` unsets it)", False
    level = argument.lower()
    if level in DEFAULT_WORDS:
        model.effort = None
        return "effort: the API's default (from the next request)", False
    if not choices:
        return f"{facts.model} has no effort setting", True
    if level not in choices:
        return f"{facts.model} does not list effort {argument!r} (choices: {listed})", True
    model.effort = level
    return f"effort: {level} (from the next request)", False


def switch_model(model: object, name: str, facts: ModelFacts) -> list[str] | None:
    """Points the client at `name` with its facts; the lines saying which settings were adjusted (None: the
    client cannot switch with facts, and the caller falls back to a plain rename)."""
    if not _tunable(model):
        return None
    return model.switch(name, facts)


def switch_agent(agent: Agent, name: str, facts: ModelFacts, settings: Settings) -> list[str]:
    """The session's model becomes `name` from the next request: the client (with its facts), the ledger's
    prices and compaction's window follow; the lines saying which settings were adjusted. ValueError when the
    client can be neither switched nor renamed."""
    notes = switch_model(agent.model, name, facts)
    if notes is None:
        try:
            setattr(agent.model, "name", name)  # noqa: B010 - a client without facts; a test double may lack it
        except AttributeError as error:
            raise ValueError(str(error)) from None
    agent.ledger.model = name  # priced from here on at the new model's rates
    if agent.compactor is not None:
        agent.compactor.window, agent.compactor.threshold = fitted_window(facts, settings)
    return notes or []


def fitted_window(facts: ModelFacts, settings: Settings) -> tuple[int, int | None]:
    """(window, compaction threshold) for the model: its real window unless SPROUT_AGENT_MAX_CONTEXT_TOKENS."""
    window = settings.max_context_tokens or facts.window
    reserve = min(settings.max_output_tokens, facts.max_output or settings.max_output_tokens)
    return window, parse_threshold(settings.compact_threshold, window, reserve)


def _tunable(model: object) -> TypeGuard[Tunable]:
    return all(hasattr(model, name) for name in ("facts", "effort", "thinking", "switch"))
