"""`/effort` and `/model NAME` mid-session: levels the model lists, the new model's facts fetched, settings it
does not support dropped with a line; `acp` takes --thinking/--effort like the main command."""

from __future__ import annotations

from pathlib import Path

import pytest

from sprout_agent.config.locations import Locations
from sprout_agent.config.options import Options
from sprout_agent.config.settings import Settings
from sprout_agent.core.events import Event
from sprout_agent.faces.acp.session_template import AcpSetup
from sprout_agent.faces.acp.setup import prepare_session
from sprout_agent.model import facts as model_facts
from sprout_agent.model.client import AnthropicModel
from sprout_agent.model.switch import effort_command, fitted_window, switch_model
from sprout_agent.session.model_building import facts_for
from sprout_agent.session.prepared import prepare
from tests.fake_anthropic import FakeAnthropic, model_info

THINKER = "claude-thinker-test"
PLAIN = "claude-plain-test"


def client(facts: model_facts.ModelFacts, **settings: str) -> AnthropicModel:
    events: list[Event] = []
    return AnthropicModel(
        model=facts.model, max_tokens=8000, emit=events.append, api_key="k", base_url="http://127.0.0.1:9", facts=facts,
        **settings,  # type: ignore[arg-type]
    )  # fmt: skip


def facts(model: str, **info: object) -> model_facts.ModelFacts:
    return model_facts.from_info(model, model_info(model, **info), "cache")  # type: ignore[arg-type]


def test_effort_without_a_level_shows_the_current_one_and_only_the_levels_the_model_lists() -> None:
    model = client(facts(THINKER, effort=("low", "high")))
    text, failed = effort_command(model, "")
    assert (
        not failed
        and text.startswith("effort: the API's default")
        and "choices for claude-thinker-test: low, high" in text
    )


def test_effort_refuses_a_level_the_model_does_not_list_and_keeps_the_current_one() -> None:
    model = client(facts(THINKER, effort=("low", "high")), effort="low")
    text, failed = effort_command(model, "max")
    assert failed and "does not list effort 'max'" in text and model.effort == "low"


def test_effort_sets_a_listed_level_for_the_next_request_and_default_unsets_it() -> None:
    model = client(facts(THINKER, effort=("low", "high")))
    assert effort_command(model, "HIGH") == ("effort: high (from the next request)", False)
    assert model.effort == "high"
    effort_command(model, "default")
    assert model.effort is None


def test_effort_on_a_model_without_effort_says_so() -> None:
    text, failed = effort_command(client(facts(PLAIN, effort=())), "low")
    assert failed and text == "claude-plain-test has no effort setting"


def test_a_switch_to_a_model_without_thinking_or_that_effort_drops_them_with_a_line_each() -> None:
    model = client(facts(THINKER), thinking="on", effort="max")
    notes = switch_model(model, PLAIN, facts(PLAIN, thinking=("disabled",), effort=("low",), max_input_tokens=100_000))
    assert notes is not None and len(notes) == 2
    assert "does not support thinking" in notes[0] and "does not list effort max (it lists: low)" in notes[1]
    assert (model.name, model.thinking, model.effort, model.facts.window) == (PLAIN, None, None, 100_000)


def test_a_switch_keeps_settings_the_new_model_supports_and_unknown_capabilities_keep_them_too() -> None:
    model = client(facts(THINKER), thinking="adaptive", effort="high")
    assert switch_model(model, "claude-other", model_facts.fallback("claude-other")) == []
    assert (model.thinking, model.effort) == ("adaptive", "high")


def test_the_window_after_a_switch_is_the_new_models_unless_the_variable_fixes_it() -> None:
    small = facts(PLAIN, max_input_tokens=100_000, max_tokens=8_000)
    settings = Settings.from_env({"ANTHROPIC_API_KEY": "k"})
    window, threshold = fitted_window(small, settings)
    assert window == 100_000 and threshold is not None and threshold < 100_000
    fixed = Settings.from_env({"ANTHROPIC_API_KEY": "k", "SPROUT_AGENT_MAX_CONTEXT_TOKENS": "50000"})
    assert fitted_window(small, fixed)[0] == 50_000


@pytest.mark.anyio
async def test_model_switch_fetches_the_new_models_facts_from_the_models_api_and_caches_them(tmp_path: Path) -> None:
    with FakeAnthropic(models=[model_info(PLAIN, max_input_tokens=123_000)]) as fake:
        env = {"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": fake.base_url, "SPROUT_AGENT_BUILTIN_SERVERS": ""}
        where = Locations(None, None, None, None, tmp_path / "cache")
        prepared = prepare(Options(prompt=None, cwd=tmp_path), where, env)
        first = await facts_for(prepared, PLAIN)
        again = await facts_for(prepared, PLAIN)
    assert (first.window, first.source, again.source) == (123_000, "Models API", "cache")
    assert fake.model_lookups == [f"/v1/models/{PLAIN}"]


def test_acp_sessions_take_the_servers_thinking_and_effort_flags(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    monkeypatch.setenv("SPROUT_AGENT_BUILTIN_SERVERS", "")
    prepared = prepare_session(AcpSetup(Options(thinking="off", effort="low")), tmp_path, [], None)
    assert (prepared.thinking, prepared.effort) == ("off", "low")
