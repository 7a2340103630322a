"""Extended thinking through the loop and on the wire: blocks kept and sent back byte-identical, the fake
refusing what the API refuses, and the model's facts from the Models API (cached, with fallbacks)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from sprout_agent.core.events import Event, ThinkingDelta
from sprout_agent.core.messages import Message, RedactedThinking, Text, Thinking, user_text
from sprout_agent.core.protocols import ModelRequest, ToolSpec
from sprout_agent.model import facts as model_facts
from sprout_agent.model.client import AnthropicModel, retrieve_model_info
from sprout_agent.session import store
from tests.api_rules import request_problems, sealed, sign
from tests.bounds import bounded
from tests.fake_anthropic import FakeAnthropic, model_info, redacted, reply, thinking, tool_use
from tests.loop_doubles import MODEL, MemoryHost, answers, build_loop, call, default_server, server, thought
from tests.loop_doubles import reply as step

THINKER = "claude-thinker-test"
PLAIN = "claude-plain-test"
pytestmark = pytest.mark.anyio
ECHO = ToolSpec("fake__echo", "fake", "echo", "Echo.", {"type": "object"})


def thinking_of(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [b for m in body["messages"] for b in m["content"] if b["type"] in ("thinking", "redacted_thinking")]


# --- in-process: the loop keeps what the API needs back ----------------------------------------------
async def test_a_ten_round_tool_loop_with_thinking_sends_every_round_its_own_signed_thinking_first() -> None:
    script = [step(thought(f"round {n}"), call("fake__echo", f"t{n}", text=str(n))) for n in range(10)]
    loop = build_loop([*script, step(thought("done now"), "Done.")], thinking=True)
    result = await loop.turn()
    assert result.stop_reason == "end_turn" and result.turns == 11
    last = loop.model.bodies[-1]
    assert [b["thinking"] for b in thinking_of(last)] == [f"round {n}" for n in range(10)]
    assert all(b["signature"] == sign(MODEL, b["thinking"]) for b in thinking_of(last))
    assert last["messages"][-2]["content"][0]["type"] == "thinking"  # the turn the results answer starts with it


async def test_a_hook_objection_under_thinking_keeps_the_replys_thinking_at_the_head_of_the_merged_turn() -> None:
    host = MemoryHost({"fake": {**default_server(), **server(_Stop=answers("tests are red"))}})
    loop = build_loop(
        [step(thought("looks finished"), "All done."), step(thought("fix tests"), "Fixed.")],
        host=host,
        hook_servers="*",
        thinking=True,
    )
    await loop.turn()
    objected = loop.model.bodies[1]["messages"]
    assert [b["type"] for b in objected[-2]["content"]] == ["thinking", "text", "tool_use"]
    assert objected[-1]["content"][0]["type"] == "tool_result"


async def test_a_post_compact_injection_under_thinking_goes_as_text_since_no_thinking_precedes_it() -> None:
    host = MemoryHost({"fake": {**default_server(), **server(_PostCompact=answers(then="todo: ship it"))}})
    script = [
        step(thought("plan"), call("fake__echo", "t1", text="x")),
        step(thought("ok"), "Done."),
        step("the summary"),
        step(thought("again"), "Fine."),
    ]
    loop = build_loop(script, host=host, hook_servers="*", thinking=True)
    await loop.turn()
    with anyio.fail_after(bounded(10)):
        await loop.agent.compact("manual")
    await loop.turn("next")
    after = loop.model.bodies[-1]["messages"]
    assert "todo: ship it" in str(after) and not any(b["type"] == "tool_use" for m in after for b in m["content"])
    assert request_problems(loop.model.bodies[-1]) == []


async def test_a_resumed_thinking_session_sends_the_blocks_back_byte_identical(tmp_path: Path) -> None:
    recorder = store.SessionStore.new(tmp_path, "s1", "/w", MODEL)
    signed = Thinking("the \u2028odd\x00 text", sign(MODEL, "the \u2028odd\x00 text"), MODEL)
    hidden = RedactedThinking(sealed(MODEL, "secret"), MODEL)
    recorder.appended(user_text("hi"))
    recorder.appended(Message("assistant", (signed, hidden, Text("hello"))))
    recorder.close()
    loaded = store.load(tmp_path / "s1.jsonl")
    loop = build_loop([step(thought("again"), "Back.")], thinking=True)
    loop.agent.load(loaded.history, "resume")
    await loop.turn("more")
    sent = thinking_of(loop.model.bodies[0])[:2]
    assert sent == [
        {"type": "thinking", "thinking": signed.thinking, "signature": signed.signature},
        {"type": "redacted_thinking", "data": hidden.data},
    ]


async def test_a_switch_to_another_model_leaves_out_the_thinking_it_cannot_verify() -> None:
    loop = build_loop([step(thought("mine"), "One."), step("Two.")], thinking=True)
    await loop.turn()
    loop.model.name, loop.model.thinking = PLAIN, False
    await loop.turn("next")
    assert thinking_of(loop.model.bodies[1]) == [] and loop.model.bodies[1]["model"] == PLAIN


def test_the_rules_refuse_a_changed_signature_a_foreign_one_and_a_tool_turn_without_thinking() -> None:
    def body(first: dict[str, Any], model: str = MODEL) -> dict[str, Any]:
        uses = {"type": "tool_use", "id": "t1", "name": "x", "input": {}}
        result = {"type": "tool_result", "tool_use_id": "t1", "content": "ok"}
        messages = [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [first, uses]},
            {"role": "user", "content": [result]},
        ]
        tools = [{"name": "x", "input_schema": {"type": "object"}}]
        return {"model": model, "max_tokens": 8000, "messages": messages, "tools": tools} | {
            "thinking": {"type": "enabled", "budget_tokens": 2000}
        }

    good = {"type": "thinking", "thinking": "t", "signature": sign(MODEL, "t")}
    assert request_problems(body(good)) == []
    assert "Invalid `signature`" in str(request_problems(body(good | {"thinking": "t "})))
    assert "Invalid `signature`" in str(request_problems(body(good, PLAIN)))
    assert "must start with a thinking block" in str(request_problems(body({"type": "text", "text": "hi"})))
    bad_data = {"type": "redacted_thinking", "data": sealed(MODEL, "s") + "x"}
    assert "Invalid `data`" in str(request_problems(body(bad_data)))


# --- model facts ------------------------------------------------------------------------------------
def test_facts_come_from_the_cache_for_a_day_then_from_the_api_and_a_404_falls_back_to_the_table(
    tmp_path: Path,
) -> None:
    asked: list[str] = []

    def fetch() -> dict[str, Any] | None:
        asked.append("x")
        return model_info(THINKER, max_input_tokens=500_000, max_tokens=50_000, effort=("low", "high"))

    first = model_facts.resolve(THINKER, "http://a", tmp_path, fetch, now=1000.0)
    warm = model_facts.resolve(THINKER, "http://a", tmp_path, fetch, now=1000.0 + 3600)
    assert (first.source, warm.source, len(asked)) == ("Models API", "cache", 1)
    assert (warm.window, warm.max_output, warm.effort_levels) == (500_000, 50_000, frozenset({"low", "high"}))
    model_facts.resolve(THINKER, "http://other", tmp_path, fetch, now=1000.0)  # keyed by base URL too
    model_facts.resolve(THINKER, "http://a", tmp_path, fetch, now=1000.0 + 90_000)  # a day later
    assert len(asked) == 3
    missing = model_facts.resolve("claude-opus-4-1-x", None, tmp_path, lambda: None)
    assert (missing.source, missing.window, missing.max_output) == ("built-in table", 200_000, 32_000)

    def offline() -> None:
        raise model_facts.Unreachable("no network")

    assert model_facts.resolve("some-proxy-model", "http://b", tmp_path, offline).source == "default"


def test_thinking_defaults_follow_the_capabilities_and_a_budget_fits_under_max_tokens() -> None:
    facts = model_facts.from_info(THINKER, model_info(THINKER), "cache")
    budget_only = model_facts.from_info(THINKER, model_info(THINKER, thinking=("enabled", "disabled")), "cache")
    none = model_facts.from_info(PLAIN, model_info(PLAIN, thinking=("disabled",), effort=()), "cache")
    assert model_facts.thinking_param(None, facts, 32_000, 16_000) == {"type": "adaptive"}
    assert model_facts.thinking_param(None, budget_only, 8_192, 16_000) == {"type": "enabled", "budget_tokens": 4096}
    assert model_facts.thinking_param("on", none, 32_000, 16_000) is None
    assert model_facts.thinking_param(None, model_facts.fallback(PLAIN), 32_000, 16_000) is None
    assert model_facts.thinking_param("off", facts, 32_000, 16_000) == {"type": "disabled"}
    assert model_facts.effort_param("max", none) is None and model_facts.effort_param("low", facts) == "low"


# --- on the wire, through the real SDK --------------------------------------------------------------
async def test_thinking_streams_as_events_and_comes_back_verbatim_through_the_sdk() -> None:
    events: list[Event] = []
    script = [reply(thinking("weigh it"), redacted(), tool_use("fake__echo", {}, id="t1")), reply("Done.")]
    with FakeAnthropic(script, models=[model_info(THINKER)]) as fake:
        info = await anyio.to_thread.run_sync(retrieve_model_info, THINKER, "k", fake.base_url)
        assert info is not None
        facts = model_facts.from_info(THINKER, info, "Models API")
        model = AnthropicModel(
            model=THINKER, max_tokens=32_000, emit=events.append, api_key="k", base_url=fake.base_url, facts=facts,
            thinking="on", effort="high",
        )  # fmt: skip
        history = [user_text("go")]
        first = await model.complete(ModelRequest("sys", history, (ECHO,)), lambda _t: None)
        assert [type(b).__name__ for b in first.content] == ["Thinking", "RedactedThinking", "ToolUse"]
        from sprout_agent.core.messages import ToolResult

        history += [Message("assistant", first.content), Message("user", (ToolResult("t1", (Text("ok"),)),))]
        await model.complete(ModelRequest("sys", history, (ECHO,)), lambda _t: None)
        await model.aclose()  # on this loop: a client left to the collector closes on another test's
    assert fake.refused == []
    sent = fake.requests[1]
    assert sent.body["thinking"] == {"type": "enabled", "budget_tokens": 16_000}
    assert sent.body["output_config"] == {"effort": "high"}
    assert "interleaved-thinking" in sent.headers.get("anthropic-beta", "")
    assert [b["type"] for b in sent.body["messages"][1]["content"]] == ["thinking", "redacted_thinking", "tool_use"]
    assert "".join(e.text for e in events if isinstance(e, ThinkingDelta)) == "weigh it"


async def test_an_effort_or_thinking_the_model_does_not_list_is_refused_by_the_fake_and_not_sent_by_us() -> None:
    plain = model_info(PLAIN, thinking=("disabled",), effort=("low",))
    with FakeAnthropic([reply("hi")], models=[plain]) as fake:
        assert fake.refused == []
        bad = {"model": PLAIN, "max_tokens": 10, "messages": [{"role": "user", "content": "x"}]}
        assert "not supported" in str(
            request_problems(bad | {"output_config": {"effort": "max"}}, plain["capabilities"])
        )
        assert "not supported" in str(request_problems(bad | {"thinking": {"type": "adaptive"}}, plain["capabilities"]))
        events: list[Event] = []
        facts = model_facts.from_info(PLAIN, plain, "cache")
        model = AnthropicModel(
            model=PLAIN, max_tokens=1000, emit=events.append, api_key="k", base_url=fake.base_url, facts=facts,
            thinking="adaptive", effort="max",
        )  # fmt: skip
        await model.complete(ModelRequest("", [user_text("go")]), lambda _t: None)
        await model.aclose()
        assert fake.model_lookups == []
    assert "thinking" not in fake.requests[0].body and "output_config" not in fake.requests[0].body
    assert any("does not list effort 'max'" in str(e) for e in events)


async def test_a_model_unknown_to_the_models_api_is_a_404_and_none() -> None:
    with FakeAnthropic() as fake:
        info = await anyio.to_thread.run_sync(retrieve_model_info, "claude-nope", "k", fake.base_url)
    assert info is None and fake.model_lookups == ["/v1/models/claude-nope"]


@pytest.mark.parametrize("bad", ["sometimes", "ON!"])
def test_a_misspelt_thinking_setting_is_a_usage_error(bad: str) -> None:
    from sprout_agent.config.settings import Settings
    from sprout_agent.core.errors import UsageError

    with pytest.raises(UsageError, match="SPROUT_AGENT_THINKING must be one of adaptive, on, off"):
        Settings.from_env({"ANTHROPIC_API_KEY": "k", "SPROUT_AGENT_THINKING": bad})
